// Host budgets, whole-call latency, tool errors and catalog weight, as an operator and a model see them:
// real SDK clients that name real hosts, a real SDK server, the edge's metrics listener.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectV1Client, connectV2Client, textOf } from '../support/clients.js';
import { sample, samples } from '../support/exposition.js';
import { trackHandles } from '../support/handles.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startV2Server } from '../support/sdk-v2-server.js';
import { startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

/** Log-like lines: about 60,000 tokens and 200,000 characters, over Claude Code's and Gemini CLI's budgets. */
const LOG_TEXT = Array.from(
  { length: 4000 },
  (_, i) => `record ${i}: status ok, host web-${i % 97}, latency ${(i * 37) % 1000} ms`,
).join('\n');

const TENANTS = `
tenancy:
  resolve:
    - header: x-tenant-id
      trustedProxies: [127.0.0.0/8]
tenants:
  acme: {}
hostBudgets:
  action: observe
  tenants:
    acme: { action: refuse }
`;

describe('host budgets', () => {
  it('counts an oversized result under the host that called and passes it unchanged in observe mode', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, TENANTS, { metrics: true }));
    const claude = track(await connectV1Client(edge.url, { name: 'claude-code' }));
    const gemini = track(await connectV1Client(edge.url, { name: 'gemini-cli-mcp-client' }));
    const unknown = track(await connectV1Client(edge.url, { name: 'acme-agent' }));

    for (const c of [claude, gemini, unknown]) {
      const result = await c.client.callTool({ name: 'echo', arguments: { text: LOG_TEXT } });
      expect(textOf(result)).toBe(LOG_TEXT);
    }
    // A small call is within every budget.
    await claude.client.callTool({ name: 'echo', arguments: { text: 'hello' } });

    const text = await (await fetch(edge.metricsUrl!)).text();
    const over = (host: string, unit: string) =>
      sample(text, 'mcp_edge_host_budget_exceeded_total', {
        host,
        unit,
        tenant: 'default',
        tool: 'echo',
        action: 'observed',
      });
    expect(over('claude-code', 'tokens')).toBe(1);
    expect(over('gemini-cli', 'characters')).toBe(1);
    // An unknown host has no budget: nothing is counted for it under any host.
    const hosts = samples(text, 'mcp_edge_host_budget_exceeded_total').map((s) => s.labels.host);
    expect(new Set(hosts)).toEqual(new Set(['claude-code', 'gemini-cli']));
    // Headroom: claude-code saw one call over 1 and one far within (the small echo).
    expect(sample(text, 'mcp_edge_host_budget_ratio_count', { host: 'claude-code', tenant: 'default' })).toBe(
      2,
    );
    expect(
      sample(text, 'mcp_edge_host_budget_ratio_bucket', { host: 'claude-code', tenant: 'default', le: '1' }),
    ).toBe(1);
  });

  it('refuses for a tenant set to refuse: the client gets an error naming the host and its budget', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, TENANTS, { metrics: true }));
    const claude = track(
      await connectV1Client(edge.url, { name: 'claude-code', headers: { 'x-tenant-id': 'acme' } }),
    );
    const gemini = track(
      await connectV1Client(edge.url, { name: 'gemini-cli-mcp-client', headers: { 'x-tenant-id': 'acme' } }),
    );
    const error = await claude.client.callTool({ name: 'echo', arguments: { text: LOG_TEXT } }).then(
      () => undefined,
      (e: unknown) => e as { code: number; message: string; data: Record<string, unknown> },
    );
    expect(error).toBeDefined();
    expect(error!.code).toBe(-32603);
    expect(error!.message).toContain('Claude Code');
    expect(error!.message).toContain('25,000-token budget');
    expect(error!.message).toMatch(/narrower arguments|pagination/);
    expect(error!.data).toMatchObject({
      reason: 'host_budget_exceeded',
      host: 'claude-code',
      unit: 'tokens',
      budget: 25_000,
      tenant: 'acme',
      tool: 'echo',
    });
    expect(error!.data.observed as number).toBeGreaterThan(25_000);

    const gError = await gemini.client.callTool({ name: 'echo', arguments: { text: LOG_TEXT } }).then(
      () => undefined,
      (e: unknown) => e as { message: string; data: Record<string, unknown> },
    );
    expect(gError?.data).toMatchObject({ host: 'gemini-cli', unit: 'characters', budget: 40_000 });
    expect(gError?.data.observed).toBe(LOG_TEXT.length);

    // Within the budget, the same tool is answered as the server sent it.
    const small = await claude.client.callTool({ name: 'echo', arguments: { text: 'hello' } });
    expect(textOf(small)).toBe('hello');

    const text = await (await fetch(edge.metricsUrl!)).text();
    expect(
      sample(text, 'mcp_edge_host_budget_exceeded_total', {
        host: 'claude-code',
        tenant: 'acme',
        tool: 'echo',
        action: 'refused',
      }),
    ).toBe(1);
    // The edge's own refusal is not a tool error from the server.
    expect(samples(text, 'mcp_edge_tool_errors_total')).toEqual([]);
    expect(edge.logText()).toContain('response_replaced');
  });

  it('refuses a JSON answer the same way, and logs which host budget the exchange crossed', async () => {
    const server = track(await startV1Server({ mode: 'json' }));
    const edge = track(await startTestEdge(server.url, TENANTS));
    const codex = track(
      await connectV1Client(edge.url, { name: 'codex-mcp-client', headers: { 'x-tenant-id': 'acme' } }),
    );
    const error = await codex.client.callTool({ name: 'echo', arguments: { text: LOG_TEXT } }).then(
      () => undefined,
      (e: unknown) => e as { message: string; data: Record<string, unknown> },
    );
    expect(error?.message).toContain('Codex CLI');
    expect(error?.data).toMatchObject({ host: 'codex', unit: 'bytes', budget: 10_240 });
    expect(error?.data.observed).toBe(Buffer.byteLength(LOG_TEXT));
    const line = edge.logs.find((l) => l.msg === 'exchange' && l.hostBudgets !== undefined);
    expect(line).toMatchObject({
      outcome: 'response_replaced',
      hostBudgets: [{ host: 'codex', tool: 'echo', unit: 'bytes', budget: 10_240, action: 'refused' }],
    });
  });

  it('in limits.mode observe forwards even where hostBudgets says refuse, and counts it as observed', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(server.url, `limits: { mode: observe }\n${TENANTS}`, { metrics: true }),
    );
    const claude = track(
      await connectV1Client(edge.url, { name: 'claude-code', headers: { 'x-tenant-id': 'acme' } }),
    );
    const result = await claude.client.callTool({ name: 'echo', arguments: { text: LOG_TEXT } });
    expect(textOf(result)).toBe(LOG_TEXT);
    const text = await (await fetch(edge.metricsUrl!)).text();
    expect(
      samples(text, 'mcp_edge_host_budget_exceeded_total').map((s) => [
        s.labels.host,
        s.labels.action,
        s.value,
      ]),
    ).toEqual([['claude-code', 'observed', 1]]);
  });

  it('identifies a 2026-07-28 v2 client through _meta clientInfo (no initialize)', async () => {
    const server = track(await startV2Server());
    const edge = track(await startTestEdge(server.url, TENANTS, { metrics: true }));
    const v2 = track(
      await connectV2Client(edge.url, { name: 'claude-code', headers: { 'x-tenant-id': 'acme' } }),
    );
    expect(v2.protocolVersion()).toBe('2026-07-28');
    const error = await v2.client.callTool({ name: 'echo', arguments: { text: LOG_TEXT } }).then(
      () => undefined,
      (e: unknown) => e as { message: string; data: Record<string, unknown> },
    );
    expect(error?.data).toMatchObject({
      reason: 'host_budget_exceeded',
      host: 'claude-code',
      budget: 25_000,
    });
    // The server never saw an initialize: the host came from each request's _meta.
    const bodies = server.requests.map((r) => r.body.toString('utf8'));
    expect(bodies.some((b) => b.includes('"method":"tools/call"'))).toBe(true);
    expect(bodies.some((b) => b.includes('"method":"initialize"'))).toBe(false);
    expect(bodies.some((b) => b.includes('io.modelcontextprotocol/clientInfo'))).toBe(true);
  });
});

describe('per-tool views', () => {
  it('times a 3 s streamed call as about 3 s and counts isError results by tool', async () => {
    const server = track(
      await startV1Server({
        mode: 'stateful',
        tools: (s) => {
          s.registerTool(
            'failing',
            { description: 'Always fails.', inputSchema: z.object({}) },
            async () => ({
              content: [{ type: 'text', text: 'it failed' }],
              isError: true,
            }),
          );
        },
      }),
    );
    const edge = track(await startTestEdge(server.url, '', { metrics: true }));
    const c = track(await connectV1Client(edge.url));
    await c.client.callTool({ name: 'slow_progress', arguments: { steps: 30, delayMs: 100 } }, undefined, {
      onprogress: () => {},
    });
    await c.client.callTool({ name: 'failing', arguments: {} });
    await c.client.callTool({ name: 'failing', arguments: {} });
    await c.client.callTool({ name: 'echo', arguments: { text: 'ok' } });

    const text = await (await fetch(edge.metricsUrl!)).text();
    const labels = { tenant: 'default', method: 'tools/call', tool: 'slow_progress' };
    const sum = sample(text, 'mcp_edge_call_duration_seconds_sum', labels)!;
    expect(sample(text, 'mcp_edge_call_duration_seconds_count', labels)).toBe(1);
    expect(sum).toBeGreaterThan(2.9);
    expect(sum).toBeLessThan(6);
    // The headers came early: the upstream-duration histogram alone would have said far less.
    expect(sample(text, 'mcp_edge_call_duration_seconds_bucket', { ...labels, le: '2.5' })).toBe(0);
    expect(
      sample(text, 'mcp_edge_tool_errors_total', { tenant: 'default', tool: 'failing', kind: 'is_error' }),
    ).toBe(2);
    expect(samples(text, 'mcp_edge_tool_errors_total').length).toBe(1);
  });

  it('weighs a 2,000-tool catalog: bounded per-tool gauges with the right bytes, and the total', async () => {
    const descriptors: { name: string; description: string }[] = [];
    const server = track(
      await startV1Server({
        mode: 'stateful',
        tools: (s) => {
          for (let i = 0; i < 2000; i++) {
            const name = `tool_${String(i).padStart(4, '0')}`;
            const description = `Tool number ${i}. ${'x'.repeat(i % 50)}`;
            if (descriptors.length < 2000) descriptors.push({ name, description });
            s.registerTool(name, { description, inputSchema: z.object({ q: z.string() }) }, async () => ({
              content: [],
            }));
          }
        },
      }),
    );
    const edge = track(await startTestEdge(server.url, '', { metrics: true }));
    const c = track(await connectV1Client(edge.url));
    const listed = await c.client.listTools();
    expect(listed.tools.length).toBeGreaterThanOrEqual(2000);

    const text = await (await fetch(edge.metricsUrl!)).text();
    const gauges = samples(text, 'mcp_edge_tool_descriptor_bytes');
    // The usual tool label bound (200) plus one __other__ series.
    expect(gauges.length).toBe(201);
    const bytesOf = (name: string) =>
      Buffer.byteLength(JSON.stringify(listed.tools.find((t) => t.name === name)), 'utf8');
    const named = gauges.filter((g) => g.labels.tool !== '__other__');
    for (const g of named.slice(0, 20)) expect(g.value).toBe(bytesOf(g.labels.tool!));
    const total = listed.tools.reduce((sum, t) => sum + Buffer.byteLength(JSON.stringify(t), 'utf8'), 0);
    expect(sample(text, 'mcp_edge_tool_catalog_bytes', { tenant: 'default' })).toBe(total);
    expect(sample(text, 'mcp_edge_tool_catalog_tools', { tenant: 'default' })).toBe(listed.tools.length);
    const other = gauges.find((g) => g.labels.tool === '__other__')!.value;
    expect(other + named.reduce((s, g) => s + g.value, 0)).toBe(total);
  });
});
