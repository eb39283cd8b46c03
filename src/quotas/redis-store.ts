// The Redis store (Redis 6+ or Valkey): counts shared by every replica, taken by one Lua script per exchange
// (redis-script.ts; EVALSHA, loaded again by the client after a restart). The client is ioredis: commands
// issued in the same event-loop turn go as one pipeline, a command waits at most storeTimeout, nothing is
// queued while Redis is away (the exchange gets onStoreError at once), and it reconnects by itself.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ADD_SCRIPT, TAKE_SCRIPT } from './redis-script.js';
import type { QuotaCharge, QuotaKey } from './rules.js';
import { type QuotaStore, QuotaStoreError, type TakeResult } from './store.js';

/** Every key this edge writes starts so: one namespace beside anything else the Redis holds. */
export const KEY_PREFIX = 'mcp-edge:quota:';

/** The longest wait between two reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 2000;

/** The scripts as ioredis' defined commands (its commands are typed per instance: a cast at its edge). */
interface QuotaCommands {
  mcpEdgeQuotaTake(keyCount: number, ...args: (string | number)[]): Promise<number[]>;
  mcpEdgeQuotaAdd(keyCount: number, ...args: (string | number)[]): Promise<number>;
}

/** The answers' bytes of one event-loop turn, per key, and the promise of their one script call. */
interface PendingAdds {
  amounts: Map<string, { key: QuotaKey; amount: number }>;
  flushed: Promise<void> | undefined;
}

export class RedisQuotaStore implements QuotaStore {
  readonly kind = 'redis';
  readonly #redis: Redis;
  readonly #commands: QuotaCommands;
  /** Whether the last thing heard from the connection was a failure (logged once per outage). */
  #down = false;
  /** Until the first connection is up: what a command waits for (at most storeTimeout), not an outage. */
  #firstReady: Promise<void> | undefined;
  #pendingAdds: PendingAdds | undefined;
  readonly #timeoutMs: number;

  constructor(url: string, timeoutMs: number, log: Logger) {
    this.#redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
      enableAutoPipelining: true,
      connectTimeout: Math.max(1000, timeoutMs),
      retryStrategy: (attempt) => Math.min(100 * attempt, MAX_RECONNECT_DELAY_MS),
    });
    this.#timeoutMs = timeoutMs;
    this.#firstReady = new Promise((resolve) => this.#redis.once('ready', () => resolve()));
    this.#redis.defineCommand('mcpEdgeQuotaTake', { lua: TAKE_SCRIPT });
    this.#redis.defineCommand('mcpEdgeQuotaAdd', { lua: ADD_SCRIPT });
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

  async take(charges: readonly QuotaCharge[], force: boolean): Promise<TakeResult> {
    const args: (string | number)[] = charges.map((charge) => KEY_PREFIX + charge.key.id);
    args.push(force ? '1' : '0');
    for (const { key, limit, cost } of charges)
      args.push(key.rule.windowMs, limit, cost, key.measure === 'requests' ? '1' : '0');
    const reply = await this.#call(() => this.#commands.mcpEdgeQuotaTake(charges.length, ...args));
    const [refused = 0, retryMs = 0, ...used] = reply;
    return { refused: refused - 1, used, retryAfterSeconds: Math.max(1, Math.ceil(retryMs / 1000)) };
  }

  /**
   * Answers' bytes are coalesced per key over one event-loop turn and sent as one script call: under load an
   * exchange then costs Redis one call (its take), not two.
   */
  add(keys: readonly QuotaKey[], amount: number): Promise<void> | undefined {
    if (amount <= 0 || keys.length === 0) return undefined;
    let batch = this.#pendingAdds;
    if (batch === undefined) {
      const created: PendingAdds = { amounts: new Map(), flushed: undefined };
      created.flushed = new Promise<void>((resolve, reject) => {
        setImmediate(() => {
          this.#pendingAdds = undefined;
          this.#flush(created.amounts).then(() => resolve(), reject);
        });
      });
      this.#pendingAdds = created;
      batch = created;
    }
    for (const key of keys) {
      const pending = batch.amounts.get(key.id);
      if (pending !== undefined) pending.amount += amount;
      else batch.amounts.set(key.id, { key, amount });
    }
    return batch.flushed;
  }

  #flush(amounts: ReadonlyMap<string, { key: QuotaKey; amount: number }>): Promise<number> {
    const args: (string | number)[] = [];
    for (const { key } of amounts.values()) args.push(KEY_PREFIX + key.id);
    for (const { key, amount } of amounts.values()) args.push(amount, key.rule.windowMs);
    return this.#call(() => this.#commands.mcpEdgeQuotaAdd(amounts.size, ...args));
  }

  async use(keys: readonly QuotaKey[]): Promise<number[]> {
    const result = await this.take(
      keys.map((key) => ({ key, limit: Number.MAX_SAFE_INTEGER, cost: 0 })),
      false,
    );
    return result.used;
  }

  async close(): Promise<void> {
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
