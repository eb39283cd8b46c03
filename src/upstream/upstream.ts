// Where admitted exchanges go. The shell admits a request, reads and judges its body, and hands the exchange
// to an Upstream; the upstream answers with a status, headers and a body stream (deliver), or a failure
// (fail). The relays judge what comes back, whatever kind of upstream it came from.
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UpstreamFailureKind } from '../core/errors.js';
import type { Guard } from '../proxy/guard.js';

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

/** What the shell does with an upstream's answers: the response relay, and the one failure answer. */
export interface UpstreamSink {
  /** The upstream's answer; the upstream has set its status and client-facing headers on the reply. */
  deliver(request: FastifyRequest, reply: FastifyReply, response: UpstreamResponse): void;
  /** The upstream could not answer: the client gets a 502/504 for its id; `detail` goes to the log. */
  fail(reply: FastifyReply, kind: Exclude<UpstreamFailureKind, 'failed'>, detail: string): void;
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
  /** Routes the MCP endpoint's POST, GET and DELETE to this upstream; every answer goes to the sink. */
  register(app: FastifyInstance, sink: UpstreamSink): Promise<void>;
  /** Sends a JSON-RPC message of the edge's own (the error for a server request it dropped) into a session. */
  send(sessionId: string | undefined, message: object): void;
  /** Readiness: can the upstream be reached now? */
  ready(): Promise<boolean>;
}
