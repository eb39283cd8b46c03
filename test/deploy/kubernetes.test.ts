// The Kubernetes sidecar example (deploy/kubernetes): valid against the Kubernetes OpenAPI schemas, and
// consistent with itself, with the image and with the code's own defaults.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  EDGE_MEMORY,
  edgeMemoryForCeiling,
  IMAGE_NODE_LINE,
  largestHoldBytes,
  MiB,
  SIZED_FOR_ANNOTATION,
} from '../../scripts/memory-formula.js';
import { defaultConfig, parseConfigText } from '../../src/config/load.js';
import { TenantResolver } from '../../src/tenancy/tenant-resolver.js';
import { type ChildHandle, REPO_ROOT, spawnTsx } from '../support/processes.js';
import { execForm, instructionsOf, parseDockerfile } from './dockerfile.js';
import { type Manifest, schemaProblems, typeProblems } from './kube-schema.js';
import {
  applyJsonPatch,
  at,
  DOCKERFILE,
  filesUnder,
  isRecord,
  KUBERNETES_DIR,
  KUSTOMIZATION,
  kustomizationResources,
  listAt,
  manifestOf,
  manifestsOfKind,
  memoryQuantityBytes,
  type PatchOperation,
  readText,
  sidecarManifests,
  yamlDocuments,
} from './repo-files.js';

const children: ChildHandle[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) await child.stop();
});

function cli(args: string[]): ChildHandle {
  const child = spawnTsx('src/cli.ts', args);
  children.push(child);
  return child;
}

type Record_ = Record<string, unknown>;

const manifests = sidecarManifests();
const deployment = manifestOf(manifests, 'Deployment', 'mcp-server');
const configMap = manifestOf(manifests, 'ConfigMap', 'mcp-edge-config');
const CONFIG_KEY = 'mcp-edge.yaml';
const configText = String(at(configMap, 'data', CONFIG_KEY));
// No environment: the shipped config must not depend on variables the pod does not set.
const edgeConfig = parseConfigText(configText, `configmap.yaml (${CONFIG_KEY})`, {}).config;
const builtIn = defaultConfig({ upstreamUrl: 'http://127.0.0.1:3000/mcp' });
const podSpec = at(deployment, 'spec', 'template', 'spec') as Record_;

function containers(spec: Record_, field: 'containers' | 'initContainers'): Record_[] {
  return (Array.isArray(spec[field]) ? spec[field] : []).filter(isRecord);
}

function containerNamed(spec: Record_, name: string): Record_ {
  const found = [...containers(spec, 'initContainers'), ...containers(spec, 'containers')].find(
    (container) => container.name === name,
  );
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
}

function portNamed(container: Record_, name: string): number {
  const port = listAt(container, 'ports').find((entry) => isRecord(entry) && entry.name === name);
  return Number(at(port, 'containerPort'));
}

const edge = containerNamed(podSpec, 'mcp-edge');
const server = containerNamed(podSpec, 'mcp-server');

/** The option value after `flag` in a container's args. */
function argAfter(container: Record_, flag: string): string {
  const args = listAt(container, 'args').map(String);
  const index = args.indexOf(flag);
  if (index < 0 || index + 1 >= args.length) throw new Error(`${String(container.name)}: no ${flag}`);
  return args[index + 1] ?? '';
}

function imageCommand(): string[] {
  const finalStage = parseDockerfile(readText(DOCKERFILE)).stages.at(-1);
  if (finalStage === undefined) throw new Error('no stage in the Dockerfile');
  const cmd = instructionsOf(finalStage, 'CMD').at(-1);
  if (cmd === undefined) throw new Error('no CMD in the Dockerfile');
  return execForm(cmd.args);
}

function plainContainerPatch(): PatchOperation[] {
  return yamlDocuments(join(KUBERNETES_DIR, 'plain-container.patch.yaml'))[0] as PatchOperation[];
}

describe('the Kubernetes sidecar example (deploy/kubernetes)', () => {
  it('kustomization.yaml lists every manifest of the folder, and nothing else', () => {
    const kustomization = yamlDocuments(KUSTOMIZATION)[0];
    expect(at(kustomization, 'apiVersion')).toBe('kustomize.config.k8s.io/v1beta1');
    expect(at(kustomization, 'kind')).toBe('Kustomization');
    const manifestFiles = filesUnder(KUBERNETES_DIR, ['.yaml', '.yml'])
      .map((path) => path.slice(KUBERNETES_DIR.length + 1))
      .filter((file) => file !== 'kustomization.yaml' && !file.endsWith('.patch.yaml'));
    expect([...kustomizationResources()].sort()).toEqual(manifestFiles);
    expect(manifests.map((manifest) => manifest.value.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'PrometheusRule',
      'Service',
      'Service',
      'ServiceMonitor',
    ]);
  });

  it('every manifest validates against the Kubernetes OpenAPI schemas (kubernetes-models)', () => {
    expect(schemaProblems(manifests)).toEqual([]);
  });

  it('no manifest carries a field the API server does not know (strict field validation)', () => {
    expect(typeProblems(manifests)).toEqual([]);
  });

  it('the two schema checks catch a wrong type and a misspelt field', () => {
    const edgeOf = (value: Record_) =>
      containerNamed(at(value, 'spec', 'template', 'spec') as Record_, 'mcp-edge');
    const wrongType = structuredClone(deployment);
    (listAt(edgeOf(wrongType), 'ports')[0] as Record_).containerPort = '8080';
    const misspelt = structuredClone(deployment);
    edgeOf(misspelt).readinesProbe = edgeOf(misspelt).readinessProbe;
    expect(schemaProblems([{ origin: 'wrong type', value: wrongType }]).join('\n')).toMatch(
      /containerPort must be integer/,
    );
    expect(typeProblems([{ origin: 'misspelt', value: misspelt }]).join('\n')).toMatch(
      /^misspelt: .*readinesProbe\W+ does not exist in type 'IContainer'/,
    );
  });

  it('runs mcp-edge as a native sidecar: an init container with restartPolicy Always', () => {
    expect(containers(podSpec, 'initContainers').map((container) => container.name)).toEqual(['mcp-edge']);
    expect(edge.restartPolicy).toBe('Always');
    expect(containers(podSpec, 'containers').map((container) => container.name)).toEqual(['mcp-server']);
  });

  it('probes mcp-edge on /readyz (readiness) and /healthz (liveness, startup), on its MCP port', () => {
    expect(at(edge, 'readinessProbe', 'httpGet')).toEqual({ path: '/readyz', port: 'mcp' });
    expect(at(edge, 'livenessProbe', 'httpGet')).toEqual({ path: '/healthz', port: 'mcp' });
    // The MCP server starts after the sidecar's startup probe: a probe that waits for it would deadlock.
    expect(at(edge, 'startupProbe', 'httpGet')).toEqual({ path: '/healthz', port: 'mcp' });
  });

  it("keeps the ConfigMap's listener and metrics at the code's defaults, reachable from other pods", () => {
    expect(edgeConfig.listen.port).toBe(builtIn.listen.port);
    expect(edgeConfig.listen.path).toBe(builtIn.listen.path);
    expect(edgeConfig.metrics.port).toBe(builtIn.metrics.port);
    expect(edgeConfig.metrics.path).toBe(builtIn.metrics.path);
    expect(edgeConfig.metrics.enabled).toBe(true);
    expect(edgeConfig.listen.host).toBe('0.0.0.0');
    expect(edgeConfig.metrics.host).toBe('0.0.0.0');
  });

  it("declares mcp-edge's container ports as the ConfigMap's listen.port and metrics.port", () => {
    expect(portNamed(edge, 'mcp')).toBe(edgeConfig.listen.port);
    expect(portNamed(edge, 'metrics')).toBe(edgeConfig.metrics.port);
  });

  it('reads the config where the ConfigMap is mounted, the same path the image reads by default', () => {
    expect(listAt(edge, 'args')).toEqual(imageCommand());
    const configPath = argAfter(edge, '--config');
    const mount = listAt(edge, 'volumeMounts')
      .filter(isRecord)
      .find((entry) => entry.mountPath === posix.dirname(configPath));
    expect(mount, `no volume mounted at ${posix.dirname(configPath)}`).toBeDefined();
    // A subPath mount never sees ConfigMap updates, so the live reload would never happen.
    expect(mount?.subPath).toBeUndefined();
    expect(mount?.readOnly).toBe(true);
    const volume = listAt(podSpec, 'volumes')
      .filter(isRecord)
      .find((entry) => entry.name === mount?.name);
    expect(at(volume, 'configMap', 'name')).toBe(at(configMap, 'metadata', 'name'));
    expect(posix.basename(configPath)).toBe(CONFIG_KEY);
  });

  it('sends upstream traffic to the MCP server container on the pod loopback', () => {
    const upstream = new URL(edgeConfig.upstream.url!);
    expect(upstream.hostname).toBe('127.0.0.1');
    expect(argAfter(server, '--host')).toBe('127.0.0.1');
    expect(Number(argAfter(server, '--port'))).toBe(Number(upstream.port));
    expect(upstream.pathname).toBe('/mcp');
  });

  it('gives the Service a target port that is mcp-edge, never the MCP server', () => {
    const service = manifestOf(manifests, 'Service', 'mcp-server');
    const labels = at(deployment, 'spec', 'template', 'metadata', 'labels') as Record_;
    expect(
      Object.entries(at(service, 'spec', 'selector') as Record_).every(([k, v]) => labels[k] === v),
    ).toBe(true);
    const ports = listAt(service, 'spec', 'ports').filter(isRecord);
    expect(ports).toHaveLength(1);
    const targetPort = at(ports[0], 'targetPort');
    const resolved = typeof targetPort === 'number' ? targetPort : portNamed(edge, String(targetPort));
    expect(resolved).toBe(edgeConfig.listen.port);
    expect(resolved).not.toBe(Number(new URL(edgeConfig.upstream.url!).port));
  });

  it('has the ServiceMonitor scrape the metrics port and path mcp-edge serves', () => {
    const monitor = manifestOf(manifests, 'ServiceMonitor', 'mcp-edge');
    const selector = at(monitor, 'spec', 'selector', 'matchLabels') as Record_;
    const selected = manifestsOfKind(manifests, 'Service').filter((service) => {
      const labels = at(service, 'metadata', 'labels') as Record_;
      return Object.entries(selector).every(([key, value]) => labels[key] === value);
    });
    expect(selected.map((service) => at(service, 'metadata', 'name'))).toEqual(['mcp-server-metrics']);
    const [endpoint] = listAt(monitor, 'spec', 'endpoints');
    expect(at(endpoint, 'path')).toBe(edgeConfig.metrics.path);
    const servicePort = listAt(selected[0], 'spec', 'ports').find(
      (port) => isRecord(port) && port.name === at(endpoint, 'port'),
    );
    expect(portNamed(edge, String(at(servicePort, 'targetPort')))).toBe(edgeConfig.metrics.port);
  });

  it('hardens the pod and every container, and sizes mcp-edge with requests and limits', () => {
    expect(at(podSpec, 'securityContext', 'runAsNonRoot')).toBe(true);
    expect(at(podSpec, 'securityContext', 'seccompProfile', 'type')).toBe('RuntimeDefault');
    for (const container of [edge, server]) {
      const context = at(container, 'securityContext');
      expect(at(context, 'allowPrivilegeEscalation'), String(container.name)).toBe(false);
      expect(at(context, 'readOnlyRootFilesystem'), String(container.name)).toBe(true);
      expect(at(context, 'runAsNonRoot'), String(container.name)).toBe(true);
      expect(listAt(context, 'capabilities', 'drop'), String(container.name)).toContain('ALL');
    }
    for (const kind of ['requests', 'limits']) {
      expect(at(edge, 'resources', kind, 'memory')).toMatch(/^\d+(Mi|Gi)$/);
      expect(at(edge, 'resources', kind, 'cpu')).toBeDefined();
    }
  });

  it('gives mcp-edge the memory the formula asks for the messages it is sized for (docs/operations.md#sizing-memory)', () => {
    const messages = Number(at(deployment, 'metadata', 'annotations', SIZED_FOR_ANNOTATION));
    expect(messages).toBeGreaterThan(0);
    const largest = largestHoldBytes(edgeConfig);
    expect(largest).toBe(edgeConfig.limits.hardMaxBytes);
    const limit = memoryQuantityBytes(at(edge, 'resources', 'limits', 'memory'));
    expect(limit).toBeGreaterThanOrEqual(edgeMemoryForCeiling(IMAGE_NODE_LINE, messages, largest));
    // A request at least the resting size, so the scheduler places the pod where it can start.
    const request = memoryQuantityBytes(at(edge, 'resources', 'requests', 'memory'));
    expect(request).toBeGreaterThanOrEqual(EDGE_MEMORY[IMAGE_NODE_LINE].restingMiB * MiB);
  });

  it("stops within the pod's grace period: shutdownGrace below terminationGracePeriodSeconds", () => {
    const podGraceMs = Number(at(podSpec, 'terminationGracePeriodSeconds')) * 1000;
    expect(edgeConfig.server.timeouts.shutdownGrace).toBeGreaterThan(0);
    expect(edgeConfig.server.timeouts.shutdownGrace).toBeLessThan(podGraceMs);
  });

  it('tags the image with the package version', () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(at(edge, 'image')).toBe(`mcp-edge:${version}`);
    const images = listAt(yamlDocuments(KUSTOMIZATION)[0], 'images');
    expect(images).toContainEqual(expect.objectContaining({ name: 'mcp-edge', newTag: version }));
  });

  it('offers a valid plain-container variant, enabled by the commented patches block', () => {
    const commented = readText(KUSTOMIZATION)
      .split('\n')
      .slice(
        readText(KUSTOMIZATION)
          .split('\n')
          .findIndex((line) => line.startsWith('# patches:')),
      )
      .filter((line) => line.startsWith('#'))
      .map((line) => line.replace(/^# ?/, ''))
      .join('\n');
    const enabled = yamlDocuments(writeTemp('patches.yaml', commented))[0];
    const [entry] = listAt(enabled, 'patches');
    expect(at(entry, 'path')).toBe('plain-container.patch.yaml');
    expect(at(entry, 'target')).toEqual({ kind: 'Deployment', name: 'mcp-server' });

    const plain = applyJsonPatch(deployment, plainContainerPatch());
    const spec = at(plain, 'spec', 'template', 'spec') as Record_;
    expect(spec.initContainers).toBeUndefined();
    expect(containers(spec, 'containers').map((container) => container.name)).toEqual([
      'mcp-server',
      'mcp-edge',
    ]);
    const { restartPolicy, ...sidecarRest } = edge;
    expect(restartPolicy).toBe('Always');
    expect(containerNamed(spec, 'mcp-edge')).toEqual(sidecarRest);
    const manifest: Manifest = { origin: 'deployment.yaml + plain-container.patch.yaml', value: plain };
    expect(schemaProblems([manifest])).toEqual([]);
    expect(typeProblems([manifest])).toEqual([]);
  });

  it('takes no tenant from a header as shipped: a pod naming team-a in x-tenant-id is the default tenant', async () => {
    expect(edgeConfig.tenancy.resolve.filter((resolver) => 'header' in resolver)).toEqual([]);
    const resolver = new TenantResolver(edgeConfig.tenancy, Object.keys(edgeConfig.tenants));
    // 10.1.2.3: an address on the pod network of most clusters.
    const decision = await resolver.resolve({ 'x-tenant-id': 'team-a' }, '10.1.2.3');
    expect(decision).toMatchObject({ ok: true, tenant: 'default' });
  });

  it('ships a config that passes `mcp-edge check-config`', async () => {
    const child = cli(['check-config', writeTemp(CONFIG_KEY, configText)]);
    const exit = await child.exited;
    expect(child.stderr()).toContain('configuration is valid');
    expect(exit.code).toBe(0);
    expect(child.stdout()).toContain('team-a');
  });

  it('gives two tenants ceilings of their own, as `mcp-edge explain` shows', async () => {
    expect(Object.keys(edgeConfig.tenants).length).toBeGreaterThanOrEqual(2);
    const file = writeTemp(CONFIG_KEY, configText);
    const teamA = cli(['explain', '--config', file, '--tenant', 'team-a', '--tool', 'export_report']);
    const teamB = cli(['explain', '--config', file, '--tenant', 'team-b', '--method', 'tools/call']);
    expect((await teamA.exited).code).toBe(0);
    expect((await teamB.exited).code).toBe(0);
    expect(teamA.stdout()).toMatch(
      /response\.maxMessageBytes\s+33,554,432 bytes \(32\.0 MiB\)\s+from tenants\.team-a\.limits\.tools\.export_report/,
    );
    expect(teamB.stdout()).toMatch(
      /response\.maxMessageBytes\s+1,048,576 bytes \(1\.00 MiB\)\s+from tenants\.team-b\.limits\.response/,
    );
  });
});

const tempDirs: string[] = [];
afterAll(() => {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function writeTemp(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-deploy-'));
  tempDirs.push(dir);
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
