// The stdio upstream as an operator runs it: mcp-edge as its own process (the CLI), its memory read from
// /proc. A child that writes a 1 GiB line against a 4 MiB ceiling costs the edge O(ceiling); SIGTERM lets
// the in-flight call finish, then ends every child and grandchild (checked by PID in the process table);
// a grandchild does not outlive its leader's own exit, nor the edge's SIGTERM or SIGKILL; the watchdog that
// ends the groups if the edge is killed runs only while it has groups to end.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { groupGuard } from '../../src/upstream/stdio-group-guard.js';
import { connectV1Client, textOf } from '../support/clients.js';
import { initializeRaw, trackHandles } from '../support/handles.js';
import {
  type ChildHandle,
  isProcessAlive,
  isProcessRunning,
  REPO_ROOT,
  spawnTsx,
  waitFor,
} from '../support/processes.js';
import { STDIO_SERVERS, startStdioEdge, stdioEdgeYaml } from '../support/stdio-edge.js';

const { track, defer } = trackHandles();
const MiB = 1024 * 1024;

/** A status field of /proc/PID/status in bytes (VmRSS, VmHWM). */
function procStatusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match === null) throw new Error(`no ${field} for ${pid}`);
  return Number(match[1]) * 1024;
}

async function startEdgeProcess(
  yaml: string,
): Promise<{ handle: ChildHandle; url: string; startedInMs: number }> {
  const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-stdio-')), 'edge.yaml');
  writeFileSync(file, yaml);
  const started = Date.now();
  const handle = spawnTsx('src/cli.ts', ['--config', file]);
  track({ stop: () => handle.stop({ timeoutMs: 5000 }) });
  const [, url] = await handle.waitForLine(/mcp-edge serving (http:\/\/[^"\s]+)/, { timeoutMs: 20_000 });
  return { handle, url: url!, startedInMs: Date.now() - started };
}

const FORKING_SERVER = join(REPO_ROOT, 'test/fixtures/stdio-forking-server.ts');

/**
 * An edge (its own process) whose stdio server is the forking fixture, one session opened: the leader's and
 * the grandchild's pids, each killed after the test if still there. `margin`: how late past killGrace an
 * end may come on this machine now, from how long the edge took to start.
 */
async function forkingSession(killGraceMs: number, ...fixtureArgs: string[]) {
  const pidFile = join(mkdtempSync(join(tmpdir(), 'mcp-edge-fork-')), 'pids');
  const command = [process.execPath, '--import', 'tsx', FORKING_SERVER, pidFile, ...fixtureArgs];
  const edge = await startEdgeProcess(
    stdioEdgeYaml(command, { stdioYaml: `    killGrace: ${killGraceMs}ms` }),
  );
  const session = initializeRaw(edge.url).catch((err: unknown) => err);
  expect(await waitFor(() => existsSync(pidFile), 20_000)).toBe(true);
  const [leader, grandchild] = readFileSync(pidFile, 'utf8').split(' ').map(Number) as [number, number];
  defer(async () => {
    for (const pid of [leader, grandchild]) if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
  });
  await session;
  return { ...edge, leader, grandchild, margin: Math.max(2000, 2 * edge.startedInMs) };
}

describe('stdio upstream: memory and shutdown, with mcp-edge as its own process', () => {
  it('a 1 GiB line against a 4 MiB ceiling: the caller gets the limit error, the edge holds O(ceiling), the session goes on', async () => {
    const { handle, url } = await startEdgeProcess(
      stdioEdgeYaml(STDIO_SERVERS.v1Fixture, { yaml: 'limits: { response: { maxMessageBytes: 4MiB } }' }),
    );
    const { client } = track(await connectV1Client(url));
    await client.callTool({ name: 'echo', arguments: { text: 'warm up' } });
    const before = procStatusBytes(handle.pid, 'VmRSS');
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, procStatusBytes(handle.pid, 'VmRSS'));
    }, 10);
    /** One oversized line through the edge: the caller's limit error, then a call that still works. */
    const hugeLine = async (mib: number) => {
      const started = Date.now();
      const refused = await client
        .callTool({ name: 'huge_line', arguments: { bytes: mib * MiB } }, undefined, { timeout: 120_000 })
        .catch((err: unknown) => err);
      const refusedAfterMs = Date.now() - started;
      expect(refused).toBeInstanceOf(McpError);
      expect((refused as McpError).data).toMatchObject({
        reason: 'limit_exceeded',
        limit: 'response.maxMessageBytes',
        limitBytes: 4 * MiB,
        tool: 'huge_line',
      });
      // The next call's answer comes after the rest of the line has streamed by (and been discarded).
      const next = await client.callTool({ name: 'echo', arguments: { text: 'still here' } }, undefined, {
        timeout: 120_000,
      });
      expect(textOf(next)).toBe('still here');
      peak = Math.max(peak, procStatusBytes(handle.pid, 'VmRSS'));
      const grew = peak - before;
      process.stdout.write(
        `${mib} MiB line vs 4 MiB ceiling (node ${process.versions.node}): refused after ${refusedAfterMs} ms, drained after ${Date.now() - started} ms, edge RSS ${(before / MiB).toFixed(1)} MiB -> peak ${(peak / MiB).toFixed(1)} MiB (+${(grew / MiB).toFixed(1)} MiB)\n`,
      );
      return grew;
    };
    const afterQuarter = await hugeLine(256);
    const afterWhole = await hugeLine(1024);
    clearInterval(sampler);
    // O(ceiling), not O(line): four times the line adds no more than noise to the peak. What stays is the
    // framer's hold, the relay's, pipe chunks and the garbage of a line streamed by at ~2 GB/s before GC
    // collects it: +38 MiB on Node 20, +110-140 MiB on Node 24 (its GC lets more garbage pile up), either
    // way the same for a 256 MiB, 1 GiB or 3 GiB line.
    expect(afterWhole - afterQuarter).toBeLessThan(96 * MiB);
    expect(afterWhole).toBeLessThan(192 * MiB);
  }, 180_000);

  it('SIGTERM: the in-flight call finishes, then every child and grandchild is gone (by PID)', async () => {
    const { handle, url } = await startEdgeProcess(stdioEdgeYaml(STDIO_SERVERS.v1Fixture));
    const a = await connectV1Client(url);
    const b = await connectV1Client(url);
    const pids: number[] = [];
    for (const { client } of [a, b]) {
      pids.push(Number(textOf(await client.callTool({ name: 'pid', arguments: {} }))));
      pids.push(Number(textOf(await client.callTool({ name: 'grandchild', arguments: {} }))));
    }
    expect(pids.every((pid) => pid > 0 && isProcessAlive(pid))).toBe(true);
    const slow = a.client.callTool({ name: 'slow', arguments: { ms: 1000 } });
    await sleep(200);
    handle.child.kill('SIGTERM');
    expect(textOf(await slow)).toBe('slept 1000 ms');
    const exit = await handle.exited;
    expect(exit.code).toBe(0);
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline && pids.some(isProcessAlive)) await sleep(50);
    expect(pids.filter(isProcessAlive)).toEqual([]);
    await a.close();
    await b.close();
  }, 60_000);
});

describe("stdio upstream: a child's process group does not outlive its leader, nor the edge", () => {
  it('the leader exits by itself: the grandchild it left (ignoring SIGTERM) is gone within killGrace', async () => {
    const killGrace = 1000;
    const run = await forkingSession(killGrace, 'exit', 'grandchild-ignores-term');
    expect(await waitFor(() => !isProcessRunning(run.leader), 10_000)).toBe(true);
    const leaderGone = Date.now();
    const gone = await waitFor(() => !isProcessRunning(run.grandchild), killGrace + run.margin);
    process.stdout.write(
      `leader exited by itself (killGrace ${killGrace} ms): grandchild gone ${Date.now() - leaderGone} ms later\n`,
    );
    expect(
      gone,
      `grandchild ${run.grandchild} still running ${Date.now() - leaderGone} ms after its leader exited`,
    ).toBe(true);
    await run.handle.waitForLine(/left processes in its group: ending them/);
  }, 60_000);

  it("the edge's SIGTERM after the leader exited by itself: the edge exits only once the grandchild is gone", async () => {
    // A grace longer than the test waits for the leader: the edge's shutdown, not a timer that ran out, decides.
    const killGrace = 3000;
    const run = await forkingSession(killGrace, 'exit', 'grandchild-ignores-term');
    expect(await waitFor(() => !isProcessRunning(run.leader), 10_000)).toBe(true);
    run.handle.child.kill('SIGTERM');
    const exit = await run.handle.exited;
    expect(exit.code).toBe(0);
    expect(isProcessRunning(run.grandchild)).toBe(false);
  }, 60_000);

  it("the edge's SIGKILL: a leader and grandchild that ignore SIGTERM and stdin's EOF are gone within killGrace", async () => {
    const killGrace = 1000;
    const run = await forkingSession(killGrace, 'stay', 'grandchild-ignores-term', 'leader-ignores-term');
    expect(isProcessRunning(run.leader) && isProcessRunning(run.grandchild)).toBe(true);
    run.handle.child.kill('SIGKILL');
    await run.handle.exited;
    const killed = Date.now();
    const gone = await waitFor(
      () => !isProcessRunning(run.leader) && !isProcessRunning(run.grandchild),
      killGrace + run.margin,
    );
    process.stdout.write(
      `after the edge's SIGKILL (killGrace ${killGrace} ms): leader and grandchild gone ${Date.now() - killed} ms later\n`,
    );
    expect(
      gone,
      `after ${Date.now() - killed} ms: leader ${isProcessRunning(run.leader) ? 'alive' : 'gone'}, grandchild ${isProcessRunning(run.grandchild) ? 'alive' : 'gone'}`,
    ).toBe(true);
  }, 60_000);
});

describe('stdio upstream: the watchdog runs only while groups are listed', () => {
  it('exits once the last group is unlisted, and signals no group it no longer lists', async () => {
    // A process in a group of its own stands for a group id the kernel has handed to another process after
    // mcp-edge ended the group it listed under that id.
    const standIn = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
      detached: true,
      stdio: 'ignore',
    });
    const pid = standIn.pid!;
    defer(async () => {
      if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
    });
    groupGuard.add(pid, 100, pino({ enabled: false }));
    const watchdog = groupGuard.watchdogPid;
    expect(watchdog).toBeDefined();
    expect(await waitFor(() => isProcessRunning(watchdog!), 5000)).toBe(true);
    groupGuard.remove(pid);
    expect(groupGuard.watchdogPid).toBeUndefined();
    expect(await waitFor(() => !isProcessRunning(watchdog!), 5000)).toBe(true);
    // The watchdog is gone: what it did before it went is done. The process under the unlisted id runs on.
    expect(isProcessRunning(pid), 'the watchdog signalled a group it no longer listed').toBe(true);
  }, 60_000);

  it('is gone once every session is deleted and its child has ended (by PID)', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v1Fixture));
    const clients = [await connectV1Client(edge.url), await connectV1Client(edge.url)];
    const pids = edge.upstream.pids();
    expect(pids).toHaveLength(2);
    const watchdog = groupGuard.watchdogPid;
    expect(watchdog !== undefined && isProcessRunning(watchdog)).toBe(true);
    for (const connected of clients) {
      await connected.transport.terminateSession();
      await connected.close();
    }
    expect(await waitFor(() => pids.every((pid) => !isProcessAlive(pid)), 10_000)).toBe(true);
    expect(await waitFor(() => !isProcessRunning(watchdog!), 5000)).toBe(true);
    expect(groupGuard.watchdogPid).toBeUndefined();
  }, 60_000);
});
