// A real metrics listener fed through the EdgeMetrics API, scraped by a real Prometheus (Debian package) on
// loopback: every PromQL expression of the Grafana dashboard (variables substituted) and of the alert rules
// must parse and return data, the alerts must go pending/firing on traffic that should trip them, and
// promtool must accept the rule and config files.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { emptyChannels } from '../../src/core/measure.js';
import type { LimitPolicy, MessageMeasurement, ResultChannels } from '../../src/core/types.js';
import { createEdgeMetrics, type EdgeMetrics } from '../../src/metrics/edge-metrics.js';
import { type MetricsServer, startMetricsServer } from '../../src/metrics/metrics-server.js';
import { quotaMetricsOf } from '../../src/metrics/quota-metrics.js';
import {
  prometheusInstalled,
  promtool,
  type QueryResult,
  type RunningPrometheus,
  startPrometheus,
  type VectorSample,
} from '../support/prometheus.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ALERTS_FILE = `${ROOT}deploy/prometheus/alerts.yaml`;
const PROMETHEUS_CONFIG = `${ROOT}deploy/prometheus/prometheus.yml`;
const DASHBOARD_FILE = `${ROOT}grafana/dashboards/mcp-edge.json`;
const UPSTREAM = 'http://127.0.0.1:3000/mcp';
const MiB = 1024 * 1024;
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JS template.
const DATASOURCE_VARIABLE = '${datasource}';

// ---- the files under test -------------------------------------------------------------------------------

interface DashboardTarget {
  expr?: string;
  refId: string;
}
interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: DashboardTarget[];
  panels?: DashboardPanel[];
}
interface DashboardVariable {
  type: string;
  name: string;
  query: string | { query: string };
  datasource?: { type: string; uid: string };
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
}
interface Dashboard {
  uid: string;
  schemaVersion: number;
  panels: DashboardPanel[];
  templating: { list: DashboardVariable[] };
}

const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;

function allPanels(panels: DashboardPanel[]): DashboardPanel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

const dashboardQueries = allPanels(dashboard.panels).flatMap((panel) =>
  (panel.targets ?? []).map((t) => ({ name: `${panel.title} [${t.refId}]`, expr: t.expr ?? '' })),
);

const variableQueries = dashboard.templating.list
  .filter((v) => v.type === 'query')
  .map((v) => ({ name: v.name, query: typeof v.query === 'string' ? v.query : v.query.query }));

interface AlertRule {
  alert: string;
  expr: string;
  annotations?: Record<string, string>;
}
const alertGroups = (
  parseYaml(readFileSync(ALERTS_FILE, 'utf8')) as { groups: { name: string; rules: AlertRule[] }[] }
).groups;
const alertRules = alertGroups.flatMap((g) => g.rules);

// ---- Grafana variable substitution ----------------------------------------------------------------------

/** What Grafana does to a value of a multi/include-all variable inside a Prometheus query (regex escape, then PromQL string escape). */
function grafanaRegexEscape(value: string): string {
  return value.replace(/[\\$^*{}[\]'+?.()|]/g, (c) => `\\\\${c}`);
}

interface Scenario {
  name: string;
  vars: Record<string, string>;
}

const BUILTINS: Record<string, string> = {
  // A few scrapes at 1 s: wide enough for rate() to always have two samples.
  __rate_interval: '10s',
  __interval: '2s',
  __range: '1m',
};

/** What a ServiceMonitor adds to every series of one sidecar (the Kubernetes layout): the scrape adds them here. */
const SIDECAR = { namespace: 'mcp', service: 'mcp-server-metrics', pod: 'mcp-server-7d4b9-x2x8q' };
const ALL_DEPLOYMENTS = { job: '.*', namespace: '.*', service: '.*', pod: '.*' };

const SCENARIOS: Scenario[] = [
  {
    name: 'All selected',
    vars: { ...BUILTINS, ...ALL_DEPLOYMENTS, upstream: '.*', tenant: '.*', tool: '.*' },
  },
  {
    name: 'one pod, upstream, tenant and tool',
    vars: {
      ...BUILTINS,
      job: 'mcp-edge',
      ...SIDECAR,
      upstream: grafanaRegexEscape(UPSTREAM),
      tenant: 'acme',
      tool: 'export',
    },
  },
];

function substitute(expr: string, vars: Record<string, string>): string {
  const result = expr.replace(
    /\$\{(\w+)\}|\$(\w+)/g,
    (whole, braced: string | undefined, bare: string | undefined) => {
      const name = braced ?? bare ?? '';
      const value = vars[name];
      if (value === undefined) throw new Error(`unknown variable ${whole} in ${expr}`);
      return value;
    },
  );
  return result;
}

/** label_values(selector, label) -> [selector, label] (Grafana's variable query function, not PromQL). */
function parseLabelValues(query: string): { selector: string; label: string } {
  const match = /^label_values\((.*),\s*(\w+)\)$/.exec(query.trim());
  if (!match) throw new Error(`not a label_values() query: ${query}`);
  return { selector: match[1] ?? '', label: match[2] ?? '' };
}

// ---- scripted traffic -----------------------------------------------------------------------------------

const POLICY: LimitPolicy = {
  defaults: {
    response: { maxMessageBytes: 4 * MiB },
    methods: { 'resources/read': { response: { maxMessageBytes: 2 * MiB } } },
  },
  tenants: {
    acme: { limits: { tools: { export: { response: { maxMessageBytes: MiB } } } } },
    globex: {},
  },
};

const NO_CHANNELS: ResultChannels = emptyChannels();

function result(
  envelopeBytes: number,
  channels?: Partial<ResultChannels>,
  duplicatedBytes = 0,
): MessageMeasurement {
  return {
    envelopeBytes,
    kind: 'result',
    id: 1,
    method: undefined,
    tool: undefined,
    channels: channels === undefined ? undefined : { ...NO_CHANNELS, ...channels },
    duplicatedBytes,
    estimatedTokens: Math.ceil(envelopeBytes / 4),
  };
}

function request(envelopeBytes: number, method: string, tool?: string): MessageMeasurement {
  return {
    envelopeBytes,
    kind: 'request',
    id: 1,
    method,
    tool,
    channels: undefined,
    duplicatedBytes: 0,
    estimatedTokens: Math.ceil(envelopeBytes / 4),
  };
}

const EXPORT = { method: 'tools/call', tool: 'export' };

/** One tick of traffic: acme's export results sit at ~86% of their 1 MiB ceiling, some are refused. */
function feedTraffic(metrics: EdgeMetrics): void {
  const acme = metrics.observerFor('acme');
  acme.message('request', request(300, 'tools/call', 'export'), EXPORT);
  acme.message('response', result(900_000, { content_text: 440_000, structured: 440_000 }, 440_000), EXPORT);
  acme.message('response', result(1_700_000), { method: 'resources/read', tool: undefined });
  acme.message('response', result(5_000), { method: 'tools/list', tool: undefined });
  // Each against the ceiling the resolver applies to it (as messageSizeCheck reports it).
  const near = 'response.maxMessageBytes';
  acme.ceilingMeasured?.('response', near, MiB, 900_000, EXPORT);
  acme.ceilingMeasured?.('response', near, 2 * MiB, 1_700_000, { method: 'resources/read', tool: undefined });
  acme.ceilingMeasured?.('response', near, 4 * MiB, 5_000, { method: 'tools/list', tool: undefined });
  for (const action of ['rejected', 'rejected', 'observed'] as const) {
    acme.limitExceeded(
      {
        limit: 'response.maxMessageBytes',
        direction: 'response',
        limitValue: MiB,
        observedValue: 2 * MiB,
        observedIsLowerBound: false,
        tenant: 'acme',
        ...EXPORT,
        id: 1,
      },
      action,
    );
  }
  acme.unparsable('response', 12, 'SSE data is not JSON');
  const globex = metrics.observerFor('globex');
  globex.message('request', request(200, 'initialize'), { method: 'initialize', tool: undefined });
  globex.message('response', result(2_000), { method: 'initialize', tool: undefined });

  for (const [tenant, status, outcome] of [
    ['acme', 200, 'forwarded'],
    ['acme', 200, 'response_replaced'],
    ['acme', 413, 'refused'],
    ['acme', 502, 'upstream_unreachable'],
    ['acme', 503, 'upstream_capacity'],
    ['globex', 200, 'forwarded'],
  ] as const) {
    metrics.exchangeFinished({ tenant, httpMethod: 'POST', status, outcome });
  }
  metrics.upstreamResponded({ tenant: 'acme', status: 200, seconds: 0.04 });
  metrics.upstreamResponded({ tenant: 'acme', status: 500, seconds: 0.3 });
  metrics.upstreamResponded({ tenant: 'globex', status: 200, seconds: 0.01 });
  metrics.sseEvent('acme');
  metrics.sseStreamOpened('globex')();
  metrics.untrustedTenantHeader();
  metrics.configReloaded('success');
  metrics.configReloaded('failure');
  // Issue 15: a result over Claude Code's budget, one within Gemini CLI's, a tool error, a call, the catalog.
  const acmeTools = metrics.toolObserverFor('acme');
  acmeTools.hostBudget?.({
    host: 'claude-code',
    tenant: 'acme',
    tool: 'export',
    share: 2.4,
    over: { unit: 'tokens', budget: 25_000, observed: 60_000, action: 'observed' },
  });
  acmeTools.hostBudget?.({ host: 'gemini-cli', tenant: 'acme', tool: 'export', share: 0.3, over: undefined });
  acmeTools.toolAnswered?.('export', 'is_error');
  acmeTools.toolsDescribed?.([
    { name: 'export', bytes: 1_200 },
    { name: 'not-listed-anywhere', bytes: 800 },
  ]);
  metrics.callFinished({ tenant: 'acme', method: 'tools/call', tool: 'export', seconds: 3.1 });
  // Issue 27: a quota refusal, a rule's use, a failing store's errors and its round trips.
  const quotas = quotaMetricsOf(metrics.registry);
  quotas.exceeded('calls', 'acme', 'refused');
  quotas.usedRatio('calls', 'acme', 1);
  quotas.storeError('redis', 'timeout');
  quotas.storeRoundTrip('redis', 0.0004);
}

// ---- helpers --------------------------------------------------------------------------------------------

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Whether a query answer holds data: at least one series, with at least one number that is not NaN. */
function hasData(data: QueryResult): boolean {
  if (data.resultType === 'vector') {
    return (data.result as VectorSample[]).some((s) => !Number.isNaN(Number(s.value[1])));
  }
  if (data.resultType === 'matrix') return (data.result as unknown[]).length > 0;
  return data.resultType === 'scalar';
}

/** Polls until the expression returns data; resolves with the last answer (or rejects on a parse error). */
async function queryUntilData(
  prom: RunningPrometheus,
  expr: string,
  timeoutMs = 10_000,
): Promise<QueryResult> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const data = await prom.query(expr);
    if (hasData(data) || Date.now() > deadline) return data;
    await sleep(250);
  }
}

// ---- the test -------------------------------------------------------------------------------------------

describe('metrics scraped by a real Prometheus', () => {
  let metrics: EdgeMetrics;
  let server: MetricsServer;
  let prom: RunningPrometheus;
  let ticker: NodeJS.Timeout | undefined;
  let closeLongStream: () => void = () => {};

  beforeAll(async () => {
    if (!prometheusInstalled()) {
      throw new Error('prometheus/promtool missing: apt-get install -y prometheus (.ci/run installs it)');
    }
    metrics = createEdgeMetrics({ upstream: UPSTREAM });
    metrics.setLimits(POLICY, ['acme', 'globex']);
    metrics.configLoaded('0123abcd', '/etc/mcp-edge/mcp-edge.yaml');
    closeLongStream = metrics.sseStreamOpened('acme');
    server = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0, path: '/metrics' });
    const target = new URL(server.url).host;
    prom = await startPrometheus({
      scrapeTargets: [target],
      metricsPath: '/metrics',
      scrapeIntervalMs: 1000,
      ruleFiles: [ALERTS_FILE],
      targetLabels: SIDECAR,
    });
    feedTraffic(metrics);
    ticker = setInterval(() => feedTraffic(metrics), 200);
    // Enough scrapes that rate() and increase() over a few seconds have several samples.
    await prom.waitForSeries('count_over_time(mcp_edge_untrusted_tenant_header_total[1m]) >= 4', 20_000);
  }, 45_000);

  afterAll(async () => {
    if (ticker) clearInterval(ticker);
    closeLongStream();
    await prom?.close();
    await server?.close();
  });

  it('the metrics listener answers GET on its path only', async () => {
    const ok = await fetch(server.url);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await ok.text()).toContain('mcp_edge_requests_total{');
    const withQuery = await fetch(`${server.url}?debug=1`);
    expect(withQuery.status).toBe(200);
    await withQuery.arrayBuffer();
    const elsewhere = await fetch(new URL('/other', server.url));
    expect(elsewhere.status).toBe(404);
    await elsewhere.arrayBuffer();
    const post = await fetch(server.url, { method: 'POST', body: '' });
    expect(post.status).toBe(405);
    await post.arrayBuffer();
  });

  it('Prometheus scrapes every family with the upstream label and exact label values', async () => {
    const families = await prom.api('/api/v1/label/__name__/values', {
      'match[]': '{__name__=~"mcp_edge_.*"}',
    });
    expect(families).toEqual(
      expect.arrayContaining([
        'mcp_edge_message_bytes_bucket',
        'mcp_edge_message_estimated_tokens_bucket',
        'mcp_edge_result_channel_bytes_bucket',
        'mcp_edge_duplicated_bytes_total',
        'mcp_edge_limit_exceeded_total',
        'mcp_edge_limit_bytes',
        'mcp_edge_requests_total',
        'mcp_edge_upstream_duration_seconds_bucket',
        'mcp_edge_sse_streams_active',
        'mcp_edge_sse_events_total',
        'mcp_edge_unparsable_messages_total',
        'mcp_edge_untrusted_tenant_header_total',
        'mcp_edge_config_reloads_total',
        'mcp_edge_config_info',
        'mcp_edge_near_ceiling_messages_total',
        'mcp_edge_build_info',
        'mcp_edge_config_last_reload_success',
        'mcp_edge_config_last_reload_timestamp_seconds',
      ]),
    );
    const withoutUpstream = await prom.query(`{__name__=~"mcp_edge_.*", upstream!="${UPSTREAM}"}`);
    expect(withoutUpstream.result).toEqual([]);

    const ceiling = (await prom.query(
      'mcp_edge_limit_bytes{tenant="acme", limit="response.maxMessageBytes", tool="export"}',
    )) as { result: VectorSample[] };
    expect(ceiling.result.map((s) => [s.metric.method, s.value[1]])).toEqual([['tools/call', String(MiB)]]);
    const info = (await prom.query('mcp_edge_config_info')) as { result: VectorSample[] };
    expect(info.result.map((s) => [s.metric.sha256, s.metric.source, s.value[1]])).toEqual([
      ['0123abcd', '/etc/mcp-edge/mcp-edge.yaml', '1'],
    ]);
    const streams = (await prom.query('mcp_edge_sse_streams_active')) as { result: VectorSample[] };
    expect(Object.fromEntries(streams.result.map((s) => [s.metric.tenant, s.value[1]]))).toEqual({
      acme: '1',
      globex: '0',
    });
  });

  it('every dashboard variable query finds its label values', async () => {
    expect(variableQueries.map((v) => v.name)).toEqual([
      'job',
      'namespace',
      'service',
      'pod',
      'upstream',
      'tenant',
      'tool',
    ]);
    const expected: Record<string, string[]> = {
      job: ['mcp-edge'],
      namespace: [SIDECAR.namespace],
      service: [SIDECAR.service],
      pod: [SIDECAR.pod],
      upstream: [UPSTREAM],
      tenant: ['acme', 'globex'],
      tool: ['export'],
    };
    for (const scenario of SCENARIOS) {
      for (const variable of variableQueries) {
        const { selector, label } = parseLabelValues(variable.query);
        const series = (await prom.api('/api/v1/series', {
          'match[]': substitute(selector, scenario.vars),
          start: String(Date.now() / 1000 - 300),
        })) as Record<string, string>[];
        const values = new Set(series.map((s) => s[label]).filter((v) => v !== undefined));
        expect([...values], `${scenario.name}: ${variable.query}`).toEqual(
          expect.arrayContaining(expected[variable.name] ?? ['?']),
        );
      }
    }
  });

  it('every PromQL expression of the dashboard parses and returns data (variables substituted)', async () => {
    expect(dashboardQueries.length).toBeGreaterThanOrEqual(25);
    const failures: string[] = [];
    for (const scenario of SCENARIOS) {
      for (const { name, expr } of dashboardQueries) {
        const promql = substitute(expr, scenario.vars);
        try {
          const data = await queryUntilData(prom, promql);
          if (!hasData(data)) failures.push(`${scenario.name}: ${name}: no data for ${promql}`);
        } catch (error) {
          failures.push(`${scenario.name}: ${name}: ${(error as Error).message}`);
        }
      }
    }
    expect(failures).toEqual([]);
  }, 90_000);

  it('the headroom query divides each p99 by the ceiling the resolver would apply', async () => {
    const headroom = dashboardQueries.find((q) => q.name.startsWith('Headroom'));
    expect(headroom).toBeDefined();
    const data = (await queryUntilData(prom, substitute(headroom?.expr ?? '', SCENARIOS[0]!.vars))) as {
      result: VectorSample[];
    };
    const ratios = Object.fromEntries(
      data.result.map((s) => [
        `${s.metric.tenant} ${s.metric.method ?? ''} ${s.metric.tool ?? ''}`,
        Number(s.value[1]),
      ]),
    );
    // export: 900,000 B in the 512Ki..1Mi bucket, against its own 1 MiB override (not the 4 MiB base).
    expect(ratios['acme tools/call export']).toBeGreaterThan(0.8);
    expect(ratios['acme tools/call export']).toBeLessThanOrEqual(1);
    // resources/read: 1.7 MB against the 2 MiB method override.
    expect(ratios['acme resources/read ']).toBeGreaterThan(0.8);
    expect(ratios['acme resources/read ']).toBeLessThanOrEqual(1);
    // tools/list: 5,000 B against the 4 MiB base.
    expect(ratios['acme tools/list ']).toBeLessThan(0.01);
    expect(ratios['globex initialize ']).toBeLessThan(0.01);
  });

  it('every alert expression parses and returns data, and each alert goes pending or firing', async () => {
    expect(alertGroups.map((g) => g.name)).toEqual(['mcp-edge']);
    expect(alertRules.map((r) => r.alert)).toEqual([
      'McpEdgeDown',
      'McpEdgeRefusedResponsesSpike',
      'McpEdgeTenantNearCeiling',
      'McpEdgeHostBudgetOverflow',
      'McpEdgeUpstreamFailures',
      'McpEdgeUpstreamAtCapacity',
      'McpEdgeStdioProcessesNearLimit',
      'McpEdgeMemoryNearLimit',
      'McpEdgeConfigReloadFailed',
      'McpEdgeQuotaStoreFailing',
    ]);
    // The listener stays up, this process has no memory limit and this edge's upstream is HTTP (no stdio
    // children): those rules are evaluated against scripted series (test/deploy/alert-rules.test.ts),
    // McpEdgeDown against a stopped edge (test/integration/alerts-live.test.ts) and the stdio rule against a
    // stdio edge (test/integration/capacity-metrics.test.ts).
    const skipped = ['McpEdgeDown', 'McpEdgeMemoryNearLimit', 'McpEdgeStdioProcessesNearLimit'];
    const tripped = alertRules.filter((r) => !skipped.includes(r.alert));
    for (const rule of tripped) {
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toBeTruthy();
      const data = await queryUntilData(prom, rule.expr);
      expect(hasData(data), `${rule.alert}: ${rule.expr}`).toBe(true);
    }
    const nearCeilingRule = alertRules.find((r) => r.alert === 'McpEdgeTenantNearCeiling');
    const nearCeiling = (await prom.query(nearCeilingRule?.expr ?? '')) as { result: VectorSample[] };
    expect(
      nearCeiling.result.map((s) => `${s.metric.tenant} ${s.metric.method} ${s.metric.tool ?? ''}`).sort(),
    ).toEqual(['acme resources/read ', 'acme tools/call export']);
    // Each alert says which sidecar: the labels Prometheus added, not only the shared upstream.
    for (const series of nearCeiling.result)
      expect(series.metric).toMatchObject({ job: 'mcp-edge', ...SIDECAR });
    const hostOverflow = alertRules.find((r) => r.alert === 'McpEdgeHostBudgetOverflow');
    const overflow = (await prom.query(hostOverflow?.expr ?? '')) as { result: VectorSample[] };
    expect(overflow.result.map((s) => s.metric)).toEqual([
      {
        job: 'mcp-edge',
        ...SIDECAR,
        upstream: UPSTREAM,
        host: 'claude-code',
        tenant: 'acme',
        tool: 'export',
      },
    ]);

    const rules = (await prom.api('/api/v1/rules')) as {
      groups: { name: string; rules: { name: string; health: string; lastError?: string }[] }[];
    };
    const loaded = rules.groups.flatMap((g) => g.rules);
    expect(loaded.map((r) => [r.name, r.health, r.lastError ?? ''])).toEqual(
      alertRules.map((r) => [r.alert, expect.stringMatching(/^(ok|unknown)$/), '']),
    );

    const deadline = Date.now() + 15_000;
    let active: { labels: { alertname: string }; state: string }[] = [];
    while (Date.now() < deadline) {
      active = ((await prom.api('/api/v1/alerts')) as { alerts: typeof active }).alerts;
      const names = new Set(active.map((a) => a.labels.alertname));
      if (tripped.every((r) => names.has(r.alert))) break;
      await sleep(500);
    }
    expect([...new Set(active.map((a) => a.labels.alertname))].sort()).toEqual(
      tripped.map((r) => r.alert).sort(),
    );
    for (const alert of active) expect(['pending', 'firing']).toContain(alert.state);
  }, 45_000);

  it('promtool accepts the alert rules and the example Prometheus config', async () => {
    const rules = await promtool(['check', 'rules', ALERTS_FILE]);
    expect(rules.stdout).toContain('SUCCESS: 10 rules found');
    const config = await promtool(['check', 'config', PROMETHEUS_CONFIG]);
    expect(config.stdout).toContain('is valid prometheus config file syntax');
  });
});

describe('the dashboard and provisioning files', () => {
  it('has uid mcp-edge, its variables, and every panel on the datasource variable', () => {
    expect(dashboard.uid).toBe('mcp-edge');
    expect(dashboard.schemaVersion).toBe(39);
    const vars = dashboard.templating.list;
    expect(vars.map((v) => [v.name, v.type])).toEqual([
      ['datasource', 'datasource'],
      ['job', 'query'],
      ['namespace', 'query'],
      ['service', 'query'],
      ['pod', 'query'],
      ['upstream', 'query'],
      ['tenant', 'query'],
      ['tool', 'query'],
    ]);
    expect(vars[0]?.query).toBe('prometheus');
    for (const v of vars.slice(1)) {
      expect([v.multi, v.includeAll, v.allValue], v.name).toEqual([true, true, '.*']);
      expect(v.datasource?.uid).toBe(DATASOURCE_VARIABLE);
    }
    const panels = allPanels(dashboard.panels).filter((p) => p.type !== 'row');
    expect(new Set(allPanels(dashboard.panels).map((p) => p.id)).size).toBe(
      allPanels(dashboard.panels).length,
    );
    for (const panel of panels) {
      expect(panel.datasource?.uid, panel.title).toBe(DATASOURCE_VARIABLE);
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      // Sidecars share one upstream label: every query also filters on what Prometheus adds.
      for (const t of panel.targets ?? [])
        expect(t.expr, panel.title).toContain(
          'job=~"$job", namespace=~"$namespace", service=~"$service", pod=~"$pod"',
        );
    }
    const types = new Set(panels.map((p) => p.type));
    expect([...types].sort()).toEqual(['heatmap', 'piechart', 'table', 'timeseries']);
  });

  it('provisions a datasource with uid prometheus and a file provider for the dashboards path', () => {
    const datasources = parseYaml(
      readFileSync(`${ROOT}grafana/provisioning/datasources/prometheus.yaml`, 'utf8'),
    ) as {
      datasources: { uid: string; type: string }[];
    };
    expect(datasources.datasources.map((d) => [d.uid, d.type])).toEqual([['prometheus', 'prometheus']]);
    const providers = parseYaml(
      readFileSync(`${ROOT}grafana/provisioning/dashboards/mcp-edge.yaml`, 'utf8'),
    ) as {
      providers: { type: string; options: { path: string } }[];
    };
    expect(providers.providers.map((p) => [p.type, p.options.path])).toEqual([
      ['file', '/var/lib/grafana/dashboards'],
    ]);
  });
});
