// SIGTERM and SIGINT: stop accepting, let exchanges in flight finish up to the grace period, then end
// the streams cleanly (waiting requests get errors) and exit 0.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CallToolResult, McpError, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connectV1Client } from '../support/clients.js';
import { freePort } from '../support/ports.js';
import { type ChildHandle, spawnTsx } from '../support/processes.js';
import { startV1Server, type V1ServerMode } from '../support/sdk-v1-server.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function startEdgeProcess(
  upstreamUrl: string,
  grace: string,
): Promise<{ child: ChildHandle; url: string }> {
  const port = await freePort();
  const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-shutdown-')), 'edge.yaml');
  writeFileSync(
    file,
    [
      `listen: { host: 127.0.0.1, port: ${port}, path: /mcp }`,
      `upstream: { url: ${upstreamUrl} }`,
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
