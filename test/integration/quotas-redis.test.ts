// Quotas shared by edges through a real redis-server: three replicas held to one budget under 60 concurrent
// clients, a per-tool byte rule across replicas with a real SDK client, and the store failing: killed and
// restarted (onStoreError allow and refuse, recovery) and too slow (storeTimeout).
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { formatQuotaExplanation } from '../../src/quotas/explain.js';
import { LEASE_SHARE } from '../../src/quotas/leases.js';
import { KEY_PREFIX } from '../../src/quotas/redis-script.js';
import { RedisQuotaStore } from '../../src/quotas/redis-store.js';
import { answerKeys, chargesOf, quotaRulesOf } from '../../src/quotas/rules.js';
import { QuotaStoreError, type TakeResult } from '../../src/quotas/store.js';
import { SLOTS } from '../../src/quotas/window.js';
import { connectV1Client } from '../support/clients.js';
import { sample } from '../support/exposition.js';
import { MCP_POST_HEADERS, rejectionOf, trackHandles } from '../support/handles.js';
import { jsonReply, parseJsonBody, startRawUpstream } from '../support/raw-upstream.js';
import { startRedis } from '../support/redis.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge, type TestEdge, testEdgeYaml } from '../support/start-edge.js';

const { track } = trackHandles();

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function answeringUpstream() {
  return startRawUpstream((req) => {
    const body = parseJsonBody(req) as { id?: unknown };
    return jsonReply({ jsonrpc: '2.0', id: body.id ?? null, result: {} });
  });
}

const ping = (id: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });

async function post(url: string, id: string): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', headers: MCP_POST_HEADERS, body: ping(id) });
  const body = await res.text();
  return { status: res.status, body, ms: performance.now() - started };
}

/** The status of the first 200 within `ms` (polling), else of the last answer. */
async function answeredWithin(url: string, ms: number): Promise<number> {
  const deadline = performance.now() + ms;
  for (let i = 0; ; i++) {
    const { status } = await post(url, `before${i}`);
    if (status === 200 || performance.now() > deadline) return status;
    await sleep(50);
  }
}

async function metric(edge: TestEdge, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(edge.metricsUrl ?? '')).text();
  return sample(text, name, labels) ?? 0;
}

/** Figures the closing note quotes. */
function report(what: string, figures: Record<string, unknown>): void {
  process.stdout.write(`[quota figures] ${what}: ${JSON.stringify(figures)}\n`);
}

const quotasYaml = (store: string, rules: string, extra = '', storeTimeout = '50ms') =>
  `quotas:\n  store: ${store}\n  storeTimeout: ${storeTimeout}\n${extra}  rules:\n${rules}`;

describe('three edges sharing one Redis', () => {
  it('admit 600-630 requests of a 600-per-window rule in the window under 60 concurrent clients, and never fewer while budget remains', async () => {
    const redis = track(await startRedis());
    const upstream = track(await answeringUpstream());
    const windowMs = 15_000;
    // The three edges and the 60 clients share this one process's event loop: a store timeout here would be the
    // loop's lag, not Redis's, and onStoreError: allow would let those exchanges by uncounted.
    const yaml = quotasYaml(redis.url, '    - { name: calls, window: 15s, requests: 600 }\n', '', '2s');
    const edges = [
      track(await startTestEdge(upstream.url, yaml, { metrics: true })),
      track(await startTestEdge(upstream.url, yaml, { metrics: true })),
      track(await startTestEdge(upstream.url, yaml, { metrics: true })),
    ];
    // Every edge has its connection and script before the clock starts.
    for (const edge of edges) expect((await post(edge.url, 'warm')).status).toBe(200);
    await redis.command('FLUSHALL');

    const started = performance.now();
    const admittedAt: number[] = [];
    const refusedAt: number[] = [];
    /** What each refusal said the window had used, as the store counted it when it refused. */
    const usedWhenRefused: number[] = [];
    const others: number[] = [];
    const clients = Array.from({ length: 60 }, async (_, client) => {
      const edge = edges[client % edges.length]!;
      let n = 0;
      // One window at least, and on until the budget is used up (a loaded machine may take longer than one).
      const more = () => {
        const elapsed = performance.now() - started;
        return elapsed < 4 * windowMs && (elapsed < windowMs || refusedAt.length === 0);
      };
      while (more()) {
        const sentAt = performance.now() - started;
        const { status, body } = await post(edge.url, `c${client}-${n++}`);
        if (status === 200) admittedAt.push(sentAt);
        else if (status === 429) {
          refusedAt.push(sentAt);
          usedWhenRefused.push((JSON.parse(body) as { error: { data: { used: number } } }).error.data.used);
        } else others.push(status);
      }
    });
    await Promise.all(clients);
    let storeErrors = 0;
    for (const edge of edges)
      for (const error of ['timeout', 'unavailable'])
        storeErrors += await metric(edge, 'mcp_edge_quota_store_errors_total', { store: 'redis', error });
    const inWindow = admittedAt.filter((at) => at < windowMs).length;
    const firstRefusal = Math.min(...refusedAt);
    const admittedBeforeFirstRefusal = admittedAt.filter((at) => at < firstRefusal).length;
    report('3 edges, 1 Redis, 60 clients, requests: 600 per 15s', {
      admittedInWindow: inWindow,
      refused: refusedAt.length,
      firstRefusalAtMs: Math.round(firstRefusal),
      sentBeforeFirstRefusalAndAdmitted: admittedBeforeFirstRefusal,
      leastUsedWhenRefused: Math.min(...usedWhenRefused),
      otherStatuses: others.length,
      storeErrors,
    });
    expect(others).toEqual([]);
    expect(storeErrors).toBe(0);
    expect(refusedAt.length).toBeGreaterThan(0);
    // Never fewer than the budget while it remains: no request was refused before the store counted the whole
    // budget used, and once refusals began in the window, 600 had been admitted in it. (Which request the store
    // decides first is not the order the clients sent them in: on a busy machine a request sent earlier can
    // reach Redis after later ones, so the order of sending is reported, not asserted.)
    expect(Math.min(...usedWhenRefused)).toBeGreaterThanOrEqual(600);
    if (firstRefusal < windowMs) expect(inWindow).toBeGreaterThanOrEqual(600);
    // Never more than the budget and its tolerance in one window.
    expect(inWindow).toBeLessThanOrEqual(630);
    // One window of traffic at least, up to four on a machine too busy to use the budget in one.
  }, 120_000);

  it('hold a per-tool byte rule across replicas: a real SDK client is refused with the 429 contract on another edge, and allowed after the window', async () => {
    const redis = track(await startRedis());
    const server = track(await startV1Server({ mode: 'stateful' }));
    const yaml = quotasYaml(
      redis.url,
      '    - { name: sized-bytes, window: 2s, responseBytes: 20KiB, tools: [sized], per: tenant+tool }\n',
    );
    const one = track(await startTestEdge(server.url, yaml));
    const two = track(await startTestEdge(server.url, yaml));
    const a = track(await connectV1Client(one.url));
    await a.client.callTool({ name: 'sized', arguments: { bytes: 15_000 } });
    await a.client.callTool({ name: 'sized', arguments: { bytes: 15_000 } });
    // An answer's bytes reach Redis with the edge's next call, or within a few ms on their own: wait for both.
    const key = 'mcp-edge:quota:{default}:sized-bytes:responseBytes:2000:sized';
    const charged = async () => Number(/\r\n(\d+)\r\n/.exec(await redis.command('HGET', key, 'u'))?.[1] ?? 0);
    for (let i = 0; i < 100 && (await charged()) < 30_000; i++) await sleep(10);
    expect(await charged()).toBeGreaterThanOrEqual(30_000);
    const b = track(await connectV1Client(two.url));
    const err = await rejectionOf(b.client.callTool({ name: 'sized', arguments: { bytes: 10 } }));
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(429);
    const shown = (err as Error).message;
    expect(shown).toContain('"reason":"quota_exceeded"');
    expect(shown).toContain('"rule":"sized-bytes"');
    const retryAfter = Number(/"retryAfterSeconds":(\d+)/.exec(shown)?.[1]);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3);
    // Namespaced keys that expire.
    expect(await redis.command('KEYS', 'mcp-edge:quota:*')).toContain(key);
    const ttl = await redis.command('PTTL', key);
    expect(Number(ttl.slice(1))).toBeGreaterThan(0);
    await sleep(retryAfter * 1000);
    const again = await b.client.callTool({ name: 'sized', arguments: { bytes: 100 } });
    expect(JSON.stringify(again).length).toBeGreaterThan(100);
  });
});

describe('a quota store that fails', () => {
  it('killed mid-run: allow goes on, refuse answers 503, both count the errors, /readyz stays ready, and both recover when Redis is back', async () => {
    const redis = track(await startRedis());
    const upstream = track(await answeringUpstream());
    const rules = '    - { name: calls, window: 10s, requests: 100000 }\n';
    const allow = track(
      await startTestEdge(upstream.url, quotasYaml(redis.url, rules, '  onStoreError: allow\n'), {
        metrics: true,
      }),
    );
    const refuse = track(
      await startTestEdge(upstream.url, quotasYaml(redis.url, rules, '  onStoreError: refuse\n'), {
        metrics: true,
      }),
    );
    // Both edges reach Redis before it is killed. The first call may wait for the connection past the 50 ms
    // storeTimeout on a loaded host (refuse then answers 503): what is tested is what follows.
    for (const edge of [allow, refuse]) expect(await answeredWithin(edge.url, 10_000)).toBe(200);

    await redis.kill();
    const down = { allow: [] as number[], refuse: [] as number[], allowMs: [] as number[] };
    for (let i = 0; i < 20; i++) {
      const a = await post(allow.url, `a${i}`);
      down.allow.push(a.status);
      down.allowMs.push(a.ms);
      const r = await post(refuse.url, `r${i}`);
      down.refuse.push(r.status);
      if (i === 0) {
        expect(JSON.parse(r.body)).toMatchObject({
          id: 'r0',
          error: { data: { reason: 'quota_store_unavailable', enforcedBy: 'mcp-edge' } },
        });
      }
    }
    expect(new Set(down.allow)).toEqual(new Set([200]));
    expect(new Set(down.refuse)).toEqual(new Set([503]));
    expect((await fetch(new URL('/readyz', allow.url))).status).toBe(200);
    const allowErrors =
      (await metric(allow, 'mcp_edge_quota_store_errors_total', { store: 'redis', error: 'unavailable' })) +
      (await metric(allow, 'mcp_edge_quota_store_errors_total', { store: 'redis', error: 'timeout' }));
    expect(allowErrors).toBeGreaterThanOrEqual(20);

    await redis.restart();
    const restartedAt = performance.now();
    let recoveredMs = Number.NaN;
    for (let i = 0; i < 200; i++) {
      if ((await post(refuse.url, `back${i}`)).status === 200) {
        recoveredMs = performance.now() - restartedAt;
        break;
      }
      await sleep(50);
    }
    expect(recoveredMs).toBeLessThan(10_000);
    // The restarted Redis holds the counts again (the old ones died with it: nothing was persisted).
    expect((await post(allow.url, 'after')).status).toBe(200);
    expect(await redis.command('KEYS', 'mcp-edge:quota:*')).toContain('mcp-edge:quota:{default}:calls');
    const sorted = [...down.allowMs].sort((x, y) => x - y);
    report('Redis killed and restarted', {
      allowStatuses: down.allow.length,
      allowAll200: down.allow.every((s) => s === 200),
      allowMedianMs: Number(sorted[Math.floor(sorted.length / 2)]?.toFixed(2)),
      allowMaxMs: Number(sorted.at(-1)?.toFixed(2)),
      refuseAll503: down.refuse.every((s) => s === 503),
      storeErrorsCountedOnAllowEdge: allowErrors,
      recoveredAfterRestartMs: Math.round(recoveredMs),
    });
  });

  it('too slow: with allow an exchange waits at most about storeTimeout, not the store', async () => {
    const redis = track(await startRedis());
    const upstream = track(await answeringUpstream());
    const edge = track(
      await startTestEdge(
        upstream.url,
        quotasYaml(
          redis.url,
          '    - { name: calls, window: 10s, requests: 100000 }\n',
          '  onStoreError: allow\n',
        ),
        { metrics: true },
      ),
    );
    const baseline: number[] = [];
    for (let i = 0; i < 10; i++) baseline.push((await post(edge.url, `b${i}`)).ms);
    const slowMs = 3000;
    const sleeping = redis.command('DEBUG', 'SLEEP', String(slowMs / 1000)).catch(() => '');
    await sleep(100);
    const during = await post(edge.url, 'slow');
    await sleeping;
    expect(during.status).toBe(200);
    const base = Math.max(...baseline);
    // The store sleeps for 3 s; the exchange waited storeTimeout (50 ms) past its usual time, and no more than
    // a fraction of the store's stall.
    expect(during.ms).toBeLessThan(base + slowMs / 3);
    expect(
      await metric(edge, 'mcp_edge_quota_store_errors_total', { store: 'redis', error: 'timeout' }),
    ).toBeGreaterThanOrEqual(1);
    report('Redis answering after 3 s', {
      baselineMaxMs: Number(base.toFixed(2)),
      duringMs: Number(during.ms.toFixed(2)),
    });
  });
});

describe('explain', () => {
  it('lists the rules that apply to a tenant with their current use read from Redis, or says the memory store cannot be read', async () => {
    const redis = track(await startRedis());
    const upstream = track(await answeringUpstream());
    const rules =
      '    - { name: calls, window: 1m, requests: 10 }\n    - { name: beta-only, window: 1m, requests: 5, tenants: [beta] }\n';
    const yaml = quotasYaml(redis.url, rules);
    const edge = track(await startTestEdge(upstream.url, yaml));
    for (const id of ['1', '2', '3']) expect((await post(edge.url, id)).status).toBe(200);
    const { config } = parseConfigText(testEdgeYaml(upstream.url, yaml), 'explain.yaml', {});
    const text = await formatQuotaExplanation(config.quotas, 'default', undefined);
    expect(text).toContain(
      'calls: requests 10 requests per 1m (every tenant, per tenant), used now 3 requests (30%)',
    );
    expect(text).not.toContain('beta-only');
    const memory = parseConfigText(
      testEdgeYaml(upstream.url, quotasYaml('memory', rules)),
      'explain.yaml',
      {},
    );
    expect(await formatQuotaExplanation(memory.config.quotas, 'default', undefined)).toContain(
      'kept in the running edge (store: memory); it cannot be read from outside it',
    );
  });
});

/** The fields of a Redis hash, from HGETALL's raw reply. */
function hashOf(reply: string): Map<string, number> {
  const values = reply.split('\r\n').filter((line) => line !== '' && !/^[*$]/.test(line));
  const hash = new Map<string, number>();
  for (let i = 0; i + 1 < values.length; i += 2) hash.set(values[i]!, Number(values[i + 1]));
  return hash;
}

describe("a rule's key in Redis", () => {
  it('holds its sum and oldest slot equal to its slots under traffic, and expires when its newest slot stops counting', async () => {
    const redis = track(await startRedis());
    const { config } = parseConfigText(
      testEdgeYaml(
        'http://127.0.0.1:1/mcp',
        quotasYaml(redis.url, '    - { name: short, window: 1s, requests: 1000000, responseBytes: 1GiB }\n'),
      ),
      'keys.yaml',
      {},
    );
    const rules = quotaRulesOf(config.quotas?.rules ?? []);
    const store = new RedisQuotaStore(redis.url, 2000, pino({ level: 'silent' }));
    const keys = answerKeys(rules, 'acme', undefined);
    // Each request reserves 7 bytes for its answer (its ceiling), and its answer is charged 7 when it comes.
    const request = [{ kind: 'request', tool: undefined, bytes: 10 }];
    const names = chargesOf(rules, 'acme', request, 10, () => 7).map(
      (charge) => `${KEY_PREFIX}${charge.key.id}`,
    );
    try {
      // Slots of about 17 ms over 1.6 s: slots begin, age out and are pruned while takes and answers go on.
      const until = performance.now() + 1600;
      let checks = 0;
      while (performance.now() < until) {
        const charges = chargesOf(rules, 'acme', request, 10, () => 7);
        const taken = await store.take(charges, false);
        expect(taken.refused).toBe(-1);
        const [, reserved] = taken.at;
        store.release([{ key: keys[0]!, slot: reserved!.slot, life: reserved!.life, amount: 7 }]);
        await store.add(keys, 7);
        for (const name of names) {
          const hash = hashOf(await redis.command('HGETALL', name));
          // Beside the slots: their sum, the oldest, and when the key was made (its life).
          const slots = [...hash].filter(([field]) => !['u', 'o', 'e'].includes(field));
          expect(hash.get('e')).toBeGreaterThan(0);
          expect(hash.get('u')).toBe(slots.reduce((sum, [, amount]) => sum + amount, 0));
          expect(hash.get('o')).toBe(Math.min(...slots.map(([field]) => Number(field))));
          // The window's slots, the current one, and those of the key's last prune at most.
          expect(slots.length).toBeLessThanOrEqual(SLOTS + 5);
          const ttl = Number((await redis.command('PTTL', name)).slice(1));
          expect(ttl).toBeGreaterThan(0);
          expect(ttl).toBeLessThanOrEqual(1000 + 1000 / SLOTS + 1);
          checks++;
        }
        await sleep(5);
      }
      expect(checks).toBeGreaterThan(20);
      // No traffic: each key is gone once its newest slot has stopped counting.
      await sleep(1000 + 1000 / SLOTS + 50);
      for (const name of names) expect(await redis.command('EXISTS', name)).toBe(':0\r\n');
    } finally {
      await store.close();
    }
  });
});

/**
 * A store of its own on `redis`, with one rule of `requests` per tenant, and the charges of one request. The
 * default budget is too small to lease (1/LEASE_SHARE of what is left is under one request): every take is a call.
 */
function storeWithOneRule(redisUrl: string, storeTimeoutMs: number, requests = LEASE_SHARE) {
  const { config } = parseConfigText(
    testEdgeYaml(
      'http://127.0.0.1:1/mcp',
      quotasYaml(redisUrl, `    - { name: calls, window: 1m, requests: ${requests} }\n`),
    ),
    'calls.yaml',
    {},
  );
  const rules = quotaRulesOf(config.quotas?.rules ?? []);
  const store = new RedisQuotaStore(redisUrl, storeTimeoutMs, pino({ level: 'silent' }));
  const charges = () =>
    chargesOf(rules, 'acme', [{ kind: 'request', tool: undefined, bytes: 10 }], 10, () => null);
  return { store, charges };
}

/** How many script calls Redis has run since its stats were reset. */
async function scriptCalls(redis: { command(...args: string[]): Promise<string> }): Promise<number> {
  const stats = await redis.command('INFO', 'commandstats');
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

describe("the Redis store's calls", () => {
  it('go one at a time: the takes that arrive while a call is out wait for it and go together, in order', async () => {
    const redis = track(await startRedis());
    const { store, charges } = storeWithOneRule(redis.url, 5000);
    try {
      // Connected, and the script loaded.
      expect((await store.take(charges(), false)).refused).toBe(-1);
      await redis.command('CONFIG', 'RESETSTAT');
      // Redis holds every command for 1.5 s: the first take's call stays out while five more arrive, each in
      // an event-loop turn of its own.
      await redis.command('CLIENT', 'PAUSE', '1500');
      const takes: Promise<TakeResult>[] = [Promise.resolve(store.take(charges(), false))];
      for (let i = 0; i < 5; i++) {
        await sleep(20);
        takes.push(Promise.resolve(store.take(charges(), false)));
      }
      const results = await Promise.all(takes);
      expect(results.map((result) => result.refused)).toEqual([-1, -1, -1, -1, -1, -1]);
      expect(results.map((result) => result.used[0])).toEqual([2, 3, 4, 5, 6, 7]);
      expect(await scriptCalls(redis)).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('hold a take queued behind a call Redis does not answer to storeTimeout from its own start, not the call before it', async () => {
    const redis = track(await startRedis());
    const storeTimeoutMs = 800;
    const { store, charges } = storeWithOneRule(redis.url, storeTimeoutMs);
    try {
      expect((await store.take(charges(), false)).refused).toBe(-1);
      const sleeping = redis.command('DEBUG', 'SLEEP', '3').catch(() => '');
      await sleep(50);
      const settled = (take: TakeResult | Promise<TakeResult>) => {
        const started = performance.now();
        return Promise.resolve(take).then(
          () => ({ error: undefined, ms: performance.now() - started }),
          (error: unknown) => ({ error, ms: performance.now() - started }),
        );
      };
      const first = settled(store.take(charges(), false));
      await sleep(50);
      // Queued behind the first call: it would wait for that call's timeout and then for its own.
      const second = await settled(store.take(charges(), false));
      expect((await first).error).toBeInstanceOf(QuotaStoreError);
      expect(second.error).toBeInstanceOf(QuotaStoreError);
      expect((second.error as QuotaStoreError).kind).toBe('timeout');
      expect(second.ms).toBeGreaterThanOrEqual(storeTimeoutMs - 5);
      expect(second.ms).toBeLessThan(storeTimeoutMs + 400);
      await sleeping;
      // Redis is back: the next take is answered.
      expect((await store.take(charges(), false)).refused).toBe(-1);
    } finally {
      await store.close();
    }
  });
});

/** Redis' count for the one key of storeWithOneRule's rule (the leased units included). */
async function countedOf(redis: { command(...args: string[]): Promise<string> }): Promise<number> {
  const reply = await redis.command('HGET', `${KEY_PREFIX}{acme}:calls:requests:60000`, 'u');
  return Number(/\r\n(-?\d+)\r\n/.exec(reply)?.[1] ?? 0);
}

/**
 * Waits until Redis' clock is early in its second: a 1m window's slot is that second, and a lease ends with its
 * slot, so a test that spends one has most of a second, however late its timers run.
 */
async function earlyInItsSlot(redis: { command(...args: string[]): Promise<string> }): Promise<void> {
  for (;;) {
    const [, micros = 0] = (await redis.command('TIME')).split('\r\n').filter((line) => /^\d+$/.test(line));
    if (Number(micros) < 300_000) return;
    await sleep((1_000_000 - Number(micros)) / 1000 + 5);
  }
}

describe("the Redis store's leases", () => {
  it('answer the takes after a roomy one with no call, count them as charged, and give back what is unspent when the lease ends', async () => {
    const redis = track(await startRedis());
    const storeTimeoutMs = 300;
    const { store, charges } = storeWithOneRule(redis.url, storeTimeoutMs, 1000);
    await earlyInItsSlot(redis);
    try {
      // The first take is a call; Redis charges it and leases 8 more units to this edge.
      expect((await store.take(charges(), false)).used).toEqual([1]);
      expect(await countedOf(redis)).toBe(9);
      await redis.command('CONFIG', 'RESETSTAT');
      // The next eight are answered at once, from the lease: no promise, no call.
      const local: number[] = [];
      for (let i = 0; i < 8; i++) {
        const taken = store.take(charges(), false);
        expect(taken).not.toBeInstanceOf(Promise);
        local.push(...(taken as TakeResult).used);
      }
      expect(local).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
      expect(await scriptCalls(redis)).toBe(0);
      // The lease is spent: the tenth is a call, and asks for twice what the lease spent.
      const tenth = store.take(charges(), false);
      expect(tenth).toBeInstanceOf(Promise);
      expect((await tenth).used).toEqual([10]);
      expect(await countedOf(redis)).toBe(10 + 16);
      // storeTimeout later the lease has ended, and its 16 units are Redis' to give again.
      const until = performance.now() + 4 * storeTimeoutMs;
      while (performance.now() < until && (await countedOf(redis)) !== 10) await sleep(20);
      expect(await countedOf(redis)).toBe(10);
      expect(await scriptCalls(redis)).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('are given back before a take they cannot cover goes to Redis, so it is not refused while this edge holds budget', async () => {
    const redis = track(await startRedis());
    const { store, charges } = storeWithOneRule(redis.url, 2000, 200);
    await earlyInItsSlot(redis);
    try {
      expect((await store.take(charges(), false)).used).toEqual([1]);
      expect(await countedOf(redis)).toBe(9);
      // 192 requests at once (a batch): more than the 8 leased. Held back, the lease would leave 191 of 200.
      const batch = charges().map((charge) => ({ ...charge, cost: 192 }));
      const result = await store.take(batch, false);
      expect(result.refused).toBe(-1);
      expect(result.used).toEqual([193]);
      // Nothing left to lease: 7 of 200 remain, under one request in LEASE_SHARE.
      expect(await countedOf(redis)).toBe(193);
      // Refused once the budget is used, with the store's count.
      expect((await store.take(batch, false)).refused).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('are given back before Redis decides a take that waited while they were granted', async () => {
    const redis = track(await startRedis());
    const other = storeWithOneRule(redis.url, 5000, 200);
    const { store, charges } = storeWithOneRule(redis.url, 5000, 200);
    const batchOf = (cost: number) => charges().map((charge) => ({ ...charge, cost }));
    try {
      // Another replica used 150 of 200, and holds none of it.
      expect((await other.store.take(batchOf(150), false)).used).toEqual([150]);
      await other.store.close();
      expect(await countedOf(redis)).toBe(150);
      // This edge's first take is out while Redis is paused; a batch of 47 waits for the next call meanwhile.
      await redis.command('CLIENT', 'PAUSE', '500');
      const first = store.take(charges(), false);
      await sleep(50);
      const waited = store.take(batchOf(47), false);
      // The first was admitted with a lease of 3 (1/16 of the 49 left). 151 + 47 fit in 200: the batch is
      // admitted, which it would not be with those 3 units still held here.
      expect((await first).used).toEqual([151]);
      const result = await waited;
      expect(result.refused).toBe(-1);
      expect(result.used).toEqual([198]);
      expect(await countedOf(redis)).toBe(198);
    } finally {
      await store.close();
    }
  });

  it('are not spent once the connection to Redis is lost', async () => {
    const redis = track(await startRedis());
    const { store, charges } = storeWithOneRule(redis.url, 5000, 1000);
    await earlyInItsSlot(redis);
    try {
      expect((await store.take(charges(), false)).refused).toBe(-1);
      expect(store.take(charges(), false)).not.toBeInstanceOf(Promise);
      await redis.kill();
      await sleep(50);
      // Redis is gone, and with it what this edge held: the take is the store's error, not an admission.
      const taken = store.take(charges(), false);
      expect(taken).toBeInstanceOf(Promise);
      await expect(taken).rejects.toBeInstanceOf(QuotaStoreError);
    } finally {
      await store.close();
    }
  });
});
