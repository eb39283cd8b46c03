// The Redis store's connection (ioredis, loaded only when a Redis store is made): one script call at a time
// (redis-store.ts decides what goes in each), failures as QuotaStoreErrors, the outage logged once. Nothing is
// queued while Redis is away: a call then fails at once, and is known not to have reached Redis.
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { BATCH_SCRIPT } from './redis-script.js';
import { QuotaStoreError } from './store.js';

/** The longest wait between two reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 2000;
/**
 * How long a call's reply is awaited, at least: the takes in it are answered with the store's error after
 * storeTimeout (redis-store.ts), but a reply that comes later still says what Redis charged, so that the
 * reservations it made go back. Past this the call's outcome is unknown.
 */
const LATE_REPLY_MS = 2000;

const load = createRequire(import.meta.url);

/** The script as an ioredis defined command (its commands are typed per instance: a cast at its edge). */
interface QuotaCommands {
  mcpEdgeQuotaBatch(keyCount: number, ...args: (string | number)[]): Promise<number[]>;
}

/** A call that failed; `mayHaveRun`: it was written to Redis, which may have run it (no reply says). */
export class QuotaCallError extends QuotaStoreError {
  constructor(
    message: string,
    kind: 'timeout' | 'unavailable',
    readonly mayHaveRun: boolean,
    options?: ErrorOptions,
  ) {
    super(message, kind, options);
    this.name = 'QuotaCallError';
  }
}

/** The store's first connection is not up within storeTimeout. */
export function notReachedYet(): QuotaStoreError {
  return new QuotaCallError('the quota store has not been reached yet', 'unavailable', false);
}

/** Redis did not answer within storeTimeout: a command's own timeout (`cause`), or a batch's deadline. */
export function answeredTooLate(cause?: unknown): QuotaStoreError {
  return new QuotaCallError(
    'the quota store did not answer within quotas.storeTimeout',
    'timeout',
    true,
    cause === undefined ? undefined : { cause },
  );
}

/** What the store hears of the connection. */
export interface ConnectionEvents {
  /** The connection is lost: what this edge holds of Redis' budget can no longer be spent. */
  lost(): void;
  /** The connection is up (again). */
  ready(): void;
}

export class RedisConnection {
  readonly #redis: Redis;
  readonly #commands: QuotaCommands;
  readonly #timeoutMs: number;
  /** Whether the last thing heard from the connection was a failure (logged once per outage). */
  #down = false;
  /** Until the first connection is up: what a call waits for (at most storeTimeout), not an outage. */
  #firstReady: Promise<void> | undefined;

  constructor(url: string, timeoutMs: number, log: Logger, events: ConnectionEvents) {
    const { Redis: RedisClient }: typeof import('ioredis') = load('ioredis');
    this.#redis = new RedisClient(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: Math.max(timeoutMs, LATE_REPLY_MS),
      // The store batches the exchanges' work itself; ioredis' own auto-pipelining added milliseconds under load.
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
    this.#redis.on('close', () => events.lost());
    this.#redis.on('ready', () => {
      this.#firstReady = undefined;
      if (this.#down) log.info({ store: 'redis' }, 'the quota store is reachable again');
      this.#down = false;
      events.ready();
    });
  }

  /** The first connection has been up (a call fails for an outage now, not for a store never reached). */
  get reached(): boolean {
    return this.#firstReady === undefined;
  }

  /** The connection is up: a call now is written to Redis. */
  get ready(): boolean {
    return this.#redis.status === 'ready';
  }

  /** One script call; a failure is a QuotaCallError that says whether Redis may have run it. */
  async call(keys: readonly string[], args: readonly (string | number)[]): Promise<number[]> {
    if (this.#firstReady !== undefined) await this.#untilFirstReady(this.#firstReady);
    // Not ready, ioredis rejects the call without writing it (enableOfflineQueue: false).
    const written = this.ready;
    try {
      return await this.#commands.mcpEdgeQuotaBatch(keys.length, ...keys, ...args);
    } catch (err) {
      if (err instanceof Error && /timed out/i.test(err.message)) throw answeredTooLate(err);
      throw new QuotaCallError('the quota store is unavailable', 'unavailable', written, { cause: err });
    }
  }

  disconnect(): void {
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
    if (first === 'late') throw notReachedYet();
  }
}
