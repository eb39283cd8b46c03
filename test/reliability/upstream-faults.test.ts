// Broken and hostile upstreams: the client always gets an answer, never a silent hang.
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectV1Client } from '../support/clients.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { startRawTcpUpstream } from '../support/raw-http.js';
import { handshakeReply, jsonReply, type RawReply, startRawUpstream } from '../support/raw-upstream.js';
import { startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

const HEADERS = MCP_POST_HEADERS;
const CALL = '{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"t"}}';

interface ErrorBody {
  id: unknown;
  error: { code: number; message: string; data: { reason: string } };
}

async function call(url: string) {
  const started = Date.now();
  const res = await fetch(url, { method: 'POST', headers: HEADERS, body: CALL });
  const text = await res.text();
  return { status: res.status, text, elapsed: Date.now() - started, type: res.headers.get('content-type') };
}

describe('JSON bodies that break', () => {
  it('a body that stalls mid-way: 504 with the request id after upstream.timeouts.body', async () => {
    const upstream = track(
      await startRawUpstream(() => ({
        status: 200,
        headers: { 'content-type': 'application/json' },
        chunks: ['{"jsonrpc":"2.0","id":"c1","res', { delayMs: 10_000 }, 'ult":{}}'],
      })),
    );
    const edge = track(
      await startTestEdge(upstream.url, '', { upstreamYaml: '  timeouts: { body: 500ms }' }),
    );
    const res = await call(edge.url);
    expect(res.status).toBe(504);
    expect(res.elapsed).toBeLessThan(3000);
    const body = JSON.parse(res.text) as ErrorBody;
    expect(body.id).toBe('c1');
    expect(body.error.data.reason).toBe('upstream_timeout');
  });

  it('a connection reset mid-body: 502 with the request id', async () => {
    const upstream = track(
      await startRawTcpUpstream(() => ({
        bytes:
          'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"jsonrpc":"2.0","id":"c1","result":{"content":[',
        after: 'reset',
      })),
    );
    const edge = track(await startTestEdge(upstream.url));
    const res = await call(edge.url);
    expect(res.status).toBe(502);
    const body = JSON.parse(res.text) as ErrorBody;
    expect(body.id).toBe('c1');
    expect(body.error.data.reason).toBe('upstream_failed');
  });

  it('a Content-Length that promises more than is sent: 502 with the request id', async () => {
    const upstream = track(
      await startRawTcpUpstream(() => ({
        bytes:
          'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"jsonrpc":"2.0","id":"c1","result":{}}',
        after: 'end',
      })),
    );
    const edge = track(await startTestEdge(upstream.url));
    const res = await call(edge.url);
    expect(res.status).toBe(502);
    expect((JSON.parse(res.text) as ErrorBody).id).toBe('c1');
  });

  it('a Content-Length shorter than what is sent: the declared body is forwarded, the rest is not', async () => {
    const upstream = track(
      await startRawTcpUpstream(() => ({
        bytes:
          'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 39\r\n\r\n{"jsonrpc":"2.0","id":"c1","result":{}}GARBAGE-SMUGGLED-BYTES',
        after: 'end',
      })),
    );
    const edge = track(await startTestEdge(upstream.url));
    const res = await call(edge.url);
    expect(res.status).toBe(200);
    expect(res.text).toBe('{"jsonrpc":"2.0","id":"c1","result":{}}');
  });

  it('a POST the upstream read and then reset is never sent again: one run of the tool, a 502 for its id', async () => {
    const dead = track(await startRawTcpUpstream(() => ({ bytes: '', after: 'reset' })));
    const edge = track(await startTestEdge(dead.url));
    const res = await call(edge.url);
    expect(res.status).toBe(502);
    expect((JSON.parse(res.text) as ErrorBody).id).toBe('c1');
    // Let a resend (if any) arrive before counting.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(dead.received).toHaveLength(1);
  });

  it('a GET reset before any answer is idempotent, so it is sent once more on a fresh connection', async () => {
    let connections = 0;
    const flaky = track(
      await startRawTcpUpstream(() => {
        connections++;
        return connections === 1
          ? { bytes: '', after: 'reset' }
          : {
              bytes: 'HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n\r\n',
              after: 'end',
            };
      }),
    );
    const edge = track(await startTestEdge(flaky.url));
    const res = await fetch(edge.url, { headers: { accept: 'text/event-stream' } });
    expect(res.status).toBe(405);
    expect(flaky.received).toHaveLength(2);
  });

  it.each([
    [500, 'application/json', '{"jsonrpc":"2.0","id":"c1","error":{"code":-32603,"message":"boom"}}'],
    [502, 'text/html', '<html><body><h1>502 Bad Gateway</h1></body></html>'],
    [503, 'text/html; charset=utf-8', '<!doctype html><title>down for maintenance</title>'],
  ])('an upstream %i with %s passes through unchanged', async (status, type, body) => {
    const upstream = track(
      await startRawUpstream(() => ({ status, headers: { 'content-type': type }, chunks: [body] })),
    );
    const edge = track(await startTestEdge(upstream.url));
    const res = await call(edge.url);
    expect(res.status).toBe(status);
    expect(res.type).toBe(type);
    expect(res.text).toBe(body);
  });
});

describe('SSE streams that break', () => {
  it('without event ids: every request still waiting gets a JSON-RPC error, and the stream ends cleanly', async () => {
    const upstream = track(
      await startRawUpstream(
        (): RawReply => ({
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          chunks: [
            'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n',
            { delayMs: 50 },
          ],
          destroyAfter: true,
        }),
      ),
    );
    const edge = track(await startTestEdge(upstream.url));
    const res = await call(edge.url);
    expect(res.status).toBe(200);
    const events = res.text.split('\n\n').filter((e) => e.trim() !== '');
    expect(events).toHaveLength(2);
    const lost = JSON.parse(events[1]!.split('data: ')[1]!) as ErrorBody;
    expect(lost.id).toBe('c1');
    expect(lost.error.code).toBe(-32603);
    expect(lost.error.data.reason).toBe('upstream_failed');
  });

  it('an SDK client whose SSE answer breaks off gets an error for its call, not a timeout', async () => {
    const upstream = track(
      await startRawUpstream((req): RawReply => {
        const handshake = handshakeReply(req);
        if (handshake !== undefined) return handshake;
        return {
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          chunks: [': working\n\n', { delayMs: 50 }],
          destroyAfter: true,
        };
      }),
    );
    const edge = track(await startTestEdge(upstream.url));
    const { client } = track(
      await connectV1Client(edge.url, {
        reconnectionOptions: {
          maxRetries: 0,
          initialReconnectionDelay: 10,
          maxReconnectionDelay: 10,
          reconnectionDelayGrowFactor: 1,
        },
      }),
    );
    const started = Date.now();
    const err = await client.callTool({ name: 'anything', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(-32603);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('with event ids: the stream just ends, so the client resumes it with Last-Event-ID', async () => {
    const upstream = track(
      await startRawUpstream(
        (): RawReply => ({
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          chunks: [
            'id: e1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n',
            { delayMs: 50 },
          ],
          destroyAfter: true,
        }),
      ),
    );
    const edge = track(await startTestEdge(upstream.url));
    const res = await call(edge.url);
    const events = res.text.split('\n\n').filter((e) => e.trim() !== '');
    expect(events).toHaveLength(1);
    expect(events[0]).toContain('id: e1');
  });
});

describe('a hostile upstream whose tools/list never ends', () => {
  it('passes pages through, then answers past pagination.maxPagesPerListing with an error naming the bound', async () => {
    let page = 0;
    const upstream = track(
      await startRawUpstream((req): RawReply => {
        const handshake = handshakeReply(req, { sessionId: 'sess-loop' });
        if (handshake !== undefined) return handshake;
        const id = (JSON.parse(req.body.toString()) as { id: number }).id;
        page++;
        // The cursor cycles between two values forever.
        return jsonReply({
          jsonrpc: '2.0',
          id,
          result: {
            tools: [{ name: `t${page}`, inputSchema: { type: 'object' } }],
            nextCursor: page % 2 === 0 ? 'a' : 'b',
          },
        });
      }),
    );
    const edge = track(await startTestEdge(upstream.url, 'pagination: { maxPagesPerListing: 5 }'));
    const { client } = track(await connectV1Client(edge.url));
    let cursor: string | undefined;
    const seen: string[] = [];
    let error: unknown;
    for (let i = 0; i < 20; i++) {
      try {
        const result = await client.listTools(cursor !== undefined ? { cursor } : undefined);
        seen.push(...result.tools.map((t) => t.name));
        cursor = result.nextCursor;
      } catch (err) {
        error = err;
        break;
      }
    }
    expect(seen).toEqual(['t1', 't2', 't3', 't4', 't5']);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).data).toMatchObject({
      reason: 'pagination_bound_exceeded',
      method: 'tools/list',
      page: 6,
      maxPagesPerListing: 5,
    });
    expect((error as McpError).message).toContain('pagination.maxPagesPerListing');
    // A new listing (no cursor) starts again.
    const fresh = await client.listTools();
    expect(fresh.tools).toHaveLength(1);
  });
});
