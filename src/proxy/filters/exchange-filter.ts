// The exchange filter chain, in the way of Envoy's HTTP filters: each concern that follows exchanges (metrics,
// the log line, and next traces and quotas) is one filter with the hooks it needs, run in order. A filter may
// refuse an exchange at admission with an answer of the edge's own (sent by respondLocally); otherwise filters
// watch: the exchange's messages (an InspectionObserver), its upstream's answer, its stream, its end.
import type { Logger } from 'pino';
import type { EdgeHttpError } from '../../core/errors.js';
import type { Outcome } from '../../core/outcome.js';
import type { InspectionObserver } from '../../inspect/observer.js';
import type { UndeliveredReason } from '../../upstream/upstream.js';
import type { Exchange } from '../exchange.js';

/** What admission learned beside the tenant. */
export interface AdmissionFacts {
  /** The request named a tenant in a header from a peer not trusted to (the header was ignored). */
  untrustedTenantHeader: boolean;
  /** An earlier stage (method, Host, Origin, credentials) refused the exchange already. */
  refused: boolean;
}

/** How an exchange ended, computed once when its response closed. */
export interface ExchangeEnding {
  outcome: Outcome;
  /** The status the client got (499 when it left before any). */
  status: number;
  httpMethod: string;
  path: string;
  /** The client received the whole answer. */
  complete: boolean;
  /** Everything this exchange wrote to the client's connection: status line, headers, body, framing. */
  responseBytes: number;
  durationMs: number;
  /** The request's logger (it carries the request id). */
  log: Logger;
  /** The client connection's remote address. */
  clientAddress: string | undefined;
}

export interface ExchangeFilter {
  /** Named in logs when the filter fails. */
  readonly name: string;
  /**
   * Every exchange at admission, refused already or not (facts.refused): an answer refuses one that was not (a
   * quota); undefined lets it on.
   */
  admit?(exchange: Exchange, facts: AdmissionFacts): EdgeHttpError | undefined;
  /** What watches this exchange's messages, in both directions; built when the exchange starts. */
  observe?(tenant: string): readonly InspectionObserver[];
  /** The upstream's answer began (its status), `seconds` after the request was sent. */
  upstreamAnswered?(exchange: Exchange, status: number, seconds: number): void;
  /** The exchange's SSE stream opened: returns what runs when it closes. */
  streamOpened?(exchange: Exchange): (() => void) | undefined;
  /** One SSE event of the exchange's stream reached the relay. */
  streamEvent?(exchange: Exchange): void;
  /** A message from the upstream reached no client (not one exchange's: a shared child's, say). */
  undelivered?(tenant: string, reason: UndeliveredReason): void;
  /** The exchange ended, however it ended: called once, when its response closed. */
  end?(exchange: Exchange, ending: ExchangeEnding): void;
}

/** The filters of an edge, in order, with each hook combined once (no list walk for a filter without it). */
export class FilterChain {
  readonly #filters: readonly ExchangeFilter[];
  /** The per-event hook, or undefined when no filter counts events (the relay then skips the call). */
  readonly streamEvent: ((exchange: Exchange) => void) | undefined;

  constructor(filters: readonly ExchangeFilter[]) {
    this.#filters = filters;
    const hooks = filters.flatMap((f) => (f.streamEvent !== undefined ? [f.streamEvent.bind(f)] : []));
    this.streamEvent =
      hooks.length <= 1
        ? hooks[0]
        : (exchange) => {
            for (const hook of hooks) hook(exchange);
          };
  }

  /**
   * The first filter's refusal of an exchange not refused already, or undefined. The filters after a refusing
   * one are not asked; an exchange refused already is shown to all of them. Every filter's `end` sees every
   * exchange, whatever admission decided.
   */
  admit(exchange: Exchange, facts: AdmissionFacts): EdgeHttpError | undefined {
    let refusal: EdgeHttpError | undefined;
    for (const filter of this.#filters) {
      const answer = filter.admit?.(exchange, facts);
      if (answer !== undefined && !facts.refused) {
        refusal = answer;
        break;
      }
    }
    return refusal;
  }

  /** The observers the filters put on an exchange of this tenant. */
  observers(tenant: string): InspectionObserver[] {
    const observers: InspectionObserver[] = [];
    for (const filter of this.#filters) {
      const more = filter.observe?.(tenant);
      if (more !== undefined) observers.push(...more);
    }
    return observers;
  }

  upstreamAnswered(exchange: Exchange, status: number, seconds: number): void {
    for (const filter of this.#filters) filter.upstreamAnswered?.(exchange, status, seconds);
  }

  /** Tells the filters a stream opened; the returned function tells them it closed. */
  streamOpened(exchange: Exchange): () => void {
    const closers: (() => void)[] = [];
    for (const filter of this.#filters) {
      const closed = filter.streamOpened?.(exchange);
      if (closed !== undefined) closers.push(closed);
    }
    return () => {
      for (const closed of closers) closed();
    };
  }

  undelivered(tenant: string, reason: UndeliveredReason): void {
    for (const filter of this.#filters) filter.undelivered?.(tenant, reason);
  }

  end(exchange: Exchange, ending: ExchangeEnding): void {
    for (const filter of this.#filters) filter.end?.(exchange, ending);
  }
}
