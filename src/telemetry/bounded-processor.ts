// Finished spans to the exporter in batches, within a bound: the SDK's BatchSpanProcessor drops spans
// silently when its queue is full; this one counts every span it does not deliver (queue full, export
// failed, export past its timeout), and never holds more than maxQueueSize spans, nor more than
// maxQueueBytes of them, the batch in flight included. One export at a time: an exporter that is slow or
// down costs the edge its queue, never an exchange.
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';

/**
 * Why spans were not delivered (the `reason` label of mcp_edge_spans_dropped_total): this processor's four
 * (the queue's span count, its bytes, an export that failed or timed out), and the traces filter's bound of
 * request spans per exchange (telemetry.traces.maxRequestSpans).
 */
export const DROP_REASONS = [
  'queue_full',
  'queue_bytes',
  'export_failed',
  'export_timeout',
  'exchange_bound',
] as const;
export type DropReason = (typeof DROP_REASONS)[number];

export interface BoundedBatchOptions {
  maxQueueSize: number;
  /** What queued spans and the batch in flight may hold together, by spanBytes. */
  maxQueueBytes: number;
  maxExportBatchSize: number;
  scheduledDelayMs: number;
  exportTimeoutMs: number;
  /** Told how many spans were dropped and why. */
  dropped(count: number, reason: DropReason): void;
}

/** What a span is taken to hold beyond its strings: its object, ids, times, resource and scope references. */
const SPAN_OVERHEAD_BYTES = 512;

/**
 * The bytes a finished span is taken to hold: its name, attribute keys and values, events and links (two
 * bytes a character, V8's worst case), plus its fixed part. An estimate that grows with every string a span
 * keeps, so a span carrying long values counts as what it costs.
 */
export function spanBytes(span: ReadableSpan): number {
  let chars = span.name.length + attributeChars(span.attributes);
  for (const event of span.events) chars += event.name.length + attributeChars(event.attributes);
  for (const link of span.links) chars += attributeChars(link.attributes);
  return SPAN_OVERHEAD_BYTES + 2 * chars;
}

function attributeChars(attributes: ReadableSpan['attributes'] | undefined): number {
  if (attributes === undefined) return 0;
  let chars = 0;
  for (const key in attributes) {
    const value = attributes[key];
    chars += key.length;
    if (typeof value === 'string') chars += value.length;
    else if (Array.isArray(value)) {
      for (const item of value) chars += typeof item === 'string' ? item.length : 8;
    } else chars += 8;
  }
  return chars;
}

/** ExportResultCode.SUCCESS of @opentelemetry/core. */
const EXPORT_SUCCESS = 0;
/** TraceFlags.SAMPLED. */
const SAMPLED = 1;

export class BoundedBatchProcessor implements SpanProcessor {
  readonly #exporter: SpanExporter;
  readonly #options: BoundedBatchOptions;
  readonly #batchSize: number;
  #queue: ReadableSpan[] = [];
  /** spanBytes of each queued span, in the queue's order. */
  #queueSizes: number[] = [];
  /** spanBytes of the queue and the batch in flight. */
  #bytes = 0;
  #exporting = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Called when the queue is empty and nothing is in flight (a flush waiting for it). */
  #idle: (() => void)[] = [];

  constructor(exporter: SpanExporter, options: BoundedBatchOptions) {
    this.#exporter = exporter;
    this.#options = options;
    this.#batchSize = Math.min(options.maxExportBatchSize, options.maxQueueSize);
  }

  /** Spans waiting for the exporter (the batch in flight not included). */
  get queued(): number {
    return this.#queue.length;
  }

  /** What the queue and the batch in flight hold, by spanBytes. */
  get queuedBytes(): number {
    return this.#bytes;
  }

  onStart(_span: Span, _parentContext: Context): void {}

  onEnd(span: ReadableSpan): void {
    if (this.#closed || (span.spanContext().traceFlags & SAMPLED) === 0) return;
    if (this.#queue.length >= this.#options.maxQueueSize) {
      this.#options.dropped(1, 'queue_full');
      return;
    }
    const bytes = spanBytes(span);
    if (this.#bytes + bytes > this.#options.maxQueueBytes) {
      this.#options.dropped(1, 'queue_bytes');
      return;
    }
    this.#bytes += bytes;
    this.#queue.push(span);
    this.#queueSizes.push(bytes);
    if (this.#queue.length >= this.#batchSize) this.#exportNext();
    else this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#exporting) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#exportNext();
    }, this.#options.scheduledDelayMs);
    this.#timer.unref();
  }

  #exportNext(): void {
    if (this.#exporting) return;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#queue.length === 0) {
      this.#settleIdle();
      return;
    }
    const batch = this.#queue.splice(0, this.#batchSize);
    let batchBytes = 0;
    for (const bytes of this.#queueSizes.splice(0, batch.length)) batchBytes += bytes;
    this.#exporting = true;
    let settled = false;
    const done = (delivered: boolean, reason: DropReason) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      this.#bytes -= batchBytes;
      if (!delivered) this.#options.dropped(batch.length, reason);
      this.#exporting = false;
      // Full batches go at once, and everything while a flush waits; the rest waits for its delay.
      const now = this.#queue.length >= this.#batchSize || this.#idle.length > 0;
      if (this.#queue.length === 0) this.#settleIdle();
      else if (now) this.#exportNext();
      else this.#schedule();
    };
    const deadline = setTimeout(() => done(false, 'export_timeout'), this.#options.exportTimeoutMs);
    deadline.unref();
    try {
      this.#exporter.export(batch, (result) => done(result.code === EXPORT_SUCCESS, 'export_failed'));
    } catch {
      done(false, 'export_failed');
    }
  }

  #settleIdle(): void {
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }

  /** Sends what is queued now; resolves when the queue is empty and nothing is in flight. */
  forceFlush(): Promise<void> {
    if (this.#queue.length === 0 && !this.#exporting) return Promise.resolve();
    const idle = new Promise<void>((resolve) => this.#idle.push(resolve));
    if (!this.#exporting) this.#exportNext();
    return idle;
  }

  /**
   * Sends what is queued, for at most one export timeout in all (an exporter that is down must not hold
   * mcp-edge's shutdown); what is still queued then is counted as dropped.
   */
  async shutdown(): Promise<void> {
    this.#closed = true;
    let deadline: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      deadline = setTimeout(resolve, this.#options.exportTimeoutMs);
      deadline.unref();
    });
    await Promise.race([this.forceFlush(), timedOut]);
    clearTimeout(deadline);
    const left = this.#queue.length;
    for (const bytes of this.#queueSizes) this.#bytes -= bytes;
    this.#queue = [];
    this.#queueSizes = [];
    if (left > 0) this.#options.dropped(left, 'export_timeout');
    await this.#exporter.shutdown();
  }
}
