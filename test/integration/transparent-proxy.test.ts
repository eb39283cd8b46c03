// mcp-edge as a transparent Streamable HTTP proxy: real SDK clients and servers through it, byte-exact
// forwarding, headers, statuses, and upstream failures.
import {
  type CallToolResult,
  LoggingMessageNotificationSchema,
  type Progress,
  ResourceListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectV1Client, connectV2Client } from '../support/clients.js';
import { initializeRaw, MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { freePort } from '../support/ports.js';
import { jsonReply, type RawReply, startRawUpstream } from '../support/raw-upstream.js';
import { startV1Server, type V1ServerMode } from '../support/sdk-v1-server.js';
import { startV2Server } from '../support/sdk-v2-server.js';
import { startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

function textOf(result: CallToolResult): string {
  const block = result.content[0];
  return block?.type === 'text' ? block.text : '';
}

const MCP_HEADERS = MCP_POST_HEADERS;

/** Reads an SSE response until `until` matches the text so far, then cancels it. */
async function readSseUntil(
  res: Response,
  until: (text: string) => boolean,
  timeoutMs = 10_000,
): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + timeoutMs;
  while (!until(text)) {
    if (Date.now() > deadline) throw new Error(`SSE did not match in time; got:\n${text.slice(0, 2000)}`);
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel().catch(() => {});
  return text;
}

describe.each<V1ServerMode>(['stateful', 'stateless', 'json'])(
  'SDK v1 client through mcp-edge to SDK v1 server (%s)',
  (mode) => {
    it('initializes, lists and calls tools, and receives progress', async () => {
      const server = track(await startV1Server({ mode }));
      const edge = track(await startTestEdge(server.url));
      const { client, sessionId } = track(await connectV1Client(edge.url));

      if (mode !== 'stateless') expect(server.sessionIds()).toEqual([sessionId()]);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(
        expect.arrayContaining(['echo', 'weather_report', 'slow_progress']),
      );

      const echoed = (await client.callTool({
        name: 'echo',
        arguments: { text: 'héllo 世界 🌍' },
      })) as CallToolResult;
      expect(textOf(echoed)).toContain('héllo 世界 🌍');

      const weather = (await client.callTool({
        name: 'weather_report',
        arguments: { city: 'Oslo' },
      })) as CallToolResult;
      expect(weather.structuredContent).toBeDefined();
      expect(JSON.parse(textOf(weather))).toEqual(weather.structuredContent);

      const progress: Progress[] = [];
      const slow = (await client.callTool(
        { name: 'slow_progress', arguments: { steps: 4, delayMs: 5 } },
        undefined,
        {
          onprogress: (p) => progress.push(p),
        },
      )) as CallToolResult;
      expect(slow.isError).toBeFalsy();
      // In JSON mode the SDK server answers with one JSON body and drops notifications sent before it.
      expect(progress.map((p) => p.progress)).toEqual(mode === 'json' ? [] : [1, 2, 3, 4]);

      // The upstream saw the MCP headers the client sent, and was asked for identity encoding.
      const toolCall = server.requests.find(
        (r) => r.method === 'POST' && r.headers['mcp-protocol-version'] !== undefined,
      );
      expect(toolCall?.headers['accept-encoding']).toBe('identity');
      expect(toolCall?.headers.accept).toContain('text/event-stream');
      if (mode !== 'stateless') expect(toolCall?.headers['mcp-session-id']).toBe(sessionId());
    });
  },
);

describe('sessions, the GET stream, DELETE and resumption through mcp-edge', () => {
  it('delivers server notifications on the standalone GET stream', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url));
    const { client } = track(await connectV1Client(edge.url));
    const logs: unknown[] = [];
    const changed: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params.data);
    });
    client.setNotificationHandler(ResourceListChangedNotificationSchema, (n) => {
      changed.push(n);
    });
    await client.callTool({ name: 'notify_on_get', arguments: {} });
    await expect.poll(() => changed.length, { timeout: 5000 }).toBeGreaterThan(0);
    expect(logs.length).toBeGreaterThan(0);
    expect(server.requests.some((r) => r.method === 'GET')).toBe(true);
  });

  it('ends a session with DELETE', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url));
    const { transport, sessionId } = track(await connectV1Client(edge.url));
    const id = sessionId();
    expect(server.sessionIds()).toContain(id);
    await transport.terminateSession();
    expect(server.requests.some((r) => r.method === 'DELETE')).toBe(true);
    await expect.poll(() => server.sessionIds().includes(id ?? ''), { timeout: 3000 }).toBe(false);
  });

  it("ends a session with a DELETE that carries the POST's content-type and no body, as the Python SDK sends it", async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url));
    const { sessionId } = await initializeRaw(edge.url);
    expect(server.sessionIds()).toContain(sessionId);
    // The Python SDK's streamable HTTP client puts these two headers on every request, DELETE included.
    const headers = {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-session-id': sessionId ?? '',
      'mcp-protocol-version': '2025-11-25',
    };
    const res = await fetch(edge.url, { method: 'DELETE', headers });
    expect(res.status, await res.text()).toBe(200);
    await expect.poll(() => server.sessionIds().includes(sessionId ?? ''), { timeout: 3000 }).toBe(false);
    const after = await fetch(edge.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(after.status).toBe(404);
  });

  it('resumes a stream with Last-Event-ID: the events after it are replayed through the edge', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url));
    const { sessionId } = await initializeRaw(edge.url);
    expect(sessionId).toBeTruthy();
    const headers = { ...MCP_HEADERS, 'mcp-session-id': sessionId!, 'mcp-protocol-version': '2025-11-25' };
    const post = await fetch(edge.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'slow_progress',
          arguments: { steps: 3, delayMs: 10 },
          _meta: { progressToken: 'p1' },
        },
      }),
    });
    expect(post.headers.get('content-type')).toContain('text/event-stream');
    const first = await readSseUntil(post, (t) => /"id":7/.test(t));
    const ids = [...first.matchAll(/^id: ?(.+)$/gm)].map((m) => m[1]!.trim());
    const progressEventIds = ids.filter((_, i) => i < ids.length - 1);
    expect(progressEventIds.length).toBeGreaterThanOrEqual(2);

    // Resume after the first progress event: the rest is replayed, ending with the result for id 7.
    const resumeFrom =
      ids.find((id) => first.includes(`id: ${id}\ndata: {"method":"notifications/progress"`)) ?? ids[1]!;
    const get = await fetch(edge.url, {
      method: 'GET',
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': sessionId!,
        'mcp-protocol-version': '2025-11-25',
        'last-event-id': resumeFrom,
      },
    });
    expect(get.status).toBe(200);
    const replay = await readSseUntil(get, (t) => /"id":7/.test(t));
    expect(replay).toContain('"result"');
    expect(replay).not.toContain(`id: ${resumeFrom}\n`);
    const upstreamGet = server.requests.find(
      (r) => r.method === 'GET' && r.headers['last-event-id'] !== undefined,
    );
    expect(upstreamGet?.headers['last-event-id']).toBe(resumeFrom);
  });
});

describe('SDK v2 client and server (2026-07-28) through mcp-edge', () => {
  it('negotiates the new revision, calls tools, and passes Mcp-Method / Mcp-Name', async () => {
    const server = track(await startV2Server());
    const edge = track(await startTestEdge(server.url));
    const connected = track(await connectV2Client(edge.url));
    expect(connected.protocolVersion()).toBe('2026-07-28');
    const { tools } = await connected.client.listTools();
    expect(tools.map((t) => t.name)).toContain('echo');
    const result = await connected.client.callTool({
      name: 'echo',
      arguments: { text: 'v2 through the edge' },
    });
    expect(JSON.stringify(result.content)).toContain('v2 through the edge');
    const call = server.requests.find((r) => r.headers['mcp-method'] === 'tools/call');
    expect(call?.headers['mcp-name']).toBe('echo');
    expect(server.requests.every((r) => r.headers['mcp-session-id'] === undefined)).toBe(true);
  });
});

describe('byte-exact forwarding', () => {
  const sseVariants: Record<string, string[]> = {
    LF: [
      ': comment line\n\n',
      'id: 1\nretry: 2500\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n',
      'data: {"jsonrpc":"2.0",\ndata: "id":1,"result":{"content":[{"type":"text","text":"multi\\nline"}]}}\n\n',
    ],
    CRLF: [
      ':keepalive\r\n\r\n',
      'id: a-1\r\nevent: message\r\ndata: {"jsonrpc":"2.0","id":1,\r\n',
      'data: "result":{"content":[]}}\r\n\r\n',
    ],
    CR: ['id: x\rdata: {"jsonrpc":"2.0","id":1,"result":{}}\r\r', ': bye\r\r'],
  };

  for (const [name, chunks] of Object.entries(sseVariants)) {
    it(`forwards an SSE stream with ${name} line endings byte for byte`, async () => {
      const upstream = track(
        await startRawUpstream(() => ({
          status: 200,
          headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
          chunks: chunks.flatMap((c) => [c, { delayMs: 5 }]),
        })),
      );
      const edge = track(await startTestEdge(upstream.url));
      const res = await fetch(edge.url, {
        method: 'POST',
        headers: MCP_HEADERS,
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}',
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream');
      expect(res.headers.get('x-accel-buffering')).toBe('no');
      expect(res.headers.get('cache-control')).toContain('no-transform');
      const received = Buffer.from(await res.arrayBuffer());
      expect(received.equals(Buffer.from(chunks.join(''), 'utf8'))).toBe(true);
    });
  }

  it('forwards a JSON body byte for byte, including its whitespace and key order', async () => {
    const body =
      '{ "result" : { "content" : [ { "type":"text", "text":"ünïcødé ✓" } ] },\n  "jsonrpc":"2.0", "id":1 }';
    const upstream = track(await startRawUpstream(() => jsonReply(body)));
    const edge = track(await startTestEdge(upstream.url));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}',
    });
    const received = Buffer.from(await res.arrayBuffer());
    expect(received.toString('utf8')).toBe(typeof body === 'string' ? body : JSON.stringify(body));
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
  });

  it('forwards a JSON body that arrives in many reads byte for byte, with its content-length', async () => {
    const text = 'é "quoted" \\ 😀 '.repeat(4000);
    const body = JSON.stringify({ result: { content: [{ type: 'text', text }] }, jsonrpc: '2.0', id: 1 });
    const bytes = Buffer.from(body, 'utf8');
    // Cut anywhere, inside multi-byte characters too, each piece its own write after a pause.
    const pieces: RawReply['chunks'] = [];
    for (let at = 0; at < bytes.length; at += 7919)
      pieces.push(bytes.subarray(at, at + 7919), { delayMs: 2 });
    const upstream = track(
      await startRawUpstream(() => ({
        status: 200,
        headers: { 'content-type': 'application/json', 'content-length': bytes.length },
        chunks: pieces,
      })),
    );
    const edge = track(await startTestEdge(upstream.url));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}',
    });
    const received = Buffer.from(await res.arrayBuffer());
    expect(received.equals(bytes)).toBe(true);
    expect(res.headers.get('content-length')).toBe(String(bytes.length));
  });

  it('streams SSE events as they come, not when the stream ends', async () => {
    const upstream = track(
      await startRawUpstream(() => ({
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        chunks: [
          'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"1"}}\n\n',
          { delayMs: 1500 },
          'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n',
        ],
      })),
    );
    const edge = track(await startTestEdge(upstream.url));
    const started = Date.now();
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).toContain('notifications/message');
    expect(Date.now() - started).toBeLessThan(1200);
    await reader.cancel();
  });
});

describe('headers and statuses pass as the transport needs', () => {
  it('passes MCP headers both ways and drops hop-by-hop headers', async () => {
    const upstream = track(
      await startRawUpstream(() => ({
        status: 401,
        headers: {
          'content-type': 'application/json',
          'www-authenticate':
            'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"',
          'mcp-session-id': 'sess-1',
          'keep-alive': 'timeout=5',
        },
        chunks: ['{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"unauthorized"}}'],
      })),
    );
    const edge = track(await startTestEdge(upstream.url));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: {
        ...MCP_HEADERS,
        authorization: 'Bearer secret-token',
        'mcp-session-id': 'sess-1',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'echo',
        'mcp-param-region': 'eu',
        'last-event-id': 'ev-9',
        te: 'trailers',
        'proxy-authorization': 'Basic eA==',
      },
      body: '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}',
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('resource_metadata');
    expect(res.headers.get('mcp-session-id')).toBe('sess-1');
    expect(res.headers.get('keep-alive')).not.toBe('timeout=5');
    const seen = upstream.received[0]!.headers;
    expect(seen.authorization).toBe('Bearer secret-token');
    expect(seen['mcp-session-id']).toBe('sess-1');
    expect(seen['mcp-protocol-version']).toBe('2026-07-28');
    expect(seen['mcp-method']).toBe('tools/call');
    expect(seen['mcp-name']).toBe('echo');
    expect(seen['mcp-param-region']).toBe('eu');
    expect(seen['last-event-id']).toBe('ev-9');
    expect(seen.te).toBeUndefined();
    expect(seen['proxy-authorization']).toBeUndefined();
    expect(seen['accept-encoding']).toBe('identity');
  });

  it.each([202, 400, 403, 404, 405, 406, 409, 413, 415])(
    'passes upstream status %i and its body unchanged',
    async (status) => {
      const body =
        status === 202
          ? ''
          : `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"status ${status}"}}`;
      const upstream = track(
        await startRawUpstream(() => ({
          status,
          headers: body ? { 'content-type': 'application/json' } : {},
          chunks: body ? [body] : [],
        })),
      );
      const edge = track(await startTestEdge(upstream.url));
      const res = await fetch(edge.url, {
        method: 'POST',
        headers: MCP_HEADERS,
        body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      });
      expect(res.status).toBe(status);
      expect(await res.text()).toBe(body);
    },
  );

  it('answers other methods on the endpoint with 405 and Allow, without asking the upstream', async () => {
    const upstream = track(await startRawUpstream(() => ({ status: 200, chunks: [] })));
    const edge = track(await startTestEdge(upstream.url));
    for (const method of ['PUT', 'PATCH']) {
      const res = await fetch(edge.url, { method, body: '{}' });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST, GET, DELETE');
      const error = (await res.json()) as { error: { data: { reason: string } } };
      expect(error.error.data.reason).toBe('method_not_allowed');
    }
    expect(upstream.received).toHaveLength(0);
  });

  it('serves /healthz and /readyz (ready only while the upstream is reachable)', async () => {
    // Readiness asks the endpoint a JSON-RPC ping (test/integration/http-readiness.test.ts): it answers one.
    const upstream = await startRawUpstream(() =>
      jsonReply({ jsonrpc: '2.0', id: 'mcp-edge-readiness', result: {} }),
    );
    const edge = track(await startTestEdge(upstream.url));
    const base = edge.url.replace(/\/mcp$/, '');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    await upstream.close();
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});

describe('upstream failures become explicit JSON-RPC errors, and the edge keeps serving', () => {
  it('answers 502 with the request id when the upstream is down, then recovers when it returns', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/mcp`;
    const edge = track(
      await startTestEdge(url, '', { upstreamYaml: '  timeouts: { connect: 2s, headers: 2s }' }),
    );
    const down = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":42,"method":"tools/list"}',
    });
    expect(down.status).toBe(502);
    const body = (await down.json()) as { id: unknown; error: { code: number; data: { reason: string } } };
    expect(body.id).toBe(42);
    expect(body.error.code).toBe(-32603);
    expect(body.error.data.reason).toBe('upstream_unreachable');

    const reply: RawReply = jsonReply({ jsonrpc: '2.0', id: 43, result: { tools: [] } });
    const upstream = track(await startRawUpstreamOn(port, () => reply));
    const up = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":43,"method":"tools/list"}',
    });
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ jsonrpc: '2.0', id: 43, result: { tools: [] } });
    expect(upstream.received).toHaveLength(1);
  });

  it('answers 504 within the configured headers timeout when the upstream is slow', async () => {
    const upstream = track(
      await startRawUpstream(async () => {
        await new Promise((resolve) => setTimeout(resolve, 3000));
        return jsonReply({ jsonrpc: '2.0', id: 'slow-1', result: {} });
      }),
    );
    const edge = track(
      await startTestEdge(upstream.url, '', { upstreamYaml: '  timeouts: { headers: 500ms }' }),
    );
    const started = Date.now();
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":"slow-1","method":"tools/list"}',
    });
    expect(res.status).toBe(504);
    expect(Date.now() - started).toBeLessThan(3000);
    const body = (await res.json()) as { id: unknown; error: { data: { reason: string } } };
    expect(body.id).toBe('slow-1');
    expect(body.error.data.reason).toBe('upstream_timeout');
  });

  it('keeps an idle SSE stream open past the configured body silence when idle is 0 (the default)', async () => {
    const upstream = track(
      await startRawUpstream(() => ({
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        chunks: [
          ': open\n\n',
          { delayMs: 1500 },
          'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"late"}}\n\n',
        ],
      })),
    );
    const edge = track(await startTestEdge(upstream.url, 'server: { timeouts: { keepAlive: 1s } }'));
    const res = await fetch(edge.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
    const text = await readSseUntil(res, (t) => t.includes('late'));
    expect(text).toContain(': open');
  });
});

async function startRawUpstreamOn(port: number, handler: () => RawReply) {
  // The raw upstream takes an ephemeral port; to come back "on the same address" we proxy a fixed port to it.
  const { createServer } = await import('node:http');
  const target = await startRawUpstream(handler);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const r = await fetch(target.url, {
        method: req.method,
        headers: req.headers as Record<string, string>,
        body: Buffer.concat(chunks),
      });
      res.writeHead(r.status, Object.fromEntries(r.headers));
      res.end(Buffer.from(await r.arrayBuffer()));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    received: target.received,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await target.close();
    },
  };
}
