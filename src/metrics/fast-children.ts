// Children of prom-client families that cost a few additions per observation. prom-client's own children
// hash their label object on every call (and a histogram looks its bucket up by a number-named property);
// these keep the series' value object prom-client exports and add to it directly, a histogram's buckets in
// an array handed over when the registry is read. The exposition is prom-client's own, byte for byte
// (test/unit/metrics.test.ts compares it with prom-client's children fed the same values).
import type { Counter, Histogram } from 'prom-client';

/** prom-client's value object of one histogram series (lib/histogram.js). */
interface HistogramEntry {
  labels: object;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

/** prom-client's value object of one counter series (lib/counter.js). */
interface CounterEntry {
  labels: object;
  value: number;
}

/** What prom-client keeps per family: its series by a key made of the sorted label names and values. */
interface FamilyInternals<E> {
  hashMap: Record<string, E>;
  sortedLabelNames: string[];
}

/** prom-client's series key (lib/util.js fastHashObject). */
function seriesKey(sortedLabelNames: readonly string[], labels: Record<string, string>): string {
  let key = '';
  for (const name of sortedLabelNames) {
    const value = labels[name];
    if (value !== undefined) key += `${name}:${value},`;
  }
  return key;
}

export interface HistogramCell {
  observe(value: number): void;
}

export interface CounterCell {
  inc(value?: number): void;
}

/** Histogram series that owe their buckets to prom-client, per family: handed over in its collect hook. */
const owedBuckets = new WeakMap<object, FastHistogramCell[]>();

class FastHistogramCell implements HistogramCell {
  readonly #counts: Float64Array;
  #owed = false;

  constructor(
    private readonly entry: HistogramEntry,
    private readonly bounds: readonly number[],
    private readonly owing: FastHistogramCell[],
  ) {
    this.#counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) this.#counts[i]! += 1;
    // Sum and count in prom-client's own object, in order: the same float sum it would have added up.
    this.entry.sum += value;
    this.entry.count += 1;
    if (!this.#owed) {
      this.#owed = true;
      this.owing.push(this);
    }
  }

  handOver(): void {
    this.#owed = false;
    const counts = this.#counts;
    const buckets = this.entry.bucketValues;
    for (let i = 0; i < counts.length; i++) {
      if (counts[i] === 0) continue;
      buckets[this.bounds[i]!]! += counts[i]!;
      counts[i] = 0;
    }
  }
}

/** A histogram child for `labels` (every label named). Falls back to prom-client's child if its internals moved. */
export function histogramCell<T extends string>(
  family: Histogram<T>,
  labels: Record<T, string>,
): HistogramCell {
  const internals = family as unknown as FamilyInternals<HistogramEntry> & { upperBounds?: number[] };
  family.zero(labels as never);
  const entry = internals.hashMap?.[seriesKey(internals.sortedLabelNames ?? [], labels)];
  if (entry === undefined || entry.labels !== labels || internals.upperBounds === undefined) {
    return family.labels(labels as never);
  }
  let owing = owedBuckets.get(family);
  if (owing === undefined) {
    const list: FastHistogramCell[] = [];
    owing = list;
    owedBuckets.set(family, list);
    // prom-client calls a family's collect hook before it reads the family's series.
    const previous = (family as unknown as { collect?: () => unknown }).collect;
    (family as unknown as { collect: () => unknown }).collect = () => {
      for (const cell of list.splice(0)) cell.handOver();
      return previous?.call(family);
    };
  }
  return new FastHistogramCell(entry, internals.upperBounds, owing);
}

/** A counter child for `labels` (every label named). Falls back to prom-client's child if its internals moved. */
export function counterCell<T extends string>(family: Counter<T>, labels: Record<T, string>): CounterCell {
  const internals = family as unknown as FamilyInternals<CounterEntry>;
  family.inc(labels as never, 0);
  const entry = internals.hashMap?.[seriesKey(internals.sortedLabelNames ?? [], labels)];
  if (entry === undefined || entry.labels !== labels) return family.labels(labels as never);
  return {
    inc(value = 1) {
      if (!Number.isFinite(value) || value < 0) {
        family.inc(labels as never, value);
        return;
      }
      entry.value += value;
    },
  };
}
