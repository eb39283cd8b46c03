// The memory store: counts kept in this process, exact within it (each take is one synchronous step). Keys
// expire with their window, and each tenant holds at most its share of quotas.maxKeys (keysPerTenant): a new
// key past it, after the tenant's keys that no longer count have been let go, refuses that tenant's exchange
// (a 429 of its own). No tenant can fill the store for another, so a key never goes uncounted for want of room.
import { hasRoom, type QuotaCharge, type QuotaKey, roomNeeded } from './rules.js';
import { type ChargedAt, type Held, type QuotaStore, QuotaStoreError, type TakeResult } from './store.js';
import { oldestCountedSlot, retryAfterSeconds, type Slots, slotFreedAt, slotOf, useOf } from './window.js';

/** Where a charge of nothing (or one observe mode could not make) was made: nowhere, nothing to give back. */
const NOT_CHARGED: ChargedAt = Object.freeze({ slot: Number.NaN, life: -1 });

/** One key's slots, with their sum while no slot has aged out (read per exchange: no walk over the slots). */
class Counted {
  readonly slots: Slots = new Map();
  readonly windowMs: number;
  /** Which key this is of those made under its id (ChargedAt.life). */
  readonly life: number;
  #used = 0;
  /** The oldest slot held (Infinity when none). */
  #oldest = Number.POSITIVE_INFINITY;
  /** The newest slot charged: the key is let go once it stops counting. */
  #newest = Number.NEGATIVE_INFINITY;

  constructor(windowMs: number, life: number) {
    this.windowMs = windowMs;
    this.life = life;
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

  /** Adds `amount` to the slot of `now`; returns that slot. */
  add(amount: number, now: number): number {
    const slot = slotOf(now, this.windowMs);
    this.slots.set(slot, (this.slots.get(slot) ?? 0) + amount);
    this.#used += amount;
    if (slot < this.#oldest) this.#oldest = slot;
    if (slot > this.#newest) this.#newest = slot;
    return slot;
  }

  /** Takes `amount` off `slot`, as far as the slot still holds it. */
  giveBack(slot: number, amount: number): void {
    const held = this.slots.get(slot);
    if (held === undefined) return;
    const taken = Math.min(held, amount);
    if (taken === held) this.slots.delete(slot);
    else this.slots.set(slot, held - taken);
    this.#used -= taken;
  }

  /** When none of its charges counts any more (it can be let go then). */
  get freedAt(): number {
    return slotFreedAt(this.#newest, this.windowMs);
  }
}

/** One tenant's keys, and the earliest any of them could be let go (no sweep before: none would go). */
interface TenantKeys {
  keys: Map<string, Counted>;
  nextFreedAt: number;
}

export class MemoryQuotaStore implements QuotaStore {
  readonly kind = 'memory';
  readonly #tenants = new Map<string, TenantKeys>();
  #keysPerTenant: number;
  /** Keys made so far: each new key's life. */
  #made = 0;
  readonly #now: () => number;

  /** `keysPerTenant`: each tenant's share of quotas.maxKeys. `now`: the clock in ms (a test's own). */
  constructor(keysPerTenant: number, now: () => number = Date.now) {
    this.#keysPerTenant = keysPerTenant;
    this.#now = now;
  }

  /** A reload changed the number of tenants: a tenant over its new share makes no key until it is under. */
  set keysPerTenant(keys: number) {
    this.#keysPerTenant = keys;
  }

  /** How many keys are held now, over every tenant. */
  get size(): number {
    let size = 0;
    for (const tenant of this.#tenants.values()) size += tenant.keys.size;
    return size;
  }

  take(charges: readonly QuotaCharge[], force: boolean): TakeResult {
    const now = this.#now();
    const used: number[] = [];
    let refused = -1;
    let retry = 0;
    for (let index = 0; index < charges.length; index++) {
      const charge = charges[index]!;
      const counted = this.#counted(charge.key);
      const use = counted !== undefined ? counted.useAt(now) : 0;
      used.push(use);
      const need = roomNeeded(charge);
      if (refused === -1 && !hasRoom(use, charge.limit, need)) {
        refused = index;
        const slots = counted?.slots ?? new Map();
        retry = retryAfterSeconds(slots, use, charge.limit, need, now, charge.key.rule.windowMs);
      }
    }
    if (refused !== -1 && !force)
      return { refused, refusedFor: 'budget', used, retryAfterSeconds: retry, at: [] };
    const full = this.#withoutRoom(charges, now);
    if (full !== undefined && !force)
      return { refused: full.index, refusedFor: 'keys', used, retryAfterSeconds: full.retry, at: [] };
    const at: ChargedAt[] = [];
    for (let index = 0; index < charges.length; index++) {
      const charge = charges[index]!;
      // Observe mode with the tenant's share held: the keys that exist are charged, no new one is made.
      const counted =
        charge.cost > 0 ? this.#counted(charge.key, full === undefined ? now : undefined) : undefined;
      if (counted === undefined) {
        at.push(NOT_CHARGED);
        continue;
      }
      at.push({ slot: counted.add(charge.cost, now), life: counted.life });
      used[index] = (used[index] ?? 0) + charge.cost;
    }
    if (full !== undefined)
      return { refused: full.index, refusedFor: 'keys', used, retryAfterSeconds: full.retry, at };
    return { refused, refusedFor: 'budget', used, retryAfterSeconds: retry, at };
  }

  add(keys: readonly QuotaKey[], amount: number): void {
    if (amount <= 0) return;
    const now = this.#now();
    const full = this.#withoutRoom(
      keys.map((key) => ({ key })),
      now,
    );
    if (full !== undefined)
      throw new QuotaStoreError(
        `tenant "${keys[full.index]?.tenant}" holds its share of quotas.maxKeys (${this.#keysPerTenant} keys): an answer's bytes were not counted`,
        'full',
      );
    for (const key of keys) this.#counted(key, now)?.add(amount, now);
  }

  release(held: readonly Held[]): void {
    for (const { key, slot, life, amount } of held) {
      const counted = this.#counted(key);
      if (counted !== undefined && counted.life === life) counted.giveBack(slot, amount);
    }
  }

  async use(keys: readonly QuotaKey[]): Promise<number[]> {
    const now = this.#now();
    return keys.map((key) => this.#counted(key)?.useAt(now) ?? 0);
  }

  async close(): Promise<void> {
    this.#tenants.clear();
  }

  /** The key's count; with `now`, made when there is none (the caller checked its tenant has room). */
  #counted(key: QuotaKey, now?: number): Counted | undefined {
    let tenant = this.#tenants.get(key.tenant);
    let counted = tenant?.keys.get(key.id);
    if (counted !== undefined || now === undefined) return counted;
    if (tenant === undefined) {
      tenant = { keys: new Map(), nextFreedAt: Number.POSITIVE_INFINITY };
      this.#tenants.set(key.tenant, tenant);
    }
    counted = new Counted(key.rule.windowMs, ++this.#made);
    tenant.keys.set(key.id, counted);
    // It could be let go one window after this slot at the soonest: a sweep before then may be worth it.
    tenant.nextFreedAt = Math.min(
      tenant.nextFreedAt,
      slotFreedAt(slotOf(now, key.rule.windowMs), key.rule.windowMs),
    );
    return counted;
  }

  /**
   * The first charge that would make a key past its tenant's share (after the tenant's keys that no longer
   * count are let go), with the seconds until one of them may; undefined when every new key has room.
   */
  #withoutRoom(
    charges: readonly { key: QuotaKey; cost?: number }[],
    now: number,
  ): { index: number; retry: number } | undefined {
    let fresh: Map<string, number> | undefined;
    for (let index = 0; index < charges.length; index++) {
      const { key, cost } = charges[index]!;
      if (cost === 0 || this.#counted(key) !== undefined) continue;
      fresh ??= new Map();
      const wanted = (fresh.get(key.tenant) ?? 0) + 1;
      fresh.set(key.tenant, wanted);
      const tenant = this.#tenants.get(key.tenant);
      const held = tenant?.keys.size ?? 0;
      if (held + wanted <= this.#keysPerTenant) continue;
      if (tenant !== undefined && now >= tenant.nextFreedAt) this.#sweep(tenant, now);
      if ((tenant?.keys.size ?? 0) + wanted <= this.#keysPerTenant) continue;
      const freedAt = tenant?.nextFreedAt ?? now;
      return { index, retry: Math.max(1, Math.ceil((freedAt - now) / 1000)) };
    }
    return undefined;
  }

  /** Lets go of every key of the tenant whose charges no longer count; notes when the next one may go. */
  #sweep(tenant: TenantKeys, now: number): void {
    let next = Number.POSITIVE_INFINITY;
    for (const [id, counted] of tenant.keys) {
      counted.useAt(now);
      if (counted.slots.size === 0) tenant.keys.delete(id);
      else if (counted.freedAt < next) next = counted.freedAt;
    }
    tenant.nextFreedAt = next;
  }
}
