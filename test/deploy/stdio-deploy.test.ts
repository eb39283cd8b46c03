// The stdio example (deploy/stdio): an image with mcp-edge and a stdio MCP server, and a Kubernetes
// Deployment that runs them in one container. Valid against the Kubernetes schemas, and consistent with
// itself: the config's command runs the server the image installs, the ConfigMap is the image's config,
// the ports and probes are mcp-edge's, the data volume is what the server serves.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  IMAGE_NODE_LINE,
  largestHoldBytes,
  SIZED_FOR_ANNOTATION,
  stdioMemoryBytes,
} from '../../scripts/memory-formula.js';
import { parseConfigText } from '../../src/config/load.js';
import { REPO_ROOT } from '../support/processes.js';
import { copyParts, execForm, instructionsOf, isIgnored, parseDockerfile, type Stage } from './dockerfile.js';
import { type Manifest, schemaProblems, typeProblems } from './kube-schema.js';
import {
  at,
  isRecord,
  listAt,
  manifestOf,
  memoryQuantityBytes,
  readText,
  yamlDocuments,
} from './repo-files.js';

const DIR = join(REPO_ROOT, 'deploy/stdio');
const dockerfile = parseDockerfile(readText(join(DIR, 'Dockerfile')));
const finalStage = dockerfile.stages.at(-1) as Stage;
const dockerignore = readText(join(DIR, 'Dockerfile.dockerignore'));
const imageConfigText = readText(join(DIR, 'mcp-edge.yaml'));
const imageConfig = parseConfigText(imageConfigText, 'deploy/stdio/mcp-edge.yaml', {}).config;
const manifests: Manifest[] = yamlDocuments(join(DIR, 'kubernetes.yaml')).map((value, index) => {
  if (!isRecord(value)) throw new Error(`kubernetes.yaml#${index} is not a mapping`);
  return { origin: `kubernetes.yaml#${index}`, value };
});
const deployment = manifestOf(manifests, 'Deployment', 'mcp-filesystem');
const configMap = manifestOf(manifests, 'ConfigMap', 'mcp-edge-stdio-config');
const podSpec = at(deployment, 'spec', 'template', 'spec') as Record<string, unknown>;
const container = listAt(podSpec, 'containers').filter(isRecord)[0]!;

describe('the stdio example image (deploy/stdio/Dockerfile)', () => {
  it('runs mcp-edge with the config whose stdio command is the server it installed at build time', () => {
    const stdio = imageConfig.upstream.stdio;
    expect(stdio).toBeDefined();
    expect(imageConfig.upstream.url).toBeUndefined();
    const [program, script, dir] = stdio!.command;
    expect(program).toBe('node');
    const pkg = JSON.parse(readText(join(DIR, 'server/package.json'))) as {
      dependencies: Record<string, string>;
    };
    const [name] = Object.keys(pkg.dependencies);
    expect(script).toBe(`/opt/mcp-server/node_modules/${name}/dist/index.js`);
    // The script exists in the installed package (the same version is a devDependency here).
    expect(existsSync(join(REPO_ROOT, 'node_modules', name!, 'dist/index.js'))).toBe(true);
    const runs = instructionsOf(finalStage, 'RUN').map((run) => run.args);
    expect(runs).toContain('npm ci --prefix /opt/mcp-server --omit=dev --no-audit --no-fund');
    expect(dir).toBe('/data');
    expect(execForm(instructionsOf(finalStage, 'ENTRYPOINT').at(-1)!.args)).toEqual([
      'node',
      '/app/dist/cli.js',
    ]);
    expect(execForm(instructionsOf(finalStage, 'CMD').at(-1)!.args)).toEqual([
      '--config',
      '/etc/mcp-edge/mcp-edge.yaml',
    ]);
    expect(instructionsOf(finalStage, 'USER').at(-1)?.args).toBe('1000:1000');
  });

  it('serves no one anonymously: it listens on every interface, so every request needs an API key or a JWT', () => {
    expect(imageConfig.listen.host).toBe('0.0.0.0');
    expect(imageConfig.tenancy.requireIdentified).toBe(true);
    const resolvers = imageConfig.tenancy.resolve;
    expect(resolvers.length).toBeGreaterThan(0);
    // Only credentials: a tenant header is the client's own say, unless a trusted proxy set it.
    expect(resolvers.every((resolver) => 'apiKey' in resolver || 'jwt' in resolver)).toBe(true);
  });

  it('copies only files that exist and that its dockerignore lets into the context', () => {
    const sources = dockerfile.stages
      .flatMap((stage) => instructionsOf(stage, 'COPY'))
      .filter((copy) => copy.flags.from === undefined)
      .flatMap((copy) => copyParts(copy).sources);
    expect(sources).toContain('deploy/stdio/mcp-edge.yaml');
    for (const source of sources) {
      expect(existsSync(join(REPO_ROOT, source)), `${source} exists`).toBe(true);
      expect(isIgnored(dockerignore, source), `${source} reaches the build context`).toBe(false);
    }
    for (const path of ['node_modules', 'dist', '.git', 'test', 'bench/results']) {
      expect(isIgnored(dockerignore, path), `${path} stays out`).toBe(true);
    }
  });
});

describe('the stdio example on Kubernetes (deploy/stdio/kubernetes.yaml)', () => {
  it('is valid against the Kubernetes schemas, unknown fields included', () => {
    expect(schemaProblems(manifests)).toEqual([]);
    expect(typeProblems(manifests)).toEqual([]);
  }, 60_000);

  it('mounts the image config as the ConfigMap, the same config', () => {
    const text = String(at(configMap, 'data', 'mcp-edge.yaml'));
    expect(parseConfigText(text, 'kubernetes.yaml (ConfigMap)', {}).config).toEqual(imageConfig);
    const mounts = listAt(container, 'volumeMounts').filter(isRecord);
    expect(mounts.find((m) => m.mountPath === '/etc/mcp-edge')?.readOnly).toBe(true);
    expect(execForm(JSON.stringify(at(container, 'args')))).toEqual([
      '--config',
      '/etc/mcp-edge/mcp-edge.yaml',
    ]);
  });

  it('runs one container, probes mcp-edge, serves the data volume, and the Service reaches mcp-edge only', () => {
    expect(listAt(podSpec, 'containers')).toHaveLength(1);
    expect(podSpec.initContainers).toBeUndefined();
    const ports = listAt(container, 'ports').filter(isRecord);
    expect(ports.find((p) => p.name === 'mcp')?.containerPort).toBe(imageConfig.listen.port);
    expect(ports.find((p) => p.name === 'metrics')?.containerPort).toBe(imageConfig.metrics.port);
    expect(at(container, 'readinessProbe', 'httpGet', 'path')).toBe('/readyz');
    expect(at(container, 'livenessProbe', 'httpGet', 'path')).toBe('/healthz');
    const dataMount = listAt(container, 'volumeMounts')
      .filter(isRecord)
      .find((m) => m.name === 'data');
    expect(dataMount?.mountPath).toBe(imageConfig.upstream.stdio?.command[2]);
    expect(at(container, 'securityContext', 'readOnlyRootFilesystem')).toBe(true);
    const service = manifestOf(manifests, 'Service', 'mcp-filesystem');
    const servicePorts = listAt(service, 'spec', 'ports').filter(isRecord);
    expect(servicePorts.map((p) => p.targetPort)).toEqual(['mcp']);
    // Shutdown: the pod's grace covers the edge's shutdown grace and the children's kill grace.
    const grace = Number(at(podSpec, 'terminationGracePeriodSeconds')) * 1000;
    expect(grace).toBeGreaterThan(
      imageConfig.server.timeouts.shutdownGrace + imageConfig.upstream.stdio!.killGrace,
    );
  });

  it('has the memory the formula asks for: mcp-edge with one message per child, and maxProcesses children (docs/operations.md#sizing-memory)', () => {
    const children = imageConfig.upstream.stdio!.maxProcesses;
    expect(Number(at(deployment, 'metadata', 'annotations', SIZED_FOR_ANNOTATION))).toBe(children);
    const needed = stdioMemoryBytes(IMAGE_NODE_LINE, children, largestHoldBytes(imageConfig));
    expect(memoryQuantityBytes(at(container, 'resources', 'limits', 'memory'))).toBeGreaterThanOrEqual(
      needed,
    );
  });
});
