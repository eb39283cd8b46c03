// What a client names is kept, keyed and shown only in its bounded form (src/core/client-names.ts): an edge
// with a small heap serves an anonymous client that names a new 1 MB tool in every call, with every store
// that keys by a name switched on (the limits cache, a per-tool quota, traces to a collector that never
// answers). Before, the raw names filled the heap and the edge died of it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sample } from '../support/exposition.js';
import { initializeRaw, MCP_POST_HEADERS } from '../support/handles.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { freePort } from '../support/ports.js';
import { spawnTsx } from '../support/processes.js';
import { startRedis } from '../support/redis.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge } from '../support/start-edge.js';
import { otlpEnv } from '../support/traced-edge.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** 1 MB names: an edge that kept them whole in its stores died after 86 of them (CLIENT_NAMES_CALLS for a longer run). */
const CALLS = Number(process.env.CLIENT_NAMES_CALLS ?? 150);
const HEAP_MIB = 256;

describe('an anonymous client naming a new 1 MB tool in every call', () => {
  it(`an edge with a ${HEAP_MIB} MiB heap answers all ${CALLS} calls, with a per-tool quota and traces to a collector that never answers`, async () => {
    const server = await startV1Server({ mode: 'json' });
    cleanups.push(() => server.close());
    const collector = await startOtlpReceiver({ answerAfterMs: 600_000 });
    cleanups.push(() => collector.close());
    const port = await freePort();
    const metricsPort = await freePort();
    const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-names-')), 'edge.yaml');
    writeFileSync(
      file,
      [
        `listen: { host: 127.0.0.1, port: ${port}, path: /mcp }`,
        `upstream: { url: ${server.url} }`,
        `metrics: { host: 127.0.0.1, port: ${metricsPort} }`,
        'limits: { request: { maxMessageBytes: 2MiB }, response: { maxMessageBytes: 4MiB } }',
        'quotas: { rules: [{ name: per-tool, window: 1m, requests: 100000, per: tenant+tool }] }',
        'telemetry: { traces: { exporter: otlp, scheduledDelay: 20ms, exportTimeout: 60s } }',
      ].join('\n'),
    );
    const edge = spawnTsx('src/cli.ts', ['--config', file], {
      env: { ...otlpEnv(collector.url), NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}` },
    });
    cleanups.push(() => edge.stop());
    await edge.waitForLine(/mcp-edge serving/, { timeoutMs: 30_000 });
    const url = `http://127.0.0.1:${port}/mcp`;
    const { sessionId } = await initializeRaw(url);

    let answered = 0;
    for (let i = 0; i < CALLS; i++) {
      const name = `${i}:${'n'.repeat(1_000_000)}`;
      const res = await fetch(url, {
        method: 'POST',
        headers: { ...MCP_POST_HEADERS, 'mcp-session-id': sessionId ?? '' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name, arguments: {} },
        }),
      }).catch((err: unknown) => {
        throw new Error(`call ${i} got no answer (${String(err)}); the edge:${edge.stderr().slice(-2000)}`);
      });
      const answer = (await res.json()) as { id?: unknown };
      if (answer.id === i) answered++;
    }
    expect(answered).toBe(CALLS);
    expect(edge.exit()).toBeUndefined();
    // The collector took exports and never answered them: what did not fit the queue was counted.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const counted = ['queue_full', 'queue_bytes', 'export_timeout'].reduce(
      (sum, reason) => sum + (sample(metrics, 'mcp_edge_spans_dropped_total', { reason }) ?? 0),
      0,
    );
    expect(counted + collector.requests).toBeGreaterThan(0);
  }, 300_000);

  it('a per-tool quota on Redis: 30 such names make keys of a few hundred bytes, not megabytes', async () => {
    const server = await startV1Server({ mode: 'json' });
    cleanups.push(() => server.close());
    const redis = await startRedis();
    cleanups.push(() => redis.close());
    const edge = await startTestEdge(
      server.url,
      [
        'limits: { request: { maxMessageBytes: 2MiB } }',
        `quotas: { store: '${redis.url}', rules: [{ name: per-tool, window: 1m, requests: 1000, per: tenant+tool }] }`,
      ].join('\n'),
    );
    cleanups.push(() => edge.stop());
    const usedMemory = async () =>
      Number(/used_memory:(\d+)/.exec(await redis.command('INFO', 'memory'))?.[1]);
    const { sessionId } = await initializeRaw(edge.url);
    const before = await usedMemory();
    for (let i = 0; i < 30; i++) {
      const name = `${i}:${'n'.repeat(1_000_000)}`;
      const res = await fetch(edge.url, {
        method: 'POST',
        headers: { ...MCP_POST_HEADERS, 'mcp-session-id': sessionId ?? '' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name, arguments: {} },
        }),
      });
      expect(((await res.json()) as { id?: unknown }).id).toBe(i);
    }
    // Raw names would hold 30 MB; their bounded forms a few KiB (and Redis' own allocations).
    expect((await usedMemory()) - before).toBeLessThan(1024 * 1024);
    const keys = (await redis.command('KEYS', '*')).split('\r\n').filter((line) => !/^[*$]/.test(line));
    expect(keys.length).toBeGreaterThanOrEqual(30);
    for (const key of keys) expect(key.length).toBeLessThan(300);
  }, 120_000);
});
