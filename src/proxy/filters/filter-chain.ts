// The filter chain: an edge's filters (exchange-filter.ts) run in order, each hook asked of those that have it.
// It decides a request in Envoy's way: each message through every rule (requestMessages), then the exchange
// through every request hook, then, once all agreed, through every charge; the first refusal decides. What a
// filter throws is logged under its name and hook and the exchange goes on, except a message rule's throw,
// which refuses the message it judged with the edge's failure: no message goes on unjudged.
import type { Logger } from 'pino';
import type { EdgeConfig } from '../../config/schema.js';
import { type EdgeHttpError, edgeAnswer } from '../../core/refusals/answers.js';
import type { Exchange, ExchangeFilters } from '../../exchange/exchange.js';
import type { AnswerCheck, JudgedMessage, MessageCheck } from '../../inspect/message-verdict.js';
import type { InspectionObserver } from '../../inspect/observer.js';
import type { UndeliveredReason } from '../../upstream/upstream.js';
import type {
  AdmissionFacts,
  ExchangeEnding,
  ExchangeFilter,
  ExchangeRequest,
  MessageDecision,
  RequestDecision,
} from './exchange-filter.js';
import { GuardedObserver, type ObserverFailed } from './guarded-observer.js';

type Hook = Exclude<keyof ExchangeFilter, 'name' | 'checks' | 'answerChecks' | 'close'>;

/** A hook that decides an exchange's request: every request hook in filter order, then every charge. */
interface DecidingStep {
  filter: ExchangeFilter;
  hook: 'request' | 'charge';
}

/** The filters of an edge, in order. */
export class FilterChain implements ExchangeFilters {
  readonly #filters: readonly ExchangeFilter[];
  readonly #log: Logger;
  /** The filters with a rule on each request message, in order. */
  readonly #messageRules: readonly ExchangeFilter[];
  /** The hooks that decide a request, in the order they are asked. */
  readonly #deciding: readonly DecidingStep[];
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
    this.#messageRules = filters.filter((f) => f.requestMessage !== undefined);
    this.#deciding = [
      ...filters
        .filter((f) => f.request !== undefined)
        .map((filter) => ({ filter, hook: 'request' as const })),
      ...filters.filter((f) => f.charge !== undefined).map((filter) => ({ filter, hook: 'charge' as const })),
    ];
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
   * Each message's verdict, in order (the first filter's refusal of it, or undefined), or undefined when no
   * filter refused any (no allocation then). A rule that throws refuses the message it judged with the edge's
   * failure, logged under its name: no message goes on unjudged.
   */
  requestMessages(exchange: Exchange, request: ExchangeRequest): MessageDecision[] | undefined {
    const rules = this.#messageRules;
    if (rules.length === 0) return undefined;
    let verdicts: MessageDecision[] | undefined;
    request.messages.forEach((message, i) => {
      for (const filter of rules) {
        let answer: MessageDecision;
        try {
          answer = filter.requestMessage?.(exchange, message, request);
        } catch (err) {
          this.#failed(filter, 'requestMessage', err);
          answer = edgeAnswer('edge_failure', {}, message.id ?? null);
        }
        if (answer === undefined) continue;
        verdicts ??= request.messages.map(() => undefined);
        verdicts[i] = answer;
        break;
      }
    });
    return verdicts;
  }

  /**
   * The first refusal of the exchange's request, or undefined: every filter's request hook in order, then,
   * once all let it on, every charge (what is spent is spent only for a request nothing refused); the hooks
   * after a refusing one are not asked. Synchronous unless a filter must wait.
   */
  request(exchange: Exchange, request: ExchangeRequest): RequestDecision {
    return this.#decideFrom(0, exchange, request);
  }

  #decideFrom(start: number, exchange: Exchange, request: ExchangeRequest): RequestDecision {
    for (let i = start; i < this.#deciding.length; i++) {
      const { filter, hook } = this.#deciding[i]!;
      let decision: RequestDecision;
      try {
        decision = filter[hook]?.(exchange, request);
      } catch (err) {
        this.#failed(filter, hook, err);
        continue;
      }
      if (decision instanceof Promise) {
        return decision.then(
          (answer) => answer ?? this.#decideFrom(i + 1, exchange, request),
          (err: unknown) => {
            this.#failed(filter, hook, err);
            return this.#decideFrom(i + 1, exchange, request);
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
