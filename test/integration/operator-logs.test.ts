// The operator's log (issue 25): a request id on every answer and its exchange line; the client address,
// session and host on that line; why a 401; the version at start and what shutdown drained. A real edge in
// front of a scripted upstream, its log lines captured.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/tenancy/tenant-resolver.js';
import { packageVersion } from '../../src/version.js';
import { MCP_POST_HEADERS } from '../support/handles.js';
import {
  handshakeReply,
  parseJsonBody,
  type RawUpstream,
  sseEvent,
  sseReply,
  startRawUpstream,
} from '../support/raw-upstream.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const KEY = 'k-acme-0123456789-secret';
const SESSION = 'session-ops-1';

let upstream: RawUpstream;
let edge: TestEdge;
/** Resolves the held SSE answer of a `hold` call. */
let releaseHeld: () => void = () => {};

const call = (id: number, tool: string) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: {} } });
const initialize = (name: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name, version: '1' } },
  });

async function post(body: string, headers: Record<string, string> = {}) {
  const res = await fetch(edge.url, { method: 'POST', headers: { ...MCP_POST_HEADERS, ...headers }, body });
  const text = await res.text();
  return {
    status: res.status,
    requestId: res.headers.get('x-request-id'),
    type: res.headers.get('content-type'),
    text,
  };
}

/** The exchange line of the request whose answer carried `requestId`. */
function exchangeLine(requestId: string | null): Record<string, unknown> | undefined {
  return edge.logs.find((l) => l.msg === 'exchange' && l.reqId === requestId);
}

beforeAll(async () => {
  upstream = await startRawUpstream((req) => {
    const handshake = handshakeReply(req, { sessionId: SESSION });
    if (handshake !== undefined) return handshake;
    const message = parseJsonBody(req) as { id: number; params: { name: string } };
    const answer = { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'ok' }] } };
    if (message.params.name === 'hold') {
      const released = new Promise<void>((resolve) => {
        releaseHeld = resolve;
      });
      return sseReply([
        sseEvent({
          data: {
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progressToken: 1, progress: 1 },
          },
        }),
        { until: released },
      ]);
    }
    return sseReply([sseEvent({ data: answer })]);
  });
  edge = await startTestEdge(
    upstream.url,
    [
      'tenancy:',
      '  requireIdentified: true',
      '  resolve:',
      // From 127.0.0.1 this header is not believed: ignored, counted, and logged once per peer a minute.
      '    - { header: x-tenant-id, trustedProxies: [10.0.0.1] }',
      `    - { apiKey: { header: x-api-key, tenants: { acme: ["${sha256Hex(KEY)}"] } } }`,
      'tenants: { acme: {} }',
      'server: { timeouts: { shutdownGrace: 300ms } }',
    ].join('\n'),
  );
});

afterAll(async () => {
  releaseHeld();
  await edge?.stop().catch(() => {});
  await upstream?.close();
});

describe('the request id', () => {
  it("echoes the client's X-Request-Id, or sets one, on every answer and on its exchange line", async () => {
    const kept = await post(initialize('claude-code'), {
      'x-api-key': KEY,
      'x-request-id': 'trace-4bf92f35',
    });
    expect(kept.status).toBe(200);
    expect(kept.requestId).toBe('trace-4bf92f35');
    expect(exchangeLine('trace-4bf92f35')).toMatchObject({ status: 200, rpc: ['initialize'] });

    const made = await post(call(1, 'echo'), { 'x-api-key': KEY, 'mcp-session-id': SESSION });
    expect(made.type).toContain('text/event-stream');
    expect(made.text).toContain('"ok"');
    expect(made.requestId).toMatch(UUID);
    expect(exchangeLine(made.requestId)).toMatchObject({ status: 200, tools: ['echo'] });

    // A value that could forge a log field or grow the line is replaced, not echoed.
    const replaced = await post(call(2, 'echo'), {
      'x-api-key': KEY,
      'mcp-session-id': SESSION,
      'x-request-id': `${'x'.repeat(200)}`,
    });
    expect(replaced.requestId).toMatch(UUID);
    expect(exchangeLine(replaced.requestId)).toBeDefined();
  });

  it("is on the edge's own answers too: a 401, a 404 off the endpoint, a 405", async () => {
    const refused = await post(call(3, 'echo'), { 'x-request-id': 'refused-1' });
    expect(refused.status).toBe(401);
    expect(refused.requestId).toBe('refused-1');
    const notFound = await fetch(new URL('/elsewhere', edge.url), { headers: { 'x-request-id': 'nf-1' } });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('x-request-id')).toBe('nf-1');
    const put = await fetch(edge.url, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('x-request-id')).toMatch(UUID);
    expect(exchangeLine(put.headers.get('x-request-id'))).toMatchObject({ status: 405 });
  });
});

describe('the exchange line', () => {
  it('carries the client address, the session and the calling host (its session initialize named it)', async () => {
    const answered = await post(call(4, 'echo'), { 'x-api-key': KEY, 'mcp-session-id': SESSION });
    expect(exchangeLine(answered.requestId)).toMatchObject({
      client: '127.0.0.1',
      session: SESSION,
      host: 'claude-code',
      tenant: 'acme',
    });
  });

  it('says why a 401, without the credential', async () => {
    const noKey = await post(call(5, 'echo'));
    const wrongKey = await post(call(6, 'echo'), { 'x-api-key': 'wrong-key-do-not-log-me' });
    expect(exchangeLine(noKey.requestId)).toMatchObject({ status: 401, authFailure: 'no_credential' });
    expect(exchangeLine(wrongKey.requestId)).toMatchObject({ status: 401, authFailure: 'unknown_key' });
    expect(edge.logText()).not.toContain('wrong-key-do-not-log-me');
    expect(edge.logText()).not.toContain(KEY);
  });
});

describe('ignored tenant headers', () => {
  it('logs the first from a peer at info, not every one', async () => {
    for (const id of [8, 9, 10])
      expect((await post(call(id, 'echo'), { 'x-api-key': KEY, 'x-tenant-id': 'acme' })).status).toBe(200);
    const lines = edge.logs.filter((l) => String(l.msg).startsWith('a tenant header from a peer not in'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, peer: '127.0.0.1' });
  });
});

describe('start and shutdown', () => {
  it('the start line names the version; the last line says what shutdown drained and how it ended', async () => {
    expect(edge.logs.find((l) => String(l.msg).startsWith('mcp-edge serving'))).toMatchObject({
      version: packageVersion(),
      node: process.versions.node,
    });
    // A call whose SSE answer is still open when shutdown begins: ended by the shutdown after the grace.
    const opened = new Promise<void>((resolve, reject) => {
      const req = httpRequest(edge.url, {
        method: 'POST',
        headers: {
          ...MCP_POST_HEADERS,
          'x-api-key': KEY,
          'mcp-session-id': SESSION,
          'x-request-id': 'held-stream-1',
        },
      });
      req.on('response', (res) => {
        expect(res.headers['content-type']).toContain('text/event-stream');
        expect(res.headers['x-request-id']).toBe('held-stream-1');
        res.once('data', () => resolve());
        res.resume();
      });
      req.on('error', reject);
      req.end(call(7, 'hold'));
    });
    await opened;
    await edge.stop();
    const last = edge.logs.at(-1);
    expect(last).toMatchObject({
      msg: 'mcp-edge stopped',
      version: packageVersion(),
      inFlight: 1,
      streams: 1,
      ended: { shutdown: 1 },
    });
  });
});
