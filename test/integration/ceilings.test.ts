// Ceilings enforced through the real proxy, seen the way SDK clients and raw HTTP clients see them.
import { gzipSync } from 'node:zlib';
import { ProtocolError } from '@modelcontextprotocol/client';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  LoggingMessageNotificationSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectV1Client, connectV2Client } from '../support/clients.js';
import { MCP_POST_HEADERS, rejectionOf, trackHandles } from '../support/handles.js';
import { nestedCall } from '../support/json-samples.js';
import { jsonReply, parseJsonBody, type RawReply, startRawUpstream } from '../support/raw-upstream.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startV2Server } from '../support/sdk-v2-server.js';
import { startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

const KiB = 1024;
const MCP_HEADERS = MCP_POST_HEADERS;
const LIMITS_64K = 'limits: { response: { maxMessageBytes: 64KiB } }';

interface ErrorData {
  reason: string;
  direction: string;
  limit: string;
  limitBytes: number;
  observedBytes: number;
  observedBytesIsLowerBound: boolean;
  tenant: string;
  method?: string;
  tool?: string;
  enforcedBy: string;
}

describe('an oversized tool result reaches the caller as a protocol error with the contract data', () => {
  for (const mode of ['stateful', 'json'] as const) {
    it(`SDK v1 client, SDK v1 server answering with ${mode === 'json' ? 'JSON' : 'SSE'}`, async () => {
      const server = track(await startV1Server({ mode }));
      const edge = track(await startTestEdge(server.url, LIMITS_64K));
      const { client } = track(await connectV1Client(edge.url));

      const err = await rejectionOf(client.callTool({ name: 'sized', arguments: { bytes: 100 * KiB } }));
      expect(err).toBeInstanceOf(McpError);
      const mcpError = err as McpError;
      expect(mcpError.code).toBe(-32603);
      const data = mcpError.data as ErrorData;
      expect(data).toMatchObject({
        reason: 'limit_exceeded',
        direction: 'response',
        limit: 'response.maxMessageBytes',
        limitBytes: 64 * KiB,
        // An answer is refused as soon as it crosses the ceiling (JSON body or SSE event): its size is a lower bound.
        observedBytesIsLowerBound: true,
        tenant: 'default',
        method: 'tools/call',
        tool: 'sized',
        enforcedBy: 'mcp-edge',
      });
      expect(data.observedBytes).toBeGreaterThan(64 * KiB);
      expect(mcpError.message).toContain('response.maxMessageBytes');

      // The session goes on: the next call is answered normally.
      const ok = (await client.callTool({
        name: 'echo',
        arguments: { text: 'still here' },
      })) as CallToolResult;
      expect(JSON.stringify(ok.content)).toContain('still here');
    });
  }

  it('SDK v2 client, SDK v2 server (2026-07-28)', async () => {
    const server = track(await startV2Server());
    const edge = track(await startTestEdge(server.url, LIMITS_64K));
    const { client } = track(await connectV2Client(edge.url));
    const err = await rejectionOf(client.callTool({ name: 'sized', arguments: { bytes: 100 * KiB } }));
    expect(err).toBeInstanceOf(ProtocolError);
    const protocolError = err as ProtocolError;
    expect(protocolError.code).toBe(-32603);
    expect(protocolError.data).toMatchObject({
      reason: 'limit_exceeded',
      limit: 'response.maxMessageBytes',
      tool: 'sized',
    });
  });

  it('a per-tool override lets one tool through that the default refuses', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(
        server.url,
        'limits: { response: { maxMessageBytes: 64KiB }, tools: { export_report: { response: { maxMessageBytes: 1MiB } } } }',
      ),
    );
    const { client } = track(await connectV1Client(edge.url));
    const report = (await client.callTool({
      name: 'export_report',
      arguments: { bytes: 200 * KiB },
    })) as CallToolResult;
    expect(report.content[0]?.type === 'text' ? report.content[0].text.length : 0).toBe(200 * KiB);
    const err = (await rejectionOf(
      client.callTool({ name: 'sized', arguments: { bytes: 200 * KiB } }),
    )) as McpError;
    expect((err.data as ErrorData).limitBytes).toBe(64 * KiB);
  });
});

describe('requests over a ceiling are refused with 413 and never reach the upstream', () => {
  it('an SDK client sees a transport error carrying the contract body', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, 'limits: { request: { maxMessageBytes: 64KiB } }'));
    const { client } = track(await connectV1Client(edge.url));
    const posts = () => server.requests.filter((r) => r.method === 'POST').length;
    const before = posts();
    const err = await rejectionOf(
      client.callTool({ name: 'echo', arguments: { text: 'x'.repeat(100 * KiB) } }),
    );
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(413);
    expect((err as Error).message).toContain('request.maxMessageBytes');
    expect(posts()).toBe(before);
  });

  it('a raw client gets the contract body for the body and for one message over its ceiling', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} })));
    const edge = track(
      await startTestEdge(
        upstream.url,
        'limits: { request: { maxBodyBytes: 64KiB, maxMessageBytes: 32KiB } }',
      ),
    );

    const tooLargeBody = `{"jsonrpc":"2.0","id":"call-9","method":"tools/call","params":{"name":"upload","arguments":{"blob":"${'a'.repeat(80 * KiB)}"}}}`;
    const res = await fetch(edge.url, { method: 'POST', headers: MCP_HEADERS, body: tooLargeBody });
    expect(res.status).toBe(413);
    const body = (await res.json()) as {
      id: unknown;
      error: { code: number; message: string; data: ErrorData };
    };
    // Refused by its Content-Length before a byte was read: the id is not known.
    expect(body.id).toBeNull();
    expect(body.error.code).toBe(-32600);
    expect(body.error.data).toMatchObject({
      reason: 'limit_exceeded',
      direction: 'request',
      limit: 'request.maxBodyBytes',
      limitBytes: 64 * KiB,
      observedBytes: Buffer.byteLength(tooLargeBody),
      observedBytesIsLowerBound: false,
      tenant: 'default',
      enforcedBy: 'mcp-edge',
    });

    const overMessage = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"upload","arguments":{"blob":"${'b'.repeat(40 * KiB)}"}}}`;
    const res2 = await fetch(edge.url, { method: 'POST', headers: MCP_HEADERS, body: overMessage });
    expect(res2.status).toBe(413);
    const body2 = (await res2.json()) as { id: unknown; error: { data: ErrorData } };
    expect(body2.id).toBe(5);
    expect(body2.error.data).toMatchObject({
      limit: 'request.maxMessageBytes',
      limitBytes: 32 * KiB,
      method: 'tools/call',
      tool: 'upload',
    });
    expect(upstream.received).toHaveLength(0);
  });

  it('refuses a chunked body at the ceiling, recovering the id from its start, without holding the rest', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} })));
    const edge = track(await startTestEdge(upstream.url, 'limits: { request: { maxBodyBytes: 16KiB } }'));
    let pulled = 0;
    const total = 64 * 1024 * KiB;
    const head = new TextEncoder().encode(
      '{"jsonrpc":"2.0","id":"call-9","method":"tools/call","params":{"name":"up","arguments":{"b":"',
    );
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled >= total) {
          controller.close();
          return;
        }
        const chunk = pulled === 0 ? head : new Uint8Array(64 * KiB).fill(0x61);
        pulled += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    const body = (await res.json()) as { id: unknown; error: { data: ErrorData } };
    expect(body.id).toBe('call-9');
    expect(body.error.data.observedBytesIsLowerBound).toBe(true);
    expect(body.error.data.observedBytes).toBeGreaterThan(16 * KiB);
    expect(pulled).toBeLessThan(total);
    expect(upstream.received).toHaveLength(0);
  });
});

describe('batches, notifications and server requests', () => {
  it('replaces only the oversized element of a JSON batch response', async () => {
    const small = '{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}';
    const huge = `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"${'z'.repeat(40 * KiB)}"}]}}`;
    const upstream = track(await startRawUpstream(() => jsonReply(`[${small},${huge}]`)));
    const edge = track(await startTestEdge(upstream.url, 'limits: { response: { maxMessageBytes: 32KiB } }'));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big"}}]',
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const items = JSON.parse(text) as Array<{
      id: number;
      result?: unknown;
      error?: { code: number; data: ErrorData };
    }>;
    expect(text.startsWith(`[${small},`)).toBe(true);
    expect(items[1]?.id).toBe(2);
    expect(items[1]?.error?.code).toBe(-32603);
    expect(items[1]?.error?.data).toMatchObject({
      tool: 'big',
      method: 'tools/call',
      observedBytes: Buffer.byteLength(huge),
    });
  });

  it('drops an oversized progress notification, tells the client in-band, and delivers the result', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, LIMITS_64K));
    const { client } = track(await connectV1Client(edge.url));
    const warnings: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      warnings.push(n.params);
    });
    const progress: unknown[] = [];
    const result = (await client.callTool(
      { name: 'big_progress', arguments: { bytes: 100 * KiB } },
      undefined,
      {
        onprogress: (p) => progress.push(p),
      },
    )) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(progress).toHaveLength(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      level: 'warning',
      logger: 'mcp-edge',
      data: { reason: 'limit_exceeded', method: 'notifications/progress', direction: 'response' },
    });
  });

  it('on the GET stream: drops an oversized notification and an oversized server request, answering the upstream for its id', async () => {
    const hugeNote = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${'n'.repeat(40 * KiB)}"}}`;
    const hugeRequest = `{"jsonrpc":"2.0","id":"srv-1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"${'q'.repeat(40 * KiB)}"}}],"maxTokens":5}}`;
    const small = '{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}';
    const upstream = track(
      await startRawUpstream((req): RawReply => {
        if (req.method === 'GET') {
          return {
            status: 200,
            headers: { 'content-type': 'text/event-stream' },
            chunks: [
              `id: e1\ndata: ${hugeNote}\n\n`,
              `id: e2\ndata: ${hugeRequest}\n\n`,
              `id: e3\ndata: ${small}\n\n`,
            ],
          };
        }
        return { status: 202, chunks: [] };
      }),
    );
    const edge = track(await startTestEdge(upstream.url, 'limits: { response: { maxMessageBytes: 32KiB } }'));
    const res = await fetch(edge.url, {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': 's-1' },
    });
    const text = await res.text();
    const events = text.split('\n\n').filter((e) => e.trim() !== '');
    expect(events).toHaveLength(3);
    expect(events[0]).toMatch(/^id: e1\nevent: message\ndata: /);
    expect(events[0]).toContain('"level":"warning"');
    expect(events[1]).toContain('sampling/createMessage');
    expect(events[2]).toBe(`id: e3\ndata: ${small}`);
    await expect
      .poll(() => upstream.received.filter((r) => r.method === 'POST').length, { timeout: 3000 })
      .toBe(1);
    const answer = parseJsonBody(upstream.received.find((r) => r.method === 'POST')!) as {
      id: string;
      error: { code: number; data: ErrorData };
    };
    expect(answer.id).toBe('srv-1');
    expect(answer.error.data).toMatchObject({ reason: 'limit_exceeded', method: 'sampling/createMessage' });
    expect(upstream.received.find((r) => r.method === 'POST')?.headers['mcp-session-id']).toBe('s-1');
  });
});

describe('a count ceiling: request.maxBatchMessages', () => {
  it('a 100,000-message batch gets 413 naming the ceiling, and nothing reaches the upstream', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} })));
    const edge = track(await startTestEdge(upstream.url, '', { metrics: true }));
    const body = `[${Array.from({ length: 100_000 }, () => '{"jsonrpc":"2.0","method":"a"}').join(',')}]`;
    expect(body.length).toBeLessThan(4 * 1024 * KiB);
    const res = await fetch(edge.url, { method: 'POST', headers: MCP_HEADERS, body });
    expect(res.status).toBe(413);
    const refused = (await res.json()) as { error: { message: string; data: Record<string, unknown> } };
    console.log(`[maxBatchMessages] ${res.status} ${JSON.stringify(refused)}`);
    expect(refused.error.data).toMatchObject({
      limit: 'request.maxBatchMessages',
      limitMessages: 10_000,
      observedMessages: 100_000,
      enforcedBy: 'mcp-edge',
    });
    expect(upstream.received).toHaveLength(0);
    const metrics = await (await fetch(edge.metricsUrl ?? '')).text();
    expect(metrics).toMatch(
      /mcp_edge_limit_exceeded_total\{limit="request.maxBatchMessages",direction="request",action="rejected"[^}]*\} 1/,
    );
    // A batch within the ceiling goes through as sent.
    const small = `[${Array.from({ length: 3 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"ping"}`).join(',')}]`;
    expect((await fetch(edge.url, { method: 'POST', headers: MCP_HEADERS, body: small })).status).toBe(200);
    expect(upstream.received[0]?.body.toString()).toBe(small);
  });
});

describe('a nesting ceiling: request.maxJsonDepth', () => {
  it('a request nested past 1,000 levels gets 400 with the error naming the ceiling, and nothing reaches the upstream', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} })));
    const edge = track(await startTestEdge(upstream.url, '', { metrics: true }));
    const res = await fetch(edge.url, { method: 'POST', headers: MCP_HEADERS, body: nestedCall(7, 1001) });
    expect(res.status).toBe(400);
    const refused = (await res.json()) as {
      id: unknown;
      error: { code: number; message: string; data: unknown };
    };
    expect(refused.id).toBe(7);
    expect(refused.error.code).toBe(-32600);
    expect(refused.error.message).toContain('request.maxJsonDepth limit of 1,000 levels');
    expect(refused.error.data).toEqual({
      reason: 'invalid_request',
      direction: 'request',
      limit: 'request.maxJsonDepth',
      limitLevels: 1000,
      observedLevels: 1001,
      observedLevelsIsLowerBound: false,
      tenant: 'default',
      method: 'tools/call',
      tool: 'deep',
      enforcedBy: 'mcp-edge',
    });
    expect(upstream.received).toHaveLength(0);
    const metrics = await (await fetch(edge.metricsUrl ?? '')).text();
    expect(metrics).toMatch(
      /mcp_edge_limit_exceeded_total\{limit="request.maxJsonDepth",direction="request",action="rejected"[^}]*\} 1/,
    );
    // At the ceiling, the request goes through as sent.
    const atCeiling = nestedCall(8, 1000);
    expect((await fetch(edge.url, { method: 'POST', headers: MCP_HEADERS, body: atCeiling })).status).toBe(
      200,
    );
    expect(upstream.received.map((r) => r.body.toString())).toEqual([atCeiling]);
  });

  it('the configured value decides: 20 levels refuses what the default forwards, a tenant with 0 has no ceiling', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} })));
    const edge = track(
      await startTestEdge(
        upstream.url,
        [
          'limits: { request: { maxJsonDepth: 20 } }',
          'tenancy: { resolve: [{ header: x-tenant-id, trustedProxies: [127.0.0.1/32, "::1/128"] }] }',
          'tenants: { open: { limits: { request: { maxJsonDepth: 0 } } } }',
        ].join('\n'),
      ),
    );
    const post = (body: string, tenant?: string) =>
      fetch(edge.url, {
        method: 'POST',
        headers: tenant === undefined ? MCP_HEADERS : { ...MCP_HEADERS, 'x-tenant-id': tenant },
        body,
      });
    expect((await post(nestedCall(1, 20))).status).toBe(200);
    const over = await post(nestedCall(2, 21));
    expect(over.status).toBe(400);
    expect(((await over.json()) as { error: { data: unknown } }).error.data).toMatchObject({
      limit: 'request.maxJsonDepth',
      limitLevels: 20,
      observedLevels: 21,
    });
    expect((await post(nestedCall(3, 5000), 'open')).status).toBe(200);
    expect(upstream.received.map((r) => JSON.parse(r.body.toString()).id)).toEqual([1, 3]);
  });
});

describe('boundaries are counted in UTF-8 bytes', () => {
  // A response whose envelope is exactly `bytes` long, ending in a text of multi-byte characters.
  function envelopeOf(bytes: number, filler: string): string {
    const head = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"';
    const tail = '"}]}}';
    const room = bytes - Buffer.byteLength(head + tail);
    const unit = Buffer.byteLength(filler);
    const text = 'a'.repeat(room % unit) + filler.repeat(Math.floor(room / unit));
    const out = head + text + tail;
    expect(Buffer.byteLength(out)).toBe(bytes);
    return out;
  }

  for (const [name, filler] of [
    ['ASCII', 'a'],
    ['2-byte', 'é'],
    ['3-byte', '世'],
    ['4-byte', '🌍'],
  ] as const) {
    it(`${name}: exactly the ceiling passes, one byte over is refused`, async () => {
      const ceiling = 4 * KiB;
      let next = '';
      const upstream = track(await startRawUpstream(() => jsonReply(next)));
      const edge = track(
        await startTestEdge(upstream.url, 'limits: { response: { maxMessageBytes: 4KiB } }'),
      );
      const call = async () =>
        fetch(edge.url, {
          method: 'POST',
          headers: MCP_HEADERS,
          body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}',
        });

      next = envelopeOf(ceiling, filler);
      const at = await call();
      expect(await at.text()).toBe(next);

      next = envelopeOf(ceiling + 1, filler);
      expect(next.length).toBeLessThanOrEqual(ceiling + 1);
      const over = (await (await call()).json()) as { error?: { data: ErrorData } };
      expect(over.error?.data).toMatchObject({ limitBytes: ceiling, observedBytes: ceiling + 1 });
    });
  }
});

describe('compressed and enormous upstream bodies', () => {
  it('measures a gzip-encoded upstream body decoded: small passes decoded, large is refused', async () => {
    let payload = '';
    const upstream = track(
      await startRawUpstream(() => ({
        status: 200,
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        chunks: [gzipSync(payload)],
      })),
    );
    const edge = track(await startTestEdge(upstream.url, 'limits: { response: { maxMessageBytes: 64KiB } }'));
    const call = () =>
      fetch(edge.url, {
        method: 'POST',
        headers: MCP_HEADERS,
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}',
      });

    payload = '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}';
    const small = await call();
    expect(small.headers.get('content-encoding')).toBeNull();
    expect(await small.text()).toBe(payload);

    // 8 MiB of zeros compresses to a few KiB: a bomb is just another oversized message.
    payload = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"${'0'.repeat(8 * 1024 * KiB)}"}]}}`;
    const large = (await (await call()).json()) as { error?: { data: ErrorData } };
    expect(large.error?.data).toMatchObject({ reason: 'limit_exceeded', observedBytesIsLowerBound: true });
  });

  it('answers a 1 GiB upstream body against a 4 MiB ceiling quickly, without holding it', async () => {
    const MiB = 1024 * KiB;
    const block = Buffer.alloc(MiB, 0x78);
    const upstream = track(
      await startRawUpstream(() => ({
        status: 200,
        headers: { 'content-type': 'application/json' },
        chunks: [
          '{"result":{"content":[{"type":"text","text":"',
          ...Array.from({ length: 1024 }, () => block),
          '"}]},"jsonrpc":"2.0","id":1}',
        ],
      })),
    );
    const edge = track(await startTestEdge(upstream.url, 'limits: { response: { maxMessageBytes: 4MiB } }'));
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    const started = Date.now();
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"dump"}}',
    });
    const body = (await res.json()) as { id: unknown; error: { data: ErrorData } };
    const elapsed = Date.now() - started;
    expect(body.id).toBe(1);
    expect(body.error.data).toMatchObject({
      limit: 'response.maxMessageBytes',
      limitBytes: 4 * MiB,
      tool: 'dump',
    });
    expect(elapsed).toBeLessThan(5000);
    // Generous margin: the exact figure is the benchmark's job.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * MiB);
  });

  it('replaces a 256 MiB SSE event and forwards the events around it (the answer a batch still waits for), with bounded memory', async () => {
    const MiB = 1024 * KiB;
    const block = Buffer.alloc(MiB, 0x79);
    const before =
      'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"before"}}\n\n';
    // The second call of the batch is answered after the oversized event, so the stream is read past it.
    const after = 'data: {"jsonrpc":"2.0","id":"r2","result":{"content":[]}}\n\n';
    const upstream = track(
      await startRawUpstream(() => ({
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        chunks: [
          before,
          'id: big\ndata: {"jsonrpc":"2.0","id":"r1","result":{"content":[{"type":"text","text":"',
          ...Array.from({ length: 256 }, () => block),
          '"}]}}\n\n',
          after,
        ],
      })),
    );
    const edge = track(await startTestEdge(upstream.url, 'limits: { response: { maxMessageBytes: 4MiB } }'));
    const rssBefore = process.memoryUsage().rss;
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '[{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"dump"}},{"jsonrpc":"2.0","id":"r2","method":"tools/call","params":{"name":"small"}}]',
    });
    const text = await res.text();
    const events = text.split('\n\n').filter((e) => e !== '');
    expect(events[0]).toBe(before.trim());
    // Replaced as soon as it crossed the ceiling, keeping its event id; the rest of the event was skipped unread.
    expect(events[1]).toMatch(/^id: big\nevent: message\ndata: /);
    const replaced = JSON.parse(events[1]!.split('data: ')[1]!) as { id: string; error: { data: ErrorData } };
    expect(replaced.id).toBe('r1');
    expect(replaced.error.data).toMatchObject({ observedBytesIsLowerBound: true, limitBytes: 4 * MiB });
    expect(replaced.error.data.observedBytes).toBeGreaterThan(4 * MiB);
    expect(events[2]).toBe(after.trim());
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * MiB);
  }, 60_000);
});

describe('observe mode', () => {
  it('changes no byte and records what would have been refused', async () => {
    const server = track(await startV1Server({ mode: 'json' }));
    const observing = track(
      await startTestEdge(server.url, 'limits: { mode: observe, response: { maxMessageBytes: 64KiB } }'),
    );
    const { client } = track(await connectV1Client(observing.url));
    const result = (await client.callTool({
      name: 'sized',
      arguments: { bytes: 100 * KiB },
    })) as CallToolResult;
    expect(result.content[0]?.type === 'text' ? result.content[0].text.length : 0).toBe(100 * KiB);
    const line = observing.logs.find((l) => Array.isArray(l.violations));
    expect(line?.violations).toEqual([
      expect.objectContaining({ limit: 'response.maxMessageBytes', action: 'observed' }),
    ]);
  });

  it('forwards an oversized SSE stream byte for byte', async () => {
    const stream = `id: 1\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"${'w'.repeat(100 * KiB)}"}]}}\r\n\r\n: tail\n\n`;
    const upstream = track(
      await startRawUpstream(() => ({
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        chunks: [stream.slice(0, 5000), stream.slice(5000)],
      })),
    );
    const edge = track(
      await startTestEdge(upstream.url, 'limits: { mode: observe, response: { maxMessageBytes: 64KiB } }'),
    );
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}',
    });
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(stream))).toBe(true);
  });
});
