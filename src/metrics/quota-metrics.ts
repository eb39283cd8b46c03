// The quota families (src/proxy/filters/quotas.ts records them): refusals by rule, tenant and action, the
// replica's last-seen use of each rule, store errors and round trips. Rule names come from the config and
// tenants are the edge's own, so every label is bounded as the other families' are.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export const QUOTA_METRIC_NAMES = Object.freeze({
  exceeded: 'mcp_edge_quota_exceeded_total',
  usedRatio: 'mcp_edge_quota_used_ratio',
  storeErrors: 'mcp_edge_quota_store_errors_total',
  storeDuration: 'mcp_edge_quota_store_duration_seconds',
});

/** From a loopback Redis (a tenth of a millisecond) to a store past any sane storeTimeout. */
const STORE_SECONDS_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
];

export interface QuotaMetrics {
  exceeded(rule: string, tenant: string, action: 'refused' | 'observed'): void;
  usedRatio(rule: string, tenant: string, ratio: number): void;
  storeError(store: string, error: string): void;
  storeRoundTrip(store: string, seconds: number): void;
  /** Every error series of `store` at 0, so a rate over them exists before the first error. */
  storeStarted(store: string): void;
}

/** A rule's use as last seen for a tenant. */
interface SeenUse {
  rule: string;
  tenant: string;
  ratio: number;
}

/**
 * The last-seen use per rule and tenant, by gauge: set per exchange here and handed to the gauge when the
 * registry is read (prom-client's set hashes its labels on every call; this runs for every exchange).
 */
const lastSeenByGauge = new WeakMap<object, Map<string, Map<string, SeenUse>>>();

/** The gauge's last-seen use, by rule and then tenant (no key string is built per exchange). */
function lastSeenOf(gauge: object): Map<string, Map<string, SeenUse>> {
  let seen = lastSeenByGauge.get(gauge);
  if (seen === undefined) {
    seen = new Map();
    lastSeenByGauge.set(gauge, seen);
  }
  return seen;
}

/**
 * The family `name` on `registry`: the one registered already (an edge restarted in the same process finds
 * it), else the one `make` registers. prom-client returns a registered family untyped: the cast is its edge.
 */
function familyOf<T>(registry: Registry, name: string, make: (name: string) => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make(name);
}

/** The families on `registry`, created once per registry. */
export function quotaMetricsOf(registry: Registry): QuotaMetrics {
  const registers = [registry];
  const exceeded = familyOf(
    registry,
    QUOTA_METRIC_NAMES.exceeded,
    (name) =>
      new Counter({
        name,
        help: 'Exchanges a quota rule found without budget: action refused (429), or observed (observe mode: forwarded).',
        labelNames: ['rule', 'tenant', 'action'] as const,
        registers,
      }),
  );
  const usedRatio = familyOf(
    registry,
    QUOTA_METRIC_NAMES.usedRatio,
    (name) =>
      new Gauge({
        name,
        help: "A rule's use over its limit (its nearest limit) for a tenant, as this replica last saw it (1: used up).",
        labelNames: ['rule', 'tenant'] as const,
        registers,
        collect() {
          for (const byTenant of lastSeenOf(this).values())
            for (const seen of byTenant.values())
              this.set({ rule: seen.rule, tenant: seen.tenant }, seen.ratio);
        },
      }),
  );
  const lastSeen = lastSeenOf(usedRatio);
  const storeErrors = familyOf(
    registry,
    QUOTA_METRIC_NAMES.storeErrors,
    (name) =>
      new Counter({
        name,
        help: 'Quota store operations that failed (error: timeout, unavailable, full); quotas.onStoreError decided the exchange.',
        labelNames: ['store', 'error'] as const,
        registers,
      }),
  );
  const storeDuration = familyOf(
    registry,
    QUOTA_METRIC_NAMES.storeDuration,
    (name) =>
      new Histogram({
        name,
        help: "Round trip of an exchange's quota check to a shared store.",
        labelNames: ['store'] as const,
        buckets: STORE_SECONDS_BUCKETS,
        registers,
      }),
  );
  return {
    exceeded: (rule, tenant, action) => exceeded.inc({ rule, tenant, action }),
    usedRatio: (rule, tenant, ratio) => {
      let byTenant = lastSeen.get(rule);
      if (byTenant === undefined) {
        byTenant = new Map();
        lastSeen.set(rule, byTenant);
      }
      const seen = byTenant.get(tenant);
      if (seen !== undefined) seen.ratio = ratio;
      else byTenant.set(tenant, { rule, tenant, ratio });
    },
    storeError: (store, error) => storeErrors.inc({ store, error }),
    storeRoundTrip: (store, seconds) => storeDuration.observe({ store }, seconds),
    storeStarted: (store) => {
      for (const error of ['timeout', 'unavailable', 'full']) storeErrors.inc({ store, error }, 0);
    },
  };
}
