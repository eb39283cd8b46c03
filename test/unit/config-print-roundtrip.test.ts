// `mcp-edge check-config` prints the effective config; whatever it prints must load back to the same
// effective config. Checked for every config the project ships: config/, the deploy folders' files and
// the configs their Kubernetes ConfigMaps carry.
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type LoadedConfig, limitPolicyOf, parseConfigText } from '../../src/config/load.js';
import { formatEffectiveConfig } from '../../src/config/print.js';
import { resolveLimits } from '../../src/core/limits.js';
import type { EffectiveLimits } from '../../src/core/types.js';
import { REDACTED } from '../../src/core/url-credentials.js';
import { filesUnder, isRecord, readText, repoPath, yamlDocuments } from '../deploy/repo-files.js';
import { REPO_ROOT } from '../support/processes.js';

/** What the shipped configs reference from the environment (deploy/docker's upstream). */
const ENV = { MCP_EDGE_UPSTREAM: 'http://127.0.0.1:3000/mcp' };
const CONFIG_KEY = 'mcp-edge.yaml';

interface ShippedConfig {
  origin: string;
  text: string;
}

/** mcp-edge configs: every YAML file of config/, every mcp-edge*.yaml under deploy/, every ConfigMap's mcp-edge.yaml. */
function shippedConfigs(): ShippedConfig[] {
  const configs: ShippedConfig[] = [];
  for (const name of readdirSync(repoPath('config'))
    .filter((file) => file.endsWith('.yaml'))
    .sort()) {
    configs.push({ origin: `config/${name}`, text: readText(repoPath('config', name)) });
  }
  for (const path of filesUnder(repoPath('deploy'), ['.yaml', '.yml'])) {
    const origin = relative(REPO_ROOT, path);
    if (path.endsWith(`/${CONFIG_KEY}`)) {
      configs.push({ origin, text: readText(path) });
      continue;
    }
    // Helm templates are not YAML until rendered; the chart's own test covers its config.
    if (origin.includes('/templates/')) continue;
    yamlDocuments(path).forEach((document, index) => {
      if (!isRecord(document) || document.kind !== 'ConfigMap' || !isRecord(document.data)) return;
      const text = document.data[CONFIG_KEY];
      if (typeof text === 'string') configs.push({ origin: `${origin}#${index} (${CONFIG_KEY})`, text });
    });
  }
  return configs;
}

const configs = shippedConfigs();

function reload(printed: string, origin: string): LoadedConfig {
  return parseConfigText(printed, `${origin} as printed`, {});
}

describe('check-config prints what the loader reads back', () => {
  it('finds the shipped configs: config/, deploy/*, and the ConfigMaps', () => {
    const origins = configs.map((config) => config.origin);
    expect(origins).toEqual(
      expect.arrayContaining([
        'config/demo.yaml',
        'config/mcp-edge.example.yaml',
        'deploy/docker/mcp-edge.yaml',
        'deploy/compose/mcp-edge/mcp-edge.yaml',
        'deploy/stdio/mcp-edge.yaml',
        `deploy/kubernetes/configmap.yaml#0 (${CONFIG_KEY})`,
        `deploy/stdio/kubernetes.yaml#0 (${CONFIG_KEY})`,
      ]),
    );
  });

  for (const { origin, text } of configs) {
    it(`${origin}: the printed effective config (secrets shown) loads back to the same config`, () => {
      const loaded = parseConfigText(text, join(REPO_ROOT, origin), ENV);
      const printed = formatEffectiveConfig(loaded, { redact: false });
      const reloaded = reload(printed, origin);
      // Printed again, it is the same text: every value, a ceiling as it is in force included, reads back.
      expect(body(formatEffectiveConfig(reloaded, { redact: false }))).toEqual(body(printed));
      // A ceiling above limits.hardMaxBytes (or none) is printed as the cap in force; anything else is the
      // configured value itself.
      if (!printed.includes(CLAMPED)) expect(reloaded.config).toEqual(loaded.config);
    });

    it(`${origin}: as check-config prints it (redacted), it loads back, its API key hashes as they were`, () => {
      const loaded = parseConfigText(text, join(REPO_ROOT, origin), ENV);
      const reloaded = reload(formatEffectiveConfig(loaded), origin);
      const apiKeys = (config: LoadedConfig['config']) =>
        config.tenancy.resolve.filter((resolver) => 'apiKey' in resolver);
      expect(apiKeys(reloaded.config)).toEqual(apiKeys(loaded.config));
    });

    it(`${origin}: as check-config prints it, it differs from the above only where it says ${REDACTED}`, () => {
      const loaded = parseConfigText(text, join(REPO_ROOT, origin), ENV);
      const shown = formatEffectiveConfig(loaded, { redact: false }).split('\n');
      const printed = formatEffectiveConfig(loaded).split('\n');
      expect(printed).toHaveLength(shown.length);
      const differing = printed.filter((line, index) => line !== shown[index]);
      expect(differing.filter((line) => !line.includes(REDACTED))).toEqual([]);
    });
  }

  it('the clamped ceilings of the example print as in force, and load back in force the same', () => {
    const loaded = parseConfigText(readText(repoPath('config/mcp-edge.example.yaml')), 'example', ENV);
    const printed = formatEffectiveConfig(loaded, { redact: false });
    expect(printed).toContain(CLAMPED);
    const reloaded = reload(printed, 'example');
    const policy = limitPolicyOf(loaded.config);
    const reloadedPolicy = limitPolicyOf(reloaded.config);
    for (const tenant of ['no-such-tenant', ...Object.keys(loaded.config.tenants)]) {
      for (const tool of [undefined, ...Object.keys(loaded.config.limits.tools)]) {
        const query = { tenant, method: 'tools/call', tool };
        expect(inForce(resolveLimits(reloadedPolicy, query)), JSON.stringify(query)).toEqual(
          inForce(resolveLimits(policy, query)),
        );
      }
    }
  });
});

const CLAMPED = 'clamped by limits.hardMaxBytes';

/**
 * The printout without its header (which names the file and its hash) and the comments after values
 * (a clamped ceiling's says where it was configured, which a reloaded printout no longer knows).
 */
function body(printed: string): string {
  return printed
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .map((line) => line.replace(/ #.*$/, ''))
    .join('\n');
}

/** What a resolved set of limits enforces: the mode and each ceiling's value, without where they came from. */
function inForce(limits: EffectiveLimits): unknown {
  return {
    mode: limits.mode.value,
    request: Object.fromEntries(Object.entries(limits.request).map(([key, ceiling]) => [key, ceiling.value])),
    response: limits.response.maxMessageBytes.value,
  };
}
