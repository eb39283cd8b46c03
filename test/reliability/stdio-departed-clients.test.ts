// Clients that leave a stdio session without a DELETE (the SDK v1 client's close() sends none; it closes
// its GET stream): their children end at upstream.stdio.idleTimeoutWithoutStream, and a new session at a
// process bound takes the place of the least recently used idle session instead of getting a 503. A session
// with its GET stream open or a call in flight is never ended for it, nor evicted. Real SDK v1 clients, the
// v1 fixture as the child; every child is checked by its PID.
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/tenancy/tenant-resolver.js';
import { connectV1Client, textOf } from '../support/clients.js';
import { initializeRaw, MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { isProcessAlive, waitFor } from '../support/processes.js';
import {
  connectStreaming,
  STDIO_SERVERS,
  type StdioTestEdge,
  startStdioEdge,
} from '../support/stdio-edge.js';

const { track } = trackHandles();

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** A client as a CI step runs one: connect, one call (its child's pid), close() without DELETE. */
async function oneShot(edge: StdioTestEdge, headers?: Record<string, string>) {
  const connected = await connectV1Client(edge.url, headers === undefined ? {} : { headers });
  const pid = Number(textOf(await connected.client.callTool({ name: 'pid', arguments: {} })));
  const sessionId = connected.sessionId()!;
  await connected.close();
  return { pid, sessionId, closedAt: Date.now() };
}

/** A request on a session as a client that came back to it sends it: its HTTP status. */
async function statusOn(edge: StdioTestEdge, sessionId: string): Promise<number> {
  const res = await fetch(edge.url, {
    method: 'POST',
    headers: { ...MCP_POST_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
  });
  await res.arrayBuffer();
  return res.status;
}

describe('stdio upstream: clients that leave without a DELETE', () => {
  it('six one-shot SDK v1 clients one after another with maxProcesses 4: all succeed, the least recently used idle sessions make room (their later requests: 404)', async () => {
    // The timeout long past the test: only eviction ends a session here.
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, {
        stdioYaml: '    maxProcesses: 4\n    idleTimeoutWithoutStream: 10m',
      }),
    );
    const shots: Awaited<ReturnType<typeof oneShot>>[] = [];
    const aliveAfterEach: number[] = [];
    for (let n = 1; n <= 6; n++) {
      shots.push(await oneShot(edge));
      aliveAfterEach.push(shots.filter((shot) => isProcessAlive(shot.pid)).length);
      expect(edge.upstream.pids().length).toBeLessThanOrEqual(4);
    }
    expect(aliveAfterEach).toEqual([1, 2, 3, 4, 4, 4]);
    // The two oldest made room, in the order they left; the four latest still run.
    expect(shots.map((shot) => isProcessAlive(shot.pid))).toEqual([false, false, true, true, true, true]);
    expect(edge.upstream.pids().sort()).toEqual(
      shots
        .slice(2)
        .map((shot) => shot.pid)
        .sort(),
    );
    for (const shot of shots.slice(0, 2)) expect(await statusOn(edge, shot.sessionId)).toBe(404);
    const evicted = edge.logs.filter((l) => l.msg === 'stdio: an idle session is ended to make room');
    expect(evicted.map((l) => l.session)).toEqual(shots.slice(0, 2).map((shot) => shot.sessionId));
    expect(evicted[0]).toMatchObject({ bound: 'upstream.stdio.maxProcesses' });
    expect(edge.logText()).not.toContain('no room for another MCP server process');
  }, 120_000);

  it('ends the children of clients that left at upstream.stdio.idleTimeoutWithoutStream, by PID', async () => {
    const quietMs = 2000;
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, {
        stdioYaml: `    maxProcesses: 4\n    idleTimeoutWithoutStream: ${quietMs}ms`,
      }),
    );
    const shots: Awaited<ReturnType<typeof oneShot>>[] = [];
    for (let n = 1; n <= 6; n++) {
      const shot = await oneShot(edge);
      // Not ended the moment its client left.
      expect(isProcessAlive(shot.pid)).toBe(true);
      shots.push(shot);
    }
    const gone = await waitFor(() => shots.every((shot) => !isProcessAlive(shot.pid)), quietMs + 15_000);
    expect(gone, `alive: ${shots.filter((shot) => isProcessAlive(shot.pid)).map((shot) => shot.pid)}`).toBe(
      true,
    );
    expect(edge.upstream.pids()).toEqual([]);
    // Each ended at the timeout, or (on a fast machine, the first two) made room for the fifth and sixth.
    const sessionsOf = (msg: string) => edge.logs.filter((l) => l.msg === msg).map((l) => l.session);
    const abandoned = sessionsOf('stdio: a session whose client has left is ended');
    const evicted = sessionsOf('stdio: an idle session is ended to make room');
    expect([...abandoned, ...evicted].sort()).toEqual(shots.map((shot) => shot.sessionId).sort());
    expect(abandoned).toEqual(expect.arrayContaining(shots.slice(2).map((shot) => shot.sessionId)));
    expect(edge.logs.find((l) => l.msg === 'stdio: a session whose client has left is ended')).toMatchObject({
      idleTimeoutWithoutStream: quietMs,
    });
    for (const shot of shots) expect(await statusOn(edge, shot.sessionId)).toBe(404);
  }, 120_000);

  it('never evicts or ends a session with its GET stream open or a call in flight', async () => {
    const quietMs = 1000;
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, {
        stdioYaml: `    maxProcesses: 2\n    idleTimeoutWithoutStream: ${quietMs}ms`,
      }),
    );
    // An SDK v1 client that stays: its GET stream is open between calls.
    const streaming = track(await connectStreaming(edge));
    const streamingPid = Number(textOf(await streaming.client.callTool({ name: 'pid', arguments: {} })));
    // A raw client with no GET stream and one long call in flight.
    const { sessionId: busyId } = await initializeRaw(edge.url);
    const busyPid = edge.upstream.pids().find((pid) => pid !== streamingPid)!;
    const callMs = 4 * quietMs;
    const started = Date.now();
    const call = fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, 'mcp-session-id': busyId!, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'slow', arguments: { ms: callMs } },
      }),
    }).then(async (res) => ({ status: res.status, body: await res.text() }));
    // At the bound, neither session is idle: a new one gets the 503 and neither is touched.
    const refused = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: INITIALIZE });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { data: { reason: string } } }).error.data.reason).toBe(
      'upstream_capacity',
    );
    const answered = await call;
    expect(Date.now() - started).toBeGreaterThanOrEqual(callMs);
    expect(answered.status).toBe(200);
    expect(answered.body).toContain(`slept ${callMs} ms`);
    // The streaming session outlived the timeout several times over, and still answers.
    expect(isProcessAlive(streamingPid)).toBe(true);
    expect(textOf(await streaming.client.callTool({ name: 'echo', arguments: { text: 'kept' } }))).toBe(
      'kept',
    );
    // Once its call is answered, the raw session has nothing open: it ends after the timeout.
    expect(await waitFor(() => !isProcessAlive(busyPid), quietMs + 10_000)).toBe(true);
    expect(isProcessAlive(streamingPid)).toBe(true);
    expect(edge.logs.some((l) => l.msg === 'stdio: an idle session is ended to make room')).toBe(false);
  }, 120_000);

  it("at maxProcessesPerTenant a tenant's new session takes its own least recently used idle one, never another tenant's", async () => {
    const key = 'acme-key-0123456789';
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, {
        stdioYaml: '    maxProcesses: 4\n    maxProcessesPerTenant: 2\n    idleTimeoutWithoutStream: 10m',
        yaml: `tenancy: { resolve: [ { apiKey: { header: x-api-key, tenants: { acme: [${sha256Hex(key)}] } } } ] }\ntenants: { acme: {} }`,
      }),
    );
    const acme = { 'x-api-key': key };
    const anonymous = await oneShot(edge); // the oldest idle session of all
    const [a1, a2, a3] = [await oneShot(edge, acme), await oneShot(edge, acme), await oneShot(edge, acme)];
    expect(isProcessAlive(anonymous.pid)).toBe(true);
    expect([a1, a2, a3].map((shot) => isProcessAlive(shot.pid))).toEqual([false, true, true]);
    expect(await statusOn(edge, a1.sessionId)).toBe(404);
    const evicted = edge.logs.find((l) => l.msg === 'stdio: an idle session is ended to make room');
    expect(evicted).toMatchObject({
      session: a1.sessionId,
      tenant: 'acme',
      bound: 'upstream.stdio.maxProcessesPerTenant',
    });
  }, 120_000);
});
