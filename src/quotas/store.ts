// What a quota store does, whichever keeps the counts (memory-store.ts in one process, redis-store.ts shared
// by every replica): take an exchange's charges atomically (answers' reservations among them), give back what a
// reservation did not spend, add an answer's bytes, read use for explain.
import type { QuotaCharge, QuotaKey } from './rules.js';

/** Where a store made a charge: the slot of its key's window, and which life of the key that slot belongs to. */
export interface ChargedAt {
  slot: number;
  /**
   * When the key was made, as its store counts (0 for the memory store): a key made again after it expired,
   * or after Redis restarted empty, is another life, and nothing given back for the old one reaches it.
   */
  life: number;
}

/** An amount charged to a key's slot (a reservation, a lease's units), to give back to that slot. */
export interface Held extends ChargedAt {
  key: QuotaKey;
  amount: number;
}

/** What a store answered for an exchange's charges. */
export interface TakeResult {
  /** Index in the charges of the first key without room, or -1 when every key had room. */
  refused: number;
  /**
   * Why the key was refused: its budget is used, or (the memory store) it would be a new key of a tenant that
   * holds its share of quotas.maxKeys.
   */
  refusedFor: 'budget' | 'keys';
  /** Each key's use: after the charge when it was made, as it was when the exchange was refused. */
  used: number[];
  /** For a refusal: whole seconds until the refused key has room again. */
  retryAfterSeconds: number;
  /** Where each charge was made, when they were (empty when nothing was charged). */
  at: ChargedAt[];
}

/** The store could not answer (unreachable, too slow, full): quotas.onStoreError decides. */
export class QuotaStoreError extends Error {
  constructor(
    message: string,
    /** Which failure: the store's bound on keys, a timeout, or the store unreachable. */
    readonly kind: 'full' | 'timeout' | 'unavailable',
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'QuotaStoreError';
  }
}

export interface QuotaStore {
  /** `memory` or `redis`: the metrics' and the log's name for it. */
  readonly kind: 'memory' | 'redis';
  /**
   * Checks every charge; when each has room, charges them all, as one step no other exchange (or replica)
   * interleaves with. `force` (observe mode) charges them even when one had no room, and still says which.
   */
  take(charges: readonly QuotaCharge[], force: boolean): TakeResult | Promise<TakeResult>;
  /** Adds `amount` to each key (the bytes of an answer delivered): no check. */
  add(keys: readonly QuotaKey[], amount: number): void | Promise<void>;
  /**
   * Gives back amounts charged before (a reservation an answer did not use), each to the slot it was charged
   * in, while that slot still counts and its key is the life it was charged to. Called once per amount.
   */
  release(held: readonly Held[]): void;
  /** Each key's use now (explain). */
  use(keys: readonly QuotaKey[]): Promise<number[]>;
  close(): Promise<void>;
}
