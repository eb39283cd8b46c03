// Checks a Grafana dashboard JSON against Grafana's own published dashboard schema. Grafana defines it
// in CUE (the dashboard kind and each panel plugin's panelcfg) and publishes it to npm as
// @grafana/schema: TypeScript types generated from that CUE, the ones Grafana's own frontend compiles
// against. The package ships no JSON Schema and no CUE, so the check is the TypeScript checker: the
// dashboard and each panel are written as object literals of those types, which names every
// unknown field (excess property checks, at any depth), every value of the wrong type or outside an
// enum, and every missing required field.
import { join } from 'node:path';
import { REPO_ROOT } from '../support/processes.js';
import { typeCheckProblems } from './typecheck-source.js';

const SCHEMA = '@grafana/schema';
const PANEL_CFG = (plugin: string, name: string) =>
  `${SCHEMA}/dist/esm/raw/composable/${plugin}/panelcfg/x/${name}PanelCfg_types.gen.js`;

/** The panel plugins whose options and custom field config the schema types; other types are refused. */
const PANEL_TYPES: Readonly<Record<string, string>> = {
  timeseries: PANEL_CFG('timeseries', 'TimeSeries'),
  table: PANEL_CFG('table', 'Table'),
  heatmap: PANEL_CFG('heatmap', 'Heatmap'),
  piechart: PANEL_CFG('piechart', 'PieChart'),
  stat: PANEL_CFG('stat', 'Stat'),
  gauge: PANEL_CFG('gauge', 'Gauge'),
  bargauge: PANEL_CFG('bargauge', 'BarGauge'),
  text: PANEL_CFG('text', 'Text'),
};

/**
 * The generated types spell fixed strings as TypeScript enums (ThresholdsMode.Absolute = 'absolute');
 * JSON holds the string itself. Json<T> is T with each string enum replaced by the union of its values,
 * everything else unchanged, so a literal 'absolute' fits and 'absolut' does not.
 */
const PRELUDE = `
type Json<T> = T extends string
  ? \`\${T}\`
  : T extends number | boolean | null | undefined
    ? T
    : T extends readonly (infer U)[]
      ? Json<U>[]
      : T extends object
        ? { [K in keyof T]: Json<T[K]> }
        : T;
type PanelOf<Options, Custom> = Json<Omit<Panel, 'options' | 'fieldConfig'>> & {
  options?: Json<Options>;
  fieldConfig?: Json<FieldConfigSource<Custom>>;
};
// A panel type the schema has no panelcfg for: refused by name rather than checked loosely.
type UnknownPanelType<Name extends string> = { type: \`no panel schema for \${Name}\` };
`;

interface Part {
  origin: string;
  type: string;
  value: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The dashboard without its panels, then every panel (those inside rows included), each with its own type. */
function partsOf(dashboard: Record<string, unknown>, imports: Map<string, string>): Part[] {
  const { panels, ...rest } = dashboard;
  const parts: Part[] = [{ origin: 'dashboard', type: 'Json<Dashboard>', value: rest }];
  const visit = (panel: unknown, origin: string) => {
    if (!isRecord(panel)) {
      parts.push({ origin, type: 'Json<Panel>', value: panel });
      return;
    }
    const label = `${origin} "${String(panel.title ?? '')}" (${String(panel.type)})`;
    if (panel.type === 'row') {
      const { panels: inner, ...row } = panel;
      parts.push({ origin: label, type: 'Json<RowPanel>', value: { ...row, panels: [] } });
      (Array.isArray(inner) ? inner : []).forEach((child, index) => {
        visit(child, `${origin}.panels[${index}]`);
      });
      return;
    }
    const module = PANEL_TYPES[String(panel.type)];
    if (module === undefined) {
      parts.push({ origin: label, type: `UnknownPanelType<'${String(panel.type)}'>`, value: panel });
      return;
    }
    const alias = `P_${String(panel.type)}`;
    imports.set(alias, module);
    parts.push({ origin: label, type: `PanelOf<${alias}.Options, ${alias}.FieldConfig>`, value: panel });
  };
  (Array.isArray(panels) ? panels : []).forEach((panel, index) => {
    visit(panel, `panels[${index}]`);
  });
  return parts;
}

/** Every problem the checker finds, as `<where>: <message> (<line>)`; [] for a valid dashboard. */
export function dashboardProblems(dashboard: unknown): string[] {
  if (!isRecord(dashboard)) return ['dashboard: not a JSON object'];
  // A file inside the repository, so that module resolution finds node_modules; it exists only in memory.
  const fileName = join(REPO_ROOT, 'test/deploy/__dashboard_as_types__.ts');
  const imports = new Map<string, string>();
  const parts = partsOf(dashboard, imports);
  const lines: string[] = [
    `import type { Dashboard, FieldConfigSource, Panel, RowPanel } from '${SCHEMA}';`,
    ...[...imports].map(([alias, module]) => `import type * as ${alias} from '${module}';`),
    ...PRELUDE.split('\n'),
  ];
  const origins: { line: number; origin: string }[] = [];
  let lineCount = lines.length;
  parts.forEach((part, index) => {
    origins.push({ line: lineCount, origin: part.origin });
    const statement = `export const part${index}: ${part.type} = ${JSON.stringify(part.value, null, 2)};`;
    lines.push(statement);
    lineCount += statement.split('\n').length;
  });
  const source = lines.join('\n');
  return typeCheckProblems(fileName, source, origins, 'imports');
}
