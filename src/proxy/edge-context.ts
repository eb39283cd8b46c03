// What the stages of the shell share: the config it started with, the logger and the filters, the session
// store, the silence watches and the bytes held. Built once per edge server.
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { EdgeConfig } from '../config/schema.js';
import type { JsonRpcErrorMessage } from '../core/refusals/answers.js';
import type { Exchange } from '../exchange/exchange.js';
import type { SessionStore } from '../inspect/session-store.js';
import type { UntrustedHeaderLog } from '../tenancy/untrusted-header-log.js';
import type { Upstream } from '../upstream/upstream.js';
import type { FilterChain } from './filters/filter-chain.js';
import type { HeldBytes } from './held-bytes.js';
import type { SilenceWatch } from './silence-watch.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set in onRequest for the MCP endpoint; other routes (health, 404) are not exchanges. */
    exchange: Exchange | undefined;
    /** Set for a request that sent `Expect: 100-continue`: the body reader calls it once it will read the body. */
    sendContinue: (() => void) | undefined;
  }
}

export interface EdgeContext {
  config: EdgeConfig;
  log: Logger;
  /** What follows exchanges: metrics, the log line (filters/). */
  filters: FilterChain;
  sessions: SessionStore;
  upstream: Upstream;
  /** One timer for the silence of every call's SSE answer (upstream.timeouts.answerStream). */
  answerSilence: SilenceWatch;
  /** One timer for the silence inside every JSON answer's body (upstream.timeouts.body). */
  bodySilence: SilenceWatch;
  /** Logs the first ignored tenant header of each peer per minute. */
  untrustedHeaders: UntrustedHeaderLog;
  /** The bytes the edge holds in flight now (mcp_edge_held_bytes). */
  held: HeldBytes;
}

/** Sends JSON-RPC errors upstream for server requests the edge dropped, so the server does not wait. */
export function answerUpstream(
  ctx: Pick<EdgeContext, 'upstream'>,
  exchange: Exchange,
  messages: JsonRpcErrorMessage[],
): void {
  for (const message of messages) ctx.upstream.send(exchange.sessionId, message);
}

/** The exchange of a request routed to the proxy (onRequest has created it, or refused the request). */
export function exchangeOf(request: FastifyRequest): Exchange {
  if (request.exchange === undefined) throw new Error('a proxied request without an exchange');
  return request.exchange;
}
