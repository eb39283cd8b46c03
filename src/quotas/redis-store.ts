// The Redis store (Redis 6+ or Valkey): counts shared by every replica. What the exchanges of one event-loop
// turn ask (their takes, their answers' bytes) goes as one Lua script call (redis-script.ts; EVALSHA, loaded
// again by the client after a restart): one command per turn, not one per exchange. The client is ioredis: a
// command waits at most storeTimeout, nothing is queued while Redis is away (the exchanges get onStoreError at
// once), and it reconnects by itself. ioredis is loaded when a Redis store is made: an edge without one
// (no quotas, or the memory store) never loads it.
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { BATCH_SCRIPT } from './redis-script.js';
import type { QuotaCharge, QuotaKey } from './rules.js';
import { type QuotaStore, QuotaStoreError, type TakeResult } from './store.js';

/** Every key this edge writes starts so: one namespace beside anything else the Redis holds. */
export const KEY_PREFIX = 'mcp-edge:quota:';

/** The longest wait between two reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 2000;

const load = createRequire(import.meta.url);

/** The script as an ioredis defined command (its commands are typed per instance: a cast at its edge). */
interface QuotaCommands {
  mcpEdgeQuotaBatch(keyCount: number, ...args: (string | number)[]): Promise<number[]>;
}

/** One take of the turn: its charges and where its answer goes. */
interface PendingTake {
  charges: readonly QuotaCharge[];
  force: boolean;
  resolve(result: TakeResult): void;
  reject(err: unknown): void;
}

/** The takes of one event-loop turn, in order. */
interface Batch {
  takes: PendingTake[];
}

/** Answers' bytes not sent yet, summed per key, and the promise of the call that will carry them. */
interface PendingAdds {
  amounts: Map<string, { key: QuotaKey; amount: number }>;
  sent: Promise<void>;
  done(err?: unknown): void;
  timer: NodeJS.Timeout;
}

/**
 * How long an answer's bytes may wait for the next take's call before they go on their own: under load an
 * exchange then costs one call, not two. The edge that charged them sends them before its own next take.
 */
const ADD_DELAY_MS = 20;

export class RedisQuotaStore implements QuotaStore {
  readonly kind = 'redis';
  readonly #redis: Redis;
  readonly #commands: QuotaCommands;
  /** Whether the last thing heard from the connection was a failure (logged once per outage). */
  #down = false;
  /** Until the first connection is up: what a command waits for (at most storeTimeout), not an outage. */
  #firstReady: Promise<void> | undefined;
  #batch: Batch | undefined;
  #adds: PendingAdds | undefined;
  readonly #timeoutMs: number;

  constructor(url: string, timeoutMs: number, log: Logger) {
    const { Redis: RedisClient }: typeof import('ioredis') = load('ioredis');
    this.#redis = new RedisClient(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
      // The store batches a turn's work itself; ioredis' own auto-pipelining added milliseconds under load.
      enableAutoPipelining: false,
      connectTimeout: Math.max(1000, timeoutMs),
      retryStrategy: (attempt) => Math.min(100 * attempt, MAX_RECONNECT_DELAY_MS),
    });
    this.#timeoutMs = timeoutMs;
    this.#firstReady = new Promise((resolve) => this.#redis.once('ready', () => resolve()));
    this.#redis.defineCommand('mcpEdgeQuotaBatch', { lua: BATCH_SCRIPT });
    this.#commands = this.#redis as unknown as QuotaCommands;
    this.#redis.on('error', (err: Error) => {
      if (this.#down) return;
      this.#down = true;
      log.warn(
        { err, store: 'redis' },
        'the quota store is unreachable; quotas.onStoreError applies until it returns',
      );
    });
    this.#redis.on('ready', () => {
      this.#firstReady = undefined;
      if (this.#down) log.info({ store: 'redis' }, 'the quota store is reachable again');
      this.#down = false;
    });
  }

  take(charges: readonly QuotaCharge[], force: boolean): Promise<TakeResult> {
    const batch = this.#currentBatch();
    return new Promise((resolve, reject) => batch.takes.push({ charges, force, resolve, reject }));
  }

  add(keys: readonly QuotaKey[], amount: number): Promise<void> | undefined {
    if (amount <= 0 || keys.length === 0) return undefined;
    const adds = this.#adds ?? this.#newAdds();
    for (const key of keys) {
      const pending = adds.amounts.get(key.id);
      if (pending !== undefined) pending.amount += amount;
      else adds.amounts.set(key.id, { key, amount });
    }
    return adds.sent;
  }

  #newAdds(): PendingAdds {
    let done: (err?: unknown) => void = () => {};
    const sent = new Promise<void>((resolve, reject) => {
      done = (err) => (err === undefined ? resolve() : reject(err));
    });
    // An answer charged is fire and forget: a caller may not wait, never an unhandled rejection.
    sent.catch(() => {});
    const timer = setTimeout(() => void this.#send([]), ADD_DELAY_MS);
    timer.unref();
    const adds: PendingAdds = { amounts: new Map(), sent, done, timer };
    this.#adds = adds;
    return adds;
  }

  /** The takes of this event-loop turn, sent when the turn's I/O callbacks have run. */
  #currentBatch(): Batch {
    if (this.#batch !== undefined) return this.#batch;
    const batch: Batch = { takes: [] };
    this.#batch = batch;
    setImmediate(() => {
      this.#batch = undefined;
      void this.#send(batch.takes);
    });
    return batch;
  }

  /** One script call: the answers' bytes waiting (first, so these takes see them), then `takes` in order. */
  async #send(takes: readonly PendingTake[]): Promise<void> {
    const adds = this.#adds;
    this.#adds = undefined;
    if (adds !== undefined) clearTimeout(adds.timer);
    if (takes.length === 0 && adds === undefined) return;
    const keys: string[] = [];
    const args: (string | number)[] = [];
    if (adds !== undefined) {
      args.push('a', adds.amounts.size);
      for (const { key, amount } of adds.amounts.values()) {
        keys.push(KEY_PREFIX + key.id);
        args.push(amount, key.rule.windowMs);
      }
    }
    for (const { charges, force } of takes) {
      args.push('t', charges.length, force ? '1' : '0');
      for (const { key, limit, cost } of charges) {
        keys.push(KEY_PREFIX + key.id);
        args.push(key.rule.windowMs, limit, cost, key.measure === 'requests' ? '1' : '0');
      }
    }
    let reply: number[];
    try {
      reply = await this.#call(() => this.#commands.mcpEdgeQuotaBatch(keys.length, ...keys, ...args));
    } catch (err) {
      for (const take of takes) take.reject(err);
      adds?.done(err);
      return;
    }
    adds?.done();
    let at = 0;
    for (const take of takes) {
      const refused = reply[at] ?? 0;
      const retryMs = reply[at + 1] ?? 0;
      const used = reply.slice(at + 2, at + 2 + take.charges.length);
      at += 2 + take.charges.length;
      take.resolve({ refused: refused - 1, used, retryAfterSeconds: Math.max(1, Math.ceil(retryMs / 1000)) });
    }
  }

  async use(keys: readonly QuotaKey[]): Promise<number[]> {
    const result = await this.take(
      keys.map((key) => ({ key, limit: Number.MAX_SAFE_INTEGER, cost: 0 })),
      false,
    );
    return result.used;
  }

  async close(): Promise<void> {
    // Answers' bytes still waiting go first, when Redis is there to take them.
    if (this.#adds !== undefined) await this.#send([]).catch(() => {});
    this.#redis.disconnect();
  }

  /** Waits for the first connection, at most storeTimeout: a store that never came up is unavailable. */
  async #untilFirstReady(ready: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.#timeoutMs);
    });
    const first = await Promise.race([ready, late]);
    clearTimeout(timer);
    if (first === 'late')
      throw new QuotaStoreError('the quota store has not been reached yet', 'unavailable');
  }

  /** A command's failure as a QuotaStoreError: a timeout, or Redis unavailable. */
  async #call<T>(command: () => Promise<T>): Promise<T> {
    if (this.#firstReady !== undefined) await this.#untilFirstReady(this.#firstReady);
    try {
      return await command();
    } catch (err) {
      const timeout = err instanceof Error && /timed out/i.test(err.message);
      throw new QuotaStoreError(
        timeout
          ? 'the quota store did not answer within quotas.storeTimeout'
          : 'the quota store is unavailable',
        timeout ? 'timeout' : 'unavailable',
        { cause: err },
      );
    }
  }
}
