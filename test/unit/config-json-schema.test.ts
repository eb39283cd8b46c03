// biome-ignore-all lint/suspicious/noTemplateCurlyInString: config text uses ${VAR} references on purpose
// schema/mcp-edge.schema.json, the JSON Schema editors read through the `# yaml-language-server: $schema=`
// line of each shipped config: generated from the zod schema and equal to what it generates now, valid
// for every config the repository ships, failing for broken ones, and never stricter than the loader.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configJsonSchemaText } from '../../src/config/json-schema.js';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { REPO_ROOT } from '../support/processes.js';

const SCHEMA_FILE = join(REPO_ROOT, 'schema/mcp-edge.schema.json');
const shipped = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
const ajv = new Ajv({ allErrors: true, strict: true });
const validate = ajv.compile(shipped);

function schemaErrors(value: unknown): string[] {
  return validate(value)
    ? []
    : (validate.errors ?? []).map((error: ErrorObject) => `${error.instancePath || '/'} ${error.message}`);
}

function fromYaml(text: string): unknown {
  return parse(text) ?? {};
}

/** The configs the repository ships, each with the folder its `$schema` path is relative to. */
interface ShippedConfig {
  name: string;
  text: string;
  baseDir: string;
}

function file(path: string): ShippedConfig {
  return {
    name: path,
    text: readFileSync(join(REPO_ROOT, path), 'utf8'),
    baseDir: dirname(join(REPO_ROOT, path)),
  };
}

function configMapConfig(): ShippedConfig {
  const manifest = parse(readFileSync(join(REPO_ROOT, 'deploy/kubernetes/configmap.yaml'), 'utf8')) as {
    data: Record<string, string>;
  };
  const text = manifest.data['mcp-edge.yaml'];
  if (text === undefined) throw new Error('configmap.yaml has no mcp-edge.yaml');
  return {
    name: 'deploy/kubernetes/configmap.yaml (mcp-edge.yaml)',
    text,
    baseDir: join(REPO_ROOT, 'deploy/kubernetes'),
  };
}

const SHIPPED: ShippedConfig[] = [
  file('config/mcp-edge.example.yaml'),
  file('config/demo.yaml'),
  file('deploy/compose/mcp-edge/mcp-edge.yaml'),
  file('deploy/docker/mcp-edge.yaml'),
  configMapConfig(),
];

const UPSTREAM = 'upstream: { url: http://127.0.0.1:3000/mcp }\n';

describe('schema/mcp-edge.schema.json', () => {
  it('is what `npm run schema` generates from src/config/schema.ts now', () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8'), 'stale: run `npm run schema` and commit the file').toBe(
      configJsonSchemaText(),
    );
    expect(shipped.$schema).toBe('http://json-schema.org/draft-07/schema#');
  });

  it('is shipped in the npm package', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('schema');
  });

  it.each(SHIPPED.map((config) => [config.name, config]))(
    '%s names the schema on its first line, and validates against it',
    (_name, config) => {
      const firstLine = config.text.split('\n')[0] ?? '';
      const match = /^# yaml-language-server: \$schema=(\S+)$/.exec(firstLine);
      expect(match, firstLine).not.toBeNull();
      expect(resolve(config.baseDir, match?.[1] ?? '')).toBe(SCHEMA_FILE);
      expect(schemaErrors(fromYaml(config.text))).toEqual([]);
      // And mcp-edge itself loads it (the environment the images and examples set).
      const env = { MCP_EDGE_UPSTREAM: 'http://mcp:3000/mcp' };
      expect(() => parseConfigText(config.text, config.name, env)).not.toThrow();
    },
  );

  it.each([
    ['a misspelt key', `${UPSTREAM}limit:\n  mode: enforce\n`, /must NOT have additional properties/],
    ['a size with a space', `${UPSTREAM}limits:\n  response: { maxMessageBytes: 4 mb }\n`, /maxMessageBytes/],
    ['a size without B', `${UPSTREAM}limits:\n  request: { maxBodyBytes: 4M }\n`, /maxBodyBytes/],
    ['a fractional byte count', `${UPSTREAM}limits:\n  hardMaxBytes: 1.5\n`, /hardMaxBytes/],
    ['a duration without a unit', `${UPSTREAM}server:\n  timeouts: { shutdownGrace: 30 }\n`, /shutdownGrace/],
    ['a port out of range', `${UPSTREAM}listen: { port: 70000 }\n`, /\/listen\/port/],
    ['a port that is a word', `${UPSTREAM}listen: { port: eighty }\n`, /\/listen\/port/],
    ['an unknown mode', `${UPSTREAM}limits: { mode: enforcing }\n`, /\/limits\/mode/],
    ['an unknown log level', `${UPSTREAM}logging: { level: verbose }\n`, /\/logging\/level/],
    ['a tenant id with a space', `${UPSTREAM}tenants:\n  "team a": {}\n`, /property name/],
    ['a misspelt key in a tenant', `${UPSTREAM}tenants:\n  acme: { limit: {} }\n`, /\/tenants\/acme/],
    ['no upstream', 'listen: { port: 8080 }\n', /must have required property 'upstream'/],
  ])('fails %s, as mcp-edge does', (_name, text, pattern) => {
    expect(schemaErrors(fromYaml(text)).join('\n')).toMatch(pattern);
    expect(() => parseConfigText(text, 'edge.yaml', {})).toThrow(ConfigError);
  });

  it('accepts what only the loader reads right: ${VAR} in any value, a tenant with nothing under it', () => {
    const text = [
      'listen:',
      '  host: ${HOST:-0.0.0.0}',
      '  port: ${PORT}',
      'upstream:',
      '  url: ${UPSTREAM}',
      '  maxConnections: ${MAX_CONNECTIONS:-10}',
      'limits:',
      '  mode: ${MODE:-enforce}',
      '  response:',
      '    maxMessageBytes: ${CEILING:-4MiB}',
      'server:',
      '  timeouts:',
      '    shutdownGrace: ${GRACE:-20s}',
      'tenants:',
      '  acme:',
      '',
    ].join('\n');
    expect(schemaErrors(fromYaml(text))).toEqual([]);
    const { config } = parseConfigText(text, 'edge.yaml', {
      PORT: '8080',
      UPSTREAM: 'http://127.0.0.1:3000/mcp',
    });
    expect(config.listen.port).toBe(8080);
    expect(config.upstream.maxConnections).toBe(10);
    expect(config.tenants.acme).toEqual({});
  });

  it('never refuses a size or a duration that mcp-edge accepts', () => {
    const config = (key: 'maxMessageBytes' | 'shutdownGrace', value: string | number) =>
      key === 'maxMessageBytes'
        ? `${UPSTREAM}limits:\n  response: { maxMessageBytes: ${JSON.stringify(value)} }\n`
        : `${UPSTREAM}server:\n  timeouts: { shutdownGrace: ${JSON.stringify(value)} }\n`;
    const loads = (text: string): boolean => {
      try {
        parseConfigText(text, 'edge.yaml', {});
        return true;
      } catch {
        return false;
      }
    };
    const number = fc.oneof(
      fc.nat({ max: 5000 }).map(String),
      fc.stringMatching(/^[0-9]{1,4}(\.[0-9]{1,3})?$/),
    );
    const size = fc.oneof(
      fc.nat(),
      fc
        .tuple(number, fc.constantFrom('B', 'KB', 'MB', 'GB', 'KiB', 'MiB', 'GiB', 'M', 'kb', ' MiB', ''))
        .map(([amount, unit]) => `${amount}${unit}`),
    );
    const duration = fc.oneof(
      fc.constantFrom(0, 30, '0'),
      fc
        .tuple(number, fc.constantFrom('ms', 's', 'm', 'h', 'sec', ''))
        .map(([amount, unit]) => `${amount}${unit}`),
    );
    let accepted = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          size.map((v) => config('maxMessageBytes', v)),
          duration.map((v) => config('shutdownGrace', v)),
        ),
        (text) => {
          if (!loads(text)) return;
          accepted++;
          expect(schemaErrors(fromYaml(text)), text).toEqual([]);
        },
      ),
      { numRuns: 500 },
    );
    expect(accepted).toBeGreaterThan(50);
  });
});
