// OpenTelemetry traces through the real proxy: a real OTLP/HTTP receiver, real SDK clients and servers, the
// edge's spans as the receiver decoded them.
import { randomBytes } from 'node:crypto';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectV1Client, connectV2Client, textOf } from '../support/clients.js';
import { sample } from '../support/exposition.js';
import { initializeRaw, MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { headerValue } from '../support/recorded-request.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startV2Server } from '../support/sdk-v2-server.js';
import { STDIO_SERVERS } from '../support/stdio-edge.js';
import { startTracedEdge, startTracedStdioEdge } from '../support/traced-edge.js';

const { track } = trackHandles();

/** A client's own span: a fresh trace id and span id, sampled. */
function clientTraceparent(): { traceId: string; spanId: string; header: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

const SERVER_KIND = 2;
const ERROR_STATUS = 2;

const named = (name: string, traceId?: string) => (span: ReceivedSpan) =>
  span.name === name && (traceId === undefined || span.traceId === traceId);

async function one(
  receiver: Awaited<ReturnType<typeof startOtlpReceiver>>,
  name: string,
  traceId?: string,
): Promise<ReceivedSpan> {
  const [span] = await receiver.waitFor(named(name, traceId));
  return span!;
}

/** POSTs `body` on the session (a 2025-03-26 batch when an array) with the client's traceparent. */
function postTraced(
  url: string,
  sessionId: string | null,
  traceparent: string,
  body: unknown,
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      ...MCP_POST_HEADERS,
      'mcp-protocol-version': '2025-03-26',
      'mcp-session-id': sessionId ?? '',
      traceparent,
    },
    body: JSON.stringify(body),
  });
}

describe('traces of an HTTP upstream, SDK v1 client and server', () => {
  it("continues the client's trace; the upstream's traceparent names the edge's span; the log line names both", async () => {
    const receiver = track(await startOtlpReceiver());
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTracedEdge(server.url, receiver.url));
    const client = clientTraceparent();
    const connected = track(await connectV1Client(edge.url, { headers: { traceparent: client.header } }));
    await connected.client.callTool({ name: 'echo', arguments: { text: 'hello' } });
    // No protocol named: the specification's default, decoded with the OpenTelemetry project's .proto files.
    await receiver.waitFor(named('tools/call echo', client.traceId));
    expect([...receiver.contentTypes]).toEqual(['application/x-protobuf']);

    const call = await one(receiver, 'tools/call echo', client.traceId);
    const exchange = receiver.spans.find((s) => s.spanId === call.parentSpanId);
    expect(exchange).toMatchObject({
      name: 'POST /mcp',
      kind: SERVER_KIND,
      traceId: client.traceId,
      parentSpanId: client.spanId,
    });
    expect(exchange?.resource['service.name']).toBe('edge-under-test');
    expect(call.kind).toBe(SERVER_KIND);
    expect(call.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'echo',
      'gen_ai.operation.name': 'execute_tool',
      'mcp.session.id': connected.sessionId(),
      'mcp.protocol.version': '2025-11-25',
      'network.transport': 'tcp',
      'mcp_edge.verdict': 'forwarded',
      'mcp_edge.ceiling.name': 'response.maxMessageBytes',
    });
    expect(typeof call.attributes['jsonrpc.request.id']).toBe('string');
    expect(call.attributes['mcp_edge.response.content_bytes']).toBeGreaterThan(0);
    expect(call.status.code).not.toBe(ERROR_STATUS);
    expect(exchange?.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'mcp_edge.outcome': 'forwarded',
      'mcp_edge.tenant': 'default',
    });

    // The upstream's request for this call carries the edge's exchange span as its parent: one request
    // names that span, and none the client's own (the edge's span stands between them).
    const traceparents = server.requests
      .filter((r) => r.method === 'POST')
      .map((r) => headerValue(r.headers, 'traceparent'));
    expect(traceparents.filter((t) => t === `00-${client.traceId}-${exchange?.spanId}-01`)).toHaveLength(1);
    expect(traceparents.every((t) => t?.startsWith(`00-${client.traceId}-`))).toBe(true);
    expect(traceparents).not.toContain(client.header);
    const line = edge.logs.find(
      (l) => l.msg === 'exchange' && Array.isArray(l.rpc) && l.rpc.includes('tools/call'),
    );
    expect(line?.trace_id).toBe(client.traceId);
    expect(line?.span_id).toBe(exchange?.spanId);
  });

  it("a client's trace it did not sample: no span is exported; the upstream and the log line continue it unsampled", async () => {
    const receiver = track(await startOtlpReceiver());
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTracedEdge(server.url, receiver.url));
    const unsampled = clientTraceparent();
    const notSampled = `00-${unsampled.traceId}-${unsampled.spanId}-00`;
    const first = track(await connectV1Client(edge.url, { headers: { traceparent: notSampled } }));
    await first.client.callTool({ name: 'echo', arguments: { text: 'not sampled' } });
    // A sampled client after it: its spans are exported after any of the first client's would have been.
    const sampled = clientTraceparent();
    const second = track(await connectV1Client(edge.url, { headers: { traceparent: sampled.header } }));
    await second.client.callTool({ name: 'echo', arguments: { text: 'sampled' } });
    await receiver.waitFor(named('tools/call echo', sampled.traceId));

    expect(receiver.spans.filter((span) => span.traceId === unsampled.traceId)).toEqual([]);
    const traceparents = server.requests
      .map((r) => headerValue(r.headers, 'traceparent'))
      .filter((t) => t?.includes(unsampled.traceId));
    expect(traceparents.length).toBeGreaterThan(0);
    for (const traceparent of traceparents) {
      expect(traceparent).toMatch(new RegExp(`^00-${unsampled.traceId}-[0-9a-f]{16}-00$`));
      expect(traceparent).not.toBe(notSampled);
    }
    const line = edge.logs.find(
      (l) =>
        l.msg === 'exchange' &&
        Array.isArray(l.rpc) &&
        l.rpc.includes('tools/call') &&
        l.trace_id === unsampled.traceId,
    );
    expect(line?.span_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('names tools/list, resources/read and prompts/get spans per the MCP conventions (over http/json)', async () => {
    const receiver = track(await startOtlpReceiver());
    const server = track(await startV1Server({ mode: 'json' }));
    const edge = track(await startTracedEdge(server.url, receiver.url, '', { protocol: 'http/json' }));
    const { client } = track(await connectV1Client(edge.url));
    await client.listTools();
    await client.readResource({ uri: 'demo://readme' });
    await client.getPrompt({ name: 'summarize_report', arguments: { topic: 'q3' } });

    const list = await one(receiver, 'tools/list');
    expect(list.attributes['mcp.method.name']).toBe('tools/list');
    expect(list.attributes['gen_ai.tool.name']).toBeUndefined();
    expect(list.attributes['mcp_edge.response.bytes']).toBeGreaterThan(0);
    const read = await one(receiver, 'resources/read');
    expect(read.attributes).toMatchObject({
      'mcp.method.name': 'resources/read',
      'mcp.resource.uri': 'demo://readme',
      'mcp_edge.verdict': 'forwarded',
    });
    expect([...receiver.contentTypes]).toEqual(['application/json']);
    const prompt = await one(receiver, 'prompts/get summarize_report');
    expect(prompt.attributes['gen_ai.prompt.name']).toBe('summarize_report');
    // A notification gets its own span, without a request id.
    const initialized = await one(receiver, 'notifications/initialized');
    expect(initialized.attributes['jsonrpc.request.id']).toBeUndefined();
  });

  it('an oversized answer: an error span with the ceiling, its value and the size observed', async () => {
    const receiver = track(await startOtlpReceiver());
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTracedEdge(server.url, receiver.url, 'limits: { response: { maxMessageBytes: 4KiB } }'),
    );
    const { client } = track(await connectV1Client(edge.url));
    await expect(client.callTool({ name: 'sized', arguments: { bytes: 20_000 } })).rejects.toBeInstanceOf(
      McpError,
    );

    const call = await one(receiver, 'tools/call sized');
    expect(call.status).toEqual({
      code: ERROR_STATUS,
      message: 'mcp-edge replaced it: response.maxMessageBytes',
    });
    expect(call.attributes).toMatchObject({
      'mcp_edge.verdict': 'replaced',
      'mcp_edge.ceiling.name': 'response.maxMessageBytes',
      'mcp_edge.ceiling.value': 4096,
      'rpc.response.status_code': expect.any(String),
      'error.type': call.attributes['rpc.response.status_code'],
    });
    // The edge stopped reading at the ceiling: what it saw is a lower bound, and says so.
    expect(call.attributes['mcp_edge.observed']).toBeGreaterThan(4096);
    expect(call.attributes['mcp_edge.observed_is_lower_bound']).toBe(true);
    const exchange = receiver.spans.find((s) => s.spanId === call.parentSpanId);
    expect(exchange?.attributes['mcp_edge.outcome']).toBe('response_replaced');
    // The answer's ceiling is on the request's span, never on the exchange's.
    expect(exchange?.attributes['mcp_edge.ceiling.name']).toBeUndefined();
    expect(exchange?.status.code).toBe(ERROR_STATUS);
  });

  it('a batch gives one child span per request, each with its own id', async () => {
    const receiver = track(await startOtlpReceiver());
    const server = track(await startV1Server({ mode: 'json' }));
    const edge = track(await startTracedEdge(server.url, receiver.url));
    const { sessionId } = await initializeRaw(edge.url);
    const client = clientTraceparent();
    const res = await postTraced(edge.url, sessionId, client.header, [
      { jsonrpc: '2.0', id: 'a', method: 'tools/list' },
      { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } },
    ]);
    await res.arrayBuffer();

    const [exchange] = await receiver.waitFor((s) => s.traceId === client.traceId && s.name === 'POST /mcp');
    const children = await receiver.waitFor((s) => s.parentSpanId === exchange?.spanId, 2);
    expect(children.map((s) => [s.name, s.attributes['jsonrpc.request.id']]).sort()).toEqual([
      ['tools/call echo', 'b'],
      ['tools/list', 'a'],
    ]);
  });

  it("a client's long and unprintable names and ids: the spans carry their bounded forms, escaped", async () => {
    const receiver = track(await startOtlpReceiver());
    const server = track(await startV1Server({ mode: 'json' }));
    const edge = track(await startTracedEdge(server.url, receiver.url));
    const { sessionId } = await initializeRaw(edge.url);
    const client = clientTraceparent();
    const tool = `\u001b]0;owned\u0007${'t'.repeat(200_000)}`;
    const id = `\u001b[2J${'i'.repeat(100_000)}`;
    const res = await postTraced(edge.url, sessionId, client.header, {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: tool, arguments: {} },
    });
    // The upstream got the name whole and answered for that id (an unknown tool).
    expect(((await res.json()) as { id: unknown }).id).toBe(id);

    const [exchange] = await receiver.waitFor((s) => s.traceId === client.traceId && s.name === 'POST /mcp');
    const [call] = await receiver.waitFor((s) => s.parentSpanId === exchange?.spanId);
    const shownTool = call!.attributes['gen_ai.tool.name'] as string;
    const shownId = call!.attributes['jsonrpc.request.id'] as string;
    expect(call!.name).toBe(`tools/call ${shownTool}`);
    for (const shown of [shownTool, shownId]) {
      expect(shown.length).toBeLessThanOrEqual(128);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: no control character may reach a span
      expect(shown).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    }
    expect(shownTool).toMatch(/^\\u001b\]0;owned\\u0007t+…#[0-9a-f]{32}$/);
    expect(shownId).toMatch(/^\\u001b\[2Ji+…#[0-9a-f]{32}$/);
  });

  it('a batch past maxRequestSpans: spans for the first requests only, the rest counted; every answer delivered', async () => {
    const receiver = track(await startOtlpReceiver());
    const server = track(await startV1Server({ mode: 'json' }));
    const edge = track(
      await startTracedEdge(server.url, receiver.url, '', { traces: 'maxRequestSpans: 2', metrics: true }),
    );
    const { sessionId } = await initializeRaw(edge.url);
    const client = clientTraceparent();
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const res = await postTraced(
      edge.url,
      sessionId,
      client.header,
      ids.map((id) => ({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: id } },
      })),
    );
    const answers = (await res.json()) as { id: string }[];
    expect(answers.map((a) => a.id).sort()).toEqual(ids);

    const [exchange] = await receiver.waitFor((s) => s.traceId === client.traceId && s.name === 'POST /mcp');
    expect(exchange?.attributes['mcp_edge.request_spans_skipped']).toBe(3);
    // Spans go out in the order they end, one export at a time, and the exchange's ends after its requests':
    // once it arrived, every request span of the batch had.
    const children = receiver.spans.filter((s) => s.parentSpanId === exchange?.spanId);
    expect(children.map((s) => s.attributes['jsonrpc.request.id']).sort()).toEqual(['a', 'b']);
    const text = await (await fetch(edge.metricsUrl ?? '')).text();
    expect(sample(text, 'mcp_edge_spans_dropped_total', { reason: 'exchange_bound' })).toBe(3);
  });

  it('puts the MCP attributes on the MCP spans, and on the exchange span only when it has none (a DELETE)', async () => {
    const receiver = track(await startOtlpReceiver());
    const server = track(await startV1Server({ mode: 'json' }));
    const edge = track(await startTracedEdge(server.url, receiver.url));
    const { sessionId } = await initializeRaw(edge.url);
    const headers = {
      ...MCP_POST_HEADERS,
      'mcp-protocol-version': '2025-11-25',
      'mcp-session-id': sessionId ?? '',
    };
    const mcp = {
      'mcp.session.id': sessionId,
      'mcp.protocol.version': '2025-11-25',
      'network.transport': 'tcp',
    };
    const call = clientTraceparent();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    await (
      await fetch(edge.url, { method: 'POST', headers: { ...headers, traceparent: call.header }, body })
    ).text();
    const [post] = await receiver.waitFor((s) => s.traceId === call.traceId && s.name === 'POST /mcp');
    const [list] = await receiver.waitFor((s) => s.parentSpanId === post?.spanId);
    expect(list?.attributes).toMatchObject(mcp);
    for (const name of Object.keys(mcp)) expect(post?.attributes[name]).toBeUndefined();

    const end = clientTraceparent();
    const session = { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId ?? '' };
    const deleting = await fetch(edge.url, {
      method: 'DELETE',
      headers: { ...session, traceparent: end.header },
    });
    await deleting.text();
    expect(deleting.status).toBe(200);
    const [deleted] = await receiver.waitFor((s) => s.traceId === end.traceId && s.name === 'DELETE /mcp');
    expect(deleted?.attributes).toMatchObject(mcp);
  });
});

describe('traces of other revisions and transports', () => {
  it('a 2026-07-28 client: spans without mcp.session.id', async () => {
    const receiver = track(await startOtlpReceiver());
    const server = track(await startV2Server());
    const edge = track(await startTracedEdge(server.url, receiver.url));
    const connected = track(await connectV2Client(edge.url));
    expect(connected.protocolVersion()).toBe('2026-07-28');
    await connected.client.callTool({ name: 'echo', arguments: { text: 'hi' } });

    const call = await one(receiver, 'tools/call echo');
    expect(call.attributes['mcp.protocol.version']).toBe('2026-07-28');
    expect(call.attributes['mcp.session.id']).toBeUndefined();
    const exchange = receiver.spans.find((s) => s.spanId === call.parentSpanId);
    expect(exchange?.attributes['mcp.session.id']).toBeUndefined();
  });

  it('a stdio upstream: network.transport is pipe', async () => {
    const receiver = track(await startOtlpReceiver());
    const edge = track(await startTracedStdioEdge(STDIO_SERVERS.everything, receiver.url));
    const { client } = track(await connectV1Client(edge.url));
    await client.callTool({ name: 'echo', arguments: { message: 'over a pipe' } });

    const call = await one(receiver, 'tools/call echo');
    expect(call.attributes['network.transport']).toBe('pipe');
    expect(call.attributes['mcp_edge.verdict']).toBe('forwarded');
  });

  it("a stdio child gets the edge's span as params._meta.traceparent, where MCP carries trace context", async () => {
    const receiver = track(await startOtlpReceiver());
    const edge = track(await startTracedStdioEdge(STDIO_SERVERS.v1Fixture, receiver.url));
    const client = clientTraceparent();
    const connected = track(await connectV1Client(edge.url, { headers: { traceparent: client.header } }));
    const result = await connected.client.callTool({ name: 'trace_meta', arguments: {} });

    const call = await one(receiver, 'tools/call trace_meta', client.traceId);
    expect(JSON.parse(textOf(result))).toEqual({
      traceparent: `00-${client.traceId}-${call.parentSpanId}-01`,
    });
  });
});
