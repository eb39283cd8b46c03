// The alert rules end to end: a real mcp-edge in front of a scripted upstream, scraped every second by a
// real Prometheus that evaluates deploy/prometheus/alerts.yaml. The rules are the shipped expressions with
// two changes so that a run of seconds shows each one fire and resolve: no hold time (`for`), and their
// rate windows shortened to 20 s. Each alert fires on traffic that should trip it, names what tripped it,
// and resolves once that traffic stops (or the file is fixed, or the edge is back). McpEdgeMemoryNearLimit
// needs a container memory limit and McpEdgeHostBudgetOverflow a host's budget: their scenarios are in
// test/deploy/alert-rules.test.ts (promtool over scripted series).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { isRecord } from '../../src/core/bytes.js';
import { connectV1Client } from '../support/clients.js';
import { sample } from '../support/exposition.js';
import { MCP_POST_HEADERS } from '../support/handles.js';
import { freePort } from '../support/ports.js';
import { prometheusInstalled, type RunningPrometheus, startPrometheus } from '../support/prometheus.js';
import { jsonReply, parseJsonBody, type RawUpstream, startRawUpstream } from '../support/raw-upstream.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';
import { STDIO_SERVERS, startStdioEdge } from '../support/stdio-edge.js';

const ALERTS_FILE = new URL('../../deploy/prometheus/alerts.yaml', import.meta.url);
const KiB = 1024;
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
/** What a message of each tool weighs against its 32 KiB ceiling. */
const SIZES: Record<string, number> = {
  near: 28_000, // 85%: near
  small: 17 * KiB, // 53%: not near, though it sits in the top half of its power-of-two bucket
  oversized: 40_000, // over: replaced, and near
};

interface Rule {
  alert: string;
  expr: string;
  for?: string;
}

/** The shipped rules without hold times, their windows 20 s. */
function liveRules(): string {
  const doc = parseYaml(readFileSync(ALERTS_FILE, 'utf8')) as { groups: { rules: Rule[] }[] };
  for (const group of doc.groups) {
    for (const rule of group.rules) {
      delete rule.for;
      rule.expr = rule.expr.replace(/\[(5m|10m|15m)\]/g, '[20s]');
    }
  }
  return JSON.stringify(doc);
}

const CONFIG = `
limits:
  response: { maxMessageBytes: 1MiB }
  tools:
    near: { response: { maxMessageBytes: 32KiB } }
    small: { response: { maxMessageBytes: 32KiB } }
    oversized: { response: { maxMessageBytes: 32KiB } }
`;

/** A tools/call result of `bytes` bytes for request `id`. */
function resultOf(id: unknown, bytes: number): string {
  const empty = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: '' }] } });
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    result: { content: [{ type: 'text', text: 'x'.repeat(bytes - empty.length) }] },
  });
}

let upstream: RawUpstream;
let prom: RunningPrometheus;
let edge: TestEdge;
let metricsPort: number;
let nextId = 1;
let releaseSlow: () => void = () => {};
const workDir = mkdtempSync(join(tmpdir(), 'mcp-edge-alerts-live-'));

async function startEdge(): Promise<TestEdge> {
  return startTestEdge(upstream.url, CONFIG, {
    metrics: true,
    metricsPort,
    fromFile: true,
    // One call connection, and a short wait for it: a call behind a held one gets a 503 at once.
    upstreamYaml: '  maxConnections: 1\n  timeouts: { queue: 100ms }',
  });
}

/** One tools/call through the edge; resolves with the status the client got. */
async function call(tool: string): Promise<number> {
  const res = await fetch(edge.url, {
    method: 'POST',
    headers: MCP_POST_HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: tool } }),
  });
  await res.arrayBuffer();
  return res.status;
}

interface ActiveAlert {
  labels: Record<string, string>;
  state: string;
}

async function firing(name: string): Promise<ActiveAlert[]> {
  const { alerts } = (await prom.api('/api/v1/alerts')) as { alerts: ActiveAlert[] };
  return alerts.filter((a) => a.labels.alertname === name && a.state === 'firing');
}

/** Keeps `traffic` going until `done` holds (checked between rounds); fails after `timeoutMs`. */
async function drive(
  traffic: () => Promise<unknown>,
  done: () => Promise<boolean>,
  what: string,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await traffic();
    if (await done()) return;
    if (Date.now() > deadline) {
      const { alerts } = (await prom.api('/api/v1/alerts')) as { alerts: ActiveAlert[] };
      throw new Error(`${what}: not within ${timeoutMs} ms; active: ${JSON.stringify(alerts)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const firingTools = async (name: string) => (await firing(name)).map((a) => a.labels.tool).sort();

beforeAll(async () => {
  if (!prometheusInstalled()) throw new Error('prometheus missing: apt-get install -y prometheus');
  upstream = await startRawUpstream(async (req) => {
    const message = parseJsonBody(req);
    if (!isRecord(message) || message.method !== 'tools/call' || !isRecord(message.params))
      return { status: 202 };
    const tool = String(message.params.name);
    if (tool === 'broken') return { status: 502, chunks: ['upstream failed'] };
    if (tool === 'slow') {
      const released = new Promise<void>((resolve) => {
        releaseSlow = resolve;
      });
      return {
        ...jsonReply(resultOf(message.id, 100)),
        chunks: [{ until: released }, resultOf(message.id, 100)],
      };
    }
    return jsonReply(resultOf(message.id, SIZES[tool] ?? 100));
  });
  metricsPort = await freePort();
  edge = await startEdge();
  const rules = join(workDir, 'alerts.yaml');
  writeFileSync(rules, liveRules());
  prom = await startPrometheus({
    scrapeTargets: [`127.0.0.1:${metricsPort}`],
    metricsPath: '/metrics',
    scrapeIntervalMs: 1000,
    ruleFiles: [rules],
  });
  await prom.waitForSeries('mcp_edge_build_info', 30_000);
}, 60_000);

afterAll(async () => {
  releaseSlow();
  await prom?.close();
  await edge?.stop();
  await upstream?.close();
  rmSync(workDir, { recursive: true, force: true });
});

describe('the alert rules against a real edge and a real Prometheus', () => {
  it('the shipped rules load and are healthy', async () => {
    const rules = (await prom.api('/api/v1/rules')) as {
      groups: { rules: { name: string; health: string }[] }[];
    };
    const loaded = rules.groups.flatMap((g) => g.rules);
    expect(loaded.length).toBe(10);
    for (const rule of loaded) expect(rule.health, rule.name).not.toBe('err');
  });

  it('near-ceiling, refused and upstream-failure traffic fires its alerts; ordinary traffic resolves them', async () => {
    expect(await call('near')).toBe(200);
    expect(await call('oversized')).toBe(200); // replaced by a limit error, for the same id
    expect(await call('broken')).toBe(502);
    // One call at a time: the edge has one call connection (for the capacity case below).
    const calls = (tools: string[]) => async () => {
      for (const tool of tools) await call(tool);
    };
    const bad = calls(['near', 'small', 'oversized', 'broken', 'oversized']);
    await drive(
      bad,
      async () =>
        (await firingTools('McpEdgeTenantNearCeiling')).join() === 'near,oversized' &&
        (await firing('McpEdgeRefusedResponsesSpike')).length === 1 &&
        (await firing('McpEdgeUpstreamFailures')).length === 1,
      'the three alerts firing',
    );
    // small sits at 53% of its ceiling: never near, whatever its bucket.
    expect(await firingTools('McpEdgeTenantNearCeiling')).toEqual(['near', 'oversized']);
    const [refused] = await firing('McpEdgeRefusedResponsesSpike');
    expect(refused?.labels).toMatchObject({ job: 'mcp-edge', tenant: 'default', upstream: upstream.url });

    await drive(
      calls(['small', 'small']),
      async () =>
        (await firing('McpEdgeTenantNearCeiling')).length === 0 &&
        (await firing('McpEdgeRefusedResponsesSpike')).length === 0 &&
        (await firing('McpEdgeUpstreamFailures')).length === 0,
      'the three alerts resolved',
    );
  }, 200_000);

  it('503s for want of a call connection fire McpEdgeUpstreamAtCapacity; it resolves when they stop', async () => {
    const held = call('slow');
    // Wait until the upstream has the slow call: its connection is then the one connection there is.
    await drive(
      async () => {},
      async () => upstream.received.some((r) => r.body.includes('"slow"')),
      'the slow call upstream',
    );
    expect(await call('small')).toBe(503);
    await drive(
      () => call('small'),
      async () => (await firing('McpEdgeUpstreamAtCapacity')).length === 1,
      'McpEdgeUpstreamAtCapacity firing',
    );
    expect((await firing('McpEdgeUpstreamAtCapacity'))[0]?.labels.tenant).toBe('default');
    releaseSlow();
    expect(await held).toBe(200);
    await drive(
      async () => expect(await call('small')).toBe(200),
      async () => (await firing('McpEdgeUpstreamAtCapacity')).length === 0,
      'McpEdgeUpstreamAtCapacity resolved',
    );
  }, 200_000);

  it('a stdio upstream at maxProcesses answers 503s the capacity rule selects (status 503, outcome upstream_capacity)', async () => {
    const stdio = await startStdioEdge(STDIO_SERVERS.v1Fixture, {
      stdioYaml: '    maxProcesses: 1',
      metrics: true,
    });
    try {
      const first = await connectV1Client(stdio.url);
      try {
        const refused = await fetch(stdio.url, {
          method: 'POST',
          headers: MCP_POST_HEADERS,
          body: INITIALIZE,
        });
        await refused.arrayBuffer();
        expect(refused.status).toBe(503);
      } finally {
        await first.close();
      }
      const text = await (await fetch(stdio.metricsUrl ?? '')).text();
      // The capacity rule's own selector, read from the shipped file.
      const rule = (parseYaml(readFileSync(ALERTS_FILE, 'utf8')) as { groups: { rules: Rule[] }[] }).groups
        .flatMap((g) => g.rules)
        .find((r) => r.alert === 'McpEdgeUpstreamAtCapacity');
      expect(rule?.expr).toContain('mcp_edge_requests_total{status="503", outcome="upstream_capacity"}');
      expect(sample(text, 'mcp_edge_requests_total', { status: '503', outcome: 'upstream_capacity' })).toBe(
        1,
      );
    } finally {
      await stdio.stop();
    }
  }, 60_000);

  it('a refused config file fires McpEdgeConfigReloadFailed; the fixed file resolves it', async () => {
    const file = edge.configFile ?? '';
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, `${good}\nlimits: { response: { maxMessageBytes: lots } }\n`);
    expect((await edge.reload()).ok).toBe(false);
    await drive(
      async () => {},
      async () => (await firing('McpEdgeConfigReloadFailed')).length === 1,
      'McpEdgeConfigReloadFailed firing',
    );
    writeFileSync(file, good);
    expect((await edge.reload()).ok).toBe(true);
    await drive(
      async () => {},
      async () => (await firing('McpEdgeConfigReloadFailed')).length === 0,
      'McpEdgeConfigReloadFailed resolved',
    );
  }, 200_000);

  it('a stopped edge fires McpEdgeDown; the edge back on its port resolves it', async () => {
    await edge.stop();
    await drive(
      async () => {},
      async () => (await firing('McpEdgeDown')).length === 1,
      'McpEdgeDown firing',
    );
    expect((await firing('McpEdgeDown'))[0]?.labels).toMatchObject({
      job: 'mcp-edge',
      instance: `127.0.0.1:${metricsPort}`,
    });
    edge = await startEdge();
    await drive(
      async () => {},
      async () => (await firing('McpEdgeDown')).length === 0,
      'McpEdgeDown resolved',
    );
  }, 200_000);
});
