// The host-budget step of judging a message: a tools/call result from the upstream, measured as the host
// that asked for it would see it, observed, and replaced whole when the operator chose `refuse` for that
// tenant and tool. Kept apart from the transport ceilings: its unit is the host's, its action its own.

import { isRecord } from '../core/bytes.js';
import { edgeError, type JsonRpcErrorMessage } from '../core/refusals/answers.js';
import type { HostBudgetViolation } from '../core/refusals/facts.js';
import type { JsonRpcId, MessageMeasurement, MessageSubject } from '../core/types.js';
import type { HostTable } from './host-table.js';
import type { HostUnit } from './profiles.js';
import { measureForHost } from './result-size.js';

/** One tool result measured for the host that called. */
export interface HostBudgetObservation {
  host: string;
  tenant: string;
  tool: string | undefined;
  /** Largest size/budget over the host's budgets. */
  share: number;
  /** Set when the result is over a budget: what happened to it. */
  over:
    | {
        unit: HostUnit;
        budget: number;
        observed: number;
        /** Set when `observed` is an estimate (a token count past hostBudgets.maxTokenizedCharacters). */
        estimated?: true;
        action: 'refused' | 'observed';
      }
    | undefined;
}

/** What the judge needs of the exchange: the host table of its runtime and its tenant. */
export interface HostJudgeContext {
  hosts: HostTable;
  tenant: string;
  /** limits.mode is observe: the edge forwards everything, so `refuse` is recorded as observed. */
  observeOnly?: boolean | undefined;
}

function resultOf(value: unknown): Record<string, unknown> {
  return isRecord(value) && isRecord(value.result) ? value.result : {};
}

/**
 * Judges a tools/call result against the budget of the host that called (`subject.host`). Returns the error
 * that replaces it when it is over and the action is `refuse`; otherwise undefined (the result goes on as sent).
 */
export function judgeHostBudget(
  ctx: HostJudgeContext,
  /** The message's value, read only when the result is near a budget (a scanned message parses on demand). */
  value: () => unknown,
  measurement: MessageMeasurement,
  subject: MessageSubject,
  id: JsonRpcId | undefined,
  observe: ((o: HostBudgetObservation) => void) | undefined,
): JsonRpcErrorMessage | undefined {
  const profile = ctx.hosts.profile(subject.host);
  const channels = measurement.channels;
  if (profile === undefined || channels === undefined || profile.budgets.length === 0) return undefined;
  const size = measureForHost(profile, () => resultOf(value()), channels, ctx.hosts.maxTokenizedChars);
  const over = size.over;
  const configured = over !== undefined ? ctx.hosts.action(ctx.tenant, subject.tool).action : undefined;
  const action = configured === 'refuse' && ctx.observeOnly === true ? 'observe' : configured;
  observe?.({
    host: profile.name,
    tenant: ctx.tenant,
    tool: subject.tool,
    share: size.share,
    over:
      over !== undefined
        ? {
            unit: over.unit,
            budget: over.limit,
            observed: over.observed,
            ...(over.estimated ? { estimated: true as const } : {}),
            action: action === 'refuse' ? 'refused' : 'observed',
          }
        : undefined,
  });
  if (over === undefined || action !== 'refuse') return undefined;
  const violation: HostBudgetViolation = {
    host: profile.name,
    title: profile.title,
    unit: over.unit,
    budget: over.limit,
    observed: over.observed,
    observedIsLowerBound: over.lowerBound,
    observedIsEstimate: over.estimated,
    tenant: ctx.tenant,
    tool: subject.tool,
    id: id ?? null,
  };
  return edgeError('answer_over_host_budget', { violation }, violation.id);
}
