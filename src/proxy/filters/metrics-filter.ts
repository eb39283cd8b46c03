// The Prometheus metrics as an exchange filter: every count and histogram the shell records about exchanges
// is recorded here, from the chain's hooks (the message-level ones through the registry's observers).

import type { Exchange } from '../../exchange/exchange.js';
import type { EdgeMetrics } from '../../metrics/edge-metrics.js';
import type { ExchangeEnding, ExchangeFilter } from './exchange-filter.js';

/** The whole call, request received to the answer's last byte, under its method and tool ("batch" for several). */
function recordCall(exchange: Exchange, metrics: EdgeMetrics, seconds: number): void {
  const s = exchange.summary;
  if (s.requestMessages === 0) return;
  const single = s.requestMessages === 1;
  metrics.callFinished({
    tenant: exchange.tenant,
    method: single ? s.methods.values().next().value : 'batch',
    tool: single ? s.tools.values().next().value : undefined,
    seconds,
  });
}

export function metricsFilter(metrics: EdgeMetrics): ExchangeFilter {
  return {
    name: 'metrics',
    admit(_exchange, facts) {
      if (facts.untrustedTenantHeader) metrics.untrustedTenantHeader();
      return undefined;
    },
    observe: (tenant) => [metrics.observerFor(tenant), metrics.toolObserverFor(tenant)],
    upstreamAnswered(exchange, status, seconds) {
      metrics.upstreamResponded({ tenant: exchange.tenant, status, seconds });
    },
    streamOpened: (exchange) => metrics.sseStreamOpened(exchange.tenant),
    streamEvent(exchange) {
      metrics.sseEvent(exchange.tenant);
    },
    undelivered(tenant, reason) {
      metrics.undelivered(tenant, reason);
    },
    end(exchange: Exchange, ending: ExchangeEnding) {
      const { outcome, status, httpMethod } = ending;
      metrics.exchangeFinished({ tenant: exchange.tenant, httpMethod, status, outcome });
      if (httpMethod === 'POST' && ending.complete) recordCall(exchange, metrics, ending.durationMs / 1000);
    },
  };
}
