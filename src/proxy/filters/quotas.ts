// Quotas as an exchange filter: before a request goes upstream its charges (requests, request bytes, a check
// of the answers' budget) are taken from the store, and the exchange is refused whole with a 429 when a key
// has no budget left; each answer delivered is charged its bytes. Observe mode charges and counts, never
// refuses. A store that fails or is slow past quotas.storeTimeout: onStoreError allows or refuses (503).
import type { Logger } from 'pino';
import type { EdgeConfig, QuotasConfig } from '../../config/schema.js';
import { type EdgeHttpError, quotaRefusal, quotaStoreRefusal } from '../../core/errors.js';
import type { JsonRpcId } from '../../core/types.js';
import type { EdgeMetrics } from '../../metrics/edge-metrics.js';
import { type QuotaMetrics, quotaMetricsOf } from '../../metrics/quota-metrics.js';
import { answerKeys, chargesOf, type QuotaCharge, type QuotaRule, quotaRulesOf } from '../../quotas/rules.js';
import { quotaStoreOf, storeIdentity } from '../../quotas/select-store.js';
import { type QuotaStore, QuotaStoreError, type TakeResult } from '../../quotas/store.js';
import type { Exchange } from '../exchange.js';
import type { ExchangeFilter, ExchangeRequest } from './exchange-filter.js';

/** What a refusal for an unavailable store tells the client to wait. */
const STORE_RETRY_AFTER_SECONDS = 1;
/** The most often a failing store is logged (the count of failures since goes with it). */
const STORE_FAILURE_LOG_MS = 10_000;

interface QuotaState {
  rules: QuotaRule[];
  config: QuotasConfig;
  store: QuotaStore;
}

/** The quota filter, or undefined when the config has no `quotas` section (then nothing runs per exchange). */
export function quotasFilter(setup: {
  config: EdgeConfig;
  metrics: EdgeMetrics | undefined;
  log: Logger;
}): ExchangeFilter | undefined {
  const { config, log } = setup;
  if (config.quotas === undefined) return undefined;
  const metrics = setup.metrics !== undefined ? quotaMetricsOf(setup.metrics.registry) : undefined;
  let state = stateOf(config.quotas, undefined, log, metrics);

  // Failures are logged at most once per STORE_FAILURE_LOG_MS, with how many there were: an outage under load
  // is thousands of exchanges a second, and each is counted in the metrics already.
  let lastLoggedAt = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  /** A store failure: counted, logged, and decided by onStoreError. */
  const storeFailed = (err: unknown, id: JsonRpcId): EdgeHttpError | undefined => {
    const kind = err instanceof QuotaStoreError ? err.kind : 'unavailable';
    metrics?.storeError(state.store.kind, kind);
    unlogged++;
    const now = performance.now();
    if (now - lastLoggedAt >= STORE_FAILURE_LOG_MS) {
      log.warn(
        { err, store: state.store.kind, onStoreError: state.config.onStoreError, failures: unlogged },
        'the quota store did not answer; quotas.onStoreError decides the exchanges meanwhile',
      );
      lastLoggedAt = now;
      unlogged = 0;
    }
    return state.config.onStoreError === 'refuse'
      ? quotaStoreRefusal(id, STORE_RETRY_AFTER_SECONDS)
      : undefined;
  };

  const decide = (
    exchange: Exchange,
    charges: readonly QuotaCharge[],
    result: TakeResult,
    id: JsonRpcId,
  ): EdgeHttpError | undefined => {
    if (metrics !== undefined) reportUse(metrics, exchange.tenant, charges, result.used);
    const refused = charges[result.refused];
    if (refused === undefined) return undefined;
    const observe = exchange.mode === 'observe';
    metrics?.exceeded(refused.key.rule.name, exchange.tenant, observe ? 'observed' : 'refused');
    if (observe) return undefined;
    return quotaRefusal(
      {
        rule: refused.key.rule.name,
        window: refused.key.rule.window,
        measure: refused.key.measure,
        limit: refused.limit,
        used: result.used[result.refused] ?? 0,
        retryAfterSeconds: result.retryAfterSeconds,
        tenant: exchange.tenant,
        tool: refused.key.tool,
      },
      id,
    );
  };

  return {
    name: 'quotas',
    request(exchange: Exchange, request: ExchangeRequest) {
      const { rules, store } = state;
      if (rules.length === 0 || request.messages.length === 0) return undefined;
      const charges = chargesOf(rules, exchange.tenant, request.messages, request.bytes);
      if (charges.length === 0) return undefined;
      // A batch is refused whole, for no one of its ids.
      const id = request.batch ? null : (request.messages[0]?.id ?? null);
      let taken: TakeResult | Promise<TakeResult>;
      try {
        taken = store.take(charges, exchange.mode === 'observe');
      } catch (err) {
        return storeFailed(err, id);
      }
      if (!(taken instanceof Promise)) return decide(exchange, charges, taken, id);
      const started = performance.now();
      return taken.then(
        (result) => {
          metrics?.storeRoundTrip(store.kind, (performance.now() - started) / 1000);
          return decide(exchange, charges, result, id);
        },
        (err: unknown) => storeFailed(err, id),
      );
    },
    responseMessage(exchange, message) {
      if (message.kind !== 'result' && message.kind !== 'error') return;
      const { rules, store } = state;
      if (rules.length === 0 || message.deliveredBytes <= 0) return;
      const keys = answerKeys(rules, exchange.tenant, message.subject.tool);
      if (keys.length === 0) return;
      const fail = (err: unknown) => void storeFailed(err, null);
      try {
        const added = store.add(keys, message.deliveredBytes);
        if (added instanceof Promise) added.catch(fail);
      } catch (err) {
        fail(err);
      }
    },
    close() {
      return state.store.close();
    },
    reload(next: EdgeConfig) {
      // A config without the section keeps the filter with no rules: nothing is charged or refused.
      const quotas = next.quotas ?? { ...state.config, rules: [] };
      state = stateOf(quotas, state, log, metrics);
    },
  };
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

/** The filter's state for `config`, keeping the running store when the store settings did not change. */
function stateOf(
  config: QuotasConfig,
  previous: QuotaState | undefined,
  log: Logger,
  metrics: QuotaMetrics | undefined,
): QuotaState {
  const rules = quotaRulesOf(config.rules);
  if (previous !== undefined && storeIdentity(previous.config) === storeIdentity(config))
    return { rules, config, store: previous.store };
  if (previous !== undefined) void previous.store.close();
  const store = quotaStoreOf(config, log);
  metrics?.storeStarted(store.kind);
  return { rules, config, store };
}
