// Which exchange filters an edge runs, in order: the one place a filter is added. Each filter is built from
// the config the edge started with (its own section of it), the metrics registry and the edge's logger.
import type { Logger } from 'pino';
import type { EdgeConfig } from '../../config/schema.js';
import type { EdgeMetrics } from '../../metrics/edge-metrics.js';
import { ceilingsFilter } from './ceilings.js';
import type { ExchangeFilter } from './exchange-filter.js';
import { exchangeLogFilter } from './exchange-log.js';
import { FilterChain } from './filter-chain.js';
import { headerCheckFilter } from './header-check.js';
import { hostBudgetsFilter } from './host-budgets.js';
import { metricsFilter } from './metrics-filter.js';
import { paginationBoundFilter } from './pagination-bound.js';
import { quotasFilter } from './quotas.js';
import { tracesOf } from './traces.js';

/** What a filter is built from. */
export interface FilterSetup {
  config: EdgeConfig;
  metrics: EdgeMetrics | undefined;
  log: Logger;
}

/**
 * The edge's filters, in order; `extra` (an embedding program's, a test's) run after them. Traces come first,
 * so every exchange's span starts before any filter may refuse it; off, they are not in the chain at all.
 */
export function filterChainOf(setup: FilterSetup, extra: readonly ExchangeFilter[] = []): FilterChain {
  const { metrics, log } = setup;
  const quotas = quotasFilter(setup);
  return new FilterChain(
    [
      ...tracesOf(setup.config, process.env, metrics, log),
      ceilingsFilter(),
      headerCheckFilter(),
      hostBudgetsFilter(),
      paginationBoundFilter(),
      ...(quotas !== undefined ? [quotas] : []),
      ...(metrics !== undefined ? [metricsFilter(metrics)] : []),
      exchangeLogFilter(),
      ...extra,
    ],
    log,
  );
}
