// SIGTERM and SIGINT: stop accepting, let exchanges in flight finish up to the grace period, then end
// them cleanly (every request still waiting gets a JSON-RPC error saying the edge shut down) and exit 0.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProtocolError } from '@modelcontextprotocol/client';
import { type CallToolResult, McpError, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connectV1Client, connectV2Client } from '../support/clients.js';
import { freePort } from '../support/ports.js';
import { type ChildHandle, REPO_ROOT, spawnTsx } from '../support/processes.js';
import { startRawUpstream } from '../support/raw-upstream.js';
import { startV1Server, type V1ServerMode } from '../support/sdk-v1-server.js';
import { startServerEverything } from '../support/server-everything.js';
import { STDIO_SERVERS } from '../support/stdio-edge.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** A spawned mcp-edge in front of `upstream` (a URL, or a stdio server's argv). */
async function startEdgeProcess(
  upstream: string | readonly string[],
  grace: string,
): Promise<{ child: ChildHandle; url: string }> {
  const port = await freePort();
  const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-shutdown-')), 'edge.yaml');
  const upstreamYaml =
    typeof upstream === 'string'
      ? `upstream: { url: ${upstream} }`
      : `upstream: { stdio: { command: ${JSON.stringify(upstream)}, cwd: ${JSON.stringify(REPO_ROOT)} } }`;
  writeFileSync(
    file,
    [
      `listen: { host: 127.0.0.1, port: ${port}, path: /mcp }`,
      upstreamYaml,
      `metrics: { host: 127.0.0.1, port: ${await freePort()} }`,
      `server: { timeouts: { shutdownGrace: ${grace} } }`,
    ].join('\n'),
  );
  const child = spawnTsx('src/cli.ts', ['--config', file]);
  cleanups.push(() => child.stop());
  await child.waitForLine(/mcp-edge serving/);
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

async function upstream(mode: V1ServerMode) {
  const server = await startV1Server({ mode });
  cleanups.push(() => server.close());
  return server;
}

describe.each(['SIGTERM', 'SIGINT'] as const)('%s', (signal) => {
  it('lets an exchange in flight finish, refuses new connections, and exits 0', async () => {
    const server = await upstream('stateful');
    const { child, url } = await startEdgeProcess(server.url, '5s');
    const { client } = await connectV1Client(url);
    const progress: Progress[] = [];
    const call = client.callTool(
      { name: 'slow_progress', arguments: { steps: 5, delayMs: 200 } },
      undefined,
      {
        onprogress: (p) => progress.push(p),
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    child.child.kill(signal);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const late = await fetch(url, { method: 'POST', body: '{}' }).then(
      (r) => r.status,
      () => 'refused',
    );
    expect([503, 'refused']).toContain(late);
    const result = (await call) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(progress).toHaveLength(5);
    const exit = await child.exited;
    expect(exit.code).toBe(0);
  });
});

describe('with nothing left in flight', () => {
  it('exits at once, not after the grace period, once clients have gone (even with the upstream down)', async () => {
    const server = await startV1Server({ mode: 'stateful' });
    const { child, url } = await startEdgeProcess(server.url, '20s');
    const first = await connectV1Client(url);
    await first.client.callTool({ name: 'echo', arguments: { text: 'a' } });
    await first.transport.terminateSession();
    await first.close();
    const second = await connectV1Client(url);
    await second.client.callTool({ name: 'sized', arguments: { bytes: 100_000 } });
    await second.close();
    await server.close();
    const started = Date.now();
    child.child.kill('SIGTERM');
    expect((await child.exited).code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe('past the grace period', () => {
  it('ends the stream cleanly: the waiting call gets a JSON-RPC error, not a hang, and the edge exits 0', async () => {
    const server = await upstream('stateless');
    const { child, url } = await startEdgeProcess(server.url, '1s');
    const { client } = await connectV1Client(url, {
      reconnectionOptions: {
        maxRetries: 0,
        initialReconnectionDelay: 10,
        maxReconnectionDelay: 10,
        reconnectionDelayGrowFactor: 1,
      },
    });
    const started = Date.now();
    const call = client.callTool(
      { name: 'slow_progress', arguments: { steps: 50, delayMs: 200 } },
      undefined,
      {
        onprogress: () => {},
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    child.child.kill('SIGTERM');
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(-32603);
    expect(Date.now() - started).toBeLessThan(6000);
    expect((await child.exited).code).toBe(0);
  });
});

/** The client's own request timeout: a call the edge leaves without an answer fails only then. */
const CLIENT_TIMEOUT_MS = 30_000;
/** How long after the SIGTERM a call cut at the end of a 1 s grace may take to fail, on a loaded machine. */
const PROMPTLY_MS = 10_000;

/** A promise and its resolver (Promise.withResolvers is Node 22+; the edge supports Node 20). */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * SIGTERM to the edge by its pid once `started` resolves; what `call` failed with (undefined: it succeeded) and
 * how long after the SIGTERM.
 */
async function cutByShutdown(
  child: ChildHandle,
  started: Promise<void>,
  call: Promise<unknown>,
): Promise<{ err: unknown; afterMs: number }> {
  const settled = call.then(
    () => undefined,
    (e: unknown) => e,
  );
  await started;
  const sigterm = Date.now();
  process.kill(child.pid, 'SIGTERM');
  const err = await settled;
  return { err, afterMs: Date.now() - sigterm };
}

/** The edge's last log line, `mcp-edge stopped`, with what shutdown drained. */
function stoppedLine(child: ChildHandle): Record<string, unknown> {
  const lines = child
    .stdout()
    .split('\n')
    .filter((line) => line.includes('"mcp-edge stopped"'));
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
}

/** The JSON-RPC error of a call the edge ended at shutdown, as the SDK v1 client surfaces it. */
function expectShutdownError(err: unknown): void {
  expect(err).toBeInstanceOf(McpError);
  const error = err as McpError;
  expect(error.code, error.message).toBe(-32603);
  expect(error.message).toMatch(/mcp-edge is shutting down/);
  expect(error.data).toMatchObject({ reason: 'shutting_down', enforcedBy: 'mcp-edge' });
}

describe('a call still waiting when the grace period ends', { timeout: 60_000 }, () => {
  it('gets its JSON-RPC error on its SSE stream although the stream carried event ids (SDK v1 client, server with an event store)', async () => {
    const server = await upstream('stateful');
    const { child, url } = await startEdgeProcess(server.url, '1s');
    const connected = await connectV1Client(url);
    cleanups.push(() => connected.close());
    const progressed = signal();
    const call = connected.client.callTool(
      { name: 'slow_progress', arguments: { steps: 30, delayMs: 1000 } },
      undefined,
      { timeout: CLIENT_TIMEOUT_MS, onprogress: progressed.resolve },
    );
    const { err, afterMs } = await cutByShutdown(child, progressed.promise, call);
    expectShutdownError(err);
    expect(afterMs).toBeLessThan(PROMPTLY_MS);
    expect((await child.exited).code).toBe(0);
    // The call's stream and the client's standalone GET stream, both ended by shutdown.
    expect(stoppedLine(child)).toMatchObject({ inFlight: 2, streams: 2, ended: { shutdown: 2 } });
  });

  it('gets its JSON-RPC error through the SDK v2 client', async () => {
    const server = await upstream('stateful');
    const { child, url } = await startEdgeProcess(server.url, '1s');
    const connected = await connectV2Client(url);
    cleanups.push(() => connected.close());
    const progressed = signal();
    const call = connected.client.callTool(
      { name: 'slow_progress', arguments: { steps: 30, delayMs: 1000 } },
      { timeout: CLIENT_TIMEOUT_MS, onprogress: progressed.resolve },
    );
    const { err, afterMs } = await cutByShutdown(child, progressed.promise, call);
    expect(err).toBeInstanceOf(ProtocolError);
    const error = err as ProtocolError;
    expect(error.code, error.message).toBe(-32603);
    expect(error.message).toMatch(/mcp-edge is shutting down/);
    expect(error.data).toMatchObject({ reason: 'shutting_down', enforcedBy: 'mcp-edge' });
    expect(afterMs).toBeLessThan(PROMPTLY_MS);
    expect((await child.exited).code).toBe(0);
  });

  it('gets its JSON-RPC error from server-everything, which keeps an event store', async () => {
    const server = await startServerEverything();
    cleanups.push(() => server.close());
    const { child, url } = await startEdgeProcess(server.url, '1s');
    const connected = await connectV1Client(url);
    cleanups.push(() => connected.close());
    const progressed = signal();
    const call = connected.client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } },
      undefined,
      { timeout: CLIENT_TIMEOUT_MS, onprogress: progressed.resolve },
    );
    const { err, afterMs } = await cutByShutdown(child, progressed.promise, call);
    expectShutdownError(err);
    expect(afterMs).toBeLessThan(PROMPTLY_MS);
    expect((await child.exited).code).toBe(0);
  });

  it('answered with JSON: a 503 carrying the JSON-RPC error for its id, not a cut connection', async () => {
    const server = await upstream('json');
    const { child, url } = await startEdgeProcess(server.url, '1s');
    const connected = await connectV1Client(url);
    cleanups.push(() => connected.close());
    const posts = () => server.requests.filter((r) => r.method === 'POST').length;
    const postsBefore = posts();
    const call = connected.client.callTool(
      { name: 'slow_progress', arguments: { steps: 30, delayMs: 1000 } },
      undefined,
      { timeout: CLIENT_TIMEOUT_MS },
    );
    // The call waits at the upstream once its server has the POST.
    const sent = signal();
    const poll = setInterval(() => {
      if (posts() > postsBefore) sent.resolve();
    }, 20);
    const { err, afterMs } = await cutByShutdown(child, sent.promise, call);
    clearInterval(poll);
    // SDK v1 surfaces a non-2xx answer as a transport error carrying the body: the edge's JSON-RPC error.
    expect(String(err)).toMatch(/HTTP 503|Error POSTing to endpoint/);
    const body = JSON.parse(String((err as Error).message).replace(/^[^{]*/, '')) as {
      id: unknown;
      error: { code: number; message: string; data: Record<string, unknown> };
    };
    expect(body.id).toBeTypeOf('number');
    expect(body.error.code).toBe(-32603);
    expect(body.error.message).toMatch(/mcp-edge is shutting down/);
    expect(body.error.data).toMatchObject({ reason: 'shutting_down', enforcedBy: 'mcp-edge' });
    expect(afterMs).toBeLessThan(PROMPTLY_MS);
    expect((await child.exited).code).toBe(0);
  });

  it('whose JSON answer the edge holds unjudged gets the same 503, not a cut connection', async () => {
    const raw = await startRawUpstream((req) =>
      req.body.includes('"tools/call"')
        ? {
            status: 200,
            headers: { 'content-type': 'application/json' },
            // Half an answer, then nothing: the edge holds it, waiting for the rest to judge it.
            chunks: [
              '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"',
              { delayMs: 60_000 },
            ],
          }
        : // The edge's readiness ping.
          {
            status: 200,
            headers: { 'content-type': 'application/json' },
            chunks: ['{"jsonrpc":"2.0","id":0,"result":{}}'],
          },
    );
    cleanups.push(() => raw.close());
    const { child, url } = await startEdgeProcess(raw.url, '1s');
    const answer = fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'a', arguments: {} },
      }),
    }).then(async (res) => ({ status: res.status, body: await res.text() }));
    const sent = signal();
    const poll = setInterval(() => {
      if (raw.received.some((req) => req.body.includes('"tools/call"'))) sent.resolve();
    }, 20);
    const { err, afterMs } = await cutByShutdown(
      child,
      sent.promise,
      answer.then(() => Promise.reject(new Error('answered'))),
    );
    clearInterval(poll);
    expect(String(err)).toBe('Error: answered');
    const { status, body } = await answer;
    expect(status).toBe(503);
    expect(JSON.parse(body)).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32603, data: { reason: 'shutting_down', enforcedBy: 'mcp-edge' } },
    });
    expect(afterMs).toBeLessThan(PROMPTLY_MS);
    expect((await child.exited).code).toBe(0);
  });

  it('on a stdio upstream, gets its JSON-RPC error whether its answer had begun (progress) or not', async () => {
    const { child, url } = await startEdgeProcess(STDIO_SERVERS.everything, '1s');
    const streaming = await connectV1Client(url);
    cleanups.push(() => streaming.close());
    const progressed = signal();
    const withProgress = streaming.client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } },
      undefined,
      { timeout: CLIENT_TIMEOUT_MS, onprogress: progressed.resolve },
    );
    const silent = streaming.client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 1 } },
      undefined,
      { timeout: CLIENT_TIMEOUT_MS },
    );
    const both = Promise.allSettled([withProgress, silent]).then((results) => {
      throw results;
    });
    const { err, afterMs } = await cutByShutdown(child, progressed.promise, both);
    const [progressResult, silentResult] = err as PromiseSettledResult<unknown>[];
    expect(progressResult?.status).toBe('rejected');
    expectShutdownError((progressResult as PromiseRejectedResult).reason);
    expect(silentResult?.status).toBe('rejected');
    const silentError = (silentResult as PromiseRejectedResult).reason;
    expect(String(silentError)).toMatch(/HTTP 503|Error POSTing to endpoint/);
    expect(String(silentError)).toMatch(/mcp-edge is shutting down/);
    expect(String(silentError)).toMatch(/"reason":"shutting_down"/);
    expect(afterMs).toBeLessThan(PROMPTLY_MS);
    expect((await child.exited).code).toBe(0);
  });
});
