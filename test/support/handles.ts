// Every handle a test opens, the test closes: tracked here and closed after each test, last opened first.
import { afterEach } from 'vitest';

export interface Closable {
  close?(): Promise<unknown>;
  stop?(): Promise<unknown>;
}

/** Call once per test file: returns track() (close a handle after the test) and defer() (run any cleanup). */
export function trackHandles() {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()?.();
  });
  const defer = (cleanup: () => Promise<unknown>): void => {
    cleanups.push(cleanup);
  };
  const track = <T extends Closable>(handle: T): T => {
    defer(() => (handle.close ? handle.close() : (handle.stop?.() ?? Promise.resolve())));
    return handle;
  };
  return { track, defer };
}

/** What `promise` rejects with; throws when it resolves (the call was expected to fail). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}

/** The headers a Streamable HTTP client sends with a POST. */
export const MCP_POST_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
} as const;

/** initialize and notifications/initialized by hand, as a Streamable HTTP client sends them: the session id issued, if any. */
export async function initializeRaw(
  url: string,
  protocolVersion = '2025-11-25',
): Promise<{ sessionId: string | null }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: MCP_POST_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  await res.arrayBuffer();
  const sessionId = res.headers.get('mcp-session-id');
  await fetch(url, {
    method: 'POST',
    headers: {
      ...MCP_POST_HEADERS,
      'mcp-protocol-version': protocolVersion,
      ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  }).then((r) => r.arrayBuffer());
  return { sessionId };
}
