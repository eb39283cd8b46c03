// The metrics recorder without sockets: record through the API, read the registry back, exact values.

import { totalmem } from 'node:os';
import { describe, expect, it } from 'vitest';
import { emptyChannels } from '../../src/core/measure.js';
import type {
  LimitPolicy,
  LimitViolation,
  MessageMeasurement,
  MessageSubject,
  ResultChannels,
} from '../../src/core/types.js';
import { createEdgeMetrics, type EdgeMetrics } from '../../src/metrics/edge-metrics.js';
import { BYTE_BUCKETS, METRIC_NAMES, TOKEN_BUCKETS } from '../../src/metrics/families.js';
import { LabelGuard, MAX_LABEL_VALUE_LENGTH, OTHER_LABEL } from '../../src/metrics/label-guard.js';
import { memoryLimitOf } from '../../src/metrics/runtime-info.js';

const UPSTREAM = 'http://127.0.0.1:3000/mcp';

type Labels = Record<string, string | number>;
interface Sample {
  labels: Labels;
  value: number;
  metricName?: string;
}

/** Every sample of one family (histograms: buckets, _sum and _count, told apart by metricName). */
async function samplesOf(metrics: EdgeMetrics, name: string): Promise<Sample[]> {
  const all = (await metrics.registry.getMetricsAsJSON()) as unknown as { name: string; values: Sample[] }[];
  const family = all.find((m) => m.name === name);
  if (family === undefined) throw new Error(`no family ${name}`);
  return family.values;
}

function sameLabels(actual: Labels, expected: Labels): boolean {
  const keys = Object.keys(expected);
  return (
    keys.length === Object.keys(actual).length && keys.every((k) => String(actual[k]) === String(expected[k]))
  );
}

/** The value of the one sample with exactly these labels (plus the upstream default label); undefined when absent. */
async function sampleValue(
  metrics: EdgeMetrics,
  metricName: string,
  labels: Labels,
  family = metricName,
): Promise<number | undefined> {
  const wanted = { ...labels, upstream: UPSTREAM };
  const matches = (await samplesOf(metrics, family)).filter(
    (s) => (s.metricName ?? family) === metricName && sameLabels(s.labels, wanted),
  );
  if (matches.length > 1)
    throw new Error(`${matches.length} samples of ${metricName} match ${JSON.stringify(labels)}`);
  return matches[0]?.value;
}

/** count, sum and the cumulative bucket counts (by le) of one histogram label set. */
async function histogram(metrics: EdgeMetrics, name: string, labels: Labels) {
  const buckets = new Map<string, number>();
  for (const s of await samplesOf(metrics, name)) {
    if (s.metricName !== `${name}_bucket`) continue;
    const { le, ...rest } = s.labels;
    if (sameLabels(rest, { ...labels, upstream: UPSTREAM })) buckets.set(String(le), s.value);
  }
  return {
    count: await sampleValue(metrics, `${name}_count`, labels, name),
    sum: await sampleValue(metrics, `${name}_sum`, labels, name),
    buckets,
  };
}

/** Distinct values of one label over a family's samples. */
async function labelValues(metrics: EdgeMetrics, family: string, label: string): Promise<Set<string>> {
  return new Set((await samplesOf(metrics, family)).map((s) => String(s.labels[label])));
}

const NO_CHANNELS: ResultChannels = emptyChannels();

function measurement(over: Partial<MessageMeasurement>): MessageMeasurement {
  return {
    envelopeBytes: 100,
    kind: 'request',
    id: 1,
    method: undefined,
    tool: undefined,
    channels: undefined,
    duplicatedBytes: 0,
    estimatedTokens: 25,
    ...over,
  };
}

function violation(over: Partial<LimitViolation>): LimitViolation {
  return {
    limit: 'response.maxMessageBytes',
    direction: 'response',
    limitValue: 1000,
    observedValue: 2000,
    observedIsLowerBound: false,
    tenant: 'acme',
    method: 'tools/call',
    tool: 'export',
    id: 1,
    ...over,
  };
}

const CALL_EXPORT: MessageSubject = { method: 'tools/call', tool: 'export' };

function newMetrics(opts: { maxToolLabels?: number; maxMethodLabels?: number } = {}): EdgeMetrics {
  return createEdgeMetrics({ upstream: UPSTREAM, collectDefault: false, ...opts });
}

describe('bucket layouts', () => {
  it('byte buckets are powers of 2 from 256 B to 64 MiB; token buckets powers of 4 from 64', () => {
    expect(BYTE_BUCKETS[0]).toBe(256);
    expect(BYTE_BUCKETS.at(-1)).toBe(64 * 1024 * 1024);
    for (let i = 1; i < BYTE_BUCKETS.length; i++) expect(BYTE_BUCKETS[i]).toBe(2 * BYTE_BUCKETS[i - 1]!);
    expect(TOKEN_BUCKETS[0]).toBe(64);
    expect(TOKEN_BUCKETS.at(-1)).toBe(16 * 1024 * 1024);
  });
});

describe('observerFor(tenant).message', () => {
  it('records envelope bytes and tokens by direction, kind, method, tool and tenant', async () => {
    const metrics = newMetrics();
    const acme = metrics.observerFor('acme');
    acme.message('request', measurement({ envelopeBytes: 300, estimatedTokens: 75 }), CALL_EXPORT);
    acme.message(
      'response',
      measurement({ kind: 'result', envelopeBytes: 5000, estimatedTokens: 1250 }),
      CALL_EXPORT,
    );
    acme.message(
      'response',
      measurement({ kind: 'result', envelopeBytes: 700, estimatedTokens: 175 }),
      CALL_EXPORT,
    );
    metrics
      .observerFor('globex')
      .message('request', measurement({ kind: 'notification', envelopeBytes: 80 }), {
        method: 'notifications/initialized',
        tool: undefined,
      });

    const responses = await histogram(metrics, METRIC_NAMES.messageBytes, {
      direction: 'response',
      kind: 'result',
      method: 'tools/call',
      tool: 'export',
      tenant: 'acme',
    });
    expect(responses.count).toBe(2);
    expect(responses.sum).toBe(5700);
    expect(responses.buckets.get('512')).toBe(0);
    expect(responses.buckets.get('1024')).toBe(1);
    expect(responses.buckets.get('4096')).toBe(1);
    expect(responses.buckets.get('8192')).toBe(2);
    expect(responses.buckets.get('+Inf')).toBe(2);

    const request = await histogram(metrics, METRIC_NAMES.messageBytes, {
      direction: 'request',
      kind: 'request',
      method: 'tools/call',
      tool: 'export',
      tenant: 'acme',
    });
    expect([request.count, request.sum, request.buckets.get('256'), request.buckets.get('512')]).toEqual([
      1, 300, 0, 1,
    ]);

    // No tool: the label is "" (absent once scraped).
    const notification = await histogram(metrics, METRIC_NAMES.messageBytes, {
      direction: 'request',
      kind: 'notification',
      method: 'notifications/initialized',
      tool: '',
      tenant: 'globex',
    });
    expect([notification.count, notification.sum, notification.buckets.get('256')]).toEqual([1, 80, 1]);

    const tokens = await histogram(metrics, METRIC_NAMES.messageTokens, {
      direction: 'response',
      method: 'tools/call',
      tool: 'export',
      tenant: 'acme',
    });
    expect([tokens.count, tokens.sum, tokens.buckets.get('256'), tokens.buckets.get('4096')]).toEqual([
      2, 1425, 1, 2,
    ]);
  });

  it('records each non-zero channel of a tool result and the duplicated bytes', async () => {
    const metrics = newMetrics();
    const acme = metrics.observerFor('acme');
    const channels: ResultChannels = {
      ...NO_CHANNELS,
      content_text: 1000,
      content_image: 3000,
      structured: 900,
    };
    acme.message(
      'response',
      measurement({ kind: 'result', envelopeBytes: 5200, channels, duplicatedBytes: 900 }),
      CALL_EXPORT,
    );
    acme.message(
      'response',
      measurement({ kind: 'result', envelopeBytes: 400, channels: { ...NO_CHANNELS, content_text: 300 } }),
      CALL_EXPORT,
    );

    const channelLabels = await labelValues(metrics, METRIC_NAMES.resultChannelBytes, 'channel');
    expect([...channelLabels].sort()).toEqual(['content_image', 'content_text', 'structured']);
    const text = await histogram(metrics, METRIC_NAMES.resultChannelBytes, {
      channel: 'content_text',
      tool: 'export',
      tenant: 'acme',
    });
    expect([text.count, text.sum]).toEqual([2, 1300]);
    const structured = await histogram(metrics, METRIC_NAMES.resultChannelBytes, {
      channel: 'structured',
      tool: 'export',
      tenant: 'acme',
    });
    expect([structured.count, structured.sum, structured.buckets.get('1024')]).toEqual([1, 900, 1]);
    expect(await sampleValue(metrics, METRIC_NAMES.duplicatedBytes, { tool: 'export', tenant: 'acme' })).toBe(
      900,
    );
  });

  it('does not count duplicated bytes when there are none', async () => {
    const metrics = newMetrics();
    metrics.observerFor('acme').message('response', measurement({ kind: 'result' }), CALL_EXPORT);
    expect(await samplesOf(metrics, METRIC_NAMES.duplicatedBytes)).toEqual([]);
  });
});

describe('observerFor(tenant).limitExceeded and unparsable', () => {
  it('counts each tripped ceiling by limit, direction, action, tenant, method and tool', async () => {
    const metrics = newMetrics();
    const acme = metrics.observerFor('acme');
    acme.limitExceeded(violation({}), 'rejected');
    acme.limitExceeded(violation({}), 'rejected');
    acme.limitExceeded(violation({}), 'observed');
    acme.limitExceeded(
      violation({ limit: 'request.maxBodyBytes', direction: 'request', method: undefined, tool: undefined }),
      'rejected',
    );

    const base = {
      limit: 'response.maxMessageBytes',
      direction: 'response',
      tenant: 'acme',
      method: 'tools/call',
    };
    expect(
      await sampleValue(metrics, METRIC_NAMES.limitExceeded, { ...base, action: 'rejected', tool: 'export' }),
    ).toBe(2);
    expect(
      await sampleValue(metrics, METRIC_NAMES.limitExceeded, { ...base, action: 'observed', tool: 'export' }),
    ).toBe(1);
    expect(
      await sampleValue(metrics, METRIC_NAMES.limitExceeded, {
        limit: 'request.maxBodyBytes',
        direction: 'request',
        action: 'rejected',
        tenant: 'acme',
        method: '',
        tool: '',
      }),
    ).toBe(1);
    expect(await samplesOf(metrics, METRIC_NAMES.limitExceeded)).toHaveLength(3);
  });

  it('uses the tenant the observer is bound to', async () => {
    const metrics = newMetrics();
    metrics.observerFor('globex').limitExceeded(violation({ tenant: 'acme' }), 'rejected');
    expect(await labelValues(metrics, METRIC_NAMES.limitExceeded, 'tenant')).toEqual(new Set(['globex']));
  });

  it('counts unparsable messages by direction and tenant', async () => {
    const metrics = newMetrics();
    metrics.observerFor('acme').unparsable('response', 10, 'not JSON');
    metrics.observerFor('acme').unparsable('response', 10, 'not JSON');
    metrics.observerFor('acme').unparsable('request', 10, 'not JSON');
    expect(
      await sampleValue(metrics, METRIC_NAMES.unparsableMessages, { direction: 'response', tenant: 'acme' }),
    ).toBe(2);
    expect(
      await sampleValue(metrics, METRIC_NAMES.unparsableMessages, { direction: 'request', tenant: 'acme' }),
    ).toBe(1);
  });
});

describe('exchange-level calls', () => {
  it('counts finished exchanges by tenant, http method, status and outcome', async () => {
    const metrics = newMetrics();
    metrics.exchangeFinished({ tenant: 'acme', httpMethod: 'POST', status: 200, outcome: 'forwarded' });
    metrics.exchangeFinished({ tenant: 'acme', httpMethod: 'POST', status: 200, outcome: 'forwarded' });
    metrics.exchangeFinished({ tenant: 'acme', httpMethod: 'POST', status: 413, outcome: 'refused' });
    metrics.exchangeFinished({
      tenant: 'globex',
      httpMethod: 'BREW',
      status: 502,
      outcome: 'upstream_unreachable',
    });
    const requests = (labels: Labels) => sampleValue(metrics, METRIC_NAMES.requests, labels);
    expect(await requests({ tenant: 'acme', http_method: 'POST', status: '200', outcome: 'forwarded' })).toBe(
      2,
    );
    expect(await requests({ tenant: 'acme', http_method: 'POST', status: '413', outcome: 'refused' })).toBe(
      1,
    );
    expect(
      await requests({
        tenant: 'globex',
        http_method: 'OTHER',
        status: '502',
        outcome: 'upstream_unreachable',
      }),
    ).toBe(1);
  });

  it('records upstream latency by tenant and upstream status', async () => {
    const metrics = newMetrics();
    metrics.upstreamResponded({ tenant: 'acme', status: 200, seconds: 0.03 });
    metrics.upstreamResponded({ tenant: 'acme', status: 200, seconds: 2 });
    metrics.upstreamResponded({ tenant: 'acme', status: 503, seconds: 0.001 });
    const ok = await histogram(metrics, METRIC_NAMES.upstreamDuration, { tenant: 'acme', status: '200' });
    expect([
      ok.count,
      ok.sum,
      ok.buckets.get('0.025'),
      ok.buckets.get('0.05'),
      ok.buckets.get('2.5'),
    ]).toEqual([2, 2.03, 0, 1, 2]);
    const failed = await histogram(metrics, METRIC_NAMES.upstreamDuration, { tenant: 'acme', status: '503' });
    expect([failed.count, failed.buckets.get('0.005')]).toEqual([1, 1]);
  });

  it('keeps the active SSE stream gauge exact, even when a stream is closed twice', async () => {
    const metrics = newMetrics();
    const first = metrics.sseStreamOpened('acme');
    const second = metrics.sseStreamOpened('acme');
    metrics.sseStreamOpened('globex');
    expect(await sampleValue(metrics, METRIC_NAMES.sseStreamsActive, { tenant: 'acme' })).toBe(2);
    first();
    first();
    expect(await sampleValue(metrics, METRIC_NAMES.sseStreamsActive, { tenant: 'acme' })).toBe(1);
    second();
    expect(await sampleValue(metrics, METRIC_NAMES.sseStreamsActive, { tenant: 'acme' })).toBe(0);
    expect(await sampleValue(metrics, METRIC_NAMES.sseStreamsActive, { tenant: 'globex' })).toBe(1);
  });

  it('counts SSE events, untrusted tenant headers and config reloads', async () => {
    const metrics = newMetrics();
    // These exist at 0 before anything happens, so the first increase is visible to rate()/increase().
    expect(await sampleValue(metrics, METRIC_NAMES.untrustedTenantHeader, {})).toBe(0);
    expect(await sampleValue(metrics, METRIC_NAMES.configReloads, { result: 'success' })).toBe(0);
    expect(await sampleValue(metrics, METRIC_NAMES.configReloads, { result: 'failure' })).toBe(0);

    metrics.sseEvent('acme');
    metrics.sseEvent('acme');
    metrics.sseEvent('acme');
    metrics.untrustedTenantHeader();
    metrics.configReloaded('success');
    metrics.configReloaded('failure');
    metrics.configReloaded('failure');
    expect(await sampleValue(metrics, METRIC_NAMES.sseEvents, { tenant: 'acme' })).toBe(3);
    expect(await sampleValue(metrics, METRIC_NAMES.untrustedTenantHeader, {})).toBe(1);
    expect(await sampleValue(metrics, METRIC_NAMES.configReloads, { result: 'success' })).toBe(1);
    expect(await sampleValue(metrics, METRIC_NAMES.configReloads, { result: 'failure' })).toBe(2);
  });
});

describe('configLoaded', () => {
  it('exports one info series and replaces it when the config changes', async () => {
    const metrics = newMetrics();
    metrics.configLoaded('aaa', '/etc/mcp-edge.yaml');
    metrics.configLoaded('bbb', '/etc/mcp-edge.yaml');
    const samples = await samplesOf(metrics, METRIC_NAMES.configInfo);
    expect(samples).toEqual([
      expect.objectContaining({
        value: 1,
        labels: { sha256: 'bbb', source: '/etc/mcp-edge.yaml', upstream: UPSTREAM },
      }),
    ]);
  });
});

describe('setLimits', () => {
  const MiB = 1024 * 1024;
  const policy: LimitPolicy = {
    defaults: {
      response: { maxMessageBytes: 4 * MiB },
      methods: { 'resources/read': { response: { maxMessageBytes: 8 * MiB } } },
      tools: { search: { response: { maxMessageBytes: 0 } } },
    },
    tenants: {
      acme: {
        limits: {
          request: { maxMessageBytes: 2 * MiB },
          tools: { export: { response: { maxMessageBytes: MiB } } },
        },
      },
    },
  };

  it('exports each tenant base ceiling and one gauge per configured method and tool override; 0 is +Inf', async () => {
    const metrics = newMetrics();
    metrics.setLimits(policy, ['acme', 'globex']);
    const limit = (labels: Labels) => sampleValue(metrics, METRIC_NAMES.limitBytes, labels);
    const response = 'response.maxMessageBytes';
    expect(await limit({ tenant: 'acme', limit: response, method: '', tool: '' })).toBe(4 * MiB);
    expect(await limit({ tenant: 'acme', limit: 'request.maxMessageBytes', method: '', tool: '' })).toBe(
      2 * MiB,
    );
    expect(await limit({ tenant: 'acme', limit: 'request.maxBodyBytes', method: '', tool: '' })).toBe(
      4 * MiB,
    );
    expect(await limit({ tenant: 'acme', limit: response, method: 'resources/read', tool: '' })).toBe(
      8 * MiB,
    );
    expect(await limit({ tenant: 'acme', limit: response, method: 'tools/call', tool: 'export' })).toBe(MiB);
    expect(await limit({ tenant: 'acme', limit: response, method: 'tools/call', tool: 'search' })).toBe(
      Number.POSITIVE_INFINITY,
    );
    // globex has no export override: only the defaults' overrides.
    expect(await limit({ tenant: 'globex', limit: 'request.maxMessageBytes', method: '', tool: '' })).toBe(
      MiB,
    );
    expect(
      await limit({ tenant: 'globex', limit: response, method: 'tools/call', tool: 'export' }),
    ).toBeUndefined();
    // acme: base, 1 method, 2 tools; globex: base, 1 method, 1 tool; 3 limits each.
    expect(await samplesOf(metrics, METRIC_NAMES.limitBytes)).toHaveLength((4 + 3) * 3);
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      `mcp_edge_limit_bytes{tenant="acme",limit="response.maxMessageBytes",method="tools/call",tool="search",upstream="${UPSTREAM}"} +Inf`,
    );
  });

  it('hardMaxBytes caps every ceiling, "no ceiling" included', async () => {
    const metrics = newMetrics();
    metrics.setLimits({ ...policy, defaults: { ...policy.defaults, hardMaxBytes: 6 * MiB } }, ['globex']);
    const limit = (labels: Labels) => sampleValue(metrics, METRIC_NAMES.limitBytes, labels);
    const response = 'response.maxMessageBytes';
    expect(await limit({ tenant: 'globex', limit: response, method: 'tools/call', tool: 'search' })).toBe(
      6 * MiB,
    );
    expect(await limit({ tenant: 'globex', limit: response, method: 'resources/read', tool: '' })).toBe(
      6 * MiB,
    );
  });

  it('replaces all previous series', async () => {
    const metrics = newMetrics();
    metrics.setLimits(policy, ['acme', 'globex']);
    metrics.setLimits({ defaults: { response: { maxMessageBytes: 1000 } }, tenants: {} }, ['initech']);
    const samples = await samplesOf(metrics, METRIC_NAMES.limitBytes);
    expect(samples).toHaveLength(3);
    expect(new Set(samples.map((s) => s.labels.tenant))).toEqual(new Set(['initech']));
    expect(
      await sampleValue(metrics, METRIC_NAMES.limitBytes, {
        tenant: 'initech',
        limit: 'response.maxMessageBytes',
        method: '',
        tool: '',
      }),
    ).toBe(1000);
  });
});

describe('cardinality', () => {
  it('10,000 distinct tool names from the wire make at most cap + 1 tool label values', async () => {
    const metrics = newMetrics({ maxToolLabels: 50 });
    const acme = metrics.observerFor('acme');
    for (let i = 0; i < 10_000; i++) {
      const subject = { method: 'tools/call', tool: `tool-${i}` };
      acme.message(
        'response',
        measurement({ kind: 'result', channels: { ...NO_CHANNELS, content_text: 10 } }),
        subject,
      );
      acme.limitExceeded(violation({ tool: `tool-${i}` }), 'rejected');
    }
    for (const family of [
      METRIC_NAMES.messageBytes,
      METRIC_NAMES.resultChannelBytes,
      METRIC_NAMES.limitExceeded,
    ]) {
      const tools = await labelValues(metrics, family, 'tool');
      expect(tools.size, family).toBe(51);
      expect(tools.has(OTHER_LABEL)).toBe(true);
      expect(tools.has('tool-49')).toBe(true);
      expect(tools.has('tool-50')).toBe(false);
    }
    const first = await histogram(metrics, METRIC_NAMES.messageBytes, {
      direction: 'response',
      kind: 'result',
      method: 'tools/call',
      tool: 'tool-0',
      tenant: 'acme',
    });
    expect(first.count).toBe(1);
    const other = await histogram(metrics, METRIC_NAMES.messageBytes, {
      direction: 'response',
      kind: 'result',
      method: 'tools/call',
      tool: OTHER_LABEL,
      tenant: 'acme',
    });
    expect(other.count).toBe(10_000 - 50);
    expect(
      await sampleValue(metrics, METRIC_NAMES.limitExceeded, {
        limit: 'response.maxMessageBytes',
        direction: 'response',
        action: 'rejected',
        tenant: 'acme',
        method: 'tools/call',
        tool: OTHER_LABEL,
      }),
    ).toBe(10_000 - 50);
  });

  it('the default caps are 200 tools and 100 methods', async () => {
    const metrics = newMetrics();
    const acme = metrics.observerFor('acme');
    for (let i = 0; i < 1000; i++) {
      acme.message('request', measurement({}), { method: `m/${i}`, tool: `t${i}` });
    }
    expect((await labelValues(metrics, METRIC_NAMES.messageBytes, 'tool')).size).toBe(201);
    expect((await labelValues(metrics, METRIC_NAMES.messageBytes, 'method')).size).toBe(101);
  });

  it('a tool named in the config keeps its own label value after the cap is reached', async () => {
    const metrics = newMetrics({ maxToolLabels: 2 });
    metrics.setLimits(
      { defaults: { tools: { export: { response: { maxMessageBytes: 10 } } } }, tenants: {} },
      ['acme'],
    );
    const acme = metrics.observerFor('acme');
    for (const tool of ['a', 'b', 'c', 'export'])
      acme.message('request', measurement({}), { method: 'tools/call', tool });
    expect(await labelValues(metrics, METRIC_NAMES.messageBytes, 'tool')).toEqual(
      new Set(['a', 'b', OTHER_LABEL, 'export']),
    );
  });

  it('tools the upstream listed keep their label however many made-up names came first', async () => {
    const metrics = newMetrics({ maxToolLabels: 3 });
    const acme = metrics.observerFor('acme');
    for (let i = 0; i < 200; i++)
      acme.message('request', measurement({}), { method: 'tools/call', tool: `made-up-${i}` });
    acme.toolsListed?.(['search', 'export']);
    for (const tool of ['search', 'export', 'made-up-500'])
      acme.message('request', measurement({}), { method: 'tools/call', tool });
    const tools = await labelValues(metrics, METRIC_NAMES.messageBytes, 'tool');
    expect(tools.has('search')).toBe(true);
    expect(tools.has('export')).toBe(true);
    expect(tools.has('made-up-500')).toBe(false);
    // A listing shared by every tenant's observer: the guard is one per process.
    metrics.observerFor('beta').message('request', measurement({}), { method: 'tools/call', tool: 'search' });
    expect(
      await histogram(metrics, METRIC_NAMES.messageBytes, {
        direction: 'request',
        kind: 'request',
        method: 'tools/call',
        tool: 'search',
        tenant: 'beta',
      }),
    ).toMatchObject({ count: 1 });
  });

  it('listed tool names are bounded too (a hostile upstream listing a million tools)', async () => {
    const metrics = newMetrics({ maxToolLabels: 5 });
    const acme = metrics.observerFor('acme');
    acme.toolsListed?.(Array.from({ length: 1000 }, (_, i) => `listed-${i}`));
    for (let i = 0; i < 1000; i++)
      acme.message('request', measurement({}), { method: 'tools/call', tool: `listed-${i}` });
    // 5 listed, 5 admitted from the wire, and __other__.
    expect((await labelValues(metrics, METRIC_NAMES.messageBytes, 'tool')).size).toBe(11);
  });

  it('tenant labels are exactly the values the proxy passes', async () => {
    const metrics = newMetrics();
    for (const tenant of ['acme', 'globex', 'acme']) {
      metrics.observerFor(tenant).message('request', measurement({}), CALL_EXPORT);
    }
    expect(await labelValues(metrics, METRIC_NAMES.messageBytes, 'tenant')).toEqual(
      new Set(['acme', 'globex']),
    );
  });
});

describe('LabelGuard', () => {
  it('maps undefined and "" to "", admits the first cap values, folds the rest', () => {
    const guard = new LabelGuard(2);
    expect(guard.bound(undefined)).toBe('');
    expect(guard.bound('')).toBe('');
    expect(guard.bound('a')).toBe('a');
    expect(guard.bound('b')).toBe('b');
    expect(guard.bound('c')).toBe(OTHER_LABEL);
    expect(guard.bound('a')).toBe('a');
    expect(guard.admittedCount).toBe(2);
  });

  it('folds values too long or with control characters without spending a slot', () => {
    const guard = new LabelGuard(5);
    expect(guard.bound('x'.repeat(MAX_LABEL_VALUE_LENGTH + 1))).toBe(OTHER_LABEL);
    expect(guard.bound('bad\nname')).toBe(OTHER_LABEL);
    expect(guard.bound('nul\u0000')).toBe(OTHER_LABEL);
    expect(guard.bound('x'.repeat(MAX_LABEL_VALUE_LENGTH))).toBe('x'.repeat(MAX_LABEL_VALUE_LENGTH));
    expect(guard.admittedCount).toBe(1);
  });

  it('reserved values pass without counting against the cap; reserve replaces the previous set', () => {
    const guard = new LabelGuard(0);
    guard.reserve(['export']);
    expect(guard.bound('export')).toBe('export');
    expect(guard.bound('other')).toBe(OTHER_LABEL);
    guard.reserve(['search']);
    expect(guard.bound('export')).toBe(OTHER_LABEL);
    expect(guard.bound('search')).toBe('search');
  });
});

describe('the exposition', () => {
  it('carries the upstream label on every mcp_edge_ sample, and process metrics when asked', async () => {
    const metrics = createEdgeMetrics({ upstream: UPSTREAM });
    metrics.observerFor('acme').message('request', measurement({}), CALL_EXPORT);
    metrics.observerFor('acme').limitExceeded(violation({}), 'observed');
    metrics.exchangeFinished({ tenant: 'acme', httpMethod: 'POST', status: 200, outcome: 'forwarded' });
    metrics.configLoaded('abc', 'file.yaml');
    const text = await metrics.registry.metrics();
    const edgeLines = text.split('\n').filter((line) => line.startsWith('mcp_edge_'));
    expect(edgeLines.length).toBeGreaterThan(20);
    for (const line of edgeLines) expect(line).toContain(`upstream="${UPSTREAM}"`);
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });

  it('never shows credentials of upstream.url in the upstream label', async () => {
    const metrics = createEdgeMetrics({
      upstream: 'http://user:s3cret-pw@127.0.0.1:3000/mcp',
      collectDefault: false,
    });
    metrics.exchangeFinished({ tenant: 'acme', httpMethod: 'POST', status: 200, outcome: 'forwarded' });
    const text = await metrics.registry.metrics();
    expect(text).not.toContain('s3cret-pw');
    expect(text).not.toContain('user:');
    expect(text).toContain('upstream="http://<redacted>@127.0.0.1:3000/mcp"');
  });

  it('has every family of the metrics contract, with base units and _total counters', async () => {
    const metrics = newMetrics();
    const text = await metrics.registry.metrics();
    const types = new Map(
      [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? ''] as const),
    );
    expect(Object.fromEntries(types)).toEqual({
      mcp_edge_message_bytes: 'histogram',
      mcp_edge_message_estimated_tokens: 'histogram',
      mcp_edge_result_channel_bytes: 'histogram',
      mcp_edge_duplicated_bytes_total: 'counter',
      // Issue 15: host budgets, whole-call latency, tool errors, catalog weight.
      mcp_edge_host_budget_exceeded_total: 'counter',
      mcp_edge_host_budget_ratio: 'histogram',
      mcp_edge_call_duration_seconds: 'histogram',
      mcp_edge_tool_errors_total: 'counter',
      mcp_edge_tool_descriptor_bytes: 'gauge',
      mcp_edge_tool_catalog_bytes: 'gauge',
      mcp_edge_tool_catalog_tools: 'gauge',
      mcp_edge_limit_exceeded_total: 'counter',
      mcp_edge_limit_bytes: 'gauge',
      mcp_edge_requests_total: 'counter',
      mcp_edge_upstream_duration_seconds: 'histogram',
      mcp_edge_sse_streams_active: 'gauge',
      mcp_edge_sse_events_total: 'counter',
      mcp_edge_unparsable_messages_total: 'counter',
      // Issue 23: messages of the upstream's that reached no client.
      mcp_edge_undelivered_messages_total: 'counter',
      mcp_edge_untrusted_tenant_header_total: 'counter',
      mcp_edge_config_reloads_total: 'counter',
      mcp_edge_config_info: 'gauge',
      // Issue 25: what an operator reaches for on day two.
      mcp_edge_near_ceiling_messages_total: 'counter',
      mcp_edge_build_info: 'gauge',
      mcp_edge_config_last_reload_success: 'gauge',
      mcp_edge_config_last_reload_timestamp_seconds: 'gauge',
      mcp_edge_held_bytes: 'gauge',
      // Issue 26: spans the trace exporter never got (no samples while traces are off).
      mcp_edge_spans_dropped_total: 'counter',
      // mcp_edge_stdio_processes and _limit only with a stdio upstream (test/integration/capacity-metrics.test.ts).
      // Only where the process runs under a memory limit (a container's cgroup).
      ...(memoryLimitOf(process.constrainedMemory(), totalmem()) === undefined
        ? {}
        : { mcp_edge_memory_limit_bytes: 'gauge' }),
    });
  });
});
