// The Helm chart's values: values.schema.json, generated from mcp-edge's own config schema for `config:`,
// makes `helm lint`, `helm template` and `helm install` refuse what mcp-edge would refuse at start (a
// misspelt key, a size it cannot read) instead of rendering a pod that crash-loops; and the defaults hold no
// sample tenant that Helm's merge would carry into a user's config.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { helmValuesSchemaText } from '../../scripts/helm-values-schema.js';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { CHART, helm, render, renderedConfig, TENANTS_EXAMPLE } from './helm-render.js';
import { isRecord, repoPath, yamlMapping } from './repo-files.js';

const SCHEMA_FILE = join(CHART, 'values.schema.json');
const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
const validate = new Ajv({ allErrors: true, strict: true }).compile(schema);
const defaults = yamlMapping(join(CHART, 'values.yaml'));
const workDir = mkdtempSync(join(tmpdir(), 'mcp-edge-helm-values-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** The default `config:` with `value` at a dotted key path, as the text of a config file. */
function configWith(path: string, value: unknown): string {
  const config = structuredClone(defaults.config) as Record<string, unknown>;
  const keys = path.split('.');
  let node = config;
  for (const key of keys.slice(0, -1)) {
    if (!isRecord(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys.at(-1) ?? ''] = value;
  return stringify(config);
}

/** Values files merged as Helm merges them: maps key by key, anything else replaced. */
function mergedValues(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const merged = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const under = merged[key];
    merged[key] = isRecord(under) && isRecord(value) ? mergedValues(under, value) : value;
  }
  return merged;
}

describe("the Helm chart's values", { timeout: 180_000 }, () => {
  it('values.schema.json is what `npm run schema` generates now, its config: the schema of the config file', () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8'), 'stale: run `npm run schema` and commit the file').toBe(
      helmValuesSchemaText(),
    );
    const configSchema = JSON.parse(readFileSync(repoPath('schema/mcp-edge.schema.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const chartConfig = (schema.properties as Record<string, Record<string, unknown>>).config;
    expect(chartConfig?.properties).toEqual(configSchema.properties);
    expect(chartConfig?.additionalProperties).toBe(false);
    expect(schema.definitions).toEqual(configSchema.definitions);
  });

  it('the defaults and the example values validate, and helm lint passes with each', async () => {
    expect(validate(defaults), JSON.stringify(validate.errors)).toBe(true);
    const merged = mergedValues(defaults, yamlMapping(TENANTS_EXAMPLE));
    expect(validate(merged), JSON.stringify(validate.errors)).toBe(true);
    expect(await helm(['lint', '--strict', CHART, '-f', TENANTS_EXAMPLE])).toMatch(/0 chart\(s\) failed/);
  });

  // Each: the --set, the same change to the config file (key path and value), what helm names.
  it.each([
    [
      'a misspelt config key',
      'config.limtis.mode=observe',
      'limtis',
      { mode: 'observe' },
      /at '\/config': additional properties 'limtis' not allowed/,
    ],
    [
      'a size mcp-edge cannot read',
      'config.limits.response.maxMessageBytes=4 mb',
      'limits.response.maxMessageBytes',
      '4 mb',
      /at '\/config\/limits\/response\/maxMessageBytes'/,
    ],
    [
      'an unknown mode',
      'config.limits.mode=enforcing',
      'limits.mode',
      'enforcing',
      /at '\/config\/limits\/mode'/,
    ],
    ['a port out of range', 'config.listen.port=70000', 'listen.port', 70000, /at '\/config\/listen\/port'/],
    [
      'a duration without a unit',
      'config.server.timeouts.shutdownGrace=20',
      'server.timeouts.shutdownGrace',
      20,
      /shutdownGrace/,
    ],
    [
      'a misspelt key in a tenant',
      'config.tenants.acme.limit.mode=observe',
      'tenants.acme',
      { limit: { mode: 'observe' } },
      /at '\/config\/tenants\/acme'/,
    ],
  ] as const)(
    'helm template refuses %s, as mcp-edge refuses the file',
    async (_name, set, path, value, message) => {
      await expect(render([set])).rejects.toThrow(message);
      expect(() => parseConfigText(configWith(path, value), 'mcp-edge.yaml', {})).toThrow(ConfigError);
    },
  );

  it('refuses a misspelt chart value, and helm lint refuses a values file that mcp-edge would refuse', async () => {
    await expect(render(['replcas=2'])).rejects.toThrow(/additional properties 'replcas' not allowed/);
    const bad = join(workDir, 'bad-values.yaml');
    writeFileSync(bad, 'config:\n  limits:\n    response: { maxMessageBytes: 4 mb }\n');
    await expect(helm(['lint', CHART, '-f', bad])).rejects.toThrow(/maxMessageBytes/);
  });

  it('a values file with its own tenants renders exactly those: no sample tenant from the defaults', async () => {
    const mine = join(workDir, 'tenants.yaml');
    writeFileSync(
      mine,
      stringify({
        config: {
          tenants: {
            alice: { limits: { response: { maxMessageBytes: '2MiB' } } },
            bob: { limits: { response: { maxMessageBytes: '512KiB' } } },
          },
        },
      }),
    );
    const config = renderedConfig(await render([], { files: [mine] }));
    expect(Object.keys(config.tenants).sort()).toEqual(['alice', 'bob']);
    expect(renderedConfig(await render()).tenants).toEqual({});
  });
});
