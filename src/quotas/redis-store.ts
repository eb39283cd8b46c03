// The Redis store (Redis 6+ or Valkey): counts shared by every replica. What the exchanges ask (their takes,
// their answers' bytes) goes as one Lua script call (redis-script.ts; EVALSHA, loaded again by the client after
// a restart), with at most one call in flight: what arrives while a call is out waits for it and goes in the
// next one, so under load a call carries many exchanges, and an idle edge sends at once. A take Redis admits
// with room to spare also leases this edge a little budget of its slot (leases.ts): the takes after it spend
// that without a call until the slot ends or storeTimeout passes, and what is unspent then goes back. The client is
// ioredis: a take waits at most storeTimeout, queued or sent, nothing is queued while Redis is away (the
// exchanges get onStoreError at once), and it reconnects by itself. ioredis is loaded when a Redis store is
// made: an edge without one (no quotas, or the memory store) never loads it.
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { type LeaseReturn, Leases } from './leases.js';
import {
  BATCH_SCRIPT,
  type ScriptTake,
  scriptCallOf,
  type TakeReply,
  takeRepliesOf,
} from './redis-script.js';
import type { QuotaCharge, QuotaKey } from './rules.js';
import { type QuotaStore, QuotaStoreError, type TakeResult } from './store.js';

/** The longest wait between two reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 2000;

const load = createRequire(import.meta.url);

/** The script as an ioredis defined command (its commands are typed per instance: a cast at its edge). */
interface QuotaCommands {
  mcpEdgeQuotaBatch(keyCount: number, ...args: (string | number)[]): Promise<number[]>;
}

/** One take: its charges, whether it may ask for a lease, and where its answer goes. */
interface PendingTake {
  charges: readonly QuotaCharge[];
  force: boolean;
  lease: boolean;
  resolve(result: TakeResult): void;
  reject(err: unknown): void;
}

/** The takes waiting for the next call, in order, and the one deadline they share. */
interface Batch {
  takes: PendingTake[];
  /** storeTimeout after the batch's first take: what is still unanswered then gets the store's error. */
  deadline: NodeJS.Timeout;
  /** The deadline passed: the takes were answered with the error, so their charges are never sent. */
  expired: boolean;
}

/**
 * Answers' bytes not sent yet, summed per key, leases' units to give back, and the promise of the call that
 * will carry them.
 */
interface PendingAdds {
  amounts: Map<string, { key: QuotaKey; amount: number }>;
  /** Per key and slot. */
  returns: Map<string, LeaseReturn>;
  sent: Promise<void>;
  done(err?: unknown): void;
  timer: NodeJS.Timeout;
  /** Waited their delay: they go with the next call even when no take does. */
  due: boolean;
}

/**
 * How long an answer's bytes may wait for the next take's call before they go on their own: under load an
 * exchange then costs one call, not two. The edge that charged them sends them before its own next take.
 */
const ADD_DELAY_MS = 20;

/** The store's first connection is not up within storeTimeout. */
function notReachedYet(): QuotaStoreError {
  return new QuotaStoreError('the quota store has not been reached yet', 'unavailable');
}

/** Redis did not answer within storeTimeout: a command's own timeout (`cause`), or a batch's deadline. */
function answeredTooLate(cause?: unknown): QuotaStoreError {
  return new QuotaStoreError(
    'the quota store did not answer within quotas.storeTimeout',
    'timeout',
    cause === undefined ? undefined : { cause },
  );
}

export class RedisQuotaStore implements QuotaStore {
  readonly kind = 'redis';
  readonly #redis: Redis;
  readonly #commands: QuotaCommands;
  /** Whether the last thing heard from the connection was a failure (logged once per outage). */
  #down = false;
  /** Until the first connection is up: what a command waits for (at most storeTimeout), not an outage. */
  #firstReady: Promise<void> | undefined;
  /** Takes not sent yet. */
  #batch: Batch | undefined;
  #adds: PendingAdds | undefined;
  /** The call out now, if any: the next one goes when it has its answer. */
  #inFlight: Promise<void> | undefined;
  /** A send of what waits is queued for after this turn's I/O callbacks. */
  #sendQueued = false;
  readonly #timeoutMs: number;
  readonly #leases = new Leases();
  /** Ends the leases due (their unspent units go back) and forgets unused ones. */
  #leaseTimer: NodeJS.Timeout | undefined;
  #leaseTimerAt = Number.POSITIVE_INFINITY;

  constructor(url: string, timeoutMs: number, log: Logger) {
    const { Redis: RedisClient }: typeof import('ioredis') = load('ioredis');
    this.#redis = new RedisClient(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
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
    // What this edge held may be gone with the connection (a restarted Redis holds nothing): spend none of it,
    // and give none back, where a restarted Redis would take it from other replicas' charges.
    this.#redis.on('close', () => {
      this.#leases.dropAll();
      this.#adds?.returns.clear();
    });
    this.#redis.on('ready', () => {
      this.#firstReady = undefined;
      if (this.#down) log.info({ store: 'redis' }, 'the quota store is reachable again');
      this.#down = false;
    });
  }

  take(charges: readonly QuotaCharge[], force: boolean): TakeResult | Promise<TakeResult> {
    const used = this.#leases.serve(charges, performance.now());
    if (used !== undefined) return { refused: -1, used, retryAfterSeconds: 1 };
    return this.#enqueue(charges, force, true);
  }

  /** A take for Redis to decide; `lease`: it may ask for a lease of its keys. */
  #enqueue(charges: readonly QuotaCharge[], force: boolean, lease: boolean): Promise<TakeResult> {
    const batch = this.#batch ?? this.#newBatch();
    return new Promise((resolve, reject) => batch.takes.push({ charges, force, lease, resolve, reject }));
  }

  add(keys: readonly QuotaKey[], amount: number): Promise<void> | undefined {
    if (amount <= 0 || keys.length === 0) return undefined;
    const now = performance.now();
    let adds: PendingAdds | undefined;
    for (const key of keys) {
      const rest = this.#leases.draw(key, amount, now);
      if (rest <= 0) continue;
      adds ??= this.#adds ?? this.#newAdds();
      const pending = adds.amounts.get(key.id);
      if (pending !== undefined) pending.amount += rest;
      else adds.amounts.set(key.id, { key, amount: rest });
    }
    return adds?.sent;
  }

  /** Queues units to give back; `due`: they go with the next call even when no take does. */
  #giveBack(returns: readonly LeaseReturn[], due: boolean): void {
    const adds = this.#adds ?? this.#newAdds();
    for (const given of returns) {
      const id = `${given.key.id}@${given.slot}`;
      const pending = adds.returns.get(id);
      if (pending !== undefined) pending.amount += given.amount;
      else adds.returns.set(id, { ...given });
    }
    if (due && !adds.due) {
      adds.due = true;
      this.#sendSoon();
    }
  }

  /**
   * The takes as the script is asked them: only a key's last take in the call asks for a lease, so that the
   * takes before it are decided with none of its budget held here.
   */
  #scriptTakesOf(takes: readonly PendingTake[]): ScriptTake[] {
    const lastTake = new Map<string, PendingTake>();
    for (const take of takes) for (const { key } of take.charges) lastTake.set(key.id, take);
    return takes.map((take) => ({
      charges: take.charges,
      force: take.force,
      wants: take.charges.map((charge) =>
        take.lease && lastTake.get(charge.key.id) === take ? this.#leases.want(charge) : 0,
      ),
    }));
  }

  /** Records what Redis leased with a take (one timer waits for the next lease to end); returns each key's use. */
  #granted(take: PendingTake, reply: TakeReply, sentAt: number): number[] {
    return take.charges.map((charge, i) => {
      const { counted, leased, slot, slotLeftMs } = reply.keys[i] as TakeReply['keys'][number];
      if (leased > 0) {
        // Redis ran the script after it was sent: its slot ends no sooner than this, on the local clock.
        const endsAt = sentAt + Math.min(slotLeftMs, this.#timeoutMs);
        const given = this.#leases.grant({
          key: charge.key,
          limit: charge.limit,
          granted: leased,
          counted,
          slot,
          endsAt,
        });
        if (given !== undefined) this.#giveBack([given], true);
        this.#leaseTimerFor(endsAt);
      }
      // Redis' count holds what this edge has leased and not spent: the use is the rest.
      return counted - this.#leases.held(charge.key);
    });
  }

  #leaseTimerFor(at: number | undefined): void {
    if (at === undefined || at >= this.#leaseTimerAt) return;
    clearTimeout(this.#leaseTimer);
    this.#leaseTimerAt = at;
    this.#leaseTimer = setTimeout(() => this.#leasesDue(), Math.max(0, at - performance.now()));
    this.#leaseTimer.unref();
  }

  #leasesDue(): void {
    this.#leaseTimer = undefined;
    this.#leaseTimerAt = Number.POSITIVE_INFINITY;
    const returns = this.#leases.expire(performance.now());
    if (returns.length > 0) this.#giveBack(returns, true);
    this.#leaseTimerFor(this.#leases.nextEnd());
  }

  #newAdds(): PendingAdds {
    let done: (err?: unknown) => void = () => {};
    const sent = new Promise<void>((resolve, reject) => {
      done = (err) => (err === undefined ? resolve() : reject(err));
    });
    // An answer charged is fire and forget: a caller may not wait, never an unhandled rejection.
    sent.catch(() => {});
    const timer = setTimeout(() => this.#addsDue(), ADD_DELAY_MS);
    timer.unref();
    const adds: PendingAdds = { amounts: new Map(), returns: new Map(), sent, done, timer, due: false };
    this.#adds = adds;
    return adds;
  }

  /** The waiting answers' bytes waited their delay (their timer is cleared when they go sooner). */
  #addsDue(): void {
    if (this.#adds === undefined) return;
    this.#adds.due = true;
    this.#sendSoon();
  }

  #newBatch(): Batch {
    const batch: Batch = {
      takes: [],
      deadline: setTimeout(() => this.#expire(batch), this.#timeoutMs),
      expired: false,
    };
    batch.deadline.unref();
    this.#batch = batch;
    this.#sendSoon();
    return batch;
  }

  /** A batch's deadline passed unanswered (queued behind a slow call, or its own call slow). */
  #expire(batch: Batch): void {
    batch.expired = true;
    if (this.#batch === batch) this.#batch = undefined;
    const err = this.#firstReady !== undefined ? notReachedYet() : answeredTooLate();
    for (const take of batch.takes) take.reject(err);
  }

  /**
   * Sends what waits once this turn's I/O callbacks have run (they may add to it), unless a call is out: then
   * it goes when that call has its answer.
   */
  #sendSoon(): void {
    if (this.#inFlight !== undefined || this.#sendQueued) return;
    this.#sendQueued = true;
    setImmediate(() => {
      this.#sendQueued = false;
      this.#sendWaiting();
    });
  }

  /** One call with what waits: the answers' bytes, then the takes. The next one goes after its answer. */
  #sendWaiting(): void {
    if (this.#inFlight !== undefined) return;
    const batch = this.#batch;
    this.#batch = undefined;
    const adds = this.#adds;
    if (batch === undefined && (adds === undefined || !adds.due)) return;
    this.#adds = undefined;
    if (adds !== undefined) clearTimeout(adds.timer);
    this.#inFlight = this.#send(batch, adds).finally(() => {
      this.#inFlight = undefined;
      if (this.#batch !== undefined || this.#adds?.due) this.#sendSoon();
    });
  }

  /**
   * One script call: the units given back and the answers' bytes waiting (first, so these takes see them), then
   * the takes in order.
   */
  async #send(batch: Batch | undefined, adds: PendingAdds | undefined): Promise<void> {
    const takes = batch === undefined || batch.expired ? [] : batch.takes;
    if (takes.length === 0 && adds === undefined) return;
    // Redis decides these takes with none of their keys' units held here: what this edge holds of them goes
    // back first, so a take is never refused for budget this edge holds.
    const returns = [
      ...(adds?.returns.values() ?? []),
      ...takes.flatMap((take) => this.#leases.release(take.charges)),
    ];
    const scriptTakes = this.#scriptTakesOf(takes);
    const { keys, args } = scriptCallOf(returns, adds?.amounts.values() ?? [], scriptTakes);
    if (keys.length === 0) {
      adds?.done();
      return;
    }
    const sentAt = performance.now();
    let reply: number[];
    try {
      reply = await this.#call(() => this.#commands.mcpEdgeQuotaBatch(keys.length, ...keys, ...args));
    } catch (err) {
      if (batch !== undefined) clearTimeout(batch.deadline);
      for (const take of takes) take.reject(err);
      adds?.done(err);
      return;
    }
    if (batch !== undefined) clearTimeout(batch.deadline);
    adds?.done();
    takeRepliesOf(reply, scriptTakes).forEach((answer, i) => {
      const take = takes[i] as PendingTake;
      const used = this.#granted(take, answer, sentAt);
      take.resolve({
        refused: answer.refused,
        used,
        retryAfterSeconds: Math.max(1, Math.ceil(answer.retryMs / 1000)),
      });
    });
  }

  async use(keys: readonly QuotaKey[]): Promise<number[]> {
    const charges = keys.map((key) => ({ key, limit: Number.MAX_SAFE_INTEGER, cost: 0 }));
    const result = await this.#enqueue(charges, false, false);
    return result.used;
  }

  async close(): Promise<void> {
    // Answers' bytes and unspent leases still waiting go first, when Redis is there to take them.
    await this.#inFlight;
    clearTimeout(this.#leaseTimer);
    const returns = this.#leases.releaseAll();
    if (returns.length > 0) this.#giveBack(returns, false);
    const adds = this.#adds;
    this.#adds = undefined;
    if (adds !== undefined) {
      clearTimeout(adds.timer);
      await this.#send(undefined, adds);
    }
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

  /** A command's failure as a QuotaStoreError: a timeout, or Redis unavailable. */
  async #call<T>(command: () => Promise<T>): Promise<T> {
    if (this.#firstReady !== undefined) await this.#untilFirstReady(this.#firstReady);
    try {
      return await command();
    } catch (err) {
      if (err instanceof Error && /timed out/i.test(err.message)) throw answeredTooLate(err);
      throw new QuotaStoreError('the quota store is unavailable', 'unavailable', { cause: err });
    }
  }
}
