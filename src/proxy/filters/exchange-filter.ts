// What an exchange filter is, in the way of Envoy's HTTP filters: each concern that follows or bounds exchanges
// (ceilings, the header check, the pagination bound, quotas, metrics, the log line, traces) is one filter with
// the hooks it needs, run in order by the FilterChain (filter-chain.ts). Before a request goes upstream its
// filters decode it: each message, then the exchange whole, each hook answering Continue (undefined) or
// StopAndReply (an answer of the edge's own, from the refusals table, src/core/refusals/); a message refused
// in a batch is answered for its own id while the others go on; only once every filter agreed is anything
// spent (charge: a quota's take). Their checks judge each complete message in both directions (the edge turns
// the ceiling a check names into forward, replace or drop); otherwise filters watch. A filter that throws is
// logged under its name and the exchange goes on, except where a throw would let something on unjudged: a
// message rule that throws refuses that message with the edge's failure.
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { EdgeConfig } from '../../config/schema.js';
import type { Outcome } from '../../core/outcome.js';
import type { EdgeHttpError } from '../../core/refusals/answers.js';
import type { Exchange } from '../../exchange/exchange.js';
import type { AnswerCheck, JudgedMessage, MessageCheck } from '../../inspect/message-verdict.js';
import type { InspectionObserver } from '../../inspect/observer.js';
import type { RequestMessage } from '../../inspect/request-body.js';
import type { SessionState } from '../../inspect/session-store.js';
import type { UndeliveredReason } from '../../upstream/upstream.js';

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

/** One message's verdict: undefined lets it on (Continue); an answer for its id refuses it (StopAndReply). */
export type MessageDecision = EdgeHttpError | undefined;

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
   * Each message of the exchange's request, read and judged (within its ceilings), before anything of it goes
   * upstream: undefined lets it on; an answer of the edge's own, worded for the message's id, refuses that
   * message alone. A body of one message is answered with its refusal; in a batch the others go on, and the
   * client gets each refusal with the upstream's answer to them; a batch refused in every message is answered
   * with all its refusals. The filters after the first that refuses a message are not asked about it. A
   * plain function of the message and the request: it cannot wait.
   */
  requestMessage?(exchange: Exchange, message: RequestMessage, request: ExchangeRequest): MessageDecision;
  /**
   * The exchange's request, read and judged (every message within its ceilings, the messages the filters
   * refused taken out), before it goes upstream: an answer refuses the whole exchange (the pagination bound),
   * with the request's id in it. Called for every admitted exchange (no messages for a GET or DELETE).
   */
  request?(exchange: Exchange, request: ExchangeRequest): RequestDecision;
  /**
   * What the exchange spends (a quota's take), once every filter's requestMessage and request let it on: a
   * request any filter refused spends nothing. An answer still refuses the exchange whole (a quota's 429 with
   * Retry-After); the charges after a refusing one are not asked.
   */
  charge?(exchange: Exchange, request: ExchangeRequest): RequestDecision;
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
