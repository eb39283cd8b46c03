// The image build without Docker: deploy/docker/Dockerfile's steps replayed into a temp folder that
// stands for the image's root filesystem (the same `npm ci --omit=dev`, from the npm cache, the same
// compiled dist, the same files at the same paths), then started the way the image and the Kubernetes
// example start it: the image's ENTRYPOINT and CMD, with the shipped ConfigMap's config mounted over
// /etc/mcp-edge, in front of the demo MCP server started as the example's mcp-server container.
import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, posix } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { connectV1Client } from '../support/clients.js';
import { freePort } from '../support/ports.js';
import { type ChildHandle, REPO_ROOT, spawnNode } from '../support/processes.js';
import {
  copyParts,
  type Dockerfile,
  envOf,
  execForm,
  instructionsOf,
  isIgnored,
  parseDockerfile,
  type Stage,
} from './dockerfile.js';
import { at, DOCKERFILE, isRecord, listAt, manifestOf, readText, sidecarManifests } from './repo-files.js';

const execFileAsync = promisify(execFile);

const dockerfile: Dockerfile = parseDockerfile(readText(DOCKERFILE));
const finalStage = dockerfile.stages.at(-1) as Stage;
const dockerignore = readText(join(REPO_ROOT, '.dockerignore'));
const manifests = sidecarManifests();
const podSpec = at(manifestOf(manifests, 'Deployment', 'mcp-server'), 'spec', 'template', 'spec');
const configText = String(at(manifestOf(manifests, 'ConfigMap', 'mcp-edge-config'), 'data', 'mcp-edge.yaml'));

function containerNamed(name: string): Record<string, unknown> {
  const all = [...listAt(podSpec, 'initContainers'), ...listAt(podSpec, 'containers')].filter(isRecord);
  const found = all.find((container) => container.name === name);
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
}

/** The temp folder that plays the image's root filesystem. */
let root = '';
const children: ChildHandle[] = [];

/** An absolute path inside the image, as a path of the temp root. */
function inImage(path: string): string {
  return join(root, path);
}

/** Image paths in a command line become temp-root paths; `node` is this Node. */
function hostCommand(command: readonly string[]): { args: string[] } {
  const [program, ...args] = command;
  if (program !== 'node') throw new Error(`expected a node command, got ${command.join(' ')}`);
  return { args: args.map((arg) => (arg.startsWith('/') ? inImage(arg) : arg)) };
}

/** `npm run build` of the build stage: the package's build script (tsc) with its output in `outDir`. */
async function buildDist(outDir: string): Promise<void> {
  const buildStage = dockerfile.stages.find((stage) => stage.name !== undefined && stage !== finalStage);
  if (buildStage === undefined) throw new Error('no build stage');
  expect(instructionsOf(buildStage, 'RUN').map((run) => run.args)).toContain('npm run build');
  const pkg = JSON.parse(readText(join(REPO_ROOT, 'package.json'))) as { scripts: Record<string, string> };
  const [tool, ...args] = (pkg.scripts.build ?? '').split(/\s+/);
  expect(tool).toBe('tsc');
  await execFileAsync(
    process.execPath,
    [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), ...args, '--outDir', outDir],
    { cwd: REPO_ROOT, timeout: 180_000 },
  );
}

/** Copies a context path the way COPY does: into a folder for `dir/` destinations, else onto the destination. */
function copyInto(source: string, destination: string, manySources: boolean): void {
  const target = destination.endsWith('/') || manySources ? join(destination, basename(source)) : destination;
  mkdirSync(join(target, '..'), { recursive: true });
  cpSync(source, target, { recursive: true });
}

/** Replays the final stage into `root`: WORKDIR, COPY (from the context or the build stage) and RUN npm ci. */
async function replayFinalStage(builtDist: string): Promise<void> {
  let workdir = '/';
  for (const instruction of finalStage.instructions) {
    if (instruction.keyword === 'WORKDIR') {
      workdir = instruction.args;
      mkdirSync(inImage(workdir), { recursive: true });
    } else if (instruction.keyword === 'COPY') {
      const { sources, destination } = copyParts(instruction);
      const target = inImage(posix.isAbsolute(destination) ? destination : posix.join(workdir, destination));
      const from = instruction.flags.from;
      for (const source of sources) {
        if (from !== undefined) {
          // The build stage's output: only its dist folder is taken over.
          expect(posix.basename(source)).toBe('dist');
          copyInto(builtDist, destination.endsWith('/') ? join(target, 'dist') : target, false);
        } else {
          expect(isIgnored(dockerignore, source), `${source} is left out by .dockerignore`).toBe(false);
          copyInto(join(REPO_ROOT, source), target, sources.length > 1);
        }
      }
    } else if (instruction.keyword === 'RUN') {
      const [npm, command, ...flags] = instruction.args.split(/\s+/);
      expect(`${npm} ${command}`, `a RUN this replay does not know: ${instruction.args}`).toBe('npm ci');
      expect(flags).toContain('--omit=dev');
      // The same install from the npm cache that `npm ci` in the repository filled: no network needed.
      await execFileAsync('npm', ['ci', ...flags, '--offline'], { cwd: inImage(workdir), timeout: 240_000 });
    }
  }
}

/** Every file of a tree with its size and modification time: what a read-only root filesystem must keep. */
function treeSnapshot(dir: string): Map<string, string> {
  const snapshot = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat !== undefined) snapshot.set(path, `${stat.isDirectory() ? 'd' : stat.size}:${stat.mtimeMs}`);
  }
  return snapshot;
}

/** A shorter grace than the ConfigMap's, to keep the test short. */
const SHUTDOWN_GRACE_MS = 3_000;

/**
 * The ConfigMap's config with the sockets moved to free loopback ports, the tenant header trusted from
 * loopback, and a shorter shutdown grace.
 */
function configForTest(ports: { listen: number; metrics: number; upstream: number }): string {
  const document = parseDocument(configText);
  document.setIn(['listen', 'host'], '127.0.0.1');
  document.setIn(['listen', 'port'], ports.listen);
  document.setIn(['metrics', 'host'], '127.0.0.1');
  document.setIn(['metrics', 'port'], ports.metrics);
  const upstream = new URL(String(document.getIn(['upstream', 'url'])));
  upstream.port = String(ports.upstream);
  document.setIn(['upstream', 'url'], upstream.href);
  document.setIn(['tenancy', 'resolve', 0, 'trustedProxies'], ['127.0.0.0/8']);
  document.setIn(['server', 'timeouts', 'shutdownGrace'], `${SHUTDOWN_GRACE_MS}ms`);
  return document.toString();
}

function start(command: readonly string[], env: Record<string, string | undefined> = {}): ChildHandle {
  const child = spawnNode(hostCommand(command).args, {
    cwd: inImage('/app'),
    env: { ...envOf(finalStage), ...env },
  });
  children.push(child);
  return child;
}

/** Runs the image's HEALTHCHECK command against `url`; resolves with its exit code. */
async function healthcheck(url: string): Promise<number | null> {
  const instruction = instructionsOf(finalStage, 'HEALTHCHECK').at(-1);
  if (instruction === undefined) throw new Error('no HEALTHCHECK');
  const command = execForm(instruction.args.replace(/^CMD\s+/, ''));
  const child = start(command, { MCP_EDGE_HEALTHCHECK_URL: url });
  return (await child.exited).code;
}

const imageCommand = [
  ...execForm(instructionsOf(finalStage, 'ENTRYPOINT').at(-1)?.args ?? '[]'),
  ...execForm(instructionsOf(finalStage, 'CMD').at(-1)?.args ?? '[]'),
];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'mcp-edge-image-'));
  const builtDist = join(root, '.build-stage-dist');
  await buildDist(builtDist);
  await replayFinalStage(builtDist);
  rmSync(builtDist, { recursive: true });
}, 420_000);

afterAll(async () => {
  for (const child of children.splice(0)) await child.stop();
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

describe('the image, built without Docker by replaying deploy/docker/Dockerfile', () => {
  it('holds production dependencies only, the compiled CLI and demo server, and the default config', () => {
    expect(existsSync(inImage('/app/node_modules/fastify/package.json'))).toBe(true);
    expect(existsSync(inImage('/app/node_modules/typescript'))).toBe(false);
    expect(existsSync(inImage('/app/node_modules/vitest'))).toBe(false);
    expect(existsSync(inImage('/app/dist/cli.js'))).toBe(true);
    expect(existsSync(inImage('/app/dist/demo/upstream.js'))).toBe(true);
    expect(existsSync(inImage('/app/config/mcp-edge.example.yaml'))).toBe(true);
    expect(imageCommand.slice(-2)).toEqual(['--config', '/etc/mcp-edge/mcp-edge.yaml']);
    expect(existsSync(inImage('/etc/mcp-edge/mcp-edge.yaml'))).toBe(true);
  });

  it("checks its built-in config, which needs MCP_EDGE_UPSTREAM, with the image's own CLI", async () => {
    const checkCommand = [
      imageCommand[0] ?? 'node',
      imageCommand[1] ?? '',
      'check-config',
      ...imageCommand.slice(-1),
    ];
    const withUpstream = start(checkCommand, { MCP_EDGE_UPSTREAM: 'http://mcp-server:3000/mcp' });
    expect((await withUpstream.exited).code).toBe(0);
    expect(withUpstream.stdout()).toContain('url: http://mcp-server:3000/mcp');
    const unset = start(checkCommand, { MCP_EDGE_UPSTREAM: undefined });
    expect((await unset.exited).code).toBe(2);
    expect(unset.stderr()).toContain('environment variable MCP_EDGE_UPSTREAM is not set');
  });

  it('serves MCP with the ConfigMap config as the sidecar would: probes, tenants, metrics, shutdown', async () => {
    const ports = { listen: await freePort(), metrics: await freePort(), upstream: await freePort() };
    // The ConfigMap volume mounted over /etc/mcp-edge.
    writeFileSync(inImage('/etc/mcp-edge/mcp-edge.yaml'), configForTest(ports));

    const serverContainer = containerNamed('mcp-server');
    const serverArgs = listAt(serverContainer, 'args').map(String);
    serverArgs[serverArgs.indexOf('--port') + 1] = String(ports.upstream);
    const upstream = start([...listAt(serverContainer, 'command').map(String), ...serverArgs]);
    await upstream.waitForLine(/Demo MCP server listening/);

    const before = treeSnapshot(root);
    const edge = start(imageCommand);
    await edge.waitForLine(/mcp-edge serving/);
    const base = `http://127.0.0.1:${ports.listen}`;

    // The image's HEALTHCHECK, pointed at this port, passes.
    const healthUrl = new URL(envOf(finalStage).MCP_EDGE_HEALTHCHECK_URL ?? '');
    expect(healthUrl.port).toBe('8080');
    expect(await healthcheck(`${base}${healthUrl.pathname}`)).toBe(0);

    // Every probe of the sidecar answers 200.
    const edgeContainer = containerNamed('mcp-edge');
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
      const response = await fetch(`${base}${String(at(edgeContainer, probe, 'httpGet', 'path'))}`);
      expect(response.status, probe).toBe(200);
    }

    // An MCP call through it, and each tenant's own ceiling: 1.5 MB passes the default tenant's 4 MiB and
    // is refused for team-b (1 MiB), with the error naming the tenant and the operator as its source.
    const anyone = await connectV1Client(`${base}/mcp`);
    const echoed = await anyone.client.callTool({ name: 'echo', arguments: { text: 'through the sidecar' } });
    expect(JSON.stringify(echoed.content)).toContain('through the sidecar');
    const big = await anyone.client.callTool({ name: 'sized', arguments: { bytes: 1_500_000 } });
    expect(JSON.stringify(big.content).length).toBeGreaterThan(1_500_000);
    await anyone.close();
    const teamB = await connectV1Client(`${base}/mcp`, { headers: { 'x-tenant-id': 'team-b' } });
    await expect(
      teamB.client.callTool({ name: 'sized', arguments: { bytes: 1_500_000 } }),
    ).rejects.toMatchObject({
      code: -32603,
      data: {
        reason: 'limit_exceeded',
        limit: 'response.maxMessageBytes',
        tenant: 'team-b',
        enforcedBy: 'mcp-edge',
      },
    });
    await teamB.close();

    const metrics = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
    expect(metrics).toMatch(/mcp_edge_limit_exceeded_total\{[^}]*tenant="team-b"[^}]*\} 1/);
    expect(metrics).toMatch(
      /mcp_edge_limit_bytes\{[^}]*tenant="team-a"[^}]*tool="export_report"[^}]*\} 33554432/,
    );

    // Readiness follows the MCP server; liveness does not.
    await upstream.stop();
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);

    // SIGTERM: a clean exit 0 within server.timeouts.shutdownGrace (shortened above), as the pod's
    // terminationGracePeriodSeconds expects.
    const edgeExit = await edge.stop({ timeoutMs: SHUTDOWN_GRACE_MS + 5_000 });
    expect(edgeExit, edge.stdout().slice(-3000) + edge.stderr().slice(-2000)).toEqual({
      code: 0,
      signal: null,
    });
    expect(await healthcheck(`${base}${healthUrl.pathname}`)).toBe(1);
    // Nothing was written under the image's root: a read-only root filesystem is enough.
    expect(treeSnapshot(root)).toEqual(before);
  }, 120_000);
});
