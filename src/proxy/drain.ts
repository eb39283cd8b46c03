// What shutdown drained: the exchanges in flight when it began (streams among them) and how each ended,
// for the final log line. Requests to the MCP endpoint are followed from their arrival to the close of their
// response (keyed by any object of theirs); once
// shutdown begins, those still open are the ones it waits for.
import type { Outcome } from '../core/outcome.js';

export interface DrainReport {
  /** Exchanges whose response was still open when shutdown began. */
  inFlight: number;
  /** Of them, SSE streams (a GET's standalone stream, or a call's answer stream). */
  streams: number;
  /** How those exchanges ended, by outcome; `unfinished` for one still open when the edge closed. */
  ended: Partial<Record<Outcome | 'unfinished', number>>;
  durationMs: number;
}

export class Drain {
  readonly #open = new Set<object>();
  #draining: Set<object> | undefined;
  readonly #ended: Partial<Record<Outcome | 'unfinished', number>> = {};
  #streams = 0;
  #startedAt = 0;

  /** A request to the MCP endpoint arrived: its response is open. */
  opened(request: object): void {
    this.#open.add(request);
  }

  /** Its response closed, with this outcome. */
  closed(request: object, outcome: Outcome): void {
    this.#open.delete(request);
    if (this.#draining?.delete(request) === true) this.#ended[outcome] = (this.#ended[outcome] ?? 0) + 1;
  }

  /** Shutdown begins with `streams` SSE streams open. */
  begin(streams: number): void {
    this.#draining = new Set(this.#open);
    this.#streams = streams;
    this.#startedAt = Date.now();
  }

  /** The edge has closed: what was in flight and how it ended. */
  report(): DrainReport {
    const draining = this.#draining ?? new Set();
    const ended = { ...this.#ended };
    if (draining.size > 0) ended.unfinished = draining.size;
    const inFlight = Object.values(ended).reduce((sum, n) => sum + n, 0);
    return { inFlight, streams: this.#streams, ended, durationMs: Date.now() - this.#startedAt };
  }
}
