// A filter's own state on each exchange. A WeakMap keyed by exchanges would do the same, but each of its
// entries costs every minor GC while its exchange lives (V8 treats them as ephemerons), and a filter such as
// traces keeps one per exchange: a slot is an index into a small array the exchange carries.
import type { Exchange } from '../../exchange/exchange.js';

let slots = 0;

export class ExchangeSlot<T> {
  readonly #index = slots++;

  get(exchange: Exchange): T | undefined {
    // The one cast: this slot's index is written only by set() below, with a T.
    return exchange.filterState?.[this.#index] as T | undefined;
  }

  set(exchange: Exchange, value: T | undefined): void {
    exchange.filterState ??= [];
    exchange.filterState[this.#index] = value;
  }
}
