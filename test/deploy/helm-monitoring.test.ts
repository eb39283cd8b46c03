// What the Helm chart renders for Prometheus and for the cluster's policies, for release names other than
// the default: the job the ServiceMonitor gives the scraped series is the one the alert rules select
// (checked by promtool against the rendered PrometheusRule), the metrics port is open to Prometheus'
// namespace only, a PodDisruptionBudget only where it protects something, and no Service affinity by client
// address.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prometheusInstalled, promtool } from '../support/prometheus.js';
import { edgeContainer, RELEASE, type Record_, render } from './helm-render.js';
import type { Manifest } from './kube-schema.js';
import { at, isRecord, listAt, manifestOf, manifestsOfKind } from './repo-files.js';

const workDir = mkdtempSync(join(tmpdir(), 'mcp-edge-helm-monitoring-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** Release names, with the objects' name each gives (nameOverride when set). */
const RELEASES: { release: string; set: string[]; name: string }[] = [
  { release: RELEASE, set: [], name: RELEASE },
  { release: 'edge', set: [], name: 'edge' },
  { release: 'payments-mcp', set: [], name: 'payments-mcp' },
  { release: 'prod', set: ['nameOverride=search-mcp'], name: 'search-mcp' },
];

function labelsOf(manifest: Record_): Record<string, unknown> {
  const labels = (manifest.metadata as Record_ | undefined)?.labels;
  return isRecord(labels) ? labels : {};
}

/**
 * The job label the Prometheus Operator gives the series a ServiceMonitor scrapes from a Service: the value
 * of the Service's label named by `jobLabel`, else the Service's name.
 */
function scrapedJobs(manifests: readonly Manifest[]): string[] {
  const monitor = manifestsOfKind(manifests, 'ServiceMonitor')[0];
  if (monitor === undefined) throw new Error('no ServiceMonitor');
  const selector = at(monitor, 'spec', 'selector', 'matchLabels') as Record_;
  const jobLabel = (monitor.spec as Record_).jobLabel;
  return manifestsOfKind(manifests, 'Service')
    .filter((service) => Object.entries(selector).every(([k, v]) => labelsOf(service)[k] === v))
    .map((service) => {
      const fromLabel = typeof jobLabel === 'string' ? labelsOf(service)[jobLabel] : undefined;
      return typeof fromLabel === 'string' ? fromLabel : String(at(service, 'metadata', 'name'));
    });
}

interface Rule {
  alert: string;
  expr: string;
}

function renderedRules(manifests: readonly Manifest[], name: string): Rule[] {
  const rule = manifestOf(manifests, 'PrometheusRule', name);
  return listAt(rule, 'spec', 'groups').flatMap((group) => listAt(group, 'rules')) as Rule[];
}

/** promtool evaluates `expr` over one `up` series of the scraped job: the sample it must select. */
async function selectsScrapeOf(expr: string, job: string, name: string, rulesFile: string): Promise<string> {
  const series = `up{job="${job}", namespace="default", service="${name}-metrics", pod="${name}-7d4b9-x2x8q", instance="10.0.0.7:9464"}`;
  const testFile = join(workDir, `${name}-tests.yaml`);
  writeFileSync(
    testFile,
    JSON.stringify({
      rule_files: [rulesFile],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: [{ series, values: '0x5' }],
          promql_expr_test: [{ expr, eval_time: '2m', exp_samples: [{ labels: series, value: 0 }] }],
        },
      ],
    }),
  );
  try {
    const { stdout, stderr } = await promtool(['test', 'rules', testFile]);
    return `${stdout}${stderr}`;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    return `FAILED\n${stdout}${stderr}`;
  }
}

describe('the Helm chart for Prometheus and the cluster', { timeout: 180_000 }, () => {
  it.each(RELEASES.map((r) => [r.release, r]))(
    'release %s: every rule that selects a job selects the job its ServiceMonitor gives the series; McpEdgeDown fires on it',
    async (_release, { release, set, name }) => {
      if (!prometheusInstalled()) throw new Error('promtool missing: apt-get install -y prometheus');
      const manifests = await render(set, { release });
      const jobs = scrapedJobs(manifests);
      expect(jobs).toEqual(['mcp-edge']);
      const rules = renderedRules(manifests, name);
      const selecting = rules.filter((rule) => /\bjob\s*(=|=~|!=|!~)\s*"/.test(rule.expr));
      expect(selecting.map((rule) => rule.alert)).toContain('McpEdgeDown');
      const rulesFile = join(workDir, `${name}-rules.yaml`);
      writeFileSync(rulesFile, JSON.stringify(at(manifestOf(manifests, 'PrometheusRule', name), 'spec')));
      for (const rule of selecting) {
        expect(await selectsScrapeOf(rule.expr, jobs[0] ?? '', name, rulesFile), rule.alert).toContain(
          'SUCCESS',
        );
      }
      // The check is real: the Service's own name as the job (no jobLabel) is not selected.
      const down = rules.find((rule) => rule.alert === 'McpEdgeDown');
      expect(await selectsScrapeOf(down?.expr ?? '', `${name}-metrics`, name, rulesFile)).toContain('FAILED');
    },
  );

  it('opens the metrics port to the monitoring namespace only by default, or to the peers of metricsFrom', async () => {
    const manifests = await render();
    const policy = manifestOf(manifests, 'NetworkPolicy', RELEASE);
    const deployment = manifestOf(manifests, 'Deployment', RELEASE);
    const podLabels = at(deployment, 'spec', 'template', 'metadata', 'labels');
    expect(at(policy, 'spec', 'podSelector', 'matchLabels')).toEqual(podLabels);
    expect(at(policy, 'spec', 'policyTypes')).toEqual(['Ingress']);
    const edgePorts = listAt(edgeContainer(deployment), 'ports').filter(isRecord);
    expect(edgePorts.map((port) => port.name)).toEqual(['mcp', 'metrics']);
    const ingress = async (set: string[]) =>
      at(manifestOf(await render(set), 'NetworkPolicy', RELEASE), 'spec', 'ingress');
    const namespace = (ns: string) => [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } },
    ];
    expect(await ingress([])).toEqual([
      { ports: [{ port: 'mcp' }] },
      { ports: [{ port: 'metrics' }], from: namespace('monitoring') },
    ]);
    expect(await ingress(['networkPolicy.metricsNamespace=prometheus'])).toEqual([
      { ports: [{ port: 'mcp' }] },
      { ports: [{ port: 'metrics' }], from: namespace('prometheus') },
    ]);
    const peers = [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } }];
    expect(
      await ingress([
        'networkPolicy.metricsFrom[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=prometheus',
      ]),
    ).toEqual([{ ports: [{ port: 'mcp' }] }, { ports: [{ port: 'metrics' }], from: peers }]);
    // Both emptied: from anywhere, as asked.
    expect(await ingress(['networkPolicy.metricsNamespace='])).toEqual([
      { ports: [{ port: 'mcp' }] },
      { ports: [{ port: 'metrics' }] },
    ]);
  });

  it('renders a PodDisruptionBudget only with more than one replica, where it protects something', async () => {
    const budgets = async (set: string[]) => manifestsOfKind(await render(set), 'PodDisruptionBudget');
    expect(await budgets([])).toEqual([]);
    expect(await budgets(['replicas=1'])).toEqual([]);
    const manifests = await render(['replicas=3']);
    const [budget] = manifestsOfKind(manifests, 'PodDisruptionBudget');
    const podLabels = at(
      manifestOf(manifests, 'Deployment', RELEASE),
      'spec',
      'template',
      'metadata',
      'labels',
    );
    expect(at(budget, 'spec', 'selector', 'matchLabels')).toEqual(podLabels);
    expect(at(budget, 'spec', 'maxUnavailable')).toBe(1);
    expect(await budgets(['replicas=3', 'podDisruptionBudget.enabled=false'])).toEqual([]);
  });

  it('promises no session affinity by client address: the MCP Service has none', async () => {
    const service = manifestOf(await render(['replicas=3']), 'Service', RELEASE);
    expect((service.spec as Record_).sessionAffinity).toBeUndefined();
  });
});
