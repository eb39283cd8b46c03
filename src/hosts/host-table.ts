// Which host is calling, and what the operator wants done when a result overflows its budget. Built once per
// config from the built-in profiles and the `hosts:` / `hostBudgets:` sections; pure lookups afterwards.

import { isRecord } from '../core/bytes.js';
import { boundedName } from '../core/client-names.js';
import {
  BUILTIN_HOST_PROFILES,
  type CatalogBudget,
  type HostBudget,
  type HostChannels,
  type HostProfile,
  type HostUnit,
  OTHER_HOST,
} from './profiles.js';
import { DEFAULT_MAX_TOKENIZED_CHARS } from './tokens.js';

/** One entry of `hosts:` as the config schema normalizes it. */
export interface HostConfigEntry {
  title?: string | undefined;
  match?: string[] | undefined;
  budgets?: Partial<Record<HostUnit, number>> | undefined;
  /** The budget of the tool definitions; given, it replaces the built-in's. */
  catalogBudgets?: Partial<Record<HostUnit, number>> | undefined;
  channels?: HostChannels | undefined;
}

export type HostBudgetAction = 'observe' | 'refuse';

interface ActionBlock {
  action?: HostBudgetAction | undefined;
  tools?: Record<string, { action?: HostBudgetAction | undefined }> | undefined;
}

/** `hostBudgets:` as the config schema normalizes it. */
export interface HostBudgetsConfig extends ActionBlock {
  action: HostBudgetAction;
  tenants?: Record<string, ActionBlock> | undefined;
  /** The most characters of one result counted in tokens; past them the count is an estimate. */
  maxTokenizedCharacters?: number | undefined;
}

export const DEFAULT_HOST_BUDGETS: HostBudgetsConfig = { action: 'observe' };

/** A resolved action and the config path it came from. */
export interface ResolvedAction {
  action: HostBudgetAction;
  source: string;
}

/** Who said it: a client's self-reported name. */
export interface ClientIdentity {
  name: string;
  version: string | undefined;
}

/** `params.clientInfo` of an initialize request, or `params._meta["io.modelcontextprotocol/clientInfo"]` of any request. */
export function clientIdentityOf(value: unknown, method: string | undefined): ClientIdentity | undefined {
  if (!isRecord(value) || !isRecord(value.params)) return undefined;
  const params = value.params;
  const meta = isRecord(params._meta) ? params._meta['io.modelcontextprotocol/clientInfo'] : undefined;
  const info = isRecord(meta) ? meta : method === 'initialize' ? params.clientInfo : undefined;
  if (!isRecord(info) || typeof info.name !== 'string' || info.name === '') return undefined;
  // Bounded where it is read: the host table caches by this name, and logs and spans may show it.
  return {
    name: boundedName(info.name),
    version: typeof info.version === 'string' ? boundedName(info.version) : undefined,
  };
}

/** The first product of a User-Agent (`claude-code/2.1.0 (external, cli)` -> `claude-code`). */
export function userAgentProduct(userAgent: string | undefined): string | undefined {
  if (userAgent === undefined) return undefined;
  const product = /^\s*([^\s/]+)/.exec(userAgent)?.[1];
  return product === undefined || product === '' ? undefined : boundedName(product);
}

/** `*` matches any run of characters; everything else literally, case-insensitively. */
function patternRegex(pattern: string): RegExp {
  const escaped = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${escaped}$`, 'i');
}

function budgetsOf(budgets: Partial<Record<HostUnit, number>>): HostBudget[] {
  return Object.entries(budgets)
    .filter((entry): entry is [HostUnit, number] => typeof entry[1] === 'number' && entry[1] > 0)
    .map(([unit, limit]) => ({ unit, limit }));
}

function catalogOf(
  entry: HostConfigEntry,
  builtin: HostProfile | undefined,
  configured: string,
): CatalogBudget | undefined {
  if (entry.catalogBudgets === undefined) return builtin?.catalog;
  const past = builtin?.catalog?.past ?? 'as the operator describes it';
  const source =
    builtin?.catalog !== undefined
      ? `${configured}, over the built-in (${builtin.catalog.source})`
      : configured;
  return {
    budgets: budgetsOf(entry.catalogBudgets),
    past,
    source,
    sourceDate: builtin?.catalog?.sourceDate ?? '',
  };
}

/** A `hosts:` entry over the built-in of the same name (its fields replace the built-in's), or a new host. */
function profileFromConfig(
  name: string,
  entry: HostConfigEntry,
  builtin: HostProfile | undefined,
): HostProfile {
  const configured = `hosts.${name} in the mcp-edge config`;
  return {
    name,
    title: entry.title ?? builtin?.title ?? name,
    match: entry.match ?? builtin?.match ?? [name],
    budgets: entry.budgets !== undefined ? budgetsOf(entry.budgets) : (builtin?.budgets ?? []),
    catalog: catalogOf(entry, builtin, configured),
    channels: entry.channels ?? builtin?.channels ?? 'content',
    past: builtin?.past ?? 'as the operator describes it',
    source: builtin !== undefined ? `${configured}, over the built-in (${builtin.source})` : configured,
    sourceDate: builtin?.sourceDate ?? '',
  };
}

export class HostTable {
  readonly profiles: readonly HostProfile[];
  readonly #matchers: { profile: HostProfile; patterns: RegExp[] }[];
  readonly #byName = new Map<string, HostProfile>();
  /** hostBudgets.maxTokenizedCharacters: what one result's token count may cost is linear in it. */
  readonly maxTokenizedChars: number;
  /** Client names already resolved: clients are few, so this stays small; bounded all the same. */
  readonly #seen = new Map<string, string>();

  constructor(
    hosts: Record<string, HostConfigEntry> = {},
    private readonly budgets: HostBudgetsConfig = DEFAULT_HOST_BUDGETS,
  ) {
    const builtins = new Map(BUILTIN_HOST_PROFILES.map((p) => [p.name, p]));
    const configured = Object.entries(hosts).map(([name, entry]) =>
      profileFromConfig(name, entry, builtins.get(name)),
    );
    const names = new Set(configured.map((p) => p.name));
    // Configured hosts are tried first, so an operator's pattern wins over a built-in's.
    this.profiles = [...configured, ...BUILTIN_HOST_PROFILES.filter((p) => !names.has(p.name))];
    this.#matchers = this.profiles.map((profile) => ({ profile, patterns: profile.match.map(patternRegex) }));
    for (const p of this.profiles) this.#byName.set(p.name, p);
    this.maxTokenizedChars = budgets.maxTokenizedCharacters ?? DEFAULT_MAX_TOKENIZED_CHARS;
  }

  /** The host label for a client name: a profile's name, or `other`. */
  hostOf(clientName: string | undefined): string {
    if (clientName === undefined) return OTHER_HOST;
    const cached = this.#seen.get(clientName);
    if (cached !== undefined) return cached;
    const found = this.#matchers.find((m) => m.patterns.some((re) => re.test(clientName)));
    const host = found?.profile.name ?? OTHER_HOST;
    if (this.#seen.size < 1000) this.#seen.set(clientName, host);
    return host;
  }

  profile(host: string | undefined): HostProfile | undefined {
    return host === undefined ? undefined : this.#byName.get(host);
  }

  /** Every host label this table can produce (the profiles and `other`): the label's bound. */
  labels(): string[] {
    return [...this.profiles.map((p) => p.name), OTHER_HOST];
  }

  /** hostBudgets.action for a tenant and tool: tenant's tool > tenant > tool > default. */
  action(tenant: string, tool: string | undefined): ResolvedAction {
    const own =
      this.budgets.tenants !== undefined && Object.hasOwn(this.budgets.tenants, tenant)
        ? this.budgets.tenants[tenant]
        : undefined;
    const toolOf = (block: ActionBlock | undefined) =>
      tool !== undefined && block?.tools !== undefined && Object.hasOwn(block.tools, tool)
        ? block.tools[tool]?.action
        : undefined;
    const tenantTool = toolOf(own);
    if (tenantTool !== undefined)
      return { action: tenantTool, source: `hostBudgets.tenants.${tenant}.tools.${tool}.action` };
    if (own?.action !== undefined)
      return { action: own.action, source: `hostBudgets.tenants.${tenant}.action` };
    const defaultTool = toolOf(this.budgets);
    if (defaultTool !== undefined) return { action: defaultTool, source: `hostBudgets.tools.${tool}.action` };
    return { action: this.budgets.action, source: 'hostBudgets.action' };
  }
}
