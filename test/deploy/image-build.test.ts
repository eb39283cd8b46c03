// The image build without Docker: deploy/docker/Dockerfile's steps replayed into a temp folder that
// stands for the image's root filesystem (the same `npm ci --omit=dev`, from the npm cache, the same
// compiled dist, the same files at the same paths), then started the way the image and the Kubernetes
// example start it: the image's ENTRYPOINT and CMD, with the shipped ConfigMap's config mounted over
// /etc/mcp-edge, in front of the demo MCP server started as the example's mcp-server container.
import { existsSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { connectV1Client } from '../support/clients.js';
import { freePort } from '../support/ports.js';
import type { ChildHandle } from '../support/processes.js';
import { type Dockerfile, envOf, parseDockerfile, type Stage } from './dockerfile.js';
import { imageCommandOf, replayedForThisFile, treeSnapshot } from './image-replay.js';
import { at, DOCKERFILE, isRecord, listAt, manifestOf, readText, sidecarManifests } from './repo-files.js';

const dockerfile: Dockerfile = parseDockerfile(readText(DOCKERFILE));
const finalStage = dockerfile.stages.at(-1) as Stage;
const manifests = sidecarManifests();
const podSpec = at(manifestOf(manifests, 'Deployment', 'mcp-server'), 'spec', 'template', 'spec');
const configText = String(at(manifestOf(manifests, 'ConfigMap', 'mcp-edge-config'), 'data', 'mcp-edge.yaml'));

function containerNamed(name: string): Record<string, unknown> {
  const all = [...listAt(podSpec, 'initContainers'), ...listAt(podSpec, 'containers')].filter(isRecord);
  const found = all.find((container) => container.name === name);
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
}

/** The replayed image (test/deploy/image-replay.ts): its temp root and the processes started from it. */
const replayed = replayedForThisFile(DOCKERFILE);

/** An absolute path inside the image, as a path of the temp root. */
function inImage(path: string): string {
  return replayed().inImage(path);
}

/** A shorter grace than the ConfigMap's, to keep the test short. */
const SHUTDOWN_GRACE_MS = 3_000;

/**
 * The ConfigMap's config with the sockets moved to free loopback ports, a tenant header resolver trusting
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
  // The ConfigMap takes no tenant from a header; the gateway's resolver it comments, with loopback as the gateway.
  document.setIn(['tenancy', 'resolve'], [{ header: 'x-tenant-id', trustedProxies: ['127.0.0.0/8'] }]);
  document.setIn(['server', 'timeouts', 'shutdownGrace'], `${SHUTDOWN_GRACE_MS}ms`);
  return document.toString();
}

function start(command: readonly string[], env: Record<string, string | undefined> = {}): ChildHandle {
  return replayed().start(command, env);
}

/** Runs the image's HEALTHCHECK command against `url`; resolves with its exit code. */
function healthcheck(url: string): Promise<number | null> {
  return replayed().healthcheck(url);
}

const imageCommand = imageCommandOf(finalStage);

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

    const before = treeSnapshot(replayed().root);
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
    expect(treeSnapshot(replayed().root)).toEqual(before);
  }, 120_000);
});
