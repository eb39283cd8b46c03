// `mcp-edge explain --host NAME`: the host profile that applies, where its numbers come from, and what
// happens to a result over its budget for a tenant and tool.
import type { HostTable } from './host-table.js';

export function formatHostExplanation(
  table: HostTable,
  name: string,
  tenant: string,
  tool: string | undefined,
): string | undefined {
  const profile = table.profile(name) ?? table.profile(table.hostOf(name));
  if (profile === undefined) return undefined;
  const action = table.action(tenant, tool);
  const budgets = profile.budgets.map((b) => `${b.limit.toLocaleString('en-US')} ${b.unit}`).join(' or ');
  const rows: [string, string][] = [
    ['host', `${profile.name} (${profile.title})`],
    ['matches', profile.match.join(', ')],
    ['budget', budgets === '' ? 'none' : budgets],
    ['channels', profile.channels],
    ['past it', profile.past],
    [
      'source',
      profile.sourceDate === '' ? profile.source : `${profile.source} (as of ${profile.sourceDate})`,
    ],
    [
      'action',
      `${action.action} for tenant "${tenant}"${tool !== undefined ? `, tool "${tool}"` : ''}, from ${action.source}`,
    ],
  ];
  const width = Math.max(...rows.map((r) => r[0].length));
  return `Host profile for "${name}":\n${rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n')}\n`;
}
