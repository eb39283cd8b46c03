// `mcp-edge explain`: the effective limits for one tenant, method and tool, and where each came from.
import { describeBytes } from '../core/errors.js';
import type { EffectiveLimits, ResolvedCeiling } from '../core/types.js';

function ceiling(value: ResolvedCeiling): string {
  return value.bytes === null ? 'no ceiling' : describeBytes(value.bytes);
}

export function formatExplanation(limits: EffectiveLimits, tenantConfigured: boolean): string {
  const rows: [string, string, string][] = [
    ['mode', limits.mode.value, limits.mode.source],
    ['request.maxBodyBytes', ceiling(limits.request.maxBodyBytes), limits.request.maxBodyBytes.source],
    [
      'request.maxMessageBytes',
      ceiling(limits.request.maxMessageBytes),
      limits.request.maxMessageBytes.source,
    ],
    [
      'response.maxMessageBytes',
      ceiling(limits.response.maxMessageBytes),
      limits.response.maxMessageBytes.source,
    ],
  ];
  const nameWidth = Math.max(...rows.map((r) => r[0].length));
  const valueWidth = Math.max(...rows.map((r) => r[1].length));
  const subject = [
    `tenant "${limits.tenant}"${tenantConfigured ? '' : ' (not in tenants: the defaults apply)'}`,
    limits.method !== undefined ? `method "${limits.method}"` : 'any method',
    ...(limits.tool !== undefined ? [`tool "${limits.tool}"`] : []),
  ].join(', ');
  const lines = rows.map(
    ([name, value, source]) => `  ${name.padEnd(nameWidth)}  ${value.padEnd(valueWidth)}  from ${source}`,
  );
  return `Effective limits for ${subject}:\n${lines.join('\n')}\n`;
}
