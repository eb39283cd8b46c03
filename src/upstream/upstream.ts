// Where admitted exchanges go. The shell admits a request, reads and judges its body, and hands the exchange
// to an Upstream; the upstream answers with a status, headers and a body stream (deliver), a failure (fail),
// or an answer of the edge's own (respond). The relays judge what comes back, whatever kind of upstream it
// came from. An upstream sees an exchange only through UpstreamExchange: nothing of src/proxy is imported here.
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EdgeHttpError, UpstreamFailureKind } from '../core/errors.js';
import type { Guard } from '../core/guard.js';
import type { UpstreamRequestHeaderOptions } from '../core/headers.js';
import type { JsonRpcId } from '../core/types.js';
import type { BodyRouting } from '../inspect/body-routing.js';

/** An upstream's answer to one exchange, before the edge has looked at its body. */
export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  stream: Readable;
}

/**
 * Why a message from the upstream reached no client: its caller left, it names no caller (a shared stdio
 * child), or no client stream opened in time. The `reason` label of mcp_edge_undelivered_messages_total.
 */
export type UndeliveredReason = 'caller_gone' | 'no_owner' | 'no_stream';

/** The HTTP methods the MCP endpoint takes; every other one is refused at admission. */
export const FORWARDED_METHODS = ['POST', 'GET', 'DELETE'] as const;

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

/** What the shell does with an upstream's answers: the response relay, and the edge's own answers. */
export interface UpstreamSink {
  /** The exchange of a request on the MCP endpoint, as an upstream sees it. */
  exchange(request: FastifyRequest): UpstreamExchange;
  /** The upstream's answer; the upstream has set its status and client-facing headers on the reply. */
  deliver(request: FastifyRequest, reply: FastifyReply, response: UpstreamResponse): void;
  /** The upstream could not answer: the client gets a 502/503/504 for its id; `detail` goes to the log. */
  fail(reply: FastifyReply, kind: Exclude<UpstreamFailureKind, 'failed'>, detail: string): void;
  /** The edge answers in the upstream's place (a capacity bound, an id in use, an unknown session). */
  respond(reply: FastifyReply, answer: EdgeHttpError): void;
  /** The upstream sent a message the edge delivered to no client (the upstream has logged it): counted. */
  undelivered(tenant: string, reason: UndeliveredReason): void;
  /**
   * The guard for the upstream's own callbacks of this exchange (an undici callback, a stream listener): what
   * they throw ends the exchange (a 500 or its connection closed, logged at error level), never the process.
   * `release` frees what the exchange holds upstream (an answer's body no one will read).
   */
  guard(reply: FastifyReply, release?: () => void): Guard;
}

export interface Upstream {
  /** How metrics and logs name the upstream: never a credential or an argument. */
  readonly label: string;
  /** How an answer names the upstream when the operator exposes upstream errors: an origin, or a program. */
  readonly publicName: string;
  /** The MCP endpoint of an upstream that is an HTTP server: CORS preflights and OAuth documents pass to it. */
  readonly httpEndpoint?: URL;
  /** Routes the MCP endpoint's POST, GET and DELETE to this upstream; every answer goes to the sink. */
  register(app: FastifyInstance, sink: UpstreamSink): Promise<void>;
  /** Sends a JSON-RPC message of the edge's own (the error for a server request it dropped) into a session. */
  send(sessionId: string | undefined, message: object): void;
  /** Readiness: can the upstream be reached now? */
  ready(): Promise<boolean>;
}
