// The stdio upstream's faults and bounds, with an SDK v1 stdio server of ours (test/fixtures/stdio-v1-server.ts)
// and real SDK clients: sessions on their own children, a crash mid-call, DELETE and idle timeout, the process
// bound, a bad command, the child's environment, a stderr flood, a child that stops reading its stdin.
import { LoggingMessageNotificationSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/tenancy/tenant-resolver.js';
import { connectV1Client, textOf } from '../support/clients.js';
import { initializeRaw, MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { isProcessAlive, waitFor } from '../support/processes.js';
import { connectStreaming, STDIO_SERVERS, startStdioEdge } from '../support/stdio-edge.js';

const { track } = trackHandles();

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** The 503 a new session gets past a process bound: a JSON-RPC error for INITIALIZE's id naming the bound. */
async function expectCapacityRefusal(refused: Response, bound: string, limit: number): Promise<void> {
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toBe('5');
  const body = (await refused.json()) as {
    id: unknown;
    error: { code: number; message: string; data: unknown };
  };
  expect(body.id).toBe(1);
  expect(body.error.code).toBe(-32600);
  expect(body.error.message).toContain(`upstream.stdio.${bound}: ${limit}`);
  expect(body.error.data).toMatchObject({
    reason: 'upstream_capacity',
    [bound]: limit,
    enforcedBy: 'mcp-edge',
  });
}

describe('stdio upstream: sessions and faults', () => {
  it('gives two clients at once two children, each answering only its own calls', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v1Fixture));
    const [a, b] = await Promise.all([connectV1Client(edge.url), connectV1Client(edge.url)]);
    track(a);
    track(b);
    const [pidA, pidB] = await Promise.all([
      a.client.callTool({ name: 'pid', arguments: {} }),
      b.client.callTool({ name: 'pid', arguments: {} }),
    ]);
    expect(textOf(pidA)).not.toBe(textOf(pidB));
    expect(edge.upstream.pids().sort()).toEqual([Number(textOf(pidA)), Number(textOf(pidB))].sort());
    const calls = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? a : b).client.callTool({ name: 'echo', arguments: { text: `call-${i}` } }),
      ),
    );
    expect(calls.map(textOf)).toEqual(Array.from({ length: 10 }, (_, i) => `call-${i}`));
  });

  it('answers the waiting id within a second of a crash mid-call; the session is then gone (404)', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v1Fixture));
    const connected = track(await connectV1Client(edge.url));
    const pid = Number(textOf(await connected.client.callTool({ name: 'pid', arguments: {} })));
    const started = Date.now();
    const crashed = await connected.client
      .callTool({ name: 'crash', arguments: { afterMs: 300 } })
      .catch((err: unknown) => err);
    const elapsed = Date.now() - started;
    expect(crashed).toBeInstanceOf(McpError);
    expect((crashed as McpError).data).toMatchObject({ reason: 'upstream_failed', enforcedBy: 'mcp-edge' });
    expect((crashed as McpError).message).toContain('exited with code 3');
    expect(elapsed).toBeLessThan(300 + 1000);
    expect(isProcessAlive(pid)).toBe(false);
    const next = await fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, 'mcp-session-id': connected.sessionId()! },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(next.status).toBe(404);
  });

  it('ends the child on DELETE and after the idle timeout', async () => {
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, { stdioYaml: '    idleTimeout: 400ms' }),
    );
    const deleted = await connectV1Client(edge.url);
    const deletedPid = Number(textOf(await deleted.client.callTool({ name: 'pid', arguments: {} })));
    await deleted.transport.terminateSession();
    await deleted.close();
    expect(await waitFor(() => !isProcessAlive(deletedPid), 3000)).toBe(true);

    const idle = track(await connectV1Client(edge.url));
    const idlePid = Number(textOf(await idle.client.callTool({ name: 'pid', arguments: {} })));
    expect(await waitFor(() => !isProcessAlive(idlePid), 5000)).toBe(true);
    expect(edge.upstream.pids()).toEqual([]);
    const after = await idle.client.callTool({ name: 'pid', arguments: {} }).catch((err: unknown) => err);
    expect(String(after)).toContain('Session not found');
    expect(edge.logText()).toContain('upstream.stdio.idleTimeout');
  });

  it('refuses a session past upstream.stdio.maxProcesses with a 503 JSON-RPC error that says so', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v1Fixture, { stdioYaml: '    maxProcesses: 1' }));
    // A session in use (its GET stream open): it does not give up its place.
    track(await connectStreaming(edge));
    const refused = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: INITIALIZE });
    await expectCapacityRefusal(refused, 'maxProcesses', 1);
    // Counted as the HTTP upstream counts a call that found no connection: the upstream's capacity.
    const refusedLine = () => edge.logs.find((l) => l.msg === 'exchange' && l.status === 503);
    await expect.poll(refusedLine).toMatchObject({ outcome: 'upstream_capacity' });
  });

  it('bounds one tenant to upstream.stdio.maxProcessesPerTenant: anonymous sessions in use filling their share do not stop another tenant', async () => {
    const key = 'acme-key-0123456789';
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, {
        stdioYaml: '    maxProcesses: 3\n    maxProcessesPerTenant: 2',
        yaml: `tenancy: { resolve: [ { apiKey: { header: x-api-key, tenants: { acme: [${sha256Hex(key)}] } } } ] }\ntenants: { acme: {} }`,
      }),
    );
    const anonymous = () => fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: INITIALIZE });
    // Two anonymous sessions in use (their GET streams open) fill their share; an idle one would give way.
    for (const n of [1, 2])
      expect(track(await connectStreaming(edge)).sessionId(), `anonymous ${n}`).toBeDefined();
    await expectCapacityRefusal(await anonymous(), 'maxProcessesPerTenant', 2);
    expect(
      edge.logs.some(
        (l) =>
          l.msg === 'stdio: no room for another MCP server process' &&
          l.tenant === 'default' &&
          l.bound === 'upstream.stdio.maxProcessesPerTenant',
      ),
    ).toBe(true);
    // Another tenant still gets its child, and a session that works.
    const acme = track(await connectV1Client(edge.url, { headers: { 'x-api-key': key } }));
    expect(textOf(await acme.client.callTool({ name: 'echo', arguments: { text: 'acme' } }))).toBe('acme');
    expect(edge.upstream.pids()).toHaveLength(3);
  });

  it('ends a session that sent no request after initialize at upstream.stdio.idleTimeoutBeforeFirstRequest; a used one stays', async () => {
    const unusedAfterMs = 2000;
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, {
        stdioYaml: `    idleTimeoutBeforeFirstRequest: ${unusedAfterMs}ms`,
      }),
    );
    const used = track(await connectV1Client(edge.url));
    const usedPid = Number(textOf(await used.client.callTool({ name: 'pid', arguments: {} })));
    const opened = Date.now();
    const { sessionId } = await initializeRaw(edge.url);
    const unusedPid = edge.upstream.pids().find((pid) => pid !== usedPid);
    expect(unusedPid).toBeDefined();
    expect(await waitFor(() => !isProcessAlive(unusedPid!), unusedAfterMs + 10_000)).toBe(true);
    // Not before its time, and the session used before it, older than that, stays.
    expect(Date.now() - opened).toBeGreaterThanOrEqual(unusedAfterMs);
    expect(isProcessAlive(usedPid)).toBe(true);
    expect(textOf(await used.client.callTool({ name: 'echo', arguments: { text: 'still' } }))).toBe('still');
    const next = await fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, 'mcp-session-id': sessionId! },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(next.status).toBe(404);
    expect(
      edge.logs.some(
        (l) =>
          l.msg === 'stdio: a session that sent no request after initialize is ended' &&
          l.session === sessionId,
      ),
    ).toBe(true);
  });

  it('counts idleTimeoutBeforeFirstRequest from the answer to initialize: a server slower to start than it keeps its session', async () => {
    const startupMs = 4000;
    // The v1 fixture, started after a pause longer than the timeout (what a loaded machine or a heavy server does).
    const slowToStart = [
      STDIO_SERVERS.v1Fixture[0]!,
      '--import',
      'tsx',
      '-e',
      `setTimeout(() => import(${JSON.stringify(STDIO_SERVERS.v1Fixture[3])}), ${startupMs})`,
    ];
    const edge = track(
      await startStdioEdge(slowToStart, { stdioYaml: '    idleTimeoutBeforeFirstRequest: 2000ms' }),
    );
    const started = Date.now();
    const session = track(await connectV1Client(edge.url));
    expect(Date.now() - started).toBeGreaterThanOrEqual(startupMs);
    expect(textOf(await session.client.callTool({ name: 'echo', arguments: { text: 'kept' } }))).toBe('kept');
    expect(edge.logText()).not.toContain('a session that sent no request after initialize is ended');
  });

  it('a command that cannot start: /readyz is not ready, the first session gets a 502, the log names the program', async () => {
    const edge = track(await startStdioEdge(['/nonexistent/bin/mcp-server-missing', '--secret-arg']));
    const ready = await fetch(new URL('/readyz', edge.url));
    expect(ready.status).toBe(503);
    const first = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: INITIALIZE });
    expect(first.status).toBe(502);
    const body = (await first.json()) as { id: unknown; error: { data: { reason: string } } };
    expect(body.error.data.reason).toBe('upstream_unreachable');
    expect(body.id).toBe(1);
    expect(edge.logText()).toContain('could not start \\"mcp-server-missing\\": ENOENT');
    expect(edge.logText()).not.toContain('--secret-arg');
    expect((await fetch(new URL('/readyz', edge.url))).status).toBe(503);
  });

  it('a message no call asked for goes to the GET stream; an oversized one is dropped there with a warning', async () => {
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, {
        yaml: 'limits: { response: { maxMessageBytes: 64KiB } }',
      }),
    );
    const { client } = track(await connectV1Client(edge.url));
    const logged: { level: string; data: unknown }[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logged.push(n.params);
    });
    await client.callTool({ name: 'late_log', arguments: { bytes: 100 } });
    expect(await waitFor(() => logged.length === 1, 3000)).toBe(true);
    expect(logged[0]).toEqual({ level: 'info', data: 'L'.repeat(100) });
    await client.callTool({ name: 'late_log', arguments: { bytes: 300 * 1024 } });
    expect(await waitFor(() => logged.length === 2, 3000)).toBe(true);
    expect(logged[1]?.level).toBe('warning');
    expect(JSON.stringify(logged[1]?.data)).toContain(
      'mcp-edge dropped a notification (notifications/message)',
    );
    // The session goes on.
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'after' } }))).toBe('after');
  });

  it('gives the child only the listed environment, plus PATH and HOME', async () => {
    process.env.MCP_EDGE_TEST_SECRET = 'must-not-leak';
    try {
      const edge = track(
        await startStdioEdge(STDIO_SERVERS.v1Fixture, { stdioYaml: '    env: { LISTED_VAR: "yes" }' }),
      );
      const { client } = track(await connectV1Client(edge.url));
      const names = JSON.parse(textOf(await client.callTool({ name: 'env', arguments: {} }))) as string[];
      expect(names).toContain('LISTED_VAR');
      expect(names).not.toContain('MCP_EDGE_TEST_SECRET');
      expect(names.every((name) => ['LISTED_VAR', 'PATH', 'HOME'].includes(name))).toBe(true);
    } finally {
      delete process.env.MCP_EDGE_TEST_SECRET;
    }
  });

  it('logs stderr with the session id, bounded: a flood is cut to 100 lines per window and summed up', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v1Fixture));
    const connected = await connectV1Client(edge.url);
    const flood = await connected.client.callTool({
      name: 'flood_stderr',
      arguments: { lines: 5000, bytes: 5000 },
    });
    expect(textOf(flood)).toBe('wrote 5000 lines');
    const sessionId = connected.sessionId();
    await connected.transport.terminateSession();
    await connected.close();
    const gone = () => edge.logs.some((l) => l.msg === 'stdio MCP server exited');
    expect(await waitFor(gone, 3000)).toBe(true);
    const lines = edge.logs.filter((l) => l.msg === 'stdio MCP server stderr');
    expect(lines.length).toBeLessThanOrEqual(100);
    expect(lines.every((l) => l.session === sessionId)).toBe(true);
    expect(lines.every((l) => String(l.stderr).length <= 2048)).toBe(true);
    const summary = edge.logs.find((l) => typeof l.suppressedLines === 'number');
    expect(summary?.suppressedLines).toBeGreaterThan(4800);
  });

  it('logs stdout lines that are not JSON-RPC bounded, as stderr: 20,000 lines, at most 100 per window, the rest counted; the session goes on', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v1Fixture));
    const connected = await connectV1Client(edge.url);
    const started = Date.now();
    const flood = await connected.client.callTool({ name: 'flood_stdout', arguments: { lines: 20_000 } });
    expect(textOf(flood)).toBe('printed 20000 lines');
    expect(textOf(await connected.client.callTool({ name: 'echo', arguments: { text: 'after' } }))).toBe(
      'after',
    );
    const windows = Math.ceil((Date.now() - started) / 10_000) + 1;
    const sessionId = connected.sessionId();
    await connected.transport.terminateSession();
    await connected.close();
    expect(await waitFor(() => edge.logs.some((l) => l.msg === 'stdio MCP server exited'), 3000)).toBe(true);
    const warned = edge.logs.filter((l) =>
      String(l.msg).includes('wrote a line that is not a JSON-RPC message'),
    );
    expect(warned.length).toBeGreaterThan(0);
    expect(warned.length).toBeLessThanOrEqual(100 * windows);
    expect(warned.every((l) => l.session === sessionId)).toBe(true);
    const summaries = edge.logs.filter((l) => String(l.msg).startsWith('stdio MCP server stdout'));
    const suppressed = summaries.reduce((sum, l) => sum + Number(l.suppressedLines), 0);
    // Nothing silently dropped: every line is either logged or counted.
    expect(warned.length + suppressed).toBe(20_000);
  });

  it('refuses every oversized line of a session while it streams, not at its end (id written last)', async () => {
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, {
        yaml: 'limits: { response: { maxMessageBytes: 4MiB } }',
      }),
    );
    const connected = track(await connectV1Client(edge.url));
    // Each line stalls 3 s after its first 8 MiB: an error that waited for the line's end (and its id) would
    // come after the stall; one given as the line crosses 4 MiB comes before it.
    for (const round of [1, 2, 3]) {
      const started = Date.now();
      const refused = await connected.client
        .callTool({ name: 'huge_line', arguments: { bytes: 16 * 1024 * 1024, stallMs: 3000 } })
        .catch((err: unknown) => err);
      const refusedAfterMs = Date.now() - started;
      expect(refused, `round ${round}`).toBeInstanceOf(McpError);
      expect((refused as McpError).data).toMatchObject({ reason: 'limit_exceeded', tool: 'huge_line' });
      expect(refusedAfterMs, `round ${round}: refused after ${refusedAfterMs} ms`).toBeLessThan(2500);
      const next = await connected.client.callTool({ name: 'echo', arguments: { text: `after ${round}` } });
      expect(textOf(next)).toBe(`after ${round}`);
    }
  }, 60_000);

  it('a child that stops reading its stdin: the edge stops writing past its backlog and answers 504', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v1Fixture));
    const connected = track(await connectV1Client(edge.url));
    await connected.client.callTool({ name: 'stop_reading', arguments: {} });
    // Events, not clocks: the child says (on stderr, which the edge logs) that it no longer reads; then each
    // request either waits in its stdin (never answered) or gets a 504, however long the machine takes.
    expect(await waitFor(() => edge.logText().includes('stdin paused'), 60_000)).toBe(true);
    const big = 'w'.repeat(900 * 1024);
    const controllers = Array.from({ length: 14 }, () => new AbortController());
    const answered: (number | string)[] = [];
    const requests = controllers.map((controller, i) =>
      fetch(edge.url, {
        method: 'POST',
        headers: { ...MCP_POST_HEADERS, 'mcp-session-id': connected.sessionId()! },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 100 + i,
          method: 'tools/call',
          params: { name: 'echo', arguments: { text: big } },
        }),
        signal: controller.signal,
      }).then(
        async (res) => {
          await res.arrayBuffer();
          answered.push(res.status);
        },
        () => {},
      ),
    );
    // The first ~8 MiB (about ten of these) wait in the pipe: the child never answers them; the rest are
    // refused at once. So four answers come, each a 504, while the others still wait.
    expect(await waitFor(() => answered.length >= 4, 120_000)).toBe(true);
    expect(answered.slice(0, 4)).toEqual([504, 504, 504, 504]);
    expect(answered.length).toBeLessThan(14);
    for (const controller of controllers) controller.abort();
    await Promise.all(requests);
    expect(answered.filter((s) => s !== 504)).toEqual([]);
    expect(edge.logText()).toContain('is not reading its input');
  }, 180_000);
});
