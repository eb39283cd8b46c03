// grafana/dashboards/mcp-edge.json against Grafana's published dashboard schema (@grafana/schema, at the
// version of the Grafana the compose trial runs): the dashboard, each panel's options and custom field
// config, each variable. What its queries return from a real Prometheus is checked in
// test/integration/metrics-prometheus.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/processes.js';
import { dashboardProblems } from './grafana-schema.js';
import { at, COMPOSE_DIR, isRecord, yamlMapping } from './repo-files.js';

const DASHBOARD_FILE = join(REPO_ROOT, 'grafana/dashboards/mcp-edge.json');
const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Record<string, unknown>;

type Panel = Record<string, unknown>;

function panels(): Panel[] {
  const list = dashboard.panels;
  return (Array.isArray(list) ? list : []).filter(isRecord);
}

/** A copy of the dashboard with `change` applied to its first panel of `type`. */
function withPanel(type: string, change: (panel: Panel) => void): Record<string, unknown> {
  const copy = structuredClone(dashboard);
  const panel = (copy.panels as Panel[]).find((entry) => entry.type === type);
  if (panel === undefined) throw new Error(`no ${type} panel`);
  change(panel);
  return copy;
}

describe('the Grafana dashboard, checked by Grafana’s own schema (@grafana/schema)', () => {
  it('uses the schema of the Grafana the compose trial runs', () => {
    const { version } = JSON.parse(
      readFileSync(join(REPO_ROOT, 'node_modules/@grafana/schema/package.json'), 'utf8'),
    ) as { version: string };
    const image = String(at(yamlMapping(join(COMPOSE_DIR, 'compose.yaml')), 'services', 'grafana', 'image'));
    expect(image).toBe(`grafana/grafana:${version}`);
  });

  it('grafana/dashboards/mcp-edge.json is a valid dashboard: every field known, typed and complete', () => {
    expect(panels().length).toBeGreaterThan(10);
    expect(dashboardProblems(dashboard)).toEqual([]);
  });

  it.each([
    [
      'a misspelt dashboard field',
      () => ({ ...dashboard, refersh: '30s' }),
      /^dashboard: .*'"refersh"' does not exist/,
    ],
    [
      'a misspelt panel field',
      () => withPanel('timeseries', (panel) => Object.assign(panel, { fieldConfg: {} })),
      /^panels\[\d+\] ".*" \(timeseries\): .*'"fieldConfg"' does not exist/,
    ],
    [
      'a misspelt panel option',
      () => withPanel('timeseries', (panel) => Object.assign(panel.options as Panel, { legnd: {} })),
      /\(timeseries\): .*'"legnd"' does not exist/,
    ],
    [
      'a value outside an enum',
      () =>
        withPanel('timeseries', (panel) =>
          Object.assign(panel.options as Panel, { tooltip: { mode: 'several', sort: 'none' } }),
        ),
      /\(timeseries\): Type '"several"' is not assignable/,
    ],
    [
      'a number written as a string',
      () => withPanel('table', (panel) => Object.assign(panel.gridPos as Panel, { w: '12' })),
      /\(table\): Type 'string' is not assignable to type 'number'/,
    ],
    [
      'a required option left out',
      () => withPanel('heatmap', (panel) => delete (panel.options as Panel).showValue),
      /\(heatmap\): Property 'showValue' is missing/,
    ],
    [
      'a panel type without a schema',
      () => withPanel('piechart', (panel) => Object.assign(panel, { type: 'piechrat' })),
      /no panel schema for piechrat/,
    ],
  ])('would name %s', (_name, broken, pattern) => {
    const problems = dashboardProblems(broken());
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.join('\n')).toMatch(pattern);
  });
});
