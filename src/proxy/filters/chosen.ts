// Which exchange filters an edge runs, in order: the one place a filter is added.
import type { EdgeConfig } from '../../config/schema.js';
import type { EdgeMetrics } from '../../metrics/edge-metrics.js';
import { FilterChain } from './exchange-filter.js';
import { exchangeLogFilter } from './exchange-log.js';
import { metricsFilter } from './metrics-filter.js';

export function filterChainOf(_config: EdgeConfig, metrics: EdgeMetrics | undefined): FilterChain {
  return new FilterChain([...(metrics !== undefined ? [metricsFilter(metrics)] : []), exchangeLogFilter()]);
}
