// The exchange filter chain, in the way of Envoy's HTTP filters: each concern that follows or bounds exchanges
// (ceilings, the pagination bound, metrics, the log line, and next traces and quotas) is one filter with the
// hooks it needs, run in order. A filter may refuse an exchange at admission or once its request is read, with
// an answer of the edge's own (sent by respondLocally); its checks judge each complete message (the edge turns
// the ceiling a check names into forward, replace or drop); otherwise filters watch. A filter that throws is
// logged under its name and the exchange goes on: only admit's and request's returned answers refuse.
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { EdgeConfig } from '../../config/schema.js';
import type { EdgeHttpError } from '../../core/errors.js';
import type { Outcome } from '../../core/outcome.js';
import type { Exchange, ExchangeFilters } from '../../exchange/exchange.js';
import type { AnswerCheck, JudgedMessage, MessageCheck } from '../../inspect/message-verdict.js';
import type { InspectionObserver } from '../../inspect/observer.js';
import type { RequestMessage } from '../../inspect/request-body.js';
import type { SessionState } from '../../inspect/session-store.js';
import type { UndeliveredReason } from '../../upstream/upstream.js';
import { GuardedObserver, type ObserverFailed } from './guarded-observer.js';

/** What admission learned beside the tenant. */
export interface AdmissionFacts {
  /** The request named a tenant in a header from a peer not trusted to (the header was ignored). */
  untrustedTenantHeader: boolean;
  /** An earlier stage (method, Host, Origin, credentials) refused the exchange already. */
  refused: boolean;
  /** The client's request headers as received (a traceparent); credentials among them. */
  headers: IncomingHttpHeaders;
}

/** An admitted exchange's request, read and judged, before anything of it goes upstream. */
export interface ExchangeRequest {
  /** The client's request headers as received (a traceparent, MCP-Protocol-Version); credentials among them. */
  readonly headers: IncomingHttpHeaders;
  /** Its JSON-RPC messages in order (none for a GET or DELETE). */
  readonly messages: readonly RequestMessage[];
  /** The body was a JSON array (a batch), admitted or refused whole. */
  readonly batch: boolean;
  /** The body's bytes as the client sent them. */
  readonly bytes: number;
  /** The exchange's session, when the upstream has accepted it. */
  readonly session: SessionState | undefined;
  /** Sets a header on the request as it goes upstream (a traceparent); the edge's own identity headers win. */
  setUpstreamHeader(name: string, value: string): void;
  /**
   * Puts an entry in each request's and notification's `params._meta` toward an upstream whose messages carry
   * no headers (a stdio child: the MCP specification's place for trace context); an HTTP upstream gets headers.
   */
  setUpstreamMeta(name: string, value: string): void;
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

/** A refusal, or undefined to let the exchange on; a promise when the filter must wait (a shared store). */
export type RequestDecision = EdgeHttpError | undefined | Promise<EdgeHttpError | undefined>;

export interface ExchangeFilter {
  /** Named in the log when the filter throws. */
  readonly name: string;
  /**
   * Every exchange at admission, refused already or not (facts.refused): an answer refuses one that was not;
   * undefined lets it on.
   */
  admit?(exchange: Exchange, facts: AdmissionFacts): EdgeHttpError | undefined;
  /**
   * What watches this exchange's messages, in both directions; built when the exchange starts (before admit).
   * An observer may be the tenant's, shared by its exchanges, or this exchange's own.
   */
  observe?(tenant: string, exchange: Exchange): readonly InspectionObserver[];
  /**
   * Checks of each complete message, in either direction: the ceiling it crossed, or nothing. The first that
   * trips decides; the edge replaces an answer, drops a request or notification (with a notice), or, in
   * observe mode, forwards it and counts. A check that throws fails its exchange (never passes a message
   * unchecked).
   */
  readonly checks?: readonly MessageCheck[];
  /**
   * Checks of each result from the upstream that the checks above let on, read whole (its measurement, its
   * value on demand): the error that replaces it, or nothing (host budgets).
   */
  readonly answerChecks?: readonly AnswerCheck[];
  /**
   * The exchange's request, read and judged (every message within its ceilings), before it goes upstream: an
   * answer refuses the whole exchange (a quota's 429 with Retry-After, the pagination bound), with the
   * request's id in it. Called for every admitted exchange (no messages for a GET or DELETE).
   */
  request?(exchange: Exchange, request: ExchangeRequest): RequestDecision;
  /** The upstream's answer began (its status), `seconds` after the request was sent. */
  upstreamAnswered?(exchange: Exchange, status: number, seconds: number): void;
  /**
   * Each message towards the client, once the edge judged it: what became of it (forwarded, replaced, dropped,
   * observed over its ceiling), its bytes and what the client got in its place, and the request it answers.
   */
  responseMessage?(exchange: Exchange, message: JudgedMessage): void;
  /** The exchange's SSE stream opened: returns what runs when it closes. */
  streamOpened?(exchange: Exchange): (() => void) | undefined;
  /** One SSE event of the exchange's stream reached the relay. */
  streamEvent?(exchange: Exchange): void;
  /** A message from the upstream reached no client (not one exchange's: a shared child's, say). */
  undelivered?(tenant: string, reason: UndeliveredReason): void;
  /** The exchange ended, however it ended: called once, when its response closed. */
  end?(exchange: Exchange, ending: ExchangeEnding): void;
  /**
   * The config was reloaded: a filter with state (a quota's counters, an exporter) takes its new section
   * here; exchanges in flight keep what they started with (Exchange.runtime).
   */
  reload?(config: EdgeConfig): void;
  /** The edge is closing: a filter that sends somewhere (an exporter) sends what it holds and stops; one with
   * connections of its own (a quota store) closes them. */
  close?(): void | Promise<void>;
}

type Hook = Exclude<keyof ExchangeFilter, 'name' | 'checks' | 'answerChecks' | 'close'>;

/** The filters of an edge, in order. */
export class FilterChain implements ExchangeFilters {
  readonly #filters: readonly ExchangeFilter[];
  readonly #log: Logger;
  /** Per filter, in order: what logs a throw of its observers under its name. */
  readonly #observerFailed: readonly ObserverFailed[];
  /** Every filter's checks, in filter order. */
  readonly checks: readonly MessageCheck[];
  readonly answerChecks: readonly AnswerCheck[];
  /** The per-event hook, or undefined when no filter counts events (the relay then skips the call). */
  readonly streamEvent: ((exchange: Exchange) => void) | undefined;
  /** The per-message hook, or undefined when no filter watches messages towards the client. */
  readonly responseMessage: ((exchange: Exchange, message: JudgedMessage) => void) | undefined;

  constructor(filters: readonly ExchangeFilter[], log: Logger) {
    this.#filters = filters;
    this.#log = log;
    this.#observerFailed = filters.map(
      (filter) => (method: string, err: unknown) => this.#failed(filter, `observe.${method}`, err),
    );
    this.checks = filters.flatMap((f) => f.checks ?? []);
    this.answerChecks = filters.flatMap((f) => f.answerChecks ?? []);
    this.streamEvent = this.#streamEventHook();
    this.responseMessage = this.#responseMessageHook();
  }

  /** The filter's throw, logged with its name and hook; the exchange goes on. */
  #failed(filter: ExchangeFilter, hook: string, err: unknown): void {
    this.#log.error({ err, filter: filter.name, hook }, 'an exchange filter failed; the exchange goes on');
  }

  /** The streamEvent hook over the filters that have it (undefined when none has): it runs per SSE event. */
  #streamEventHook(): ((exchange: Exchange) => void) | undefined {
    const having = this.#filters.filter((f) => f.streamEvent !== undefined);
    if (having.length === 0) return undefined;
    return (exchange) => {
      for (const filter of having) {
        try {
          filter.streamEvent?.(exchange);
        } catch (err) {
          this.#failed(filter, 'streamEvent', err);
        }
      }
    };
  }

  /** The responseMessage hook over the filters that have it (undefined when none has): it runs per message. */
  #responseMessageHook(): ((exchange: Exchange, message: JudgedMessage) => void) | undefined {
    const having = this.#filters.filter((f) => f.responseMessage !== undefined);
    if (having.length === 0) return undefined;
    return (exchange, message) => {
      for (const filter of having) {
        try {
          filter.responseMessage?.(exchange, message);
        } catch (err) {
          this.#failed(filter, 'responseMessage', err);
        }
      }
    };
  }

  /** Runs `call` for each filter with `hook`; a throw is logged and the next filter runs. */
  #each(hook: Hook, call: (filter: ExchangeFilter) => void): void {
    for (const filter of this.#filters) {
      if (filter[hook] === undefined) continue;
      try {
        call(filter);
      } catch (err) {
        this.#failed(filter, hook, err);
      }
    }
  }

  /**
   * The first filter's refusal of an exchange not refused already, or undefined. The filters after a refusing
   * one are not asked; an exchange refused already is shown to all of them. Every filter's `end` sees every
   * exchange, whatever admission decided.
   */
  admit(exchange: Exchange, facts: AdmissionFacts): EdgeHttpError | undefined {
    for (const filter of this.#filters) {
      if (filter.admit === undefined) continue;
      let answer: EdgeHttpError | undefined;
      try {
        answer = filter.admit(exchange, facts);
      } catch (err) {
        this.#failed(filter, 'admit', err);
      }
      if (answer !== undefined && !facts.refused) return answer;
    }
    return undefined;
  }

  /**
   * The first filter's refusal of the exchange's request, or undefined; the filters after a refusing one are
   * not asked. Synchronous unless a filter must wait.
   */
  request(exchange: Exchange, request: ExchangeRequest): RequestDecision {
    return this.#requestFrom(0, exchange, request);
  }

  #requestFrom(start: number, exchange: Exchange, request: ExchangeRequest): RequestDecision {
    for (let i = start; i < this.#filters.length; i++) {
      const filter = this.#filters[i]!;
      if (filter.request === undefined) continue;
      let decision: RequestDecision;
      try {
        decision = filter.request(exchange, request);
      } catch (err) {
        this.#failed(filter, 'request', err);
        continue;
      }
      if (decision instanceof Promise) {
        return decision.then(
          (answer) => answer ?? this.#requestFrom(i + 1, exchange, request),
          (err: unknown) => {
            this.#failed(filter, 'request', err);
            return this.#requestFrom(i + 1, exchange, request);
          },
        );
      }
      if (decision !== undefined) return decision;
    }
    return undefined;
  }

  /** The observers the filters put on an exchange of this tenant, each throw logged under its filter's name. */
  observers(tenant: string, exchange: Exchange): InspectionObserver[] {
    const observers: InspectionObserver[] = [];
    for (let i = 0; i < this.#filters.length; i++) {
      const filter = this.#filters[i]!;
      if (filter.observe === undefined) continue;
      try {
        for (const observer of filter.observe(tenant, exchange))
          observers.push(new GuardedObserver(observer, this.#observerFailed[i]!));
      } catch (err) {
        this.#failed(filter, 'observe', err);
      }
    }
    return observers;
  }

  upstreamAnswered(exchange: Exchange, status: number, seconds: number): void {
    for (const filter of this.#filters) {
      if (filter.upstreamAnswered === undefined) continue;
      try {
        filter.upstreamAnswered(exchange, status, seconds);
      } catch (err) {
        this.#failed(filter, 'upstreamAnswered', err);
      }
    }
  }

  /** Tells the filters a stream opened; the returned function tells them it closed. */
  streamOpened(exchange: Exchange): () => void {
    const closers: { filter: ExchangeFilter; closed: () => void }[] = [];
    this.#each('streamOpened', (filter) => {
      const closed = filter.streamOpened?.(exchange);
      if (closed !== undefined) closers.push({ filter, closed });
    });
    return () => {
      for (const { filter, closed } of closers) {
        try {
          closed();
        } catch (err) {
          this.#failed(filter, 'streamOpened.closed', err);
        }
      }
    };
  }

  undelivered(tenant: string, reason: UndeliveredReason): void {
    this.#each('undelivered', (filter) => filter.undelivered?.(tenant, reason));
  }

  end(exchange: Exchange, ending: ExchangeEnding): void {
    for (const filter of this.#filters) {
      if (filter.end === undefined) continue;
      try {
        filter.end(exchange, ending);
      } catch (err) {
        this.#failed(filter, 'end', err);
      }
    }
  }

  reload(config: EdgeConfig): void {
    this.#each('reload', (filter) => filter.reload?.(config));
  }

  /** Closes every filter that has something to finish or holds something open; a failure is logged under its
   * name, never thrown. */
  async close(): Promise<void> {
    await Promise.all(
      this.#filters.map(async (filter) => {
        try {
          await filter.close?.();
        } catch (err) {
          this.#failed(filter, 'close', err);
        }
      }),
    );
  }
}
