// What an operator reaches for on day two (issue 25), without sockets: build info, the outcome of the last
// config load, the count of messages near their own ceiling (judged by the real message verdict), and the
// series switches (token histograms, tool labels). The metrics table of docs/operations.md against the
// families the code registers.
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { LimitPolicy, MessageSubject } from '../../src/core/types.js';
import { judgeMessage } from '../../src/inspect/message-verdict.js';
import { combineObservers, ExchangeSummary } from '../../src/inspect/observer.js';
import { PendingRequests } from '../../src/inspect/pending-requests.js';
import { createEdgeMetrics, type EdgeMetrics } from '../../src/metrics/edge-metrics.js';
import { createFamilies, METRIC_NAMES } from '../../src/metrics/families.js';
import { OTHER_LABEL } from '../../src/metrics/label-guard.js';
import { QUOTA_METRIC_NAMES, quotaMetricsOf } from '../../src/metrics/quota-metrics.js';
import { memoryLimitOf } from '../../src/metrics/runtime-info.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';
import { samples } from '../support/exposition.js';

const UPSTREAM = 'http://127.0.0.1:3000/mcp';
const KiB = 1024;
const MiB = 1024 * KiB;
const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

function newMetrics(opts: Parameters<typeof createEdgeMetrics>[0] | object = {}): EdgeMetrics {
  return createEdgeMetrics({ upstream: UPSTREAM, collectDefault: false, ...opts });
}

async function exposition(metrics: EdgeMetrics): Promise<string> {
  return metrics.registry.metrics();
}

/** The one unlabelled (but for upstream) value of a gauge. */
function gaugeValue(text: string, name: string): number | undefined {
  return samples(text, name).find((s) => Object.keys(s.labels).length === 1)?.value;
}

describe('mcp_edge_build_info', () => {
  it('is 1 with the package version and the Node.js version', async () => {
    const text = await exposition(newMetrics());
    expect(samples(text, METRIC_NAMES.buildInfo)).toEqual([
      { labels: { version: PACKAGE_VERSION, node: process.versions.node, upstream: UPSTREAM }, value: 1 },
    ]);
  });
});

describe('the last config load', () => {
  it('starts as a success at the start time; a failure sets 0, the next success 1, each with its time', async () => {
    const before = Date.now() / 1000;
    const metrics = newMetrics();
    let text = await exposition(metrics);
    expect(gaugeValue(text, METRIC_NAMES.configLastReloadSuccess)).toBe(1);
    const started = gaugeValue(text, METRIC_NAMES.configLastReloadTimestamp) ?? 0;
    expect(started).toBeGreaterThanOrEqual(before);
    expect(started).toBeLessThanOrEqual(Date.now() / 1000);

    metrics.configReloaded('failure');
    text = await exposition(metrics);
    expect(gaugeValue(text, METRIC_NAMES.configLastReloadSuccess)).toBe(0);
    const failed = gaugeValue(text, METRIC_NAMES.configLastReloadTimestamp) ?? 0;
    expect(failed).toBeGreaterThanOrEqual(started);
    expect(samples(text, METRIC_NAMES.configReloads).map((s) => [s.labels.result, s.value])).toEqual([
      ['success', 0],
      ['failure', 1],
    ]);

    metrics.configReloaded('success');
    text = await exposition(metrics);
    expect(gaugeValue(text, METRIC_NAMES.configLastReloadSuccess)).toBe(1);
    expect(gaugeValue(text, METRIC_NAMES.configLastReloadTimestamp)).toBeGreaterThanOrEqual(failed);
  });
});

describe('a reload of the content that runs', () => {
  it('after a failure, reading back the running file is a success for the gauge, not a counted reload', async () => {
    const metrics = newMetrics();
    metrics.configReloaded('failure');
    metrics.configReloaded('unchanged');
    const text = await exposition(metrics);
    expect(gaugeValue(text, METRIC_NAMES.configLastReloadSuccess)).toBe(1);
    expect(samples(text, METRIC_NAMES.configReloads).map((s) => [s.labels.result, s.value])).toEqual([
      ['success', 0],
      ['failure', 1],
    ]);
  });
});

describe('mcp_edge_memory_limit_bytes', () => {
  it('is the cgroup limit when it is one, and absent for "none" (0, or not below the machine memory)', () => {
    const machine = 16 * 1024 * MiB;
    expect(memoryLimitOf(704 * MiB, machine)).toBe(704 * MiB);
    expect(memoryLimitOf(0, machine)).toBeUndefined();
    expect(memoryLimitOf(undefined, machine)).toBeUndefined();
    // cgroup v1 reports "no limit" as a number near 2^63; Node 20 passes 2^64 through.
    expect(memoryLimitOf(2 ** 64, machine)).toBeUndefined();
    expect(memoryLimitOf(machine, machine)).toBeUndefined();
  });
});

// ---- near the ceiling, judged where the ceiling is resolved --------------------------------------------

/** acme: 4 MiB for every response, 32 KiB for export (a tool override), 1 MiB for resources/read. */
const POLICY: LimitPolicy = {
  defaults: {
    response: { maxMessageBytes: 4 * MiB },
    methods: { 'resources/read': { response: { maxMessageBytes: MiB } } },
  },
  tenants: { acme: { limits: { tools: { export: { response: { maxMessageBytes: 32 * KiB } } } } } },
};

/** A tools/call result of exactly `bytes` bytes as sent. */
function resultOf(id: number, bytes: number): { bytes: Uint8Array; value: unknown } {
  const empty = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: '' }] } });
  const text = JSON.stringify({
    jsonrpc: '2.0',
    id,
    result: { content: [{ type: 'text', text: 'x'.repeat(bytes - empty.length) }] },
  });
  expect(text.length).toBe(bytes);
  return { bytes: new TextEncoder().encode(text), value: JSON.parse(text) };
}

/** Judges one answer of `bytes` to a request about `subject`, as a relay does, in `mode`. */
function judgeAnswer(
  metrics: EdgeMetrics,
  subject: MessageSubject,
  bytes: number,
  mode: 'enforce' | 'observe' = 'enforce',
): string {
  const pending = new PendingRequests({ maxEntries: 10, maxBytes: MiB, ttlMs: 60_000 });
  pending.remember(7, subject);
  const message = resultOf(7, bytes);
  const verdict = judgeMessage(
    {
      direction: 'response',
      tenant: 'acme',
      policy: POLICY,
      mode,
      observer: combineObservers(new ExchangeSummary(), metrics.observerFor('acme')),
      answered: pending,
      answeredInSession: undefined,
      remember: undefined,
      checks: CEILING_CHECKS,
    },
    message.bytes,
    message.value,
  );
  return verdict.action;
}

function nearCounts(text: string): Record<string, number> {
  return Object.fromEntries(
    samples(text, METRIC_NAMES.nearCeiling).map((s) => [
      `${s.labels.limit} ${s.labels.direction} ${s.labels.tenant} ${s.labels.method} ${s.labels.tool}`,
      s.value,
    ]),
  );
}

const EXPORT: MessageSubject = { method: 'tools/call', tool: 'export' };
const SEARCH: MessageSubject = { method: 'tools/call', tool: 'search' };
const READ: MessageSubject = { method: 'resources/read', tool: undefined };

describe('mcp_edge_near_ceiling_messages_total', () => {
  it('counts each message against its own ceiling: tool override, method override, tenant base', async () => {
    const metrics = newMetrics();
    // export (32 KiB): 17 KiB is 53%, not near; 27,000 B is 82%, near; 40,000 B is over, and near.
    expect(judgeAnswer(metrics, EXPORT, 17 * KiB)).toBe('forward');
    expect(judgeAnswer(metrics, EXPORT, 27_000)).toBe('forward');
    expect(judgeAnswer(metrics, EXPORT, 40_000)).toBe('replace');
    // search has no override: 40,000 B against the 4 MiB base is 1%.
    expect(judgeAnswer(metrics, SEARCH, 40_000)).toBe('forward');
    // resources/read (1 MiB): 900,000 B is 86%.
    expect(judgeAnswer(metrics, READ, 900_000)).toBe('forward');
    expect(nearCounts(await exposition(metrics))).toEqual({
      'response.maxMessageBytes response acme tools/call export': 2,
      'response.maxMessageBytes response acme resources/read ': 1,
    });
  });

  it('exactly at the share is not near; one byte above is (80% by default)', async () => {
    const metrics = newMetrics();
    const share = (32 * KiB * 80) / 100;
    judgeAnswer(metrics, EXPORT, Math.floor(share));
    expect(nearCounts(await exposition(metrics))).toEqual({});
    judgeAnswer(metrics, EXPORT, Math.floor(share) + 1);
    expect(nearCounts(await exposition(metrics))).toEqual({
      'response.maxMessageBytes response acme tools/call export': 1,
    });
  });

  it('counts in observe mode too, and follows metrics.nearCeilingPercent', async () => {
    const metrics = newMetrics({ nearCeilingPercent: 50 });
    expect(judgeAnswer(metrics, EXPORT, 17 * KiB, 'observe')).toBe('forward');
    expect(judgeAnswer(metrics, EXPORT, 40_000, 'observe')).toBe('forward');
    expect(judgeAnswer(metrics, EXPORT, 15 * KiB, 'observe')).toBe('forward');
    expect(nearCounts(await exposition(metrics))).toEqual({
      'response.maxMessageBytes response acme tools/call export': 2,
    });
  });
});

// ---- series switches -------------------------------------------------------------------------------------

/** A request and its answer for each tool, through the tenant's observers, as the relays report them. */
function traffic(metrics: EdgeMetrics, tools: readonly string[]): void {
  for (const tool of tools) {
    const subject = { method: 'tools/call', tool };
    judgeAnswer(metrics, subject, 2_000);
    metrics.callFinished({ tenant: 'acme', ...subject, seconds: 0.1 });
  }
}

describe('metrics.tokenHistograms and metrics.toolLabels', () => {
  it('tokenHistograms: false leaves the token family out; everything else is recorded as before', async () => {
    const on = newMetrics();
    const off = newMetrics({ tokenHistograms: false });
    traffic(on, ['export']);
    traffic(off, ['export']);
    const [withTokens, without] = [await exposition(on), await exposition(off)];
    expect(withTokens).toContain(`# TYPE ${METRIC_NAMES.messageTokens} histogram`);
    expect(without).not.toContain(METRIC_NAMES.messageTokens);
    const lines = (text: string) =>
      text.split('\n').filter((l) => l.startsWith('mcp_edge_') && !l.includes(METRIC_NAMES.messageTokens));
    // Build info and the start's timestamp differ only in time.
    const stable = (text: string) => lines(text).filter((l) => !l.includes('timestamp_seconds'));
    expect(stable(without)).toEqual(stable(withTokens));
  });

  it('toolLabels: none counts every tool as __other__; a list keeps only the tools it names', async () => {
    const tools = ['export', 'search', 'fetch'];
    const toolValues = async (metrics: EdgeMetrics) =>
      new Set(samples(await exposition(metrics), 'mcp_edge_message_bytes_count').map((s) => s.labels.tool));
    const all = newMetrics();
    const none = newMetrics({ toolLabels: 'none' });
    const some = newMetrics({ toolLabels: ['export'] });
    for (const metrics of [all, none, some]) {
      traffic(metrics, tools);
      // A name the upstream lists does not get past an explicit list.
      metrics.observerFor('acme').toolsListed?.(['search']);
      traffic(metrics, ['search']);
    }
    expect(await toolValues(all)).toEqual(new Set(tools));
    expect(await toolValues(none)).toEqual(new Set([OTHER_LABEL]));
    expect(await toolValues(some)).toEqual(new Set(['export', OTHER_LABEL]));
    const durations = samples(await exposition(some), 'mcp_edge_call_duration_seconds_count');
    expect(durations.map((s) => [s.labels.tool, s.value]).sort()).toEqual([
      ['__other__', 3],
      ['export', 1],
    ]);
  });
});

// ---- the documented table --------------------------------------------------------------------------------

/** What prom-client keeps on each family object. */
interface RegisteredFamily {
  name: string;
  type: string;
  labelNames?: readonly string[];
}

describe('docs/operations.md, "Metrics"', () => {
  it('lists every family the code can export, with its type and labels, and no other', () => {
    const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('\n## Metrics\n'), doc.indexOf('\n## The dashboard\n'));
    const rows = new Map<string, { type: string; labels: string[] }>();
    for (const match of section.matchAll(/^\| `(mcp_edge_\w+)` \| (\w+) \|([^|]*)\|/gm)) {
      const labels = (match[3] ?? '')
        .replace(/\([^)]*\)/g, '')
        .split(',')
        .map((l) => l.trim())
        .filter((l) => l !== '');
      rows.set(match[1] ?? '', { type: match[2] ?? '', labels: labels.sort() });
    }
    // Every family, the switched-off ones and the memory limit included (present under a limit).
    const registered = Object.values(
      createFamilies(new Registry()) as unknown as Record<string, RegisteredFamily>,
    ).map((family) => ({
      name: family.name,
      type: family.type,
      labels: [...(family.labelNames ?? [])].sort(),
    }));
    expect(registered.length).toBe(Object.keys(METRIC_NAMES).length);
    // The quota filter's families (src/metrics/quota-metrics.ts), registered when a config has quotas.
    const quotaRegistry = new Registry();
    quotaMetricsOf(quotaRegistry);
    for (const family of quotaRegistry.getMetricsAsArray() as unknown as RegisteredFamily[])
      registered.push({
        name: family.name,
        type: family.type,
        labels: [...(family.labelNames ?? [])].sort(),
      });
    expect(registered.length).toBe(Object.keys(METRIC_NAMES).length + Object.keys(QUOTA_METRIC_NAMES).length);
    const documented = [...rows].map(([name, row]) => ({ name, ...row }));
    expect(documented.sort(byName)).toEqual(registered.sort(byName));
  });
});

function byName(a: { name: string }, b: { name: string }): number {
  return a.name.localeCompare(b.name);
}
