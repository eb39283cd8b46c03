// Host budgets as an exchange filter: a tools/call result the ceilings let on is measured as the host that
// called would see it (src/hosts), observed, and replaced whole when hostBudgets.action is refuse for its
// tenant and tool.
import { judgeHostBudget } from '../../hosts/host-judge.js';
import type { AnswerCheck } from '../../inspect/message-verdict.js';
import type { ExchangeFilter } from './exchange-filter.js';

/** The host-budget step: only a tools/call result, on an exchange that carries its host table. */
export const hostBudgetCheck: AnswerCheck = (ctx, subject, id, measurement, value) => {
  if (subject.method !== 'tools/call' || ctx.hosts === undefined) return undefined;
  return judgeHostBudget(ctx.hosts, value, measurement, subject, id, (o) => ctx.observer.hostBudget?.(o));
};

export function hostBudgetsFilter(): ExchangeFilter {
  return { name: 'host-budgets', answerChecks: [hostBudgetCheck] };
}
