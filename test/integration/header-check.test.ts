// The 2026-07-28 header check (SEP-2243) through a real edge: a request whose Mcp-Method or Mcp-Name header
// disagrees with its body is refused by the edge itself (400, -32020 HeaderMismatch, its id kept, nothing
// forwarded), seen by a raw client in front of a raw upstream that checks nothing; requests whose headers
// match (the SDK v2 client's, names encoded or not) and requests of older revisions pass untouched, byte for
// byte, and the ceilings that apply to a request are its body's, whatever its headers name.
import type { McpServer } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectV2Client, textOf } from '../support/clients.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { jsonReply, parseJsonBody, type RawRequest, startRawUpstream } from '../support/raw-upstream.js';
import { startV2Server } from '../support/sdk-v2-server.js';
import { startTestEdge } from '../support/start-edge.js';
import { STDIO_SERVERS, startStdioEdge } from '../support/stdio-edge.js';

const { track } = trackHandles();

const MODERN = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A 2026-07-28 request as its client writes it: the revision in `_meta`. */
const modernRequest = (id: number | string, method: string, params: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { ...params, _meta: ENVELOPE },
});
const callOf = (id: number | string, tool: string) =>
  modernRequest(id, 'tools/call', { name: tool, arguments: {} });

/** The headers of a 2026-07-28 POST, with the given Mcp-* headers (none when left out). */
const modernHeaders = (mcp: Record<string, string>) => ({
  ...MCP_POST_HEADERS,
  'mcp-protocol-version': MODERN,
  ...mcp,
});

/** The Base64 sentinel form the specification gives a value that is no plain ASCII header value. */
const sentinel = (value: string) => `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;

/** A raw upstream that checks nothing: it answers each request of a body with an empty result. */
async function uncheckedUpstream() {
  return startRawUpstream((req: RawRequest) => {
    const body = parseJsonBody(req);
    const answer = (m: { id?: unknown }) => ({ jsonrpc: '2.0', id: m.id ?? null, result: {} });
    return jsonReply(Array.isArray(body) ? body.map(answer) : answer(body as { id?: unknown }));
  });
}

interface ErrorBody {
  jsonrpc: string;
  id: unknown;
  error: { code: number; message: string; data: Record<string, unknown> };
}

const post = (url: string, headers: Record<string, string>, body: unknown) =>
  fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });

describe('the 2026-07-28 header check: a raw client in front of an upstream that checks nothing', () => {
  const mismatches: {
    what: string;
    headers: Record<string, string>;
    body: ReturnType<typeof modernRequest>;
    header: string;
  }[] = [
    {
      what: 'Mcp-Method names another method than the body',
      headers: { 'mcp-method': 'tools/list' },
      body: callOf(7, 'echo'),
      header: 'Mcp-Method',
    },
    {
      what: 'Mcp-Name names another tool than the body',
      headers: { 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
      body: callOf('call-8', 'delete_everything'),
      header: 'Mcp-Name',
    },
    {
      what: 'Mcp-Name is missing on a tools/call',
      headers: { 'mcp-method': 'tools/call' },
      body: callOf(9, 'echo'),
      header: 'Mcp-Name',
    },
    {
      what: 'Mcp-Method is missing on a request',
      headers: {},
      body: modernRequest(10, 'tools/list'),
      header: 'Mcp-Method',
    },
    {
      what: 'Mcp-Name names another prompt than a prompts/get',
      headers: { 'mcp-method': 'prompts/get', 'mcp-name': 'greeting' },
      body: modernRequest(11, 'prompts/get', { name: 'exfiltrate' }),
      header: 'Mcp-Name',
    },
    {
      what: 'Mcp-Name names another resource than a resources/read',
      headers: { 'mcp-method': 'resources/read', 'mcp-name': 'file:///public.txt' },
      body: modernRequest(12, 'resources/read', { uri: 'file:///etc/shadow' }),
      header: 'Mcp-Name',
    },
    {
      what: 'Mcp-Name carries a Base64 sentinel that is not Base64',
      headers: { 'mcp-method': 'tools/call', 'mcp-name': '=?base64?not base64!?=' },
      body: callOf(13, 'echo'),
      header: 'Mcp-Name',
    },
    {
      what: 'Mcp-Name carries a non-ASCII byte instead of the Base64 sentinel',
      headers: { 'mcp-method': 'tools/call', 'mcp-name': 'caf\u00e9' },
      body: callOf(14, 'caf\u00e9'),
      header: 'Mcp-Name',
    },
  ];

  for (const { what, headers, body, header } of mismatches) {
    it(`refuses a request whose ${what}: 400, -32020, its id, nothing forwarded`, async () => {
      const upstream = track(await uncheckedUpstream());
      const edge = track(await startTestEdge(upstream.url));
      const res = await post(edge.url, modernHeaders(headers), body);
      expect(res.status).toBe(400);
      const answer = (await res.json()) as ErrorBody;
      expect(answer).toMatchObject({
        jsonrpc: '2.0',
        id: body.id,
        error: { code: -32020, data: { reason: 'header_mismatch', header, enforcedBy: 'mcp-edge' } },
      });
      expect(answer.error.message).toContain(header);
      expect(upstream.received).toHaveLength(0);
      const line = edge.logs.find((l) => l.msg === 'exchange');
      expect([line?.status, line?.outcome]).toEqual([400, 'refused']);
    });
  }

  it('refuses a notification whose Mcp-Method names another method (400, id null), nothing forwarded', async () => {
    const upstream = track(await uncheckedUpstream());
    const edge = track(await startTestEdge(upstream.url));
    const res = await post(edge.url, modernHeaders({ 'mcp-method': 'notifications/progress' }), {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 1 },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ id: null, error: { code: -32020 } });
    expect(upstream.received).toHaveLength(0);
  });

  it('in a batch, refuses the one request that disagrees, for its own id, and forwards the others byte for byte', async () => {
    const upstream = track(await uncheckedUpstream());
    const edge = track(await startTestEdge(upstream.url));
    const first = JSON.stringify(callOf(1, 'echo'));
    const third = JSON.stringify(callOf(3, 'echo'));
    const body = `[${first}, ${JSON.stringify(callOf(2, 'delete_everything'))},\n${third}]`;
    const res = await post(edge.url, modernHeaders({ 'mcp-method': 'tools/call', 'mcp-name': 'echo' }), body);
    expect(res.status).toBe(200);
    const answers = (await res.json()) as { id: unknown; result?: unknown; error?: ErrorBody['error'] }[];
    const byId = new Map(answers.map((a) => [a.id, a]));
    expect([...byId.keys()].sort()).toEqual([1, 2, 3]);
    expect(byId.get(1)).toMatchObject({ result: {} });
    expect(byId.get(3)).toMatchObject({ result: {} });
    expect(byId.get(2)).toMatchObject({
      error: { code: -32020, data: { reason: 'header_mismatch', header: 'Mcp-Name' } },
    });
    // The upstream got the two that agree, each as the client wrote it, and nothing of the third.
    expect(upstream.received).toHaveLength(1);
    expect(upstream.received[0]!.body.toString()).toBe(`[${first},${third}]`);
  });

  it('passes a request whose headers agree untouched, a Base64-encoded Mcp-Name decoded before it is compared', async () => {
    const upstream = track(await uncheckedUpstream());
    const edge = track(await startTestEdge(upstream.url));
    const sent: { headers: Record<string, string>; body: string }[] = [
      {
        headers: { 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
        body: ` ${JSON.stringify(callOf(1, 'echo'), null, 1)}\n`,
      },
      {
        headers: { 'mcp-method': 'tools/call', 'mcp-name': sentinel('m\u00e9t\u00e9o') },
        body: JSON.stringify(callOf(2, 'm\u00e9t\u00e9o')),
      },
      {
        headers: { 'mcp-method': 'tools/call', 'mcp-name': sentinel('=?base64?literal?=') },
        body: JSON.stringify(callOf(3, '=?base64?literal?=')),
      },
      { headers: { 'mcp-method': 'tools/list' }, body: JSON.stringify(modernRequest(4, 'tools/list')) },
      // A notification needs no Mcp-Method at this revision.
      {
        headers: {},
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }),
      },
    ];
    for (const { headers, body } of sent) {
      const res = await post(edge.url, modernHeaders(headers), body);
      expect(res.status).toBeLessThan(300);
      await res.arrayBuffer();
    }
    expect(upstream.received.map((r) => r.body.toString())).toEqual(sent.map((s) => s.body));
    expect(upstream.received.map((r) => [r.headers['mcp-method'], r.headers['mcp-name']])).toEqual(
      sent.map((s) => [s.headers['mcp-method'], s.headers['mcp-name']]),
    );
  });
});

describe('the header check in front of a stdio server', () => {
  it('refuses the disagreeing message before any of it reaches the child; the others are answered', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v2Fixture));
    const headers = modernHeaders({ 'mcp-method': 'tools/call', 'mcp-name': 'pid' });
    const refused = await post(edge.url, headers, callOf(1, 'echo'));
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ id: 1, error: { code: -32020 } });
    expect(edge.upstream.pids()).toHaveLength(0);

    const batch = await post(edge.url, { ...headers, accept: 'application/json' }, [
      callOf(2, 'pid'),
      callOf(3, 'echo'),
    ]);
    expect(batch.status).toBe(200);
    const answers = (await batch.json()) as {
      id: unknown;
      result?: { content: { text: string }[] };
      error?: unknown;
    }[];
    expect(answers.find((a) => a.id === 3)).toMatchObject({ error: { code: -32020 } });
    const pid = answers.find((a) => a.id === 2)?.result?.content[0]?.text;
    expect(edge.upstream.pids().map(String)).toEqual([pid]);
  });
});

describe('requests of older revisions, and the ceilings of a body', () => {
  it('passes a request without Mcp-* headers, or with disagreeing ones, under an older revision untouched', async () => {
    const upstream = track(await uncheckedUpstream());
    const edge = track(await startTestEdge(upstream.url));
    const legacy = { ...MCP_POST_HEADERS, 'mcp-protocol-version': '2025-11-25' };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } });
    for (const headers of [legacy, { ...legacy, 'mcp-method': 'tools/list' }, MCP_POST_HEADERS]) {
      const res = await post(edge.url, headers, body);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    expect(upstream.received.map((r) => r.body.toString())).toEqual([body, body, body]);
  });

  it("applies the body's ceiling, not the one of a tool the headers name", async () => {
    const upstream = track(await uncheckedUpstream());
    const edge = track(
      await startTestEdge(upstream.url, 'limits: { tools: { small: { request: { maxBodyBytes: 1KiB } } } }'),
    );
    const big = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'big', arguments: { text: 'x'.repeat(2048) } },
    });
    // An older revision: the headers are not checked, and choose nothing.
    const legacy = await post(
      edge.url,
      {
        ...MCP_POST_HEADERS,
        'mcp-protocol-version': '2025-11-25',
        'mcp-method': 'tools/call',
        'mcp-name': 'small',
      },
      big(1),
    );
    expect(legacy.status).toBe(200);
    await legacy.arrayBuffer();
    expect(upstream.received).toHaveLength(1);
    // 2026-07-28: the headers disagree with the body, which is what the client is told (not the small tool's 413).
    const modern = await post(edge.url, modernHeaders({ 'mcp-method': 'tools/call', 'mcp-name': 'small' }), {
      ...big(2),
      params: { ...big(2).params, _meta: ENVELOPE },
    });
    expect(modern.status).toBe(400);
    expect(await modern.json()).toMatchObject({ id: 2, error: { code: -32020 } });
    // The body's own ceiling still holds, whatever the headers say.
    const small = await post(
      edge.url,
      {
        ...MCP_POST_HEADERS,
        'mcp-protocol-version': '2025-11-25',
        'mcp-method': 'tools/call',
        'mcp-name': 'big',
      },
      { ...big(3), params: { name: 'small', arguments: { text: 'x'.repeat(2048) } } },
    );
    expect(small.status).toBe(413);
    expect(await small.json()).toMatchObject({
      id: 3,
      error: { data: { limit: 'request.maxBodyBytes', tool: 'small' } },
    });
    expect(upstream.received).toHaveLength(1);
  });
});

describe('the SDK v2 client and server at 2026-07-28 through the edge', () => {
  it('every request passes untouched: its body byte for byte, its Mcp-Method and Mcp-Name as sent, names Base64-encoded or not', async () => {
    const server = track(
      await startV2Server({
        extend: (mcp: McpServer) => {
          mcp.registerTool(
            'm\u00e9t\u00e9o',
            { description: 'A tool whose name is no plain ASCII header value.', inputSchema: z.object({}) },
            async () => ({ content: [{ type: 'text', text: 'ensoleill\u00e9' }] }),
          );
          mcp.registerPrompt('gr\u00fc\u00dfe', { description: 'A prompt with a non-ASCII name.' }, () => ({
            messages: [{ role: 'user', content: { type: 'text', text: 'hallo' } }],
          }));
          mcp.registerResource('notes', 'file:///notes/summer.txt', { mimeType: 'text/plain' }, (uri) => ({
            contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'chaud' }],
          }));
        },
      }),
    );
    const edge = track(await startTestEdge(server.url));
    const sent: { headers: Headers; body: string }[] = [];
    const recording: typeof fetch = (input, init) => {
      if (init?.method === 'POST' && typeof init.body === 'string')
        sent.push({ headers: new Headers(init.headers), body: init.body });
      return fetch(input, init);
    };
    const { client, protocolVersion } = track(await connectV2Client(edge.url, { fetch: recording }));
    expect(protocolVersion()).toBe(MODERN);

    expect((await client.listTools()).tools.map((t) => t.name)).toContain('m\u00e9t\u00e9o');
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'through' } }))).toBe('through');
    expect(textOf(await client.callTool({ name: 'm\u00e9t\u00e9o', arguments: {} }))).toBe('ensoleill\u00e9');
    const prompt = await client.getPrompt({ name: 'gr\u00fc\u00dfe' });
    expect(JSON.stringify(prompt.messages)).toContain('hallo');
    const read = await client.readResource({ uri: 'file:///notes/summer.txt' });
    expect(JSON.stringify(read.contents)).toContain('chaud');

    // The client named the non-ASCII tool in its Base64 form, and the server got each POST as it was sent.
    const names = sent.map((s) => s.headers.get('mcp-name'));
    expect(names).toEqual(
      expect.arrayContaining([
        'echo',
        sentinel('m\u00e9t\u00e9o'),
        sentinel('gr\u00fc\u00dfe'),
        'file:///notes/summer.txt',
      ]),
    );
    const posts = server.requests.filter((r) => r.method === 'POST');
    expect(posts.map((r) => r.body.toString())).toEqual(sent.map((s) => s.body));
    expect(posts.map((r) => [r.headers['mcp-method'], r.headers['mcp-name']])).toEqual(
      sent.map((s) => [s.headers.get('mcp-method') ?? undefined, s.headers.get('mcp-name') ?? undefined]),
    );
    expect(edge.logs.filter((l) => l.msg === 'exchange').every((l) => l.outcome === 'forwarded')).toBe(true);
  });
});
