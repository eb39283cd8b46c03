// The end of an exchange: exactly one log line and one count per exchange, written when the response
// closes, however it closed (answered, refused, cut by the client, ended by shutdown or by the upstream).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Outcome } from '../core/outcome.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import type { Exchange } from './exchange.js';

/** nginx's status for a request whose client went away before any response status was sent. */
export const CLIENT_CLOSED_STATUS = 499;

/** How the exchange ended: what the edge decided, else whether the client got the whole answer. */
export function outcomeOf(exchange: Exchange, responseComplete: boolean): Outcome {
  if (exchange.outcome !== undefined) return exchange.outcome;
  if (!responseComplete) return 'client_closed';
  return exchange.summary.rejectedResponses > 0 ? 'response_replaced' : 'forwarded';
}

/** The whole call, request received to the answer's last byte, under its method and tool ("batch" for several). */
function recordCall(exchange: Exchange, metrics: EdgeMetrics): void {
  const s = exchange.summary;
  if (s.requestMessages === 0) return;
  const single = s.requestMessages === 1;
  metrics.callFinished({
    tenant: exchange.tenant,
    method: single ? s.methods.values().next().value : 'batch',
    tool: single ? s.tools.values().next().value : undefined,
    seconds: elapsedMs(exchange.startedAt) / 1000,
  });
}

function elapsedMs(since: bigint): number {
  return Number(process.hrtime.bigint() - since) / 1e6;
}

/** Called once, when the exchange's response has closed. Never a body or a credential in the line. */
export function recordExchangeEnd(
  request: FastifyRequest,
  reply: FastifyReply,
  exchange: Exchange,
  metrics: EdgeMetrics | undefined,
): void {
  const res = reply.raw;
  const outcome = outcomeOf(exchange, res.writableFinished);
  const status = res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS;
  metrics?.exchangeFinished({ tenant: exchange.tenant, httpMethod: request.method, status, outcome });
  if (metrics !== undefined && request.method === 'POST' && res.writableFinished)
    recordCall(exchange, metrics);
  // The line is built only when it will be written (the benchmark runs at warn).
  if (!(request.log as unknown as Logger).isLevelEnabled('info')) return;
  const s = exchange.summary;
  request.log.info(
    {
      tenant: exchange.tenant,
      http: request.method,
      path: request.routeOptions.url ?? request.url.split('?')[0],
      status,
      upstreamStatus: exchange.upstreamStatus,
      rpc: [...s.methods],
      tools: s.tools.size > 0 ? [...s.tools] : undefined,
      requestBytes: exchange.requestBytes,
      // Everything this exchange wrote to the client's connection: status line, headers, body, framing.
      responseBytes: request.raw.socket.bytesWritten - exchange.wireBytesBefore,
      messages: { request: s.requestMessages, response: s.responseMessages },
      largestResponseMessage: s.largestResponseMessage || undefined,
      violations: s.violations.length > 0 ? s.violations : undefined,
      hostBudgets: s.hostBudgets.length > 0 ? s.hostBudgets : undefined,
      outcome,
      durationMs: Math.round(elapsedMs(exchange.startedAt) * 10) / 10,
    },
    'exchange',
  );
}
