// `mcp-edge explain`: the effective limits for one tenant, method and tool, and where each came from.
import { CEILING_CHOICES, CEILINGS, type Ceiling, describeCeilingValue } from '../core/ceilings.js';
import { type LimitQuery, resolvedCeiling, resolvedChoice } from '../core/limits.js';
import type { EffectiveLimits } from '../core/types.js';

function ceilingText(ceiling: Ceiling, limits: EffectiveLimits): string {
  const { value } = resolvedCeiling(limits, ceiling);
  return value === null ? 'no ceiling' : describeCeilingValue(ceiling, value);
}

export function formatExplanation(
  query: LimitQuery,
  limits: EffectiveLimits,
  tenantConfigured: boolean,
): string {
  const rows: [string, string, string][] = [
    ['mode', limits.mode.value, limits.mode.source],
    ...CEILINGS.map((c): [string, string, string] => [
      c.name,
      ceilingText(c, limits),
      resolvedCeiling(limits, c).source,
    ]),
    ...CEILING_CHOICES.map((c): [string, string, string] => {
      const { value, source } = resolvedChoice(limits, c);
      return [c.name, value, source];
    }),
  ];
  const nameWidth = Math.max(...rows.map((r) => r[0].length));
  const valueWidth = Math.max(...rows.map((r) => r[1].length));
  const subject = [
    `tenant "${query.tenant}"${tenantConfigured ? '' : ' (not in tenants: the defaults apply)'}`,
    query.method !== undefined ? `method "${query.method}"` : 'any method',
    ...(query.tool !== undefined ? [`tool "${query.tool}"`] : []),
  ].join(', ');
  const lines = rows.map(
    ([name, value, source]) => `  ${name.padEnd(nameWidth)}  ${value.padEnd(valueWidth)}  from ${source}`,
  );
  return `Effective limits for ${subject}:\n${lines.join('\n')}\n`;
}
