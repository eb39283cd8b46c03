// The alert rules (deploy/prometheus/alerts.yaml) evaluated by Prometheus' own rule engine: `promtool test
// rules` over scripted series, one scenario per alert, each firing (labels and rendered annotations exact)
// and resolving after. Also: the PrometheusRule manifest carries the same groups, and every runbook_url
// leads to a section of docs/operations.md. The end-to-end run against a real edge is
// test/integration/alerts-live.test.ts.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prometheusInstalled, promtool } from '../support/prometheus.js';
import { runbook, SCENARIOS, type Scenario } from './alert-scenarios.js';
import {
  at,
  headingAnchors,
  KUBERNETES_DIR,
  listAt,
  repoPath,
  sidecarManifests,
  yamlMapping,
} from './repo-files.js';

const ALERTS_FILE = repoPath('deploy/prometheus/alerts.yaml');
const RULE_MANIFEST = join(KUBERNETES_DIR, 'prometheusrule.yaml');
const OPERATIONS = repoPath('docs/operations.md');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
const groups = listAt(yamlMapping(ALERTS_FILE), 'groups');
const rules = groups.flatMap((group) => listAt(group, 'rules')) as Rule[];

/** A `promtool test rules` file for the scenarios, against `ruleFile`. JSON is YAML. */
function promtoolTests(ruleFile: string, scenarios: readonly Scenario[]): string {
  return JSON.stringify({
    rule_files: [ruleFile],
    evaluation_interval: '1m',
    tests: scenarios.map((scenario) => ({
      name: scenario.alert,
      interval: '1m',
      input_series: scenario.input_series,
      alert_rule_test: scenario.evaluations.map(([minutes, firing]) => ({
        eval_time: `${minutes}m`,
        alertname: scenario.alert,
        exp_alerts: firing,
      })),
    })),
  });
}

const workDir = mkdtempSync(join(tmpdir(), 'mcp-edge-alert-rules-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

async function runPromtool(ruleFile: string, scenarios: readonly Scenario[]): Promise<string> {
  const testFile = join(
    workDir,
    `tests-${scenarios
      .map((s) => s.alert)
      .join('-')
      .slice(0, 80)}.yaml`,
  );
  writeFileSync(testFile, promtoolTests(ruleFile, scenarios));
  try {
    const { stdout, stderr } = await promtool(['test', 'rules', testFile]);
    return `${stdout}${stderr}`;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`promtool test rules failed:\n${stdout}${stderr}`);
  }
}

describe('the alert rules, evaluated by promtool over scripted series', () => {
  it('has a scenario for every rule, and promtool finds the rules valid', async () => {
    if (!prometheusInstalled()) throw new Error('promtool missing: apt-get install -y prometheus');
    expect(SCENARIOS.map((s) => s.alert).sort()).toEqual(rules.map((r) => r.alert).sort());
    const { stdout } = await promtool(['check', 'rules', ALERTS_FILE]);
    expect(stdout).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it.each(SCENARIOS.map((s) => [s.alert, s]))(
    '%s fires in its scenario, with its labels and annotations, and resolves after',
    async (_name, scenario) => {
      // Each scenario checks before (nothing), during (exactly the expected alert) and after (resolved).
      expect(scenario.evaluations[0]?.[1]).toEqual([]);
      expect(scenario.evaluations.at(-1)?.[1]).toEqual([]);
      expect(scenario.evaluations.some(([, firing]) => firing.length > 0)).toBe(true);
      expect(await runPromtool(ALERTS_FILE, [scenario])).toContain('SUCCESS');
    },
    30_000,
  );

  it('the check is real: a scenario expecting the wrong annotation fails', async () => {
    const scenario = structuredClone(SCENARIOS.find((s) => s.alert === 'McpEdgeConfigReloadFailed'));
    if (scenario === undefined) throw new Error('no scenario');
    const firing = scenario.evaluations[1]?.[1][0];
    if (firing === undefined) throw new Error('no firing evaluation');
    firing.exp_annotations.summary = 'something else';
    await expect(runPromtool(ALERTS_FILE, [scenario])).rejects.toThrow(/FAILED/);
  });
});

describe('the rules as shipped', () => {
  it('the PrometheusRule manifest carries exactly the groups of alerts.yaml', () => {
    const manifest = yamlMapping(RULE_MANIFEST);
    expect(at(manifest, 'apiVersion')).toBe('monitoring.coreos.com/v1');
    expect(at(manifest, 'kind')).toBe('PrometheusRule');
    expect(at(manifest, 'spec', 'groups')).toEqual(groups);
  });

  it('every rule has a summary, a description and a runbook_url to its section of docs/operations.md', () => {
    const anchors = headingAnchors(readFileSync(OPERATIONS, 'utf8'));
    for (const rule of rules) {
      expect(rule.annotations.summary, rule.alert).toBeTruthy();
      expect(rule.annotations.description, rule.alert).toBeTruthy();
      expect(rule.annotations.runbook_url, rule.alert).toBe(runbook(rule.alert));
      expect(anchors.has(rule.alert.toLowerCase()), `docs/operations.md has no ### ${rule.alert}`).toBe(true);
    }
  });

  it("McpEdgeDown watches the job of the shipped scrape configs and of the kustomize ServiceMonitor's series", () => {
    const down = rules.find((r) => r.alert === 'McpEdgeDown');
    const job = /up\{job="([^"]+)"\} == 0/.exec(down?.expr ?? '')?.[1];
    expect(job).toBe('mcp-edge');
    const jobs = [
      ...['deploy/prometheus/prometheus.yml', 'deploy/compose/prometheus.yml'].flatMap((file) =>
        listAt(yamlMapping(repoPath(file)), 'scrape_configs').map((scrape) => String(at(scrape, 'job_name'))),
      ),
      // The Prometheus Operator names a ServiceMonitor's job after the label of its Service that jobLabel
      // names, else after the Service. (The Helm chart's, for any release name: helm-monitoring.test.ts.)
      ...sidecarManifests()
        .filter((m) => m.value.kind === 'ServiceMonitor')
        .flatMap((monitor) => {
          const jobLabel = String(at(monitor.value, 'spec', 'jobLabel'));
          const selector = at(monitor.value, 'spec', 'selector', 'matchLabels') as Record<string, unknown>;
          return sidecarManifests()
            .filter((m) => m.value.kind === 'Service')
            .map((m) => at(m.value, 'metadata', 'labels') as Record<string, unknown>)
            .filter((labels) => Object.entries(selector).every(([k, v]) => labels[k] === v))
            .map((labels) => String(labels[jobLabel]));
        }),
    ];
    expect(jobs).toEqual(['mcp-edge', 'mcp-edge', 'mcp-edge']);
  });

  it('no annotation runs two template values together', () => {
    for (const rule of rules)
      for (const [key, text] of Object.entries(rule.annotations))
        expect(text, `${rule.alert} ${key}`).not.toMatch(/\$labels\.\w+\s*\}\}\{\{\s*\$labels/);
  });
});
