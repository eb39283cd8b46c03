// Budget a Redis store holds for this edge: when Redis admits a take with room to spare, it charges a little
// more to the same slot and this edge spends it locally, so most exchanges need no call at all. Units charged
// in a slot and spent before that slot ends count exactly as charges made at the moment of spending (the window
// counts by slot, window.ts): no span of one window admits more than the limit. A lease ends at its slot's end,
// or storeTimeout after it was asked for if sooner (a store that fails is felt as soon as by an exchange
// waiting for it), and what is unspent then goes back to its slot. The price: another replica may be refused
// while this one holds unspent units, for at most that long; a lease is at most 1/LEASE_SHARE of what the key
// had left, so near the limit every take is exact again.
import type { QuotaCharge, QuotaKey } from './rules.js';
import type { ChargedAt, Held } from './store.js';

/** A lease is at most this fraction of the budget a key had left after the take that asked for it. */
export const LEASE_SHARE = 16;
/** The first lease a key asks for, before this edge has seen what it spends: requests, and bytes. */
const FIRST_WANT_REQUESTS = 8;
const FIRST_WANT_BYTES = 64 * 1024;
/** How long a key's record of use outlives its last lease. */
const RECORD_MS = 1000;

/** Units to give back to the slot (and the key's life) they were charged in. */
export type LeaseReturn = Held;

/** What Redis granted one key with a take. */
export interface LeaseGrant {
  key: QuotaKey;
  limit: number;
  granted: number;
  /** The store's count after the take, granted units included. */
  counted: number;
  slot: number;
  /** The key's life the units were charged to (ChargedAt.life). */
  life: number;
  /** Local monotonic ms when the lease stops being spent. */
  endsAt: number;
}

interface Lease {
  key: QuotaKey;
  limit: number;
  /** Units left to spend. */
  units: number;
  slot: number;
  life: number;
  endsAt: number;
  /** The store's count when last heard, this lease's whole grant included. */
  counted: number;
  /** Spent of this lease so far, and of the lease before it: what the next one asks for. */
  spent: number;
  spentBefore: number;
}

export class Leases {
  readonly #leases = new Map<string, Lease>();

  /** How many keys hold a lease (or its record of use, until it has gone one lease without use). */
  get size(): number {
    return this.#leases.size;
  }

  /**
   * Spends every charge from its key's lease when each fits, and returns each key's use as if charged now and
   * where its units were charged; undefined (nothing spent) when one does not fit: the take goes to Redis.
   */
  serve(charges: readonly QuotaCharge[], now: number): { used: number[]; at: ChargedAt[] } | undefined {
    for (const { key, limit, cost } of charges) {
      const lease = this.#leases.get(key.id);
      if (lease === undefined || lease.endsAt <= now || lease.limit !== limit) return undefined;
      // Units are budget charged already: a charge spends them only when they cover it whole.
      if (lease.units < Math.max(cost, 1)) return undefined;
    }
    const used: number[] = [];
    const at: ChargedAt[] = [];
    for (const { key, cost } of charges) {
      const lease = this.#leases.get(key.id) as Lease;
      lease.units -= cost;
      lease.spent += cost;
      used.push(lease.counted - lease.units);
      at.push({ slot: lease.slot, life: lease.life });
    }
    return { used, at };
  }

  /** The units this edge holds of `key`: leased, and neither spent nor given back. */
  held(key: QuotaKey): number {
    return this.#leases.get(key.id)?.units ?? 0;
  }

  /**
   * How many units a take of `charge` asks Redis to lease beside its cost: twice what the last lease spent, and
   * at least twice this charge (an answer's reservation is large: a lease smaller than one would never serve).
   */
  want(charge: QuotaCharge): number {
    const lease = this.#leases.get(charge.key.id);
    const first = Math.max(
      charge.key.measure === 'requests' ? FIRST_WANT_REQUESTS : FIRST_WANT_BYTES,
      2 * charge.cost,
    );
    if (lease === undefined) return first;
    return Math.max(first, 2 * Math.max(lease.spent, lease.spentBefore));
  }

  /** The units held for `charges`' keys, taken back before their take goes to Redis (which sees them free). */
  release(charges: readonly QuotaCharge[]): LeaseReturn[] {
    const returns: LeaseReturn[] = [];
    for (const { key } of charges) {
      const lease = this.#leases.get(key.id);
      if (lease === undefined || lease.units <= 0) continue;
      returns.push({ key, slot: lease.slot, life: lease.life, amount: lease.units });
      lease.units = 0;
    }
    return returns;
  }

  /** Records a grant; a lease of an earlier slot still holding units gives them back. */
  grant(grant: LeaseGrant): LeaseReturn | undefined {
    const lease = this.#leases.get(grant.key.id);
    if (
      lease !== undefined &&
      lease.slot === grant.slot &&
      lease.life === grant.life &&
      lease.limit === grant.limit
    ) {
      lease.units += grant.granted;
      lease.counted = grant.counted;
      // Both end within the slot their units were charged in.
      lease.endsAt = Math.max(lease.endsAt, grant.endsAt);
      return undefined;
    }
    const given =
      lease !== undefined && lease.units > 0
        ? { key: lease.key, slot: lease.slot, life: lease.life, amount: lease.units }
        : undefined;
    this.#leases.set(grant.key.id, {
      key: grant.key,
      limit: grant.limit,
      units: grant.granted,
      slot: grant.slot,
      life: grant.life,
      endsAt: grant.endsAt,
      counted: grant.counted,
      spent: 0,
      spentBefore: lease === undefined ? 0 : Math.max(lease.spent, lease.spentBefore),
    });
    return given;
  }

  /**
   * Draws an answer's bytes from its key's lease; returns what the lease did not cover (charged to Redis).
   */
  draw(key: QuotaKey, amount: number, now: number): number {
    const lease = this.#leases.get(key.id);
    if (lease === undefined || lease.endsAt <= now || lease.units <= 0) return amount;
    const drawn = Math.min(lease.units, amount);
    lease.units -= drawn;
    lease.spent += drawn;
    return amount - drawn;
  }

  /** Ends the leases past their end: their unspent units go back; a key unused for a whole lease is forgotten. */
  expire(now: number): LeaseReturn[] {
    const returns: LeaseReturn[] = [];
    for (const [id, lease] of this.#leases) {
      if (lease.endsAt > now) continue;
      if (lease.units > 0)
        returns.push({ key: lease.key, slot: lease.slot, life: lease.life, amount: lease.units });
      if (lease.spent === 0) {
        this.#leases.delete(id);
        continue;
      }
      // Ended: kept only as a record of what it spent (what the next lease asks for), forgotten unless used.
      lease.spentBefore = lease.spent;
      lease.spent = 0;
      lease.units = 0;
      lease.slot = Number.NaN;
      lease.endsAt = now + RECORD_MS;
    }
    return returns;
  }

  /** When the next lease (or record of one) ends, if one is held. */
  nextEnd(): number | undefined {
    let next: number | undefined;
    for (const lease of this.#leases.values())
      if (next === undefined || lease.endsAt < next) next = lease.endsAt;
    return next;
  }

  /** Every unspent unit, taken back (the store closes). */
  releaseAll(): LeaseReturn[] {
    const returns: LeaseReturn[] = [];
    for (const lease of this.#leases.values())
      if (lease.units > 0)
        returns.push({ key: lease.key, slot: lease.slot, life: lease.life, amount: lease.units });
    this.#leases.clear();
    return returns;
  }
}
