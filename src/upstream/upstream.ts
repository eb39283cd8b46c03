// Where admitted exchanges go. The shell owns the MCP endpoint's routes: it admits a request, reads and judges
// its body, applies the session rules, and hands the exchange to an Upstream as an UpstreamCall; the upstream
// answers through the call with a status, headers and a body stream (deliver), a failure (fail), or a refusal
// the shell words (refuse). The relays judge what comes back, whatever kind of upstream it came from. An
// upstream sees an exchange only through UpstreamExchange: nothing of src/proxy, nothing of Fastify, is
// imported here.
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { EdgeConfig } from '../config/schema.js';
import type { Guard } from '../core/guard.js';
import type { UpstreamRequestHeaderOptions } from '../core/headers.js';
import type { ProcessBound, UndeliveredReason, UpstreamFailureKind } from '../core/refusals/facts.js';
import type { JsonRpcId } from '../core/types.js';
import type { BodyRouting } from '../inspect/body-routing.js';

/** One event of an answer made of messages: a piece of a message, or a message cut short. */
export type { MessageEvent } from '../core/message-events.js';

/**
 * An answer's body: the bytes of an HTTP server's answer, forwarded as they are framed (JSON or SSE), or the
 * messages of a kind that has no HTTP framing of its own (a stdio child's lines), which the shell frames for
 * the client: SSE events, or a JSON body when the answer is one message that the exchange may take as JSON.
 */
export type UpstreamBody =
  | { kind: 'bytes'; stream: Readable }
  | {
      kind: 'messages';
      /** An object-mode stream of MessageEvents, in order; the kind pauses while it is full. */
      events: Readable;
      /** The first message is an answer (not a request or notification): it may go as a JSON body. */
      firstIsAnswer: boolean;
      /** The kind answers a single request with a JSON body even when the client accepts SSE. */
      preferJson: boolean;
    };

/** An upstream's answer to one exchange, before the edge has looked at its body. */
export interface UpstreamResponse {
  statusCode: number;
  /** The upstream's headers as it sent them: the shell rewrites what crosses to the client. */
  headers: Record<string, string | string[] | undefined>;
  body: UpstreamBody;
}

/** Why a message from the upstream reached no client (the refusals table words each, src/core/refusals). */
export type { UndeliveredReason } from '../core/refusals/facts.js';

/** The HTTP methods the MCP endpoint takes; every other one is refused at admission. */
export const FORWARDED_METHODS = ['POST', 'GET', 'DELETE'] as const;
export type ForwardedMethod = (typeof FORWARDED_METHODS)[number];

/** What an upstream may know of an admitted exchange, and the one thing it tells it (when it was sent). */
export interface UpstreamExchange {
  readonly tenant: string;
  readonly sessionId: string | undefined;
  /** Ceilings are enforced (not only observed) for this exchange. */
  readonly enforced: boolean;
  /** The ids of the requests in the body, in order: an answer for the exchange names them. */
  readonly requestIds: readonly JsonRpcId[];
  /** Whether the body holds an initialize request (a new session). */
  readonly initializes: boolean;
  /** What the body means for routing on a shared child: its progress tokens, answers and cancellations. */
  readonly routing: BodyRouting;
  /**
   * Entries the filters put in each request's and notification's `params._meta` (W3C trace context), for a
   * kind whose messages carry no headers (a stdio child); undefined when none.
   */
  readonly meta: Readonly<Record<string, string>> | undefined;
  /** The most bytes of one answer the edge holds for this tenant; null: no bound. */
  readonly responseHoldBytes: number | null;
  /** Which identity headers stop at the edge or carry the tenant, and whether the peer's forwarding headers count. */
  crossing(
    clientHeaders: IncomingHttpHeaders,
    peer: string | undefined,
  ): Pick<UpstreamRequestHeaderOptions, 'trustedPeer' | 'drop' | 'set'>;
  /** The request leaves for the upstream now (the upstream-latency clock starts; the first call counts). */
  sent(): void;
}

/** The client's request as an upstream needs it: its body is read and judged already. */
export interface UpstreamRequest {
  readonly method: ForwardedMethod;
  /** The query of the client's URL, with its `?` ('' when none). */
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  /** The client's address (the peer of its connection). */
  readonly peer: string | undefined;
  /** The body as read (empty when there was none). */
  readonly body: Buffer;
}

/** Why an upstream does not take an exchange; the shell words the answer (src/core/refusals/table.ts). */
export type UpstreamRefusal =
  /** An id or progress token of the exchange stayed claimed by another call past the kind's wait. */
  | { kind: 'id_in_use'; detail: string }
  /** Every stream connection the kind may hold is open (its `limit`). */
  | { kind: 'stream_capacity'; limit: number }
  /** The body is not what the kind can carry (its `detail` says why). */
  | { kind: 'malformed'; detail: string };

/** One admitted exchange handed to an upstream, and the ways it answers. */
export interface UpstreamCall {
  readonly request: UpstreamRequest;
  readonly exchange: UpstreamExchange;
  /** The upstream's answer: the shell sets its status and client-facing headers and relays its body. */
  deliver(response: UpstreamResponse): void;
  /** The upstream could not answer: the client gets a 502/503/504 for its id; `detail` goes to the log. */
  fail(kind: Exclude<UpstreamFailureKind, 'failed'>, detail: string): void;
  /** The upstream does not take the exchange: the shell answers in its place. */
  refuse(refusal: UpstreamRefusal): void;
  /**
   * The guard for the upstream's own callbacks of this exchange (an undici callback, a stream listener): what
   * they throw ends the exchange (a 500 or its connection closed, logged at error level), never the process.
   * `release` frees what the exchange holds upstream (an answer's body no one will read).
   */
  guard(release?: () => void): Guard;
  /** Runs `listener` once the client's response has closed (answered, or the client left). */
  onClose(listener: () => void): void;
  /** Nothing has answered the exchange yet and its client is still there. */
  isOpen(): boolean;
}

/** What an upstream tells the shell outside any one exchange. */
export interface UpstreamEvents {
  /** The upstream sent a message the edge delivered to no client (the upstream has logged it): counted. */
  undelivered(tenant: string, reason: UndeliveredReason): void;
}

/**
 * The facts of a kind that keeps its sessions itself (a process per session): the shell's session rules
 * answer from them (404 unknown session, 405 GET or DELETE without one, 409 a second GET stream, 503 no
 * room). A kind without them (an HTTP server) is the authority on its own sessions: its answers are relayed.
 */
export interface UpstreamSessions {
  /** The session is live and was opened by this tenant (another tenant never reaches it). */
  has(sessionId: string, tenant: string): boolean;
  /** The session has its GET stream open (one per session). */
  streaming(sessionId: string): boolean;
  /** Exchanges without a session share one process per tenant: none may answer or cancel a request there. */
  readonly sharedWithoutSession: boolean;
  /** Why an exchange without a session finds no room now (the kind is closing, or a bound it names). */
  roomFor(exchange: UpstreamExchange): 'closing' | ProcessBound | undefined;
}

export interface Upstream {
  /** How metrics and logs name the upstream: never a credential or an argument. */
  readonly label: string;
  /** How an answer names the upstream when the operator exposes upstream errors: an origin, or a program. */
  readonly publicName: string;
  /** The MCP endpoint of an upstream that is an HTTP server: CORS preflights and OAuth documents pass to it. */
  readonly httpEndpoint?: URL;
  /** Session facts, when the kind keeps its sessions itself (see UpstreamSessions). */
  readonly sessions?: UpstreamSessions;
  /** The processes a kind runs itself (a child per session): how many are alive now, and the most it may run. */
  readonly processes?: { alive(): number; readonly limit: number };
  /** The shell starts the upstream once, before the first exchange (timers, the events it reports). */
  start?(events: UpstreamEvents): void;
  /** Carries one admitted exchange (POST, GET or DELETE on the MCP endpoint); it answers through `call`. */
  handle(call: UpstreamCall): void;
  /** Sends a JSON-RPC message of the edge's own (the error for a server request it dropped) into a session. */
  send(sessionId: string | undefined, message: object): void;
  /** Readiness: can the upstream be reached now? */
  ready(): Promise<boolean>;
  /** The shell is closing: whatever the upstream holds ends (called once, after the last exchange started). */
  close?(): Promise<void>;
}

/** A kind of upstream, as `upstreamOf` (select.ts) chooses it: one per file, one line in its list. */
export interface UpstreamKind {
  /** The config asks for this kind (its section under `upstream:` is given). */
  configured(config: EdgeConfig): boolean;
  create(config: EdgeConfig, log: Logger): Upstream;
  /** The upstream in one line (`mcp-edge explain`): never a credential, an argument or an env value. */
  describe(config: EdgeConfig): string;
}
