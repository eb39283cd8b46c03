// The alert rules (deploy/prometheus/alerts.yaml) evaluated by Prometheus' own rule engine: `promtool test
// rules deploy/prometheus/alerts.test.yaml`, the rule tests shipped beside them, one per alert, each firing
// (labels and rendered annotations exact) and resolving after. Also: the PrometheusRule manifest carries the
// same groups, every runbook_url leads to a section of docs/operations.md, and the docs' count and table of
// the rules are the file's. The end-to-end run against a real edge is test/integration/alerts-live.test.ts.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { prometheusInstalled, promtool } from '../support/prometheus.js';
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
const TESTS_FILE = repoPath('deploy/prometheus/alerts.test.yaml');
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

interface AlertTest {
  name: string;
  alert_rule_test: {
    eval_time: string;
    alertname: string;
    exp_alerts: { exp_annotations: Record<string, string> }[];
  }[];
}
const shippedTests = yamlMapping(TESTS_FILE);
const tests = listAt(shippedTests, 'tests') as AlertTest[];

function runbook(alert: string): string {
  return `docs/operations.md#${alert.toLowerCase()}`;
}

const workDir = mkdtempSync(join(tmpdir(), 'mcp-edge-alert-rules-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** `promtool test rules FILE`: its output, or an error with it when a test fails. */
async function runPromtool(testFile: string): Promise<string> {
  try {
    const { stdout, stderr } = await promtool(['test', 'rules', testFile]);
    return `${stdout}${stderr}`;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`promtool test rules failed:\n${stdout}${stderr}`);
  }
}

describe('the alert rules, evaluated by promtool over the shipped rule tests', () => {
  it('promtool finds the rules valid, and every test of alerts.test.yaml passes', async () => {
    if (!prometheusInstalled()) throw new Error('promtool missing: apt-get install -y prometheus');
    const { stdout } = await promtool(['check', 'rules', ALERTS_FILE]);
    expect(stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(at(shippedTests, 'rule_files')).toEqual(['alerts.yaml']);
    expect(await runPromtool(TESTS_FILE)).toContain('SUCCESS');
  }, 60_000);

  it.each(rules.map((rule) => [rule.alert]))(
    '%s has its test: nothing firing before, exactly it firing during, nothing after it resolves',
    (alert) => {
      const own = tests.filter((test) => test.name === alert);
      expect(own, `alerts.test.yaml has no test named ${alert}`).toHaveLength(1);
      const evaluations = own[0]?.alert_rule_test ?? [];
      expect(evaluations.every((evaluation) => evaluation.alertname === alert)).toBe(true);
      expect(evaluations[0]?.exp_alerts).toEqual([]);
      expect(evaluations.at(-1)?.exp_alerts).toEqual([]);
      expect(evaluations.some((evaluation) => evaluation.exp_alerts.length > 0)).toBe(true);
    },
  );

  it('the check is real: the tests expecting a wrong annotation fail', async () => {
    copyFileSync(ALERTS_FILE, join(workDir, 'alerts.yaml'));
    const broken = structuredClone(shippedTests);
    const reload = (listAt(broken, 'tests') as AlertTest[]).find(
      (t) => t.name === 'McpEdgeConfigReloadFailed',
    );
    const firing = reload?.alert_rule_test.find((evaluation) => evaluation.exp_alerts.length > 0);
    if (firing?.exp_alerts[0] === undefined) throw new Error('no firing evaluation');
    firing.exp_alerts[0].exp_annotations.summary = 'something else';
    const brokenFile = join(workDir, 'alerts.test.yaml');
    writeFileSync(brokenFile, stringify(broken));
    await expect(runPromtool(brokenFile)).rejects.toThrow(/FAILED/);
  }, 60_000);
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

  it("docs/operations.md counts the rules of alerts.yaml and lists each in its table, in the file's order", () => {
    const text = readFileSync(OPERATIONS, 'utf8');
    const alerts = text.slice(text.indexOf('\n## Alerts\n'));
    const count = /\[deploy\/prometheus\/alerts\.yaml\]\([^)]*\) holds (\d+) rules/.exec(alerts)?.[1];
    expect(Number(count), 'the count in "## Alerts"').toBe(rules.length);
    const table = alerts.slice(alerts.indexOf('| alert | fires when |'));
    const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2);
    expect(rows.map((row) => /^\| `(\w+)` \|/.exec(row)?.[1])).toEqual(rules.map((rule) => rule.alert));
  });

  it('no annotation runs two template values together', () => {
    for (const rule of rules)
      for (const [key, text] of Object.entries(rule.annotations))
        expect(text, `${rule.alert} ${key}`).not.toMatch(/\$labels\.\w+\s*\}\}\{\{\s*\$labels/);
  });
});
