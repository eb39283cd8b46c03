// `mcp-edge explain`: the effective limits for one tenant, method and tool, and where each came from.
import { CEILINGS, type Ceiling, describeCeilingValue } from '../core/ceilings.js';
import { resolvedCeiling } from '../core/limits.js';
import type { EffectiveLimits } from '../core/types.js';
import { redactUrl } from '../core/url-credentials.js';
import { stdioProgramName } from '../upstream/stdio-command.js';
import type { EdgeConfig } from './schema.js';

/** The upstream in one line: its URL (credentials redacted), or the stdio program, never its arguments or env. */
export function describeUpstream(config: EdgeConfig): string {
  const stdio = config.upstream.stdio;
  if (stdio === undefined) return redactUrl(config.upstream.url ?? '');
  const envNames = Object.keys(stdio.env);
  return `stdio server "${stdioProgramName(stdio.command[0] ?? '')}" (${stdio.command.length - 1} argument(s); env: ${envNames.length > 0 ? envNames.join(', ') : 'PATH and HOME only'}; one process per session, at most ${stdio.maxProcesses})`;
}

function ceilingText(ceiling: Ceiling, limits: EffectiveLimits): string {
  const { value } = resolvedCeiling(limits, ceiling);
  return value === null ? 'no ceiling' : describeCeilingValue(ceiling, value);
}

export function formatExplanation(limits: EffectiveLimits, tenantConfigured: boolean): string {
  const rows: [string, string, string][] = [
    ['mode', limits.mode.value, limits.mode.source],
    ...CEILINGS.map((c): [string, string, string] => [
      c.name,
      ceilingText(c, limits),
      resolvedCeiling(limits, c).source,
    ]),
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
