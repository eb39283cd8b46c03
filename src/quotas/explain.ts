// `mcp-edge explain --tenant T [--tool X]`: the quota rules that apply, and their current use when the store
// can be read from outside the running edge (Redis); the memory store's counts live only in the edge.
import pino from 'pino';
import type { QuotasConfig } from '../config/schema.js';
import { formatSize } from '../config/sizes.js';
import { RedisQuotaStore } from './redis-store.js';
import { keyOf, MEASURES, type QuotaMeasure, type QuotaRule, quotaRulesOf, rulesFor } from './rules.js';
import { describeStore } from './select-store.js';

/** How long explain waits for Redis: a command line can wait longer than an exchange. */
const EXPLAIN_STORE_TIMEOUT_MS = 2000;

function amount(measure: QuotaMeasure, value: number): string {
  return measure === 'requests' ? `${value.toLocaleString('en-US')} requests` : formatSize(value);
}

function scopeOf(rule: QuotaRule): string {
  const tenants = rule.tenants !== undefined ? `tenants ${[...rule.tenants].join(', ')}` : 'every tenant';
  const tools = rule.tools !== undefined ? `, tools ${[...rule.tools].join(', ')}` : '';
  return `${tenants}${tools}, per ${rule.perTool ? 'tenant+tool' : 'tenant'}`;
}

export async function formatQuotaExplanation(
  quotas: QuotasConfig | undefined,
  tenant: string,
  tool: string | undefined,
): Promise<string> {
  if (quotas === undefined || quotas.rules.length === 0)
    return 'Quotas: none (no quotas rule in the config).\n';
  const rules = rulesFor(quotaRulesOf(quotas.rules), tenant, tool);
  const subject = `tenant "${tenant}"${tool !== undefined ? `, tool "${tool}"` : ''}`;
  if (rules.length === 0) return `Quotas for ${subject}: no rule applies.\n`;
  const rows = rules.flatMap((rule) =>
    MEASURES.flatMap((measure) => {
      const limit = rule.limits[measure];
      return limit === undefined ? [] : [{ rule, measure, limit, key: keyOf(rule, measure, tenant, tool) }];
    }),
  );
  let use: number[] | undefined;
  let unknown: string;
  if (quotas.store === 'memory') {
    unknown = 'current use: kept in the running edge (store: memory); it cannot be read from outside it';
  } else {
    const store = new RedisQuotaStore(quotas.store, EXPLAIN_STORE_TIMEOUT_MS, pino({ level: 'silent' }));
    unknown = `current use: unknown, ${describeStore(quotas.store)} did not answer`;
    try {
      use = await store.use(rows.map((row) => row.key));
    } catch {
      use = undefined;
    } finally {
      await store.close();
    }
  }
  const lines = rows.map(({ rule, measure, limit }, index) => {
    const used = use?.[index];
    const now =
      used !== undefined ? `, used now ${amount(measure, used)} (${Math.round((used / limit) * 100)}%)` : '';
    return `  ${rule.name}: ${measure} ${amount(measure, limit)} per ${rule.window} (${scopeOf(rule)})${now}`;
  });
  const footer =
    use === undefined ? `  (${unknown})\n` : `  (use read from ${describeStore(quotas.store)})\n`;
  return `Quotas for ${subject}:\n${lines.join('\n')}\n${footer}`;
}
