// What a quota store does, whichever keeps the counts (memory-store.ts in one process, redis-store.ts shared
// by every replica): take an exchange's charges atomically, add an answer's bytes, read use for explain.
import type { QuotaCharge, QuotaKey } from './rules.js';

/** What a store answered for an exchange's charges. */
export interface TakeResult {
  /** Index in the charges of the first key without room, or -1 when every key had room. */
  refused: number;
  /** Each key's use: after the charge when it was made, as it was when the exchange was refused. */
  used: number[];
  /** For a refusal: whole seconds until the refused key has room again. */
  retryAfterSeconds: number;
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
  /** Each key's use now (explain). */
  use(keys: readonly QuotaKey[]): Promise<number[]>;
  close(): Promise<void>;
}
