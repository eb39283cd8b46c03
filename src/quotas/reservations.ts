// What the answers of admitted requests hold of their responseBytes budgets. A request reserves its answer's
// ceiling (at most the budget) when it is admitted (chargesOf, rules.ts); the answer, when it comes, gives the
// reservation back and is charged its real bytes instead. A reservation is given back exactly once: by its answer,
// or when its exchange ends without one (the answer replaced, dropped, never sent, the client gone), or, when its
// store closes or is replaced, by the store's ledger, after which nothing of it is given back again.

import { idKey } from '../core/client-names.js';
import type { JsonRpcId } from '../core/types.js';
import type { QuotaCharge, QuotaKey } from './rules.js';
import type { ChargedAt, Held, QuotaStore } from './store.js';

/** Amounts are summed per key, slot and life of the key. */
function heldId(held: Held): string {
  return `${held.key.id}@${held.slot}@${held.life}`;
}

/** What a store holds reserved for answers not delivered yet, summed: all of it goes back if the store closes. */
export class ReservationLedger {
  readonly store: QuotaStore;
  readonly #open = new Map<string, Held>();
  #closed = false;

  constructor(store: QuotaStore) {
    this.store = store;
  }

  /** The reserved amounts not given back yet (keys, slots and lives: bounded by the store's own keys). */
  get size(): number {
    return this.#open.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * The reservations a take made for an exchange, per request: `ids[i]` is the id of the request message at
   * index i. Undefined when it reserved nothing (or the ledger closed: nothing is reserved any more).
   */
  open(
    charges: readonly QuotaCharge[],
    at: readonly ChargedAt[],
    ids: readonly (JsonRpcId | undefined)[],
  ): ExchangeReservations | undefined {
    if (this.#closed) return undefined;
    const byId = new Map<string, Held[][]>();
    const byMessage = new Map<number, Held[]>();
    charges.forEach((charge, i) => {
      const where = at[i];
      // A key observe mode could not make holds nothing.
      if (charge.reserved === undefined || where === undefined || where.life < 0) return;
      for (const { message, amount } of charge.reserved) {
        const held: Held = { key: charge.key, slot: where.slot, life: where.life, amount };
        this.#hold(held);
        const parts = byMessage.get(message);
        if (parts === undefined) byMessage.set(message, [held]);
        else parts.push(held);
      }
    });
    if (byMessage.size === 0) return undefined;
    for (const [message, parts] of byMessage) {
      const id = ids[message];
      if (id === undefined) continue;
      const key = idKey(id);
      // Ids in one batch may repeat: their answers settle them in order.
      const queued = byId.get(key);
      if (queued === undefined) byId.set(key, [parts]);
      else queued.push(parts);
    }
    return new ExchangeReservations(this, byId);
  }

  /** Takes `held` off the ledger and gives it back to the store, unless the ledger gave everything back already. */
  release(held: readonly Held[]): void {
    if (this.#closed || held.length === 0) return;
    for (const given of held) {
      const id = heldId(given);
      const open = this.#open.get(id);
      if (open === undefined) continue;
      open.amount -= given.amount;
      if (open.amount <= 0) this.#open.delete(id);
    }
    this.#releaseToStore(held);
  }

  /** Gives back everything still reserved (the store closes, or a reload replaces it); nothing more after. */
  closeAll(): void {
    if (this.#closed) return;
    this.#closed = true;
    const open = [...this.#open.values()];
    this.#open.clear();
    this.#releaseToStore(open);
  }

  #hold(held: Held): void {
    const id = heldId(held);
    const open = this.#open.get(id);
    if (open !== undefined) open.amount += held.amount;
    else this.#open.set(id, { ...held });
  }

  #releaseToStore(held: readonly Held[]): void {
    if (held.length > 0) this.store.release(held);
  }
}

/** What one exchange's requests reserved, per request id, until each answer or the exchange's end. */
export class ExchangeReservations {
  readonly #ledger: ReservationLedger;
  readonly #byId: Map<string, Held[][]>;

  constructor(ledger: ReservationLedger, byId: Map<string, Held[][]>) {
    this.#ledger = ledger;
    this.#byId = byId;
  }

  /**
   * The answer to `id` came: its reservation goes back. Returns the store and keys its real bytes are charged
   * to, or undefined when this exchange holds no reservation for it (the answer is charged as any other).
   */
  settle(id: JsonRpcId | undefined): { store: QuotaStore; keys: QuotaKey[] } | undefined {
    if (id === undefined || this.#ledger.closed) return undefined;
    const key = idKey(id);
    const queued = this.#byId.get(key);
    const parts = queued?.shift();
    if (parts === undefined) return undefined;
    if (queued?.length === 0) this.#byId.delete(key);
    this.#ledger.release(parts);
    return { store: this.#ledger.store, keys: parts.map((held) => held.key) };
  }

  /** The exchange ended: what its answers did not settle goes back. */
  releaseAll(): void {
    const rest = [...this.#byId.values()].flat(2);
    this.#byId.clear();
    this.#ledger.release(rest);
  }
}
