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

/** The headers a Streamable HTTP client sends with a POST. */
export const MCP_POST_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
} as const;
