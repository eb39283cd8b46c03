// Bounded label values for names that come from the wire (methods, tools). A hostile or buggy upstream can
// send any number of distinct names; each one would be a new time series in every family it appears in.
import { DIGEST_MARK } from '../core/client-names.js';
import { isPrintable } from '../core/printable.js';

/** The one value every name past the cap (or unfit to be a label) folds into. */
export const OTHER_LABEL = '__other__';

/** Longer names are not names an operator reads on a dashboard; they fold into OTHER_LABEL. */
export const MAX_LABEL_VALUE_LENGTH = 128;

/**
 * Unprintable characters are never admitted (they also keep the child caches' `\0`-joined keys
 * unambiguous), nor a name the edge had to bound (core/client-names.ts): no name an operator reads.
 */
function fitsAsLabel(value: string): boolean {
  return value.length <= MAX_LABEL_VALUE_LENGTH && isPrintable(value) && !value.includes(DIGEST_MARK);
}

/**
 * Keeps the first `cap` distinct values seen, any reserved value (names the config itself mentions, so a
 * configured tool keeps its own label however many names came first), and up to `cap` listed values (names
 * the upstream itself lists, e.g. in tools/list: made-up names from clients cannot take their place).
 * Everything else becomes `__other__`; `undefined` and the empty string become `""` (Prometheus treats an
 * empty label as absent).
 */
export class LabelGuard {
  private readonly admitted = new Set<string>();
  private readonly listed = new Set<string>();
  private reserved: ReadonlySet<string> = new Set();

  /**
   * `only`: the operator's own list (metrics.toolLabels): exactly these values keep their label, everything
   * else is `__other__`, whatever the config reserves or the upstream lists.
   */
  constructor(
    readonly cap: number,
    private readonly only?: ReadonlySet<string>,
  ) {
    if (!Number.isInteger(cap) || cap < 0)
      throw new RangeError(`label cap must be a non-negative integer, got ${cap}`);
  }

  /** The label value to record for `value`. Cheap for values already seen: two set lookups. */
  bound(value: string | undefined): string {
    if (value === undefined || value === '') return '';
    if (this.only !== undefined) return this.only.has(value) ? value : OTHER_LABEL;
    if (this.admitted.has(value) || this.reserved.has(value) || this.listed.has(value)) return value;
    if (this.admitted.size >= this.cap || !fitsAsLabel(value)) return OTHER_LABEL;
    this.admitted.add(value);
    return value;
  }

  /** The label `value` already has, or `__other__`: never takes a slot (for names that are not wire traffic). */
  peek(value: string): string {
    if (this.only !== undefined) return this.only.has(value) ? value : OTHER_LABEL;
    return this.admitted.has(value) || this.reserved.has(value) || this.listed.has(value)
      ? value
      : OTHER_LABEL;
  }

  /** Replaces the reserved names (on every config load). They do not count against the cap. */
  reserve(values: Iterable<string>): void {
    const reserved = new Set<string>();
    for (const value of values) if (value !== '' && fitsAsLabel(value)) reserved.add(value);
    this.reserved = reserved;
  }

  /**
   * Names the upstream itself listed: they keep their label for the life of the process, beside the wire
   * slots. At most `cap` of them (a hostile upstream may list any number); a name already admitted is not
   * listed again.
   */
  list(values: Iterable<string>): void {
    for (const value of values) {
      if (this.listed.size >= this.cap) return;
      if (value !== '' && fitsAsLabel(value) && !this.admitted.has(value) && !this.reserved.has(value))
        this.listed.add(value);
    }
  }

  /** How many wire values hold a slot of the cap. */
  get admittedCount(): number {
    return this.admitted.size;
  }
}

/** metrics.toolLabels: `all` (the bounded guard above), `none`, or the only tool names that keep their label. */
export type ToolLabels = 'all' | 'none' | readonly string[];

export function toolLabelGuard(cap: number, labels: ToolLabels): LabelGuard {
  if (labels === 'all') return new LabelGuard(cap);
  return new LabelGuard(cap, new Set(labels === 'none' ? [] : labels));
}

const HTTP_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'POST',
  'DELETE',
  'HEAD',
  'OPTIONS',
  'PUT',
  'PATCH',
]);

/** HTTP methods are few; anything unusual is `OTHER`. */
export function boundHttpMethod(method: string): string {
  return HTTP_METHODS.has(method) ? method : 'OTHER';
}

/** An HTTP status as a label: three digits, or `other` (a status is a number from the wire). */
export function boundStatus(status: number): string {
  return Number.isInteger(status) && status >= 100 && status <= 999 ? String(status) : 'other';
}
