// The stdio image build without Docker: deploy/stdio/Dockerfile's steps replayed into a temp folder that
// stands for the image's root filesystem (test/deploy/image-replay.ts: mcp-edge's production install,
// the compiled dist, the filesystem server installed from its lockfile under /opt/mcp-server, the config,
// /data), then started as the image starts: its ENTRYPOINT and CMD with its own config, which spawns the
// server per MCP session. A real SDK client lists and reads /data through it; SIGTERM ends the edge and
// the server it spawned (checked by PID).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { sha256Hex } from '../../src/tenancy/tenant-resolver.js';
import { connectV1Client, textOf } from '../support/clients.js';
import { samples } from '../support/exposition.js';
import { freePort } from '../support/ports.js';
import { isProcessAlive, REPO_ROOT } from '../support/processes.js';
import { parseDockerfile, type Stage } from './dockerfile.js';
import { imageCommandOf, replayedForThisFile, replayImage, treeSnapshot } from './image-replay.js';
import { readText } from './repo-files.js';

const DIR = join(REPO_ROOT, 'deploy/stdio');
const DOCKERFILE = join(DIR, 'Dockerfile');
const finalStage = parseDockerfile(readText(DOCKERFILE)).stages.at(-1) as Stage;
const imageCommand = imageCommandOf(finalStage);
const CONFIG_PATH = '/etc/mcp-edge/mcp-edge.yaml';
const SERVER_PACKAGE = '@modelcontextprotocol/server-filesystem';

/** Shorter than the image config's 10 s and 5 s, to keep the test short. */
const SHUTDOWN_GRACE_MS = 2_000;
const KILL_GRACE_MS = 1_000;

/** The replayed image (test/deploy/image-replay.ts): its temp root and the processes started from it. */
const replayed = replayedForThisFile(DOCKERFILE);

function inImage(path: string): string {
  return replayed().inImage(path);
}

/** The pids whose parent is `pid`, from the process table. */
function childPids(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces, so read after its last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) found.push(Number(entry));
    } catch {
      // The process ended while the table was read.
    }
  }
  return found;
}

function commandLineOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

/** The operator's API key in this test (the image's config carries a placeholder hash nobody has the key to). */
const API_KEY = 'k-stdio-image-test-0123456789';

/**
 * The image's config, as COPYed to /etc/mcp-edge, changed only where the host must differ: loopback
 * free ports, the stdio command's image paths and cwd mapped into the temp root, shorter graces, and the
 * operator's key hash (the CHANGE the config asks for).
 */
function configForTest(ports: { listen: number; metrics: number }): string {
  const document = parseDocument(readFileSync(inImage(CONFIG_PATH), 'utf8'));
  document.setIn(['listen', 'host'], '127.0.0.1');
  document.setIn(['listen', 'port'], ports.listen);
  document.setIn(['metrics', 'host'], '127.0.0.1');
  document.setIn(['metrics', 'port'], ports.metrics);
  const command = (document.getIn(['upstream', 'stdio', 'command']) as { toJSON(): string[] }).toJSON();
  // `node` stays `node` (found on PATH, as in the image), so the upstream is still called stdio:node.
  document.setIn(['upstream', 'stdio', 'command'], ['node', ...replayed().hostArgs(command)]);
  document.setIn(['upstream', 'stdio', 'cwd'], inImage(String(document.getIn(['upstream', 'stdio', 'cwd']))));
  document.setIn(['upstream', 'stdio', 'killGrace'], `${KILL_GRACE_MS}ms`);
  document.setIn(['server', 'timeouts', 'shutdownGrace'], `${SHUTDOWN_GRACE_MS}ms`);
  document.setIn(['tenancy', 'resolve', 0, 'apiKey', 'tenants', 'operator'], [sha256Hex(API_KEY)]);
  return document.toString();
}

describe('the stdio image, built without Docker by replaying deploy/stdio/Dockerfile', () => {
  it('holds production dependencies only, the pinned server under /opt/mcp-server, the config and /data', () => {
    const lock = JSON.parse(readText(join(REPO_ROOT, 'package-lock.json'))) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = Object.entries(lock.packages)
      .filter(([path, entry]) => path.startsWith('node_modules/') && entry.dev === true)
      .map(([path]) => path);
    expect(devOnly).toContain('node_modules/typescript');
    expect(devOnly).toContain('node_modules/vitest');
    expect(devOnly).toContain(`node_modules/${SERVER_PACKAGE}`);
    const installed = devOnly.filter((path) => {
      try {
        readFileSync(inImage(`/app/${path}/package.json`));
        return true;
      } catch {
        return false;
      }
    });
    expect(installed).toEqual([]);
    expect(readFileSync(inImage('/app/node_modules/fastify/package.json'), 'utf8')).toContain('"fastify"');
    expect(readFileSync(inImage('/app/dist/cli.js'), 'utf8')).not.toBe('');

    const pinned = JSON.parse(readText(join(DIR, 'server/package.json'))) as {
      dependencies: Record<string, string>;
    };
    const installedServer = JSON.parse(
      readFileSync(inImage(`/opt/mcp-server/node_modules/${SERVER_PACKAGE}/package.json`), 'utf8'),
    ) as { version: string };
    expect(pinned.dependencies[SERVER_PACKAGE]).toBe('2026.8.31');
    expect(installedServer.version).toBe(pinned.dependencies[SERVER_PACKAGE]);

    expect(readFileSync(inImage(CONFIG_PATH), 'utf8')).toBe(readText(join(DIR, 'mcp-edge.yaml')));
    expect(imageCommand.slice(-2)).toEqual(['--config', CONFIG_PATH]);
    // The replay cannot chown as a non-root user; what the chown gives must be the user the image runs
    // as, or the server could not write to /data.
    expect(replayed().chowned).toEqual({ '/data': '1000:1000' });
    expect(replayed().user).toBe(replayed().chowned['/data']);
  });

  it('serves /data through the edge to a real client; healthcheck, metrics, and SIGTERM ends the server', async () => {
    const ports = { listen: await freePort(), metrics: await freePort() };
    writeFileSync(inImage(CONFIG_PATH), configForTest(ports));
    // The volume mounted over /data.
    const data = inImage('/data');
    writeFileSync(join(data, 'notes.txt'), 'written on the host, read through mcp-edge\n');
    writeFileSync(join(data, 'second.md'), '# two\n');

    const before = treeSnapshot(replayed().root);
    const edge = replayed().start(imageCommand);
    await edge.waitForLine(/mcp-edge serving/);
    const base = `http://127.0.0.1:${ports.listen}`;

    const healthUrl = new URL(replayed().env.MCP_EDGE_HEALTHCHECK_URL ?? '');
    expect(healthUrl.port).toBe('8080');
    expect(await replayed().healthcheck(`${base}${healthUrl.pathname}`)).toBe(0);

    // Without the key, nothing reaches the server.
    const anonymous = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(anonymous.status).toBe(401);
    await anonymous.arrayBuffer();
    const { client, close } = await connectV1Client(`${base}/mcp`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    const listing = textOf(await client.callTool({ name: 'list_directory', arguments: { path: data } }));
    expect(listing.split('\n').sort()).toEqual(['[FILE] notes.txt', '[FILE] second.md']);
    const read = await client.callTool({
      name: 'read_text_file',
      arguments: { path: join(data, 'notes.txt') },
    });
    expect(textOf(read)).toBe('written on the host, read through mcp-edge\n');

    // The session's server, a child of the edge (no shell, no npx in between). Its only other child is the
    // watchdog that ends the servers' process groups if mcp-edge is killed (src/upstream/stdio-group-guard.ts).
    const children = childPids(edge.pid);
    const isWatchdog = (pid: number) => commandLineOf(pid).slice(0, 2).join(' ') === '/bin/sh -c';
    expect(children.filter(isWatchdog)).toHaveLength(1);
    const servers = children.filter((pid) => !isWatchdog(pid));
    expect(servers).toHaveLength(1);
    const serverPid = servers[0] ?? 0;
    expect(isProcessAlive(serverPid)).toBe(true);
    expect(commandLineOf(serverPid)).toEqual([
      'node',
      inImage(`/opt/mcp-server/node_modules/${SERVER_PACKAGE}/dist/index.js`),
      data,
    ]);

    // Every family carries the upstream as stdio:<program>, never the server's path or arguments.
    const metrics = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
    const reads = samples(metrics, 'mcp_edge_message_bytes_count').filter(
      (s) => s.labels.tool === 'read_text_file' && s.labels.direction === 'response',
    );
    expect(reads.map((s) => s.labels.upstream)).toEqual(['stdio:node']);
    expect(reads[0]?.value).toBe(1);
    expect(metrics).not.toContain(SERVER_PACKAGE);
    expect(metrics).not.toContain(data);

    // SIGTERM with the session open: exit 0, and the server it spawned is gone.
    const exit = await edge.stop({ timeoutMs: SHUTDOWN_GRACE_MS + KILL_GRACE_MS + 5_000 });
    expect(exit, edge.stdout().slice(-3000) + edge.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
    const deadline = Date.now() + 3_000;
    while (Date.now() < deadline && isProcessAlive(serverPid)) await new Promise((r) => setTimeout(r, 50));
    expect(isProcessAlive(serverPid)).toBe(false);
    await close();
    expect(await replayed().healthcheck(`${base}${healthUrl.pathname}`)).toBe(1);
    // Reading wrote nothing under the root, /data included: the image runs with a read-only root.
    expect(treeSnapshot(replayed().root)).toEqual(before);
  }, 120_000);
});

describe('the replay itself', () => {
  it('fails on a RUN it does not know rather than skipping it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-dockerfile-'));
    try {
      // Right after the final FROM, so that nothing is installed before the replay stops.
      const text = readText(DOCKERFILE).replace(
        /^(FROM \$\{NODE_IMAGE\})$/m,
        '$1\nRUN apt-get update && apt-get install -y curl',
      );
      expect(text).toContain('apt-get');
      writeFileSync(join(dir, 'Dockerfile'), text);
      writeFileSync(join(dir, 'Dockerfile.dockerignore'), readText(`${DOCKERFILE}.dockerignore`));
      await expect(replayImage(join(dir, 'Dockerfile'))).rejects.toThrow(
        /a RUN this replay does not know: apt-get update/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
