// What the quota filter answers an exchange: a store's result as an admission or a 429 (a rule's budget used,
// or its tenant's share of keys held), with the metrics each records; a store's failure as onStoreError says.
import type { Logger } from 'pino';
import type { QuotasConfig } from '../../config/schema.js';
import { type EdgeHttpError, edgeAnswer } from '../../core/refusals/answers.js';
import type { JsonRpcId } from '../../core/types.js';
import type { Exchange } from '../../exchange/exchange.js';
import type { QuotaMetrics } from '../../metrics/quota-metrics.js';
import type { ReservationLedger } from '../../quotas/reservations.js';
import type { QuotaCharge, QuotaRule } from '../../quotas/rules.js';
import { QuotaStoreError, type TakeResult } from '../../quotas/store.js';
import type { ExchangeRequest } from './exchange-filter.js';

/** What a refusal for an unavailable store tells the client to wait. */
const STORE_RETRY_AFTER_SECONDS = 1;
/** The most often a failing store is logged (the count of failures since goes with it). */
const STORE_FAILURE_LOG_MS = 10_000;

/** The quota filter's state: its rules, its store, the tenants' share of keys. */
export interface QuotaState {
  rules: QuotaRule[];
  config: QuotasConfig;
  /** The store, and what its exchanges hold reserved in it. */
  ledger: ReservationLedger;
  /** Some rule limits responseBytes: only then is each request's answer ceiling looked up. */
  reserves: boolean;
  /** Each tenant's share of the memory store's keys, and how many tenants share them. */
  keysPerTenant: number;
  tenants: number;
}

/** A store's answer for an exchange: its refusal, or undefined to let it on (observe mode always does). */
export function quotaDecision(
  state: QuotaState,
  metrics: QuotaMetrics | undefined,
  exchange: Exchange,
  request: ExchangeRequest,
  charges: readonly QuotaCharge[],
  result: TakeResult,
): EdgeHttpError | undefined {
  if (metrics !== undefined) reportUse(metrics, exchange.tenant, charges, result.used);
  const refused = charges[result.refused];
  if (refused === undefined) return undefined;
  const observe = exchange.mode === 'observe';
  metrics?.exceeded(refused.key.rule.name, exchange.tenant, observe ? 'observed' : 'refused');
  if (observe) return undefined;
  // A batch is refused whole, for no one of its ids.
  const id: JsonRpcId = request.batch ? null : (request.messages[0]?.id ?? null);
  if (result.refusedFor === 'keys') {
    const share = {
      tenant: exchange.tenant,
      keysPerTenant: state.keysPerTenant,
      maxKeys: state.config.maxKeys,
      tenants: state.tenants,
      rule: refused.key.rule.name,
      retryAfterSeconds: result.retryAfterSeconds,
    };
    return edgeAnswer('quota_keys_exhausted', { share }, id);
  }
  const quota = {
    rule: refused.key.rule.name,
    window: refused.key.rule.window,
    measure: refused.key.measure,
    limit: refused.limit,
    used: result.used[result.refused] ?? 0,
    retryAfterSeconds: result.retryAfterSeconds,
    tenant: exchange.tenant,
    tool: refused.key.tool,
  };
  return edgeAnswer('quota_exceeded', { quota }, id);
}

/**
 * Each rule's use as this exchange saw it: the highest of its keys' use over their limits (how near the rule
 * is to refusing). chargesOf lists a rule's keys one after another.
 */
function reportUse(
  metrics: QuotaMetrics,
  tenant: string,
  charges: readonly QuotaCharge[],
  used: readonly number[],
): void {
  let rule: QuotaRule | undefined;
  let highest = 0;
  for (let i = 0; i < charges.length; i++) {
    const charge = charges[i]!;
    const ratio = (used[i] ?? 0) / charge.limit;
    if (charge.key.rule !== rule) {
      if (rule !== undefined) metrics.usedRatio(rule.name, tenant, highest);
      rule = charge.key.rule;
      highest = ratio;
    } else if (ratio > highest) highest = ratio;
  }
  if (rule !== undefined) metrics.usedRatio(rule.name, tenant, highest);
}

/**
 * What handles a store's failure: counted, logged at most once per STORE_FAILURE_LOG_MS with how many there
 * were (an outage under load is thousands of exchanges a second, each counted in the metrics already), and
 * decided by onStoreError.
 */
export function storeFailures(
  state: () => Pick<QuotaState, 'config' | 'ledger'>,
  metrics: QuotaMetrics | undefined,
  log: Logger,
): (err: unknown, id: JsonRpcId) => EdgeHttpError | undefined {
  let lastLoggedAt = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return (err, id) => {
    const { config, ledger } = state();
    const kind = err instanceof QuotaStoreError ? err.kind : 'unavailable';
    metrics?.storeError(ledger.store.kind, kind);
    unlogged++;
    const now = performance.now();
    if (now - lastLoggedAt >= STORE_FAILURE_LOG_MS) {
      log.warn(
        { err, store: ledger.store.kind, onStoreError: config.onStoreError, failures: unlogged },
        'the quota store did not answer; quotas.onStoreError decides the exchanges meanwhile',
      );
      lastLoggedAt = now;
      unlogged = 0;
    }
    return config.onStoreError === 'refuse'
      ? edgeAnswer('quota_store_unavailable', { retryAfterSeconds: STORE_RETRY_AFTER_SECONDS }, id)
      : undefined;
  };
}
