// `mcp-edge explain --host NAME`: the host profile that applies, where its numbers come from, and what
// happens to a result over its budget for a tenant and tool.
import type { HostTable } from './host-table.js';
import type { HostBudget } from './profiles.js';

export function formatHostExplanation(
  table: HostTable,
  name: string,
  tenant: string,
  tool: string | undefined,
): string | undefined {
  const profile = table.profile(name) ?? table.profile(table.hostOf(name));
  if (profile === undefined) return undefined;
  const action = table.action(tenant, tool);
  const budgets = (list: readonly HostBudget[]) =>
    list.map((b) => `${b.limit.toLocaleString('en-US')} ${b.unit}`).join(' or ') || 'none';
  const { catalog } = profile;
  const dated = (source: string, date: string) => (date === '' ? source : `${source} (as of ${date})`);
  const rows: [string, string][] = [
    ['host', `${profile.name} (${profile.title})`],
    ['matches', profile.match.join(', ')],
    ['budget', `${budgets(profile.budgets)}${profile.budgets.length > 0 ? ' per tool result' : ''}`],
    [
      'catalog budget',
      catalog === undefined
        ? `none (hosts.${profile.name}.catalogBudgets gives one)`
        : `${budgets(catalog.budgets)} of tool definitions: ${catalog.past}`,
    ],
    ['channels', profile.channels],
    ['past it', profile.past],
    ['source', dated(profile.source, profile.sourceDate)],
    ...(catalog === undefined
      ? []
      : ([['catalog source', dated(catalog.source, catalog.sourceDate)]] as [string, string][])),
    [
      'action',
      `${action.action} for tenant "${tenant}"${tool !== undefined ? `, tool "${tool}"` : ''}, from ${action.source}`,
    ],
  ];
  const width = Math.max(...rows.map((r) => r[0].length));
  return `Host profile for "${name}":\n${rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n')}\n`;
}
