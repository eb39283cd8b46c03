// The exchange log line as an exchange filter: one line per exchange, written when its response closed.
// Never a body or a credential in it; the request id is the logger's own field (reqId, request-id.ts).
import { boundedOptional } from '../../core/client-names.js';
import type { Exchange } from '../../exchange/exchange.js';
import type { ExchangeEnding, ExchangeFilter } from './exchange-filter.js';

export function exchangeLogFilter(): ExchangeFilter {
  return {
    name: 'exchange-log',
    end(exchange: Exchange, ending: ExchangeEnding) {
      // The line is built only when it will be written (the benchmark runs at warn).
      if (!ending.log.isLevelEnabled('info')) return;
      const s = exchange.summary;
      ending.log.info(
        {
          client: ending.clientAddress,
          session: boundedOptional(exchange.sessionId),
          // An initialize here names it; else its session's, else its User-Agent's (an exchange never judged).
          host:
            exchange.initializedHost ??
            exchange.host ??
            exchange.runtime.hosts.hostOf(exchange.userAgentProduct),
          tenant: exchange.tenant,
          authFailure: exchange.authFailure,
          http: ending.httpMethod,
          path: ending.path,
          status: ending.status,
          upstreamStatus: exchange.upstreamStatus,
          rpc: [...s.methods],
          tools: s.tools.size > 0 ? [...s.tools] : undefined,
          requestBytes: exchange.requestBytes,
          responseBytes: ending.responseBytes,
          messages: { request: s.requestMessages, response: s.responseMessages },
          largestResponseMessage: s.largestResponseMessage || undefined,
          violations: s.violations.length > 0 ? s.violations : undefined,
          hostBudgets: s.hostBudgets.length > 0 ? s.hostBudgets : undefined,
          outcome: ending.outcome,
          durationMs: Math.round(ending.durationMs * 10) / 10,
          // What the filters added (the traces filter's trace_id and span_id).
          ...exchange.logFields,
        },
        'exchange',
      );
    },
  };
}
