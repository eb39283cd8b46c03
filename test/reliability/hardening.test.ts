// What hostile clients and broken upstreams found (issue 12), each case through a real edge on 127.0.0.1.
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { OUTCOMES } from '../../src/core/outcome.js';
import { connectV1Client } from '../support/clients.js';
import { initializeRaw, MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { rawRequest } from '../support/raw-http.js';
import {
  handshakeReply,
  jsonReply,
  type RawChunk,
  sseEvent,
  sseReply,
  startRawUpstream,
} from '../support/raw-upstream.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

const { track } = trackHandles();
const MiB = 1024 * 1024;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function exchangeLines(edge: TestEdge): Record<string, unknown>[] {
  return edge.logs.filter((l) => l.msg === 'exchange');
}

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A session opened by hand (initialize + initialized), so the test owns its one GET stream. */
async function openSession(url: string): Promise<string> {
  return (await initializeRaw(url)).sessionId ?? '';
}

async function metricValue(edge: TestEdge, series: string): Promise<number> {
  const text = await (await fetch(edge.metricsUrl ?? '')).text();
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('sessions the upstream never accepted cost nothing', () => {
  it('made-up session ids with 4 MB batches of 1,000 requests do not grow the edge', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url));
    const pad = 'x'.repeat(3_900);
    const batch = JSON.stringify(
      Array.from({ length: 1_000 }, (_, i) => ({
        jsonrpc: '2.0',
        id: `${pad}${i}`,
        method: 'tools/call',
        params: { name: 'echo', arguments: {} },
      })),
    );
    expect(batch.length).toBeGreaterThan(3.9e6);
    const post = async () => {
      const res = await fetch(edge.url, {
        method: 'POST',
        headers: { ...MCP_POST_HEADERS, 'mcp-session-id': randomUUID() },
        body: batch,
      });
      await res.arrayBuffer();
      return res.status;
    };
    expect(await post()).toBe(404);
    const before = heapUsed();
    for (let i = 0; i < 60; i++) expect(await post()).toBe(404);
    // Before the fix each POST kept its 1,000 ids (~7.8 MB of heap) for the made-up session: ~470 MB here.
    expect(heapUsed() - before).toBeLessThan(32 * MiB);
  }, 60_000);
});

describe('SSE streams that break', () => {
  it('an upstream that resets after one event leaves no stream open and nothing uncounted', async () => {
    const note = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } };
    const upstream = track(
      await startRawUpstream(() =>
        sseReply([sseEvent({ data: note }), { delayMs: 20 }], { destroyAfter: true }),
      ),
    );
    const edge = track(await startTestEdge(upstream.url, '', { metrics: true }));
    const streams = 'mcp_edge_sse_streams_active{tenant="default"';
    for (let i = 0; i < 40; i++) {
      const res = await fetch(edge.url, {
        method: 'POST',
        headers: MCP_POST_HEADERS,
        body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 't' } }),
      });
      const text = await res.text();
      // Nothing lost: the event that came before the break, then the error for the waiting id.
      expect(text).toContain('"data":"x"');
      expect(text).toContain(`"id":${i},"error"`);
    }
    await until(() => exchangeLines(edge).length === 40);
    expect(await metricValue(edge, streams)).toBe(0);
    expect(exchangeLines(edge).every((l) => l.outcome === 'upstream_stream_failed')).toBe(true);
    expect(
      await metricValue(
        edge,
        'mcp_edge_requests_total{tenant="default",http_method="POST",status="200",outcome="upstream_stream_failed"',
      ),
    ).toBe(40);
  });

  it('an upstream that breaks off mid-event: the SDK caller gets the error at once, not its own timeout', async () => {
    const upstream = track(
      await startRawUpstream((req) => {
        const handshake = handshakeReply(req);
        if (handshake !== undefined) return handshake;
        const id = (JSON.parse(req.body.toString()) as { id: number }).id;
        return sseReply(
          [`data: {"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"te`, { delayMs: 20 }],
          {
            destroyAfter: true,
          },
        );
      }),
    );
    const edge = track(await startTestEdge(upstream.url));
    const { client } = track(await connectV1Client(edge.url));
    const started = Date.now();
    const error = await client.callTool({ name: 't', arguments: {} }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).message).toMatch(/response was lost/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('a call whose SSE answer goes silent gets an error after upstream.timeouts.answerStream', async () => {
    const upstream = track(await startRawUpstream(() => sseReply([': still here\n\n', { delayMs: 30_000 }])));
    const edge = track(
      await startTestEdge(upstream.url, '', { upstreamYaml: '  timeouts: { answerStream: 400ms }' }),
    );
    const started = Date.now();
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: '{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"t"}}',
    });
    const text = await res.text();
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(text).toMatch(/"id":"slow","error".*answerStream/);
    await until(() => exchangeLines(edge).length === 1);
    expect(exchangeLines(edge)[0]?.outcome).toBe('upstream_timeout');
  });

  it('an endless oversized event that is not JSON: the id is answered at the ceiling and the upstream is let go', async () => {
    let upstreamClosed = false;
    const block = 'y'.repeat(64 * 1024);
    const chunks: RawChunk[] = ['data: '];
    for (let i = 0; i < 4_000; i++) chunks.push(block, { delayMs: 1 });
    const upstream = track(
      await startRawUpstream(() => {
        const reply = sseReply(chunks);
        return reply;
      }),
    );
    const edge = track(await startTestEdge(upstream.url, 'limits: { response: { maxMessageBytes: 1MiB } }'));
    const started = Date.now();
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: '{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"t"}}',
    });
    const text = await res.text();
    // 4,000 chunks of 64 KiB with a pause each would take many seconds to drain.
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(text).toMatch(/"id":"big","error".*response\.maxMessageBytes/);
    upstreamClosed = upstream.received.length === 1;
    expect(upstreamClosed).toBe(true);
    await until(() => exchangeLines(edge).length === 1);
    expect(exchangeLines(edge)[0]?.outcome).toBe('response_replaced');
  });
});

describe('Expect: 100-continue', () => {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 't', arguments: { s: 'z'.repeat(2_000) } },
  });

  it('a body under its ceiling gets the 100, goes through, and the upstream sees no Expect', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} })));
    const edge = track(await startTestEdge(upstream.url));
    const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`;
    const exchange = await rawRequest(edge.url, [head, 300, body], 3_000);
    expect(exchange.response).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    expect(exchange.response).toContain('{"jsonrpc":"2.0","id":1,"result":{}}');
    expect(upstream.received).toHaveLength(1);
    expect(upstream.received[0]?.headers.expect).toBeUndefined();
    expect(upstream.received[0]?.body.toString()).toBe(body);
  });

  it('a body over its ceiling gets the 413 instead of the 100, and nothing reaches the upstream', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} })));
    const edge = track(await startTestEdge(upstream.url, 'limits: { request: { maxBodyBytes: 1KiB } }'));
    const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`;
    const exchange = await rawRequest(edge.url, [head], 2_000);
    expect(exchange.status).toBe(413);
    expect(exchange.response).not.toContain('100 Continue');
    expect(upstream.received).toHaveLength(0);
  });

  it('curl uploading a 2 MiB body (it sends Expect: 100-continue) gets the answer', async () => {
    const { execFile } = await import('node:child_process');
    const upstream = track(await startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} })));
    const edge = track(await startTestEdge(upstream.url, 'limits: { request: { maxMessageBytes: 4MiB } }'));
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 't', arguments: { s: 'q'.repeat(2 * MiB) } },
    });
    const out = await new Promise<string>((resolve, reject) => {
      const child = execFile(
        'curl',
        [
          '-sS',
          '-v',
          '--data-binary',
          '@-',
          '-H',
          'content-type: application/json',
          '-H',
          'accept: application/json, text/event-stream',
          edge.url,
        ],
        { maxBuffer: 16 * MiB },
        (err, stdout, stderr) => (err ? reject(err) : resolve(`${stderr}\n${stdout}`)),
      );
      child.stdin?.end(big);
    });
    expect(out).toMatch(/Expect: 100-continue/i);
    expect(out).toContain('{"jsonrpc":"2.0","id":1,"result":{}}');
    expect(upstream.received[0]?.body.length).toBe(big.length);
  });
});

describe('every exchange gets one log line and one count, with who ended it', () => {
  it('a client that closes its GET stream: outcome client_closed, no upstream warning', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, '', { metrics: true }));
    const sessionId = await openSession(edge.url);
    const before = exchangeLines(edge).length;
    const abort = new AbortController();
    const res = await fetch(edge.url, {
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-11-25',
      },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    abort.abort();
    await until(() => exchangeLines(edge).length === before + 1);
    const line = exchangeLines(edge).at(-1);
    expect(line).toMatchObject({ http: 'GET', outcome: 'client_closed' });
    expect(edge.logText()).not.toContain('upstream SSE stream failed');
    expect(
      await metricValue(
        edge,
        'mcp_edge_requests_total{tenant="default",http_method="GET",status="200",outcome="client_closed"',
      ),
    ).toBe(1);
  });

  it('a GET stream ended by shutdown: outcome shutdown', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = await startTestEdge(server.url);
    const sessionId = await openSession(edge.url);
    const res = await fetch(edge.url, {
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-11-25',
      },
    });
    expect(res.status).toBe(200);
    const reading = res.text();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await edge.stop();
    await reading;
    const gets = exchangeLines(edge).filter((l) => l.http === 'GET');
    expect(gets.at(-1)?.outcome).toBe('shutdown');
  });

  it('an SSE event replaced for its size counts as response_replaced, like a JSON one', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(server.url, 'limits: { response: { maxMessageBytes: 64KiB } }', { metrics: true }),
    );
    const { client } = track(await connectV1Client(edge.url));
    await expect(client.callTool({ name: 'sized', arguments: { bytes: 100 * 1024 } })).rejects.toBeInstanceOf(
      McpError,
    );
    await until(() => exchangeLines(edge).some((l) => l.outcome === 'response_replaced'));
    expect(
      await metricValue(
        edge,
        'mcp_edge_requests_total{tenant="default",http_method="POST",status="200",outcome="response_replaced"',
      ),
    ).toBe(1);
  });

  it('responseBytes is what the exchange wrote to the client connection: headers and body', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: 'r'.repeat(10_000) } });
    const upstream = track(await startRawUpstream(() => jsonReply(body)));
    const edge = track(await startTestEdge(upstream.url));
    for (let i = 0; i < 2; i++) {
      const res = await fetch(edge.url, {
        method: 'POST',
        headers: MCP_POST_HEADERS,
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}',
      });
      expect(await res.text()).toBe(body);
    }
    await until(() => exchangeLines(edge).length === 2);
    // The second exchange rode the same keep-alive connection: each counts its own bytes only.
    for (const line of exchangeLines(edge)) {
      expect(Number(line.responseBytes)).toBeGreaterThan(body.length);
      expect(Number(line.responseBytes)).toBeLessThan(body.length + 1024);
    }
  });

  it('every outcome is documented in docs/operations.md', async () => {
    const { readFileSync } = await import('node:fs');
    const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    for (const outcome of OUTCOMES) expect(doc).toContain(`\`${outcome}\``);
  });
});

describe('what the client is told of upstream failures', () => {
  it('a 502 names no upstream address or socket error unless server.exposeUpstreamErrors; the log has them', async () => {
    const down = 'http://127.0.0.1:9/mcp';
    const edge = track(await startTestEdge(down));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: '{"jsonrpc":"2.0","id":5,"method":"ping"}',
    });
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(text).not.toContain('127.0.0.1:9');
    expect(text).not.toContain('ECONNREFUSED');
    expect(JSON.parse(text)).toMatchObject({ id: 5, error: { data: { reason: 'upstream_unreachable' } } });
    expect(edge.logText()).toContain('ECONNREFUSED');
    const ready = await fetch(edge.url.replace('/mcp', '/readyz'));
    expect(ready.status).toBe(503);
    expect(await ready.text()).not.toContain('127.0.0.1:9');

    const debug = track(await startTestEdge(down, 'server: { exposeUpstreamErrors: true }'));
    const detailed = await fetch(debug.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: '{"jsonrpc":"2.0","id":5,"method":"ping"}',
    });
    expect(await detailed.text()).toMatch(/ECONNREFUSED.*127\.0\.0\.1:9/);
  });
});

describe('a broken request body is the client\u2019s mistake', () => {
  it('malformed chunked framing: a 400 and an info line, never an error-level log', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} })));
    const edge = track(await startTestEdge(upstream.url));
    const head =
      'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const exchange = await rawRequest(edge.url, [head, '5\r\n{"jso\r\n', 50, 'zz-not-hex\r\n\r\n'], 2_000);
    expect([400, undefined]).toContain(exchange.status);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(upstream.received).toHaveLength(0);
    expect(edge.logs.filter((l) => Number(l.level) >= 50)).toEqual([]);
    // The edge keeps serving.
    const next = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(next.status).toBe(200);
  });
});
