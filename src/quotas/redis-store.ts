// The Redis store (Redis 6+ or Valkey): counts shared by every replica. What the exchanges ask (their takes,
// their answers' bytes, what their reservations did not use) goes as one Lua script call (redis-script.ts;
// EVALSHA, loaded again by the client after a restart), with at most one call in flight: what arrives while a
// call is out waits for it and goes in the next one, so under load a call carries many exchanges, and an idle
// edge sends at once. A take Redis admits with room to spare also leases this edge a little budget of its slot
// (leases.ts): the takes after it spend that without a call until the slot ends or storeTimeout passes, and
// what is unspent then goes back. A take waits at most storeTimeout, queued or sent; nothing is queued while
// Redis is away (the exchanges get onStoreError at once), and the connection comes back by itself
// (redis-connection.ts). What is given back (reservations, leases) reaches Redis exactly once, or not at all
// when the call that carried it may have run: units that never left this edge wait for Redis to come back.
import type { Logger } from 'pino';
import { Leases } from './leases.js';
import { answeredTooLate, notReachedYet, QuotaCallError, RedisConnection } from './redis-connection.js';
import { type ScriptTake, scriptCallOf, type TakeReply, takeRepliesOf } from './redis-script.js';
import type { QuotaCharge, QuotaKey } from './rules.js';
import type { Held, QuotaStore, TakeResult } from './store.js';
import { oldestCountedSlot } from './window.js';

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
  /** Per key, slot and life. */
  returns: Map<string, Held>;
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

export class RedisQuotaStore implements QuotaStore {
  readonly kind = 'redis';
  readonly #connection: RedisConnection;
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
  /** Units to give back that never reached Redis (it was away), per key, slot and life: sent when it is back. */
  readonly #unsent = new Map<string, Held>();

  constructor(url: string, timeoutMs: number, log: Logger) {
    this.#timeoutMs = timeoutMs;
    this.#connection = new RedisConnection(url, timeoutMs, log, {
      // What this edge holds may be gone with the connection: none of it is spent. It goes back when Redis is
      // back, to the life of each key it was charged in only, so a Redis that restarted empty loses nothing.
      lost: () => this.#keepUnsent(this.#leases.releaseAll()),
      ready: () => {
        if (this.#unsent.size === 0) return;
        const unsent = [...this.#unsent.values()];
        this.#unsent.clear();
        this.#giveBack(unsent, true);
      },
    });
  }

  take(charges: readonly QuotaCharge[], force: boolean): TakeResult | Promise<TakeResult> {
    const served = this.#leases.serve(charges, performance.now());
    if (served !== undefined)
      return { refused: -1, refusedFor: 'budget', used: served.used, retryAfterSeconds: 1, at: served.at };
    return this.#enqueue(charges, force, true);
  }

  release(held: readonly Held[]): void {
    if (held.length > 0) this.#giveBack(held, false);
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
  #giveBack(returns: readonly Held[], due: boolean): void {
    const adds = this.#adds ?? this.#newAdds();
    for (const given of returns) {
      const id = heldId(given);
      const pending = adds.returns.get(id);
      if (pending !== undefined) pending.amount += given.amount;
      else adds.returns.set(id, { ...given });
    }
    if (due && !adds.due) {
      adds.due = true;
      this.#sendSoon();
    }
  }

  /** Keeps units that never reached Redis for when it is back; those whose slot stopped counting are moot. */
  #keepUnsent(returns: readonly Held[]): void {
    const now = Date.now();
    for (const given of returns) {
      if (given.slot < oldestCountedSlot(now, given.key.rule.windowMs)) continue;
      const id = heldId(given);
      const kept = this.#unsent.get(id);
      if (kept !== undefined) kept.amount += given.amount;
      else this.#unsent.set(id, { ...given });
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

  /** Records what Redis leased with a take (one timer waits for the next lease to end); returns its result. */
  #granted(take: PendingTake, reply: TakeReply, sentAt: number): TakeResult {
    const used = take.charges.map((charge, i) => {
      const { counted, leased, slot, slotLeftMs, life } = reply.keys[i] as TakeReply['keys'][number];
      if (leased > 0) {
        // Redis ran the script after it was sent: its slot ends no sooner than this, on the local clock.
        const endsAt = sentAt + Math.min(slotLeftMs, this.#timeoutMs);
        const given = this.#leases.grant({
          key: charge.key,
          limit: charge.limit,
          granted: leased,
          counted,
          slot,
          life,
          endsAt,
        });
        if (given !== undefined) this.#giveBack([given], true);
        this.#leaseTimerFor(endsAt);
      }
      // Redis' count holds what this edge has leased and not spent: the use is the rest.
      return counted - this.#leases.held(charge.key);
    });
    const charged = reply.refused === -1 || take.force;
    return {
      refused: reply.refused,
      refusedFor: 'budget',
      used,
      retryAfterSeconds: Math.max(1, Math.ceil(reply.retryMs / 1000)),
      at: charged ? reply.keys.map(({ slot, life }) => ({ slot, life })) : [],
    };
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
    const err = this.#connection.reached ? answeredTooLate() : notReachedYet();
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
      reply = await this.#connection.call(keys, args);
    } catch (err) {
      if (batch !== undefined) clearTimeout(batch.deadline);
      for (const take of takes) take.reject(err);
      adds?.done(err);
      // Units that never reached Redis go when it is back. A call Redis may have run is not sent again: run
      // twice, its give-backs would take other charges off their slots.
      if (err instanceof QuotaCallError && !err.mayHaveRun) this.#keepUnsent(returns);
      return;
    }
    if (batch !== undefined) clearTimeout(batch.deadline);
    adds?.done();
    takeRepliesOf(reply, scriptTakes).forEach((answer, i) => {
      const take = takes[i] as PendingTake;
      const result = this.#granted(take, answer, sentAt);
      // Answered with the store's error while Redis ran it: no exchange holds what it reserved, so it goes back.
      if (batch?.expired) this.#giveBack(reservedBy(take.charges, result), true);
      else take.resolve(result);
    });
  }

  async use(keys: readonly QuotaKey[]): Promise<number[]> {
    const charges = keys.map((key) => ({ key, limit: Number.MAX_SAFE_INTEGER, cost: 0, largest: 0 }));
    const result = await this.#enqueue(charges, false, false);
    return result.used;
  }

  async close(): Promise<void> {
    // Answers' bytes and unspent leases still waiting go first, when Redis is there to take them.
    await this.#inFlight;
    clearTimeout(this.#leaseTimer);
    const returns = [...this.#leases.releaseAll(), ...this.#unsent.values()];
    this.#unsent.clear();
    if (returns.length > 0) this.#giveBack(returns, false);
    const adds = this.#adds;
    this.#adds = undefined;
    if (adds !== undefined) {
      clearTimeout(adds.timer);
      await this.#send(undefined, adds);
    }
    this.#connection.disconnect();
  }
}

/** Held amounts are summed per key, slot and life. */
function heldId(held: Held): string {
  return `${held.key.id}@${held.slot}@${held.life}`;
}

/** What a take charged to answers' reservations (none when it was refused, outside observe mode). */
function reservedBy(charges: readonly QuotaCharge[], result: TakeResult): Held[] {
  const held: Held[] = [];
  result.at.forEach(({ slot, life }, i) => {
    const charge = charges[i] as QuotaCharge;
    if (charge.reserved !== undefined && charge.cost > 0)
      held.push({ key: charge.key, slot, life, amount: charge.cost });
  });
  return held;
}
