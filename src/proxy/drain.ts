// What shutdown drained: the exchanges in flight when it began (streams among them) and how each ended,
// for the final log line. Requests to the MCP endpoint are followed from their arrival to the close of their
// response (by the ticket `opened` gives); once shutdown begins, those still open are the ones it waits for.
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

/** What `opened` hands back, for `closed`: the request's place in the order of arrival. */
export type DrainTicket = number;

/**
 * Counts, not a collection of the requests: a long-lived Set holding each request while it is open kept every
 * exchange's objects alive through the minor GCs (each one was promoted to the old generation).
 */
export class Drain {
  /** The ticket of the next request to arrive. */
  #next = 0;
  #open = 0;
  /** Tickets below this were open or closed before shutdown began; undefined until it begins. */
  #drainBelow: number | undefined;
  /** Of the requests open when shutdown began, how many have not closed yet. */
  #draining = 0;
  readonly #ended: Partial<Record<Outcome | 'unfinished', number>> = {};
  #streams = 0;
  #startedAt = 0;

  /** A request to the MCP endpoint arrived: its response is open. */
  opened(): DrainTicket {
    this.#open += 1;
    return this.#next++;
  }

  /** Its response closed, with this outcome (once per ticket). */
  closed(ticket: DrainTicket, outcome: Outcome): void {
    this.#open -= 1;
    if (this.#drainBelow === undefined || ticket >= this.#drainBelow) return;
    this.#draining -= 1;
    this.#ended[outcome] = (this.#ended[outcome] ?? 0) + 1;
  }

  /** Shutdown begins with `streams` SSE streams open. */
  begin(streams: number): void {
    this.#drainBelow = this.#next;
    this.#draining = this.#open;
    this.#streams = streams;
    this.#startedAt = Date.now();
  }

  /** The edge has closed: what was in flight and how it ended. */
  report(): DrainReport {
    const ended = { ...this.#ended };
    if (this.#draining > 0) ended.unfinished = this.#draining;
    const inFlight = Object.values(ended).reduce((sum, n) => sum + n, 0);
    return { inFlight, streams: this.#streams, ended, durationMs: Date.now() - this.#startedAt };
  }
}
