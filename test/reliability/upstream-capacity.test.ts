// Calls and GET streams have separate upstream connections (src/upstream/connection-slots.ts): open GET
// streams never make a call wait, a call waits for a connection of its own at most upstream.timeouts.queue,
// and a GET past the stream capacity gets a 405 that MCP clients take as "no stream here".
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { type ConnectedV1Client, connectV1Client } from '../support/clients.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import {
  handshakeReply,
  jsonReply,
  parseJsonBody,
  sseReply,
  startRawUpstream,
} from '../support/raw-upstream.js';
import { startV1Server, type V1Server } from '../support/sdk-v1-server.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

const { track, defer } = trackHandles();

interface ErrorBody {
  id: unknown;
  error: { code: number; message: string; data: { reason: string; enforcedBy: string } };
}

function exchangeLines(edge: TestEdge): Record<string, unknown>[] {
  return edge.logs.filter((l) => l.msg === 'exchange');
}

/** How long an echo through the edge takes on this machine now: deadlines are derived from it. */
async function echoMs(client: ConnectedV1Client): Promise<number> {
  const started = Date.now();
  await client.client.callTool({ name: 'echo', arguments: { text: 'baseline' } });
  return Date.now() - started;
}

/** An SDK v1 client through the edge whose standalone GET stream is open at the server. */
async function clientWithGetStream(edge: TestEdge, server: V1Server): Promise<ConnectedV1Client> {
  const client = track(await connectV1Client(edge.url));
  expect(await server.getStreamOpen(client.sessionId(), 10_000)).toBe(true);
  return client;
}

/** A call that settles within `ms` or fails the test (before the fix it waited in undici's queue forever). */
function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

describe('GET streams and calls have separate upstream connections', () => {
  it('calls are answered while GET streams hold every upstream.maxConnections connection', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, '', { upstreamYaml: '  maxConnections: 2' }));
    const first = await clientWithGetStream(edge, server);
    const baseline = await echoMs(first);
    // A second session's GET stream: two streams, as many as maxConnections, all open at the server.
    const second = await clientWithGetStream(edge, server);
    expect(server.requests.filter((r) => r.method === 'GET')).toHaveLength(2);

    const bound = 10_000 + 20 * baseline;
    for (const client of [first, second]) {
      const result = await within(
        bound,
        'a call behind two open GET streams',
        client.client.callTool({ name: 'echo', arguments: { text: 'past the streams' } }),
      );
      expect(result.content).toEqual([{ type: 'text', text: 'past the streams' }]);
    }
    // And a new session still opens (its initialize is a call too), with its own GET stream.
    const third = await within(bound, 'a new session', clientWithGetStream(edge, server));
    expect(await third.client.callTool({ name: 'echo', arguments: { text: 'third' } })).toMatchObject({
      content: [{ type: 'text', text: 'third' }],
    });
  });

  it('a GET past upstream.maxStreamConnections gets a 405, and an SDK client goes on working without it', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(server.url, '', {
        upstreamYaml: '  maxConnections: 2\n  maxStreamConnections: 2',
      }),
    );
    const first = await clientWithGetStream(edge, server);
    const bound = 10_000 + 20 * (await echoMs(first));
    await clientWithGetStream(edge, server);

    // A third session: its GET is refused by the edge (it never reaches the server), its calls work, and
    // the client reports no error (it would for a 429 or 503: "Failed to open SSE stream").
    const errors: Error[] = [];
    const thirdTransport = new StreamableHTTPClientTransport(new URL(edge.url));
    const thirdClient = new Client({ name: 'third', version: '1.0.0' });
    thirdClient.onerror = (err) => errors.push(err);
    await within(bound, 'a third session', thirdClient.connect(thirdTransport));
    defer(() => thirdClient.close());
    const third = { sessionId: () => thirdTransport.sessionId };
    const result = await thirdClient.callTool({
      name: 'echo',
      arguments: { text: 'no stream, still served' },
    });
    expect(result.content).toEqual([{ type: 'text', text: 'no stream, still served' }]);
    const refusedGet = () =>
      exchangeLines(edge).find((l) => l.http === 'GET' && l.status === 405 && l.outcome === 'refused');
    await expect.poll(refusedGet).toBeDefined();
    expect(server.requests.filter((r) => r.method === 'GET')).toHaveLength(2);
    expect(errors).toEqual([]);
    expect(edge.logText()).toContain('no room for another GET stream');

    // What the refusal says, to any client that reads it.
    const res = await fetch(edge.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': third.sessionId() ?? '' },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, DELETE');
    const body = (await res.json()) as ErrorBody;
    expect(body.error.data).toEqual({ reason: 'upstream_capacity', enforcedBy: 'mcp-edge' });
    expect(body.error.message).toContain('upstream.maxStreamConnections');
  });
});

describe('a call waits for a connection of its own at most upstream.timeouts.queue', () => {
  it('with every call connection held by slow calls, the next call gets a 503 JSON-RPC error, never sent', async () => {
    const slowCalls: string[] = [];
    const upstream = track(
      await startRawUpstream((req) => {
        const message = parseJsonBody(req) as { id?: string; method?: string } | undefined;
        if (message?.method === 'slow') {
          slowCalls.push(String(message.id));
          // The answer's stream opens and stays silent: the call holds its connection.
          return sseReply([': working\n\n', { delayMs: 120_000 }]);
        }
        return handshakeReply(req) ?? jsonReply({ jsonrpc: '2.0', id: message?.id ?? null, result: {} });
      }),
    );
    const edge = track(
      await startTestEdge(upstream.url, '', {
        upstreamYaml: '  maxConnections: 2\n  timeouts: { queue: 400ms }',
      }),
    );
    const post = (id: string, method: string, signal?: AbortSignal) =>
      fetch(edge.url, {
        method: 'POST',
        headers: MCP_POST_HEADERS,
        body: JSON.stringify({ jsonrpc: '2.0', id, method }),
        ...(signal === undefined ? {} : { signal }),
      });
    let started = Date.now();
    await (await post('warm', 'ping')).text();
    const baseline = Date.now() - started;

    const slow = [new AbortController(), new AbortController()];
    defer(async () => {
      for (const controller of slow) controller.abort();
    });
    for (const [index, controller] of slow.entries()) {
      const res = await post(`slow-${index}`, 'slow', controller.signal);
      expect(res.status).toBe(200);
    }
    expect(slowCalls).toEqual(['slow-0', 'slow-1']);

    started = Date.now();
    const res = await within(10_000 + 20 * baseline, 'a call behind two slow calls', post('waits', 'ping'));
    const elapsed = Date.now() - started;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    const body = (await res.json()) as ErrorBody;
    expect(body.id).toBe('waits');
    expect(body.error.data).toEqual({ reason: 'upstream_capacity', enforcedBy: 'mcp-edge' });
    expect(body.error.message).toContain('not sent');
    expect(elapsed).toBeGreaterThanOrEqual(400);
    // Never sent: the upstream saw no request with that id.
    expect(upstream.received.some((r) => r.body.toString().includes('"waits"'))).toBe(false);
    await expect
      .poll(() => exchangeLines(edge).find((l) => l.status === 503)?.outcome)
      .toBe('upstream_capacity');

    // A slow call that ends gives its connection back: the next call is forwarded.
    slow[0]?.abort();
    const after = await within(
      10_000 + 20 * baseline,
      'a call after a slot came free',
      post('after', 'ping'),
    );
    expect(after.status).toBe(200);
    expect(await after.json()).toEqual({ jsonrpc: '2.0', id: 'after', result: {} });
  });
});
