// Hostile and broken input from clients: each gets a clear error, the upstream never sees what it did
// not ask for, and the proxy keeps serving.
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rawRequest } from '../support/raw-http.js';
import { jsonReply, type RawUpstream, startRawUpstream } from '../support/raw-upstream.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

let upstream: RawUpstream;
let edge: TestEdge;

beforeEach(async () => {
  upstream = await startRawUpstream((req) => {
    const id = /"id":\s*("[^"]*"|[-0-9.e+]+)/.exec(req.body.toString())?.[1] ?? 'null';
    return jsonReply(`{"jsonrpc":"2.0","id":${id},"result":{}}`);
  });
  edge = await startTestEdge(
    upstream.url,
    'server: { timeouts: { requestHeaders: 1s, requestBody: 2s }, maxHeaderBytes: 8KiB }',
  );
});
afterEach(async () => {
  await edge.stop();
  await upstream.close();
});

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function post(body: string | Buffer, headers: Record<string, string> = {}) {
  const res = await fetch(edge.url, { method: 'POST', headers: { ...HEADERS, ...headers }, body });
  const text = await res.text();
  let json: { id?: unknown; error?: { code: number; message: string; data: { reason: string } } } = {};
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, text, json };
}

/** After each refusal the edge still serves a good request. */
async function expectStillServing() {
  const ok = await post('{"jsonrpc":"2.0","id":"alive","method":"ping"}');
  expect(ok.status).toBe(200);
  expect(ok.json.id).toBe('alive');
}

describe('bodies the edge refuses, before the upstream sees them', () => {
  it.each([
    ['not JSON', '{"jsonrpc":"2.0", this is not json', 400, -32700],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), 400, -32700],
    [
      'a UTF-8 BOM',
      Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}'),
      ]),
      400,
      -32700,
    ],
    [
      'JSON nested 100,000 deep inside a valid request',
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}}}`,
      400,
      -32600,
    ],
    ['a missing jsonrpc member', '{"id":1,"method":"ping"}', 400, -32600],
    ['a wrong jsonrpc version', '{"jsonrpc":"1.0","id":1,"method":"ping"}', 400, -32600],
    ['an empty batch', '[]', 400, -32600],
  ])('%s', async (_name, body, status, code) => {
    const res = await post(body);
    expect(res.status).toBe(status);
    expect(res.json.error?.code).toBe(code);
    expect(res.json.error?.data.reason).toBe('invalid_request');
    expect(upstream.received).toHaveLength(0);
    await expectStillServing();
  });

  it('a wrong Content-Type: 415', async () => {
    const res = await post('{"jsonrpc":"2.0","id":1,"method":"ping"}', { 'content-type': 'text/plain' });
    expect(res.status).toBe(415);
    expect(res.json.error?.message).toContain('application/json');
    expect(upstream.received).toHaveLength(0);
    await expectStillServing();
  });

  it('a compressed body (1 KiB that would inflate to 1 GiB): 415 without inflating it', async () => {
    // A gzip stream may hold several members: 16 members of 64 MiB of zeros inflate to 1 GiB.
    const member = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });
    const bomb = Buffer.concat(Array.from({ length: 16 }, () => member));
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);
    const before = process.memoryUsage().rss;
    const res = await post(bomb, { 'content-encoding': 'gzip' });
    expect(res.status).toBe(415);
    expect(res.json.error?.message).toContain('Content-Encoding');
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    expect(upstream.received).toHaveLength(0);
    await expectStillServing();
  });
});

describe("bodies that are the upstream's business: forwarded byte for byte", () => {
  it.each([
    [
      'huge numbers',
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"n","arguments":{"x":1e999,"y":123456789012345678901234567890}}}',
    ],
    [
      'duplicate keys the edge does not read (in arguments)',
      '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"a","arguments":{"q":1,"q":2,"Q":3}}}',
    ],
  ])('%s', async (_name, body) => {
    const res = await post(body);
    expect(res.status).toBe(200);
    expect(upstream.received[0]?.body.toString()).toBe(body);
  });

  it('duplicate keys the edge reads (params.name twice): 400, -32600, nothing forwarded', async () => {
    const res = await post('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"a","name":"b"}}');
    expect(res.status).toBe(400);
    expect(res.json.id).toBe(8);
    expect(res.json.error?.code).toBe(-32600);
    expect(res.json.error?.data.reason).toBe('ambiguous_message');
    expect(upstream.received).toHaveLength(0);
    await expectStillServing();
  });

  it('a batch of 10,000 elements', async () => {
    const batch = JSON.stringify(
      Array.from({ length: 10_000 }, (_, i) => ({
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: i, progress: i },
      })),
    );
    const res = await post(batch);
    expect(res.status).toBe(200);
    expect(upstream.received[0]?.body.equals(Buffer.from(batch))).toBe(true);
  });
});

describe('header floods, slow clients and request smuggling', () => {
  it('too large headers: 431, and the edge keeps serving', async () => {
    const res = await rawRequest(edge.url, [
      `GET /mcp HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(16 * 1024)}\r\n\r\n`,
    ]);
    expect(res.status).toBe(431);
    await expectStillServing();
  });

  it('too many headers: refused, and the edge keeps serving', async () => {
    const many = Array.from({ length: 3000 }, (_, i) => `X-H${i}: v\r\n`).join('');
    const res = await rawRequest(edge.url, [`GET /mcp HTTP/1.1\r\nHost: x\r\n${many}\r\n`]);
    expect(res.status).toBe(431);
    await expectStillServing();
  });

  it('a slowloris trickling headers is cut off by server.timeouts.requestHeaders', async () => {
    const parts: (string | number)[] = ['POST /mcp HTTP/1.1\r\n'];
    for (let i = 0; i < 20; i++) parts.push(300, `X-Slow-${i}: 1\r\n`);
    const res = await rawRequest(edge.url, parts, 8000);
    expect(res.closed).toBe(true);
    expect(res.elapsedMs).toBeLessThan(4500);
    await expectStillServing();
  });

  it('a body trickling past server.timeouts.requestBody gets 408 and never reaches the upstream', async () => {
    const head =
      'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc":"2.0",';
    const parts: (string | number)[] = [head];
    for (let i = 0; i < 30; i++) parts.push(200, ' ');
    const res = await rawRequest(edge.url, parts, 8000);
    expect(res.closed).toBe(true);
    expect(res.elapsedMs).toBeLessThan(5000);
    expect([408, undefined]).toContain(res.status);
    expect(upstream.received).toHaveLength(0);
    await expectStillServing();
  });

  it('a client that disconnects mid-body: nothing reaches the upstream', async () => {
    const res = await rawRequest(
      edge.url,
      [
        'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"jsonrpc":"2.0","id":1,',
      ],
      300,
    );
    expect(res.status).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(upstream.received).toHaveLength(0);
    await expectStillServing();
  });

  it.each([
    [
      'Content-Length with Transfer-Encoding',
      'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    [
      'duplicate Content-Length',
      'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}',
    ],
    [
      'obsolete line folding',
      'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\n{}',
    ],
  ])('%s: 400, nothing forwarded', async (_name, request) => {
    const res = await rawRequest(edge.url, [request]);
    expect(res.status).toBe(400);
    expect(upstream.received).toHaveLength(0);
    await expectStillServing();
  });

  it.each([['/mcp/../mcp'], ['/mcp%2F'], ['/mcp/extra'], ['/%6Dcp'], ['/MCP'], ['/mcp/']])(
    'path %s is not the MCP endpoint: 404, nothing forwarded',
    async (path) => {
      const res = await rawRequest(edge.url, [
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\nConnection: close\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"ping"}`,
      ]);
      expect(res.status).toBe(404);
      expect(upstream.received).toHaveLength(0);
    },
  );
});
