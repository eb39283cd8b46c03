// Metrics as an operator sees them: scripted traffic through a real proxy to a real SDK server, the
// edge's metrics listener, and a real Prometheus scraping it.
import { describe, expect, it } from 'vitest';
import { connectV1Client } from '../support/clients.js';
import { sample } from '../support/exposition.js';
import { trackHandles } from '../support/handles.js';
import { startPrometheus, type VectorSample } from '../support/prometheus.js';
import { type RawReply, startRawUpstream } from '../support/raw-upstream.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

const KiB = 1024;

const TENANTS = `
limits: { response: { maxMessageBytes: 64KiB }, tools: { export_report: { response: { maxMessageBytes: 1MiB } } } }
tenancy:
  resolve:
    - header: x-tenant-id
      trustedProxies: [127.0.0.0/8]
tenants:
  acme: { limits: { response: { maxMessageBytes: 128KiB } } }
`;

describe('metrics after a scripted mix of traffic through the proxy', () => {
  it('holds every family with the expected labels, exact limit counts, and a real Prometheus scrapes it', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, TENANTS, { metrics: true }));
    const acme = track(await connectV1Client(edge.url, { headers: { 'x-tenant-id': 'acme' } }));
    const anon = track(await connectV1Client(edge.url));

    // acme: 1 ok + 2 refused responses; default: 3 refused responses, 1 refused request, 1 both-channel call.
    await acme.client.callTool({ name: 'sized', arguments: { bytes: 100 * KiB } });
    for (let i = 0; i < 2; i++)
      await acme.client.callTool({ name: 'sized', arguments: { bytes: 200 * KiB } }).catch(() => {});
    for (let i = 0; i < 3; i++)
      await anon.client.callTool({ name: 'sized', arguments: { bytes: 100 * KiB } }).catch(() => {});
    await anon.client
      .callTool({ name: 'echo', arguments: { text: 'r'.repeat(2 * 1024 * KiB) } })
      .catch(() => {});
    await anon.client.callTool({ name: 'weather_report', arguments: { city: 'Oslo' } });
    await anon.client.callTool({ name: 'export_report', arguments: { bytes: 300 * KiB } });

    const text = await (await fetch(edge.metricsUrl!)).text();
    const upstream = server.url;
    const rejected = (tenant: string, direction: string, limit: string, tool: string) =>
      sample(text, 'mcp_edge_limit_exceeded_total', {
        tenant,
        direction,
        limit,
        tool,
        action: 'rejected',
        upstream,
      });
    expect(rejected('acme', 'response', 'response.maxMessageBytes', 'sized')).toBe(2);
    expect(rejected('default', 'response', 'response.maxMessageBytes', 'sized')).toBe(3);
    expect(rejected('default', 'request', 'request.maxMessageBytes', 'echo')).toBe(1);
    expect(rejected('default', 'response', 'response.maxMessageBytes', 'export_report')).toBeUndefined();

    // Every message is measured, the refused ones too.
    expect(
      sample(text, 'mcp_edge_message_bytes_count', {
        direction: 'response',
        kind: 'result',
        method: 'tools/call',
        tool: 'sized',
        tenant: 'acme',
      }),
    ).toBe(3);
    expect(
      sample(text, 'mcp_edge_message_bytes_count', {
        direction: 'request',
        kind: 'request',
        method: 'tools/call',
        tool: 'weather_report',
        tenant: 'default',
      }),
    ).toBe(1);
    expect(
      sample(text, 'mcp_edge_result_channel_bytes_count', {
        channel: 'structured',
        tool: 'weather_report',
        tenant: 'default',
      }),
    ).toBe(1);
    expect(
      sample(text, 'mcp_edge_result_channel_bytes_count', {
        channel: 'content_text',
        tool: 'weather_report',
        tenant: 'default',
      }),
    ).toBe(1);
    expect(
      sample(text, 'mcp_edge_duplicated_bytes_total', { tool: 'weather_report', tenant: 'default' }),
    ).toBeGreaterThan(100);
    expect(
      sample(text, 'mcp_edge_limit_bytes', {
        tenant: 'acme',
        limit: 'response.maxMessageBytes',
        method: '',
        tool: '',
      }),
    ).toBe(128 * KiB);
    expect(
      sample(text, 'mcp_edge_limit_bytes', {
        tenant: 'default',
        limit: 'response.maxMessageBytes',
        tool: 'export_report',
      }),
    ).toBe(1024 * KiB);
    expect(
      sample(text, 'mcp_edge_requests_total', { tenant: 'default', http_method: 'POST', status: '413' }),
    ).toBe(1);
    expect(
      sample(text, 'mcp_edge_upstream_duration_seconds_count', { tenant: 'acme', status: '200' }),
    ).toBeGreaterThan(0);
    expect(sample(text, 'mcp_edge_sse_events_total', { tenant: 'acme' })).toBeGreaterThan(0);
    expect(text).toMatch(/mcp_edge_config_info\{[^}]*sha256="[0-9a-f]{64}"/);
    expect(text).toContain('process_resident_memory_bytes');

    // A real Prometheus scrapes the edge and answers queries over what it saw.
    const target = new URL(edge.metricsUrl!);
    const prometheus = track(
      await startPrometheus({
        scrapeTargets: [target.host],
        metricsPath: target.pathname,
        scrapeIntervalMs: 1000,
      }),
    );
    const result = await prometheus.waitForSeries(
      'sum by (tenant) (mcp_edge_limit_exceeded_total{action="rejected",direction="response"})',
      20_000,
    );
    const byTenant = Object.fromEntries(
      (result.result as VectorSample[]).map((s) => [s.metric.tenant, Number(s.value[1])]),
    );
    expect(byTenant).toEqual({ acme: 2, default: 3 });
  }, 60_000);

  it('the SSE streams gauge follows open streams', async () => {
    const upstream = track(
      await startRawUpstream(
        (): RawReply => ({
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          chunks: [': open\n\n', { delayMs: 60_000 }],
        }),
      ),
    );
    const edge = track(await startTestEdge(upstream.url, '', { metrics: true }));
    const controller = new AbortController();
    const res = await fetch(edge.url, {
      method: 'GET',
      headers: { accept: 'text/event-stream' },
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    const open = await (await fetch(edge.metricsUrl!)).text();
    expect(sample(open, 'mcp_edge_sse_streams_active', { tenant: 'default' })).toBe(1);
    controller.abort();
    await expect
      .poll(
        async () =>
          sample(await (await fetch(edge.metricsUrl!)).text(), 'mcp_edge_sse_streams_active', {
            tenant: 'default',
          }),
        { timeout: 5000 },
      )
      .toBe(0);
  });
});

describe('cardinality stays bounded', () => {
  it('10,000 distinct tool and method names on the wire create no more than the cap of label values', async () => {
    const count = 10_000;
    // A hostile upstream: its SSE answer carries 10,000 notifications with distinct methods, then a batch of errors.
    const upstream = track(
      await startRawUpstream((req): RawReply => {
        const batch = JSON.parse(req.body.toString()) as { id: number }[];
        const notes = Array.from(
          { length: count },
          (_, i) => `data: {"jsonrpc":"2.0","method":"notifications/x_${i}"}\n\n`,
        );
        const answers = batch.map((r) => ({
          jsonrpc: '2.0',
          id: r.id,
          error: { code: -32602, message: 'unknown tool' },
        }));
        return {
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          chunks: [notes.join(''), `data: ${JSON.stringify(answers)}\n\n`],
        };
      }),
    );
    const edge = track(
      await startTestEdge(upstream.url, 'limits: { request: { maxBodyBytes: 8MiB } }', { metrics: true }),
    );
    // ...and a client calls 10,000 distinct tools in one batch.
    const batch = Array.from({ length: count }, (_, i) => ({
      jsonrpc: '2.0',
      id: i,
      method: 'tools/call',
      params: { name: `tool_${i}` },
    }));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(batch),
    });
    expect(res.status).toBe(200);
    await res.text();
    const text = await (await fetch(edge.metricsUrl!)).text();
    const values = (label: string) =>
      new Set(
        text
          .split('\n')
          .filter((l) => l.startsWith('mcp_edge_message_bytes_count{'))
          .map((l) => new RegExp(`${label}="([^"]*)"`).exec(l)?.[1]),
      );
    const tools = values('tool');
    const methods = values('method');
    expect(tools.has('__other__')).toBe(true);
    expect(methods.has('__other__')).toBe(true);
    // The caps (200 tools, 100 methods), plus "" (none) and __other__.
    expect(tools.size).toBeLessThanOrEqual(200 + 2);
    expect(methods.size).toBeLessThanOrEqual(100 + 2);
    expect(tools.size).toBeGreaterThan(150);
    const series = text.split('\n').filter((l) => l.startsWith('mcp_edge_message_bytes_count{')).length;
    expect(series).toBeLessThan(1000);
  }, 60_000);
});
