// Answers' reservations in a real redis-server are given back exactly once whatever the store does meanwhile:
// a take answered with the store's error after storeTimeout (Redis ran it later), a give-back made while Redis
// was away (it goes when Redis is back, to the same key only, never to a Redis that restarted empty and holds
// other replicas' charges), and an exchange whose client left while its take waited.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { KEY_PREFIX } from '../../src/quotas/redis-script.js';
import { RedisQuotaStore } from '../../src/quotas/redis-store.js';
import { chargesOf, quotaRulesOf } from '../../src/quotas/rules.js';
import { type Held, QuotaStoreError, type TakeResult } from '../../src/quotas/store.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { jsonReply, parseJsonBody, startRawUpstream } from '../support/raw-upstream.js';
import { type RunningRedis, startRedis } from '../support/redis.js';
import { startTestEdge, testEdgeYaml } from '../support/start-edge.js';

const { track, defer } = trackHandles();

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One rule over a day: its slots are 24 minutes, so a test's charges all fall in one. */
const RULE = '    - { name: answers, window: 24h, responseBytes: 10MB }\n';
const quotasYaml = (store: string, storeTimeout: string) =>
  `quotas:\n  store: ${store}\n  storeTimeout: ${storeTimeout}\n  rules:\n${RULE}`;

/** A store of its own on `redis`, and the charges of one request whose answer may take `ceiling` bytes. */
function storeOn(redis: RunningRedis, storeTimeoutMs: number) {
  const { config } = parseConfigText(
    testEdgeYaml('http://127.0.0.1:1/mcp', quotasYaml(redis.url, `${storeTimeoutMs}ms`)),
    'q.yaml',
    {},
  );
  const rules = quotaRulesOf(config.quotas?.rules ?? []);
  const store = new RedisQuotaStore(redis.url, storeTimeoutMs, pino({ level: 'silent' }));
  defer(() => store.close());
  const charges = (ceiling: number) =>
    chargesOf(rules, 'acme', [{ kind: 'request', tool: undefined, bytes: 10 }], 10, () => ceiling);
  const key = charges(1)[0]!.key;
  /** What `taken` reserved, as the filter gives it back. */
  const heldBy = (taken: TakeResult, amount: number): Held[] => [
    { key, slot: taken.at[0]!.slot, life: taken.at[0]!.life, amount },
  ];
  return { store, charges, key, heldBy };
}

/** Redis' count of the rule's key for `tenant` (reservations and leased units included). */
async function counted(redis: RunningRedis, tenant = 'acme'): Promise<number> {
  const reply = await redis.command('HGET', `${KEY_PREFIX}{${tenant}}:answers:responseBytes:86400000`, 'u');
  return Number(/\r\n(-?\d+)\r\n/.exec(reply)?.[1] ?? 0);
}

/** Waits until Redis' count is `expected` (what goes back goes within a few calls), at most `ms`. */
async function countedBecomes(
  redis: RunningRedis,
  expected: number,
  tenant = 'acme',
  ms = 8000,
): Promise<number> {
  const until = performance.now() + ms;
  let now = await counted(redis, tenant);
  while (now !== expected && performance.now() < until) {
    await sleep(50);
    now = await counted(redis, tenant);
  }
  return now;
}

describe('reservations in Redis', () => {
  it('made by a take answered with the store error after storeTimeout go back when its late reply comes', async () => {
    const redis = track(await startRedis());
    const { store, charges } = storeOn(redis, 300);
    // Connected, and the script loaded.
    await store.use([charges(1)[0]!.key]);
    // Redis holds every command for 1 s: the take's call is answered long after storeTimeout.
    await redis.command('CLIENT', 'PAUSE', '1000');
    const started = performance.now();
    const err = await Promise.resolve(store.take(charges(5000), false)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(QuotaStoreError);
    expect((err as QuotaStoreError).kind).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(900);
    // Redis ran the take once the pause ended: no exchange holds its reservation (nor its lease), so both go back.
    expect(await countedBecomes(redis, 0)).toBe(0);
  });

  it('given back while Redis is away go when it is back, to the key as it was kept', async () => {
    const redis = track(await startRedis({ persistent: true }));
    const { store, charges, heldBy } = storeOn(redis, 2000);
    const taken = await store.take(charges(5000), false);
    expect(taken.refused).toBe(-1);
    // The reservation, and the lease granted beside it.
    expect(await counted(redis)).toBeGreaterThan(5000);
    await redis.kill();
    await sleep(100);
    // The answer never came and the exchange ended: its reservation goes back, with Redis away.
    store.release(heldBy(taken, 5000));
    await sleep(100);
    await redis.restart();
    // Redis read its append-only file back: the key, its reservation and its lease are there, and go back.
    expect(await countedBecomes(redis, 0)).toBe(0);
  });

  it('given back while Redis was away never reach a Redis that restarted empty: another replica keeps its charge', async () => {
    const redis = track(await startRedis());
    const one = storeOn(redis, 2000);
    const two = storeOn(redis, 2000);
    const taken = await one.store.take(one.charges(5000), false);
    expect(taken.refused).toBe(-1);
    await redis.kill();
    await sleep(100);
    one.store.release(one.heldBy(taken, 5000));
    await redis.restart();
    // Another replica charges the same key, in the same slot, of the restarted (empty) Redis.
    let other: TakeResult | undefined;
    for (let i = 0; i < 100 && other === undefined; i++)
      other = await Promise.resolve(two.store.take(two.charges(3000), false)).catch(() =>
        sleep(50).then(() => undefined),
      );
    expect(other?.refused).toBe(-1);
    const before = await counted(redis);
    expect(before).toBeGreaterThanOrEqual(3000);
    // The first edge is back: what it gave back (and its lease) went with its first call, or before it.
    let back = false;
    for (let i = 0; i < 100 && !back; i++)
      back = await one.store.use([one.key]).then(
        () => true,
        () => sleep(50).then(() => false),
      );
    expect(back).toBe(true);
    expect(await counted(redis)).toBe(before);
  });

  it("of an exchange whose client left while the edge's take waited go back when the take is answered", async () => {
    const redis = track(await startRedis());
    const upstream = track(
      await startRawUpstream((req) => {
        const body = parseJsonBody(req) as { id?: unknown };
        return jsonReply({ jsonrpc: '2.0', id: body.id ?? null, result: { content: [] } });
      }),
    );
    const edge = track(await startTestEdge(upstream.url, quotasYaml(redis.url, '3s')));
    const call = (id: string, signal?: AbortSignal) =>
      fetch(edge.url, {
        method: 'POST',
        headers: MCP_POST_HEADERS,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'x', arguments: {} },
        }),
        ...(signal !== undefined ? { signal } : {}),
      });
    // A first call: the edge's connection is up, its reservation settled, and (storeTimeout later) the lease
    // granted with it given back: Redis counts the answer's bytes alone.
    expect((await call('warm')).status).toBe(200);
    let settled = await counted(redis, 'default');
    for (let i = 0; i < 200 && settled >= 1000; i++) {
      await sleep(50);
      settled = await counted(redis, 'default');
    }
    expect(settled).toBeGreaterThan(0);
    expect(settled).toBeLessThan(1000);
    // Redis holds every command while the client gives up on its call.
    await redis.command('CLIENT', 'PAUSE', '1000');
    const leaving = new AbortController();
    const left = call('left', leaving.signal).catch((e: unknown) => e);
    await sleep(300);
    leaving.abort();
    await left;
    // The take is answered once the pause ends: what it reserved goes back at once (its lease when it ends).
    expect(await countedBecomes(redis, settled, 'default')).toBe(settled);
  });

  it('held by calls still in flight when the edge shuts down go back before it closes', async () => {
    const redis = track(await startRedis());
    const upstream = track(
      await startRawUpstream((req) => {
        const body = parseJsonBody(req) as { id?: unknown };
        // Answers long after the edge's shutdown grace.
        const reply = jsonReply({ jsonrpc: '2.0', id: body.id ?? null, result: { content: [] } });
        return { ...reply, chunks: [{ delayMs: 10_000 }, ...(reply.chunks ?? [])] };
      }),
    );
    const yaml = `${quotasYaml(redis.url, '2s')}\nserver: { timeouts: { shutdownGrace: 300ms } }`;
    const edge = await startTestEdge(upstream.url, yaml);
    let stopped = false;
    defer(async () => {
      if (!stopped) await edge.stop();
    });
    const calls = Array.from({ length: 2 }, (_, i) =>
      fetch(edge.url, {
        method: 'POST',
        headers: MCP_POST_HEADERS,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name: 'x', arguments: {} },
        }),
      }).then(
        (res) => res.text(),
        (e: unknown) => String(e),
      ),
    );
    // Both admitted: their reservations (4 MiB each, the built-in ceiling) are in Redis.
    let held = 0;
    for (let i = 0; i < 100 && held < 2 * 4 * 1024 * 1024; i++) {
      await sleep(20);
      held = await counted(redis, 'default');
    }
    expect(held).toBeGreaterThanOrEqual(2 * 4 * 1024 * 1024);
    stopped = true;
    await edge.stop();
    await Promise.all(calls);
    // Nothing was delivered, and nothing is held: not the reservations, not the leases beside them.
    expect(await counted(redis, 'default')).toBe(0);
  });
});
