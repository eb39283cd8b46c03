// The end of an exchange: how it ended is computed once, when the response closes, however it closed
// (answered, refused, cut by the client, ended by shutdown or by the upstream), and handed to every filter
// (the count, the log line).

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { boundedUri } from '../core/client-names.js';
import type { Outcome } from '../core/outcome.js';
import type { Exchange } from '../exchange/exchange.js';
import type { FilterChain } from './filters/filter-chain.js';

/** nginx's status for a request whose client went away before any response status was sent. */
export const CLIENT_CLOSED_STATUS = 499;

/** How the exchange ended: what the edge decided (local-reply.ts), else whether the client got the whole answer. */
export function outcomeOf(exchange: Exchange, responseComplete: boolean): Outcome {
  if (exchange.outcome !== undefined) return exchange.outcome;
  if (!responseComplete) return 'client_closed';
  return exchange.summary.rejectedResponses > 0 ? 'response_replaced' : 'forwarded';
}

/** Called once, when the exchange's response has closed; returns how it ended. */
export function recordExchangeEnd(
  request: FastifyRequest,
  reply: FastifyReply,
  exchange: Exchange,
  filters: FilterChain,
): Outcome {
  const res = reply.raw;
  const complete = res.writableFinished;
  const outcome = outcomeOf(exchange, complete);
  filters.end(exchange, {
    outcome,
    status: res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS,
    httpMethod: request.method,
    // The route, or for a path no route matched the client's own text: bounded like every name it chooses.
    path: request.routeOptions.url ?? boundedUri(request.url.split('?')[0] ?? ''),
    complete,
    responseBytes: request.raw.socket.bytesWritten - exchange.wireBytesBefore,
    durationMs: Number(process.hrtime.bigint() - exchange.startedAt) / 1e6,
    log: request.log as unknown as Logger,
    clientAddress: request.socket.remoteAddress,
  });
  return outcome;
}
