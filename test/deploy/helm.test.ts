// The Helm chart (deploy/helm/mcp-edge), rendered by the real `helm` CLI: the same pod as the kustomize
// example (deploy/kubernetes) for the same values, valid against the Kubernetes schemas, the alert rules
// of deploy/prometheus/alerts.yaml as a PrometheusRule, API key hashes from a Secret, memory from the formula.
// Its values schema and defaults: helm-values.test.ts; what it renders for Prometheus and the cluster's
// policies: helm-monitoring.test.ts.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  EDGE_MEMORY,
  edgeMemoryForCeiling,
  IMAGE_NODE_LINE,
  largestHoldBytes,
  MiB,
  SIZED_FOR_ANNOTATION,
} from '../../scripts/memory-formula.js';
import { parseConfigText } from '../../src/config/load.js';
import type { EdgeConfig } from '../../src/config/schema.js';
import { TenantResolver } from '../../src/tenancy/tenant-resolver.js';
import {
  CHART,
  CONFIG_KEY,
  edgeContainer,
  helm,
  RELEASE,
  type Record_,
  render,
  renderedConfig,
  TENANTS_EXAMPLE,
} from './helm-render.js';
import { type Manifest, schemaProblems, typeProblems } from './kube-schema.js';
import {
  applyJsonPatch,
  at,
  isRecord,
  KUBERNETES_DIR,
  listAt,
  manifestOf,
  memoryQuantityBytes,
  type PatchOperation,
  repoPath,
  sidecarManifests,
  yamlDocuments,
  yamlMapping,
} from './repo-files.js';

/** The labels the chart adds for Helm (release, chart, version); the kustomize example has none of them. */
const HELM_LABELS = [
  'app.kubernetes.io/instance',
  'app.kubernetes.io/version',
  'app.kubernetes.io/managed-by',
  'helm.sh/chart',
];
/** The chart names every object after its release; the kustomize example's own names, for the same objects. */
const KUSTOMIZE_NAMES: Record<string, string> = {
  'ConfigMap/mcp-server-mcp-edge-config': 'mcp-edge-config',
  'ServiceMonitor/mcp-server': 'mcp-edge',
};

/** A manifest as the kustomize example writes it: without Helm's labels, with the example's names, the config parsed. */
function comparable(manifest: Record_): Record_ {
  const copy = structuredClone(manifest);
  const strip = (labels: unknown) => {
    if (isRecord(labels)) for (const label of HELM_LABELS) delete labels[label];
  };
  const walk = (node: unknown, key?: string): void => {
    if (Array.isArray(node)) for (const item of node) walk(item);
    else if (isRecord(node)) {
      if (key === 'labels' || key === 'matchLabels' || key === 'selector') strip(node);
      for (const [child, value] of Object.entries(node)) walk(value, child);
    }
  };
  walk(copy);
  const metadata = copy.metadata as Record_;
  const renamed = KUSTOMIZE_NAMES[`${String(copy.kind)}/${String(metadata.name)}`];
  if (renamed !== undefined) metadata.name = renamed;
  if (copy.kind === 'Deployment') {
    for (const volume of listAt(copy, 'spec', 'template', 'spec', 'volumes').filter(isRecord)) {
      const configMap = volume.configMap;
      if (isRecord(configMap))
        configMap.name = KUSTOMIZE_NAMES[`ConfigMap/${String(configMap.name)}`] ?? configMap.name;
    }
  }
  if (copy.kind === 'ConfigMap') {
    const data = copy.data as Record_;
    data[CONFIG_KEY] = parseConfigText(String(data[CONFIG_KEY]), 'ConfigMap', {}).config;
  }
  return copy;
}

function byKindAndName(manifests: readonly Manifest[]): Record<string, Record_> {
  return Object.fromEntries(
    manifests.map((m) => [`${String(m.value.kind)}/${String(at(m.value, 'metadata', 'name'))}`, m.value]),
  );
}

/** The tenant the rendered config gives a request naming `tenant` in x-tenant-id, from `peer`. */
async function tenantFromHeader(
  config: EdgeConfig,
  tenant: string,
  peer: string,
): Promise<string | undefined> {
  const decision = await new TenantResolver(config.tenancy, Object.keys(config.tenants)).resolve(
    { 'x-tenant-id': tenant },
    peer,
  );
  return decision.ok ? decision.tenant : undefined;
}

/** An address on the pod network of most clusters, and one in the gateway's range the tests set. */
const SOME_POD = '10.1.2.3';
const GATEWAY_CIDR = '10.42.7.0/24';
const GATEWAY_POD = '10.42.7.9';

// helm runs as a child process per render, and the type check compiles every manifest: minutes on a loaded machine.
describe('the Helm chart (deploy/helm/mcp-edge)', { timeout: 180_000 }, () => {
  it('passes helm lint --strict', async () => {
    expect(await helm(['lint', '--strict', CHART])).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders manifests valid against the Kubernetes schemas, with no field the API server does not know', async () => {
    const manifests = await render();
    expect(manifests.map((m) => m.value.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'NetworkPolicy',
      'PrometheusRule',
      'Service',
      'Service',
      'ServiceMonitor',
    ]);
    expect(schemaProblems(manifests)).toEqual([]);
    expect(typeProblems(manifests)).toEqual([]);
    // With replicas, the PodDisruptionBudget too.
    const replicated = await render(['replicas=3']);
    expect(replicated.map((m) => m.value.kind)).toContain('PodDisruptionBudget');
    expect(schemaProblems(replicated)).toEqual([]);
    expect(typeProblems(replicated)).toEqual([]);
  });

  it('renders the sidecar of the kustomize example with its example values: Deployment, Services, ConfigMap, ServiceMonitor', async () => {
    const rendered = (await render([], { files: [TENANTS_EXAMPLE] })).map((m) => ({
      ...m,
      value: comparable(m.value),
    }));
    const chart = byKindAndName(rendered);
    const example = sidecarManifests().map((m) => ({ ...m, value: comparable(m.value) }));
    expect(example.map((m) => m.value.kind)).toEqual(
      expect.arrayContaining(['ConfigMap', 'Deployment', 'Service', 'Service', 'ServiceMonitor']),
    );
    for (const [key, manifest] of Object.entries(byKindAndName(example))) {
      // A PrometheusRule of the example (if it has one) carries the same rules under a name of its own.
      if (manifest.kind === 'PrometheusRule') {
        expect(at(manifestOf(rendered, 'PrometheusRule', RELEASE), 'spec'), key).toEqual(
          at(manifest, 'spec'),
        );
      } else expect(chart[key], key).toEqual(manifest);
    }
  });

  it('with nativeSidecar=false renders what the example renders with its plain-container patch', async () => {
    const patch = yamlDocuments(join(KUBERNETES_DIR, 'plain-container.patch.yaml'))[0] as PatchOperation[];
    const chart = comparable(
      manifestOf(await render(['nativeSidecar=false'], { files: [TENANTS_EXAMPLE] }), 'Deployment', RELEASE),
    );
    const example = applyJsonPatch(comparable(manifestOf(sidecarManifests(), 'Deployment', RELEASE)), patch);
    expect(chart).toEqual(example);
  });

  it('renders deploy/prometheus/alerts.yaml, as it is in the repository, as the PrometheusRule', async () => {
    const rule = manifestOf(await render(), 'PrometheusRule', RELEASE);
    const rules = yamlMapping(repoPath('deploy/prometheus/alerts.yaml'));
    expect(at(rule, 'spec')).toEqual(rules);
    expect(listAt(rules, 'groups').length).toBeGreaterThan(0);
  });

  it('takes API key hashes from a Secret: an apiKey resolver first, and each hash from its Secret key', async () => {
    const sha = 'c'.repeat(64);
    const manifests = await render(
      [
        'apiKeys.secretName=mcp-keys',
        'apiKeys.tenants.team-a={ci,laptop}',
        'apiKeys.tenants.team-c={ops}',
        'config.tenancy.resolve[0].header=x-tenant-id',
        `config.tenancy.resolve[0].trustedProxies={${GATEWAY_CIDR}}`,
      ],
      { files: [TENANTS_EXAMPLE] },
    );
    const edge = edgeContainer(manifestOf(manifests, 'Deployment', RELEASE));
    const env = listAt(edge, 'env').filter(isRecord);
    expect(env.map((entry) => [entry.name, at(entry, 'valueFrom', 'secretKeyRef')])).toEqual([
      ['MCP_EDGE_KEY_TEAM_A_CI', { name: 'mcp-keys', key: 'ci' }],
      ['MCP_EDGE_KEY_TEAM_A_LAPTOP', { name: 'mcp-keys', key: 'laptop' }],
      ['MCP_EDGE_KEY_TEAM_C_OPS', { name: 'mcp-keys', key: 'ops' }],
    ]);
    const config = renderedConfig(manifests, {
      MCP_EDGE_KEY_TEAM_A_CI: sha,
      MCP_EDGE_KEY_TEAM_A_LAPTOP: 'd'.repeat(64),
      MCP_EDGE_KEY_TEAM_C_OPS: 'e'.repeat(64),
    });
    const [first, second] = config.tenancy.resolve;
    expect(first).toMatchObject({
      apiKey: {
        header: 'authorization',
        bearer: true,
        tenants: { 'team-a': [sha, 'd'.repeat(64)], 'team-c': ['e'.repeat(64)] },
      },
    });
    expect(second).toMatchObject({ header: 'x-tenant-id' });
    // team-c is not among config.tenants: the chart adds it; team-a keeps its ceilings.
    expect(config.tenants['team-c']).toEqual({});
    expect(config.tenants['team-a']?.limits?.response?.maxMessageBytes).toBe(8 * MiB);
    await expect(render(['apiKeys.tenants.team-a={ci}'])).rejects.toThrow(
      /apiKeys\.secretName: name the Secret/,
    );
  });

  it('by default takes no tenant from a header: a pod naming team-a in x-tenant-id is the default tenant', async () => {
    const config = renderedConfig(await render([], { files: [TENANTS_EXAMPLE] }));
    expect(Object.keys(config.tenants)).toContain('team-a');
    expect(config.tenancy.resolve.filter((resolver) => 'header' in resolver)).toEqual([]);
    expect(await tenantFromHeader(config, 'team-a', SOME_POD)).toBe('default');
    expect(await tenantFromHeader(config, 'team-a', GATEWAY_POD)).toBe('default');
  });

  it('does not render a tenant header resolver without trustedProxies, and names the value to set', async () => {
    const message =
      /config\.tenancy\.resolve\[0\]\.trustedProxies: list the CIDRs of the proxies that set x-tenant-id \(your gateway's pods\)/;
    const header = 'config.tenancy.resolve[0].header=x-tenant-id';
    await expect(render([header])).rejects.toThrow(message);
    // `--set x={}` is a list of one empty string in Helm.
    await expect(render([header, 'config.tenancy.resolve[0].trustedProxies={}'])).rejects.toThrow(message);
    // After an apiKey resolver the index is still the one in config.tenancy.resolve.
    await expect(
      render([
        'apiKeys.secretName=mcp-keys',
        'apiKeys.tenants.team-a={ci}',
        'config.tenancy.resolve[0].header=x-team',
        `config.tenancy.resolve[0].trustedProxies={${GATEWAY_CIDR}}`,
        'config.tenancy.resolve[1].header=x-tenant-id',
      ]),
    ).rejects.toThrow(/config\.tenancy\.resolve\[1\]\.trustedProxies: list the CIDRs/);
  });

  it('renders a tenant header resolver with its trustedProxies: believed from those peers only', async () => {
    const config = renderedConfig(
      await render(
        [
          'config.tenancy.resolve[0].header=x-tenant-id',
          `config.tenancy.resolve[0].trustedProxies={${GATEWAY_CIDR}}`,
        ],
        { files: [TENANTS_EXAMPLE] },
      ),
    );
    expect(config.tenancy.resolve).toEqual([{ header: 'x-tenant-id', trustedProxies: [GATEWAY_CIDR] }]);
    expect(await tenantFromHeader(config, 'team-a', GATEWAY_POD)).toBe('team-a');
    expect(await tenantFromHeader(config, 'team-a', SOME_POD)).toBe('default');
  });

  it("sizes mcp-edge's memory by the formula, with the figures measured for the image's Node line", async () => {
    const values = yamlMapping(join(CHART, 'values.yaml'));
    const figures = EDGE_MEMORY[IMAGE_NODE_LINE];
    expect(at(values, 'memory')).toMatchObject({
      restingMiB: figures.restingMiB,
      headroomMiB: figures.headroomMiB,
      factor: figures.factor,
    });
    const defaults = await render();
    const deployment = manifestOf(defaults, 'Deployment', RELEASE);
    // The default largestMessageMiB is hardMaxBytes, which caps every ceiling: no tenant a values file
    // (the example's, say) or a reload adds can make the edge hold more.
    const largest = Number(at(values, 'memory', 'largestMessageMiB')) * MiB;
    expect(largest).toBe(renderedConfig(defaults).limits.hardMaxBytes);
    expect(largest).toBeGreaterThanOrEqual(largestHoldBytes(renderedConfig(defaults)));
    const example = await render([], { files: [TENANTS_EXAMPLE] });
    expect(largest).toBe(largestHoldBytes(renderedConfig(example)));
    for (const [set, messages, largestMiB] of [
      [[], Number(at(deployment, 'metadata', 'annotations', SIZED_FOR_ANNOTATION)), 32],
      [['memory.messagesInFlight=20', 'memory.largestMessageMiB=64'], 20, 64],
    ] as const) {
      const rendered = manifestOf(await render([...set]), 'Deployment', RELEASE);
      expect(at(rendered, 'metadata', 'annotations', SIZED_FOR_ANNOTATION)).toBe(String(messages));
      const limit = memoryQuantityBytes(at(edgeContainer(rendered), 'resources', 'limits', 'memory'));
      const formula = edgeMemoryForCeiling(IMAGE_NODE_LINE, messages, largestMiB * MiB);
      expect(limit).toBeGreaterThanOrEqual(formula);
      expect(limit - formula).toBeLessThan(64 * MiB);
    }
    const set = manifestOf(await render(['resources.limits.memory=2Gi']), 'Deployment', RELEASE);
    expect(at(edgeContainer(set), 'resources', 'limits', 'memory')).toBe('2Gi');
  });
});
