// Quotas as an exchange filter: before a request goes upstream, once every other filter has let it on, its
// charges (requests, request bytes, and the bytes each request reserves for its answer; none for a message of
// a batch a filter refused) are taken from the store, and the exchange is refused whole with a 429 when a key
// has no budget left; each answer delivered gives its reservation back and is charged its real bytes
// (src/quotas/reservations.ts), and what an exchange still holds when it ends goes back. Observe mode charges
// and counts, never refuses. A store that fails or is slow past quotas.storeTimeout: onStoreError allows or
// refuses (503).
import type { Logger } from 'pino';
import type { EdgeConfig, QuotasConfig } from '../../config/schema.js';
import { resolveLimits } from '../../core/limits.js';
import type { EdgeHttpError } from '../../core/refusals/answers.js';
import type { JsonRpcId } from '../../core/types.js';
import type { Exchange } from '../../exchange/exchange.js';
import type { RequestMessage } from '../../inspect/request-body.js';
import type { EdgeMetrics } from '../../metrics/edge-metrics.js';
import { type QuotaMetrics, quotaMetricsOf } from '../../metrics/quota-metrics.js';
import { MemoryQuotaStore } from '../../quotas/memory-store.js';
import { type ExchangeReservations, ReservationLedger } from '../../quotas/reservations.js';
import {
  type AnswerCeilingOf,
  answerKeys,
  chargesOf,
  type QuotaCharge,
  type QuotaKey,
  quotaRulesOf,
} from '../../quotas/rules.js';
import { keysPerTenantOf, quotaStoreOf, storeIdentity } from '../../quotas/select-store.js';
import type { QuotaStore, TakeResult } from '../../quotas/store.js';
import { tenantsOf } from '../../tenancy/tenants.js';
import type { ExchangeFilter, ExchangeRequest } from './exchange-filter.js';
import { ExchangeSlot } from './exchange-slot.js';
import { type QuotaState, quotaDecision, storeFailures } from './quota-decisions.js';

/**
 * What an exchange holds reserved: its answers' reservations, or, while its take waits for the store, whether
 * it has ended meanwhile (what the take reserves then goes back at once).
 */
type Held = ExchangeReservations | 'waiting' | 'ended';

/** The quota filter, or undefined when the config has no `quotas` section (then nothing runs per exchange). */
export function quotasFilter(setup: {
  config: EdgeConfig;
  metrics: EdgeMetrics | undefined;
  log: Logger;
}): ExchangeFilter | undefined {
  const { config, log } = setup;
  if (config.quotas === undefined) return undefined;
  const metrics = setup.metrics !== undefined ? quotaMetricsOf(setup.metrics.registry) : undefined;
  let state = stateOf(config, config.quotas, undefined, log, metrics);
  const held = new ExchangeSlot<Held>();
  const storeFailed = storeFailures(() => state, metrics, log);

  /** The decision on a take's result; an admitted exchange keeps what its take reserved. */
  const admitted = (
    exchange: Exchange,
    request: ExchangeRequest,
    ledger: ReservationLedger,
    charges: readonly QuotaCharge[],
    result: TakeResult,
  ): EdgeHttpError | undefined => {
    const refusal = quotaDecision(state, metrics, exchange, request, charges, result);
    if (refusal === undefined) keepReserved(held, exchange, ledger.open(charges, result.at, idsOf(request)));
    return refusal;
  };
  /** An answer's bytes the store could not take: counted and logged as the store's failure. */
  const chargeFailed = (err: unknown) => void storeFailed(err, null);

  return {
    name: 'quotas',
    charge(exchange: Exchange, request: ExchangeRequest) {
      const { rules, ledger } = state;
      if (rules.length === 0 || request.messages.length === 0) return undefined;
      const charges = chargesFor(state, exchange, request);
      if (charges.length === 0) return undefined;
      // A batch is refused whole, for no one of its ids.
      const id: JsonRpcId = request.batch ? null : (request.messages[0]?.id ?? null);
      let taken: TakeResult | Promise<TakeResult>;
      try {
        taken = ledger.store.take(charges, exchange.mode === 'observe');
      } catch (err) {
        return storeFailed(err, id);
      }
      if (!(taken instanceof Promise)) return admitted(exchange, request, ledger, charges, taken);
      held.set(exchange, 'waiting');
      const started = performance.now();
      return taken.then(
        (result) => {
          metrics?.storeRoundTrip(ledger.store.kind, (performance.now() - started) / 1000);
          return admitted(exchange, request, ledger, charges, result);
        },
        (err: unknown) => storeFailed(err, id),
      );
    },
    responseMessage(exchange, message) {
      if (message.kind !== 'result' && message.kind !== 'error') return;
      const reserved = held.get(exchange);
      const settled = typeof reserved === 'object' ? reserved.settle(message.id) : undefined;
      if (settled !== undefined)
        return chargeAnswer(settled.store, settled.keys, message.deliveredBytes, chargeFailed);
      // Not reserved here (an answer on another stream, a replay, a take the store failed): charged as it comes.
      const { rules, ledger } = state;
      if (rules.length === 0 || message.deliveredBytes <= 0) return;
      const keys = answerKeys(rules, exchange.tenant, message.subject.tool);
      chargeAnswer(ledger.store, keys, message.deliveredBytes, chargeFailed);
    },
    end: (exchange) => releaseHeld(held, exchange),
    close() {
      state.ledger.closeAll();
      return state.ledger.store.close();
    },
    reload(next: EdgeConfig) {
      // A config without the section keeps the filter with no rules: nothing is charged or refused.
      const quotas = next.quotas ?? { ...state.config, rules: [] };
      state = stateOf(next, quotas, state, log, metrics);
    },
  };
}

/** What the request costs under the rules: each request's answer reserved at its ceiling when a rule limits responseBytes. */
function chargesFor(state: QuotaState, exchange: Exchange, request: ExchangeRequest): QuotaCharge[] {
  const ceilingOf = state.reserves ? answerCeilings(exchange, request.messages) : noCeiling;
  return chargesOf(state.rules, exchange.tenant, request.messages, request.bytes, ceilingOf);
}

/** The exchange ended: what it still holds goes back, and a take still waiting gives back what it reserves. */
function releaseHeld(held: ExchangeSlot<Held>, exchange: Exchange): void {
  const reserved = held.get(exchange);
  if (reserved === undefined) return;
  if (typeof reserved === 'object') reserved.releaseAll();
  held.set(exchange, 'ended');
}

/** Each message's id when it is a request (its answer settles its reservation by it). */
function idsOf(request: ExchangeRequest): (JsonRpcId | undefined)[] {
  return request.messages.map((m) => (m.kind === 'request' ? m.id : undefined));
}

/** An admitted exchange keeps what its take reserved, unless it ended meanwhile: then it all goes back. */
function keepReserved(
  held: ExchangeSlot<Held>,
  exchange: Exchange,
  reserved: ExchangeReservations | undefined,
): void {
  if (reserved === undefined) return;
  // The client left while the store answered: nothing will settle what the take reserved.
  if (held.get(exchange) === 'ended') reserved.releaseAll();
  else held.set(exchange, reserved);
}

/** Charges an answer's bytes to `keys`; a failure is the store's. */
function chargeAnswer(
  store: QuotaStore,
  keys: readonly QuotaKey[],
  bytes: number,
  failed: (err: unknown) => void,
): void {
  if (bytes <= 0 || keys.length === 0) return;
  try {
    const added = store.add(keys, bytes);
    if (added instanceof Promise) added.catch(failed);
  } catch (err) {
    failed(err);
  }
}

/** Every request is answered without a ceiling: used when no rule limits responseBytes (nothing is reserved). */
const noCeiling: AnswerCeilingOf = () => null;

/** Each request's answer ceiling, as the ceilings filter will judge its answer. */
function answerCeilings(exchange: Exchange, messages: readonly RequestMessage[]): AnswerCeilingOf {
  return (index) => {
    const message = messages[index];
    if (message === undefined) return null;
    const limits = resolveLimits(exchange.runtime.policy, {
      tenant: exchange.tenant,
      method: message.method,
      tool: message.tool,
    });
    return limits.response.maxMessageBytes.value;
  };
}

/** The filter's state for `quotas`, keeping the running store when the store settings did not change. */
function stateOf(
  config: EdgeConfig,
  quotas: QuotasConfig,
  previous: QuotaState | undefined,
  log: Logger,
  metrics: QuotaMetrics | undefined,
): QuotaState {
  const rules = quotaRulesOf(quotas.rules);
  const tenants = tenantsOf(config).length;
  const keysPerTenant = keysPerTenantOf(quotas, tenants);
  const shape = { rules, config: quotas, reserves: rules.some((r) => r.limits.responseBytes !== undefined) };
  if (previous !== undefined && storeIdentity(previous.config) === storeIdentity(quotas)) {
    const store = previous.ledger.store;
    if (store instanceof MemoryQuotaStore) store.keysPerTenant = keysPerTenant;
    return { ...shape, ledger: previous.ledger, keysPerTenant, tenants };
  }
  if (previous !== undefined) {
    // What the exchanges in flight reserved goes back before the store closes; their answers are charged to
    // the new store as they come.
    previous.ledger.closeAll();
    void previous.ledger.store.close();
  }
  const store = quotaStoreOf(quotas, log, keysPerTenant);
  metrics?.storeStarted(store.kind);
  return { ...shape, ledger: new ReservationLedger(store), keysPerTenant, tenants };
}
