// The memory store: counts kept in this process, exact within it (each take is one synchronous step). Keys
// expire with their window, and at most maxKeys are held: a new key past them is a store error (counted),
// after the keys that no longer count have been let go.
import type { QuotaCharge, QuotaKey } from './rules.js';
import { hasRoom } from './rules.js';
import { type QuotaStore, QuotaStoreError, type TakeResult } from './store.js';
import { oldestCountedSlot, retryAfterSeconds, type Slots, slotOf, useOf } from './window.js';

/** One key's slots, with their sum while no slot has aged out (read per exchange: no walk over the slots). */
class Counted {
  readonly slots: Slots = new Map();
  readonly windowMs: number;
  #used = 0;
  /** The oldest slot held (Infinity when none). */
  #oldest = Number.POSITIVE_INFINITY;

  constructor(windowMs: number) {
    this.windowMs = windowMs;
  }

  /** The use at `now`; the slots that no longer count are let go when one has aged out. */
  useAt(now: number): number {
    if (this.#oldest < oldestCountedSlot(now, this.windowMs)) {
      this.#used = useOf(this.slots, now, this.windowMs);
      this.#oldest = Number.POSITIVE_INFINITY;
      for (const slot of this.slots.keys()) if (slot < this.#oldest) this.#oldest = slot;
    }
    return this.#used;
  }

  add(amount: number, now: number): void {
    const slot = slotOf(now, this.windowMs);
    this.slots.set(slot, (this.slots.get(slot) ?? 0) + amount);
    this.#used += amount;
    if (slot < this.#oldest) this.#oldest = slot;
  }
}

export class MemoryQuotaStore implements QuotaStore {
  readonly kind = 'memory';
  readonly #counts = new Map<string, Counted>();
  readonly #maxKeys: number;
  readonly #now: () => number;

  /** `now`: the clock in ms (a test's own). */
  constructor(maxKeys: number, now: () => number = Date.now) {
    this.#maxKeys = maxKeys;
    this.#now = now;
  }

  /** How many keys are held now. */
  get size(): number {
    return this.#counts.size;
  }

  take(charges: readonly QuotaCharge[], force: boolean): TakeResult {
    const now = this.#now();
    const used: number[] = [];
    let refused = -1;
    let retry = 0;
    for (let index = 0; index < charges.length; index++) {
      const charge = charges[index]!;
      const counted = this.#counts.get(charge.key.id);
      const use = counted !== undefined ? counted.useAt(now) : 0;
      used.push(use);
      if (refused === -1 && !hasRoom(charge.key.measure, use, charge.limit, charge.cost)) {
        refused = index;
        const cost = charge.key.measure === 'requests' ? charge.cost : 1;
        retry = retryAfterSeconds(
          counted?.slots ?? new Map(),
          use,
          charge.limit,
          cost,
          now,
          charge.key.rule.windowMs,
        );
      }
    }
    if (refused === -1 || force) {
      let fresh = 0;
      for (const charge of charges) if (charge.cost > 0 && !this.#counts.has(charge.key.id)) fresh++;
      this.#makeRoom(fresh, now);
      for (let index = 0; index < charges.length; index++) {
        const charge = charges[index]!;
        if (charge.cost > 0) used[index] = (used[index] ?? 0) + this.#charge(charge.key, charge.cost, now);
      }
    }
    return { refused, used, retryAfterSeconds: retry };
  }

  add(keys: readonly QuotaKey[], amount: number): void {
    if (amount <= 0) return;
    const now = this.#now();
    let fresh = 0;
    for (const key of keys) if (!this.#counts.has(key.id)) fresh++;
    this.#makeRoom(fresh, now);
    for (const key of keys) this.#charge(key, amount, now);
  }

  async use(keys: readonly QuotaKey[]): Promise<number[]> {
    const now = this.#now();
    return keys.map((key) => {
      const counted = this.#counts.get(key.id);
      return counted !== undefined ? counted.useAt(now) : 0;
    });
  }

  async close(): Promise<void> {
    this.#counts.clear();
  }

  /** Adds `amount` to the key's current slot; returns `amount`. */
  #charge(key: QuotaKey, amount: number, now: number): number {
    let counted = this.#counts.get(key.id);
    if (counted === undefined) {
      counted = new Counted(key.rule.windowMs);
      this.#counts.set(key.id, counted);
    }
    counted.add(amount, now);
    return amount;
  }

  /** Throws before anything is charged when `fresh` keys more would go past maxKeys. */
  #makeRoom(fresh: number, now: number): void {
    if (fresh === 0 || this.#counts.size + fresh <= this.#maxKeys) return;
    this.#sweep(now);
    if (this.#counts.size + fresh > this.#maxKeys)
      throw new QuotaStoreError(
        `the memory quota store holds quotas.maxKeys (${this.#maxKeys}) keys`,
        'full',
      );
  }

  /** Lets go of every key whose charges no longer count. */
  #sweep(now: number): void {
    for (const [id, counted] of this.#counts) {
      counted.useAt(now);
      if (counted.slots.size === 0) this.#counts.delete(id);
    }
  }
}
