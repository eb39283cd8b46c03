// The limit resolver: config layers + tenant + method + tool -> effective ceilings, each with the
// config path it came from. Pure and cheap: it runs once per exchange.
import { CEILING_CHOICES, CEILINGS, type Ceiling, type CeilingChoice, settingIn } from './ceilings.js';
import type {
  CeilingBlock,
  EffectiveLimits,
  LimitMode,
  LimitPolicy,
  LimitsLayer,
  ResolvedCeiling,
  ResolvedChoice,
} from './types.js';

/** The built-in value of each ceiling, by config path (the table's `builtin`, documented there). */
export const BUILTIN_CEILINGS: Readonly<Record<Ceiling['name'], number>> = Object.freeze(
  Object.fromEntries(CEILINGS.map((c) => [c.name, c.builtin])) as Record<Ceiling['name'], number>,
);

export const BUILTIN_SOURCE = 'built-in default';

/** limits.mode when no layer of the config sets one. */
export const BUILTIN_MODE: LimitMode = 'enforce';

export interface LimitQuery {
  tenant: string;
  method?: string | undefined;
  tool?: string | undefined;
}

/** A block that applies to the query. Its config path is built only if it wins (see blockPath). */
interface ApplicableBlock {
  block: CeilingBlock;
  owner: 'tenant' | 'defaults';
  layer: 'tools' | 'methods' | 'base';
  /** The tool or method name for the tools/methods layers. */
  name: string;
}

/** Own-property lookup: method and tool names come from the wire, so `constructor` must not find Object's. */
function ownEntry<T>(record: Record<string, T> | undefined, key: string | undefined): T | undefined {
  if (record === undefined || key === undefined || !Object.hasOwn(record, key)) return undefined;
  return record[key];
}

function tenantLayer(policy: LimitPolicy, tenant: string): LimitsLayer | undefined {
  return ownEntry(policy.tenants, tenant)?.limits;
}

function pushIfSet(
  blocks: ApplicableBlock[],
  block: CeilingBlock | undefined,
  owner: ApplicableBlock['owner'],
  layer: ApplicableBlock['layer'],
  name: string,
): void {
  if (block !== undefined) blocks.push({ block, owner, layer, name });
}

/** The blocks that apply, most specific first. Tool layers only when a tool is named. */
function applicableBlocks(
  defaults: LimitsLayer,
  tenantLimits: LimitsLayer | undefined,
  method: string | undefined,
  tool: string | undefined,
): ApplicableBlock[] {
  const blocks: ApplicableBlock[] = [];
  if (tool !== undefined) {
    pushIfSet(blocks, ownEntry(tenantLimits?.tools, tool), 'tenant', 'tools', tool);
    pushIfSet(blocks, ownEntry(defaults.tools, tool), 'defaults', 'tools', tool);
  }
  if (method !== undefined) {
    pushIfSet(blocks, ownEntry(tenantLimits?.methods, method), 'tenant', 'methods', method);
    pushIfSet(blocks, ownEntry(defaults.methods, method), 'defaults', 'methods', method);
  }
  pushIfSet(blocks, tenantLimits, 'tenant', 'base', '');
  blocks.push({ block: defaults, owner: 'defaults', layer: 'base', name: '' });
  return blocks;
}

/** The config path of a block, e.g. `tenants.acme.limits.tools.export` or `limits`. */
function blockPath(block: ApplicableBlock, tenant: string): string {
  const root = block.owner === 'tenant' ? `tenants.${tenant}.limits` : 'limits';
  return block.layer === 'base' ? root : `${root}.${block.layer}.${block.name}`;
}

/** What the most specific block that sets a ceiling or choice sets, and its config path; undefined when none does. */
function firstSet<T extends number | string>(
  blocks: readonly ApplicableBlock[],
  tenant: string,
  setting: { name: string },
  read: (block: CeilingBlock) => T | undefined,
): { set: T; source: string } | undefined {
  for (const applicable of blocks) {
    const set = read(applicable.block);
    if (set !== undefined) return { set, source: `${blockPath(applicable, tenant)}.${setting.name}` };
  }
  return undefined;
}

/**
 * The first block that sets the ceiling wins; 0 means no ceiling; hardMaxBytes caps every byte ceiling,
 * "no ceiling" included (a count ceiling is not a size, so it is not clamped).
 */
function resolveCeiling(
  blocks: readonly ApplicableBlock[],
  tenant: string,
  ceiling: Ceiling,
  hardMaxBytes: number | undefined,
): ResolvedCeiling {
  let value: number | null = ceiling.builtin === 0 ? null : ceiling.builtin;
  let source = BUILTIN_SOURCE;
  const found = firstSet(blocks, tenant, ceiling, (block) => settingIn(block, ceiling));
  if (found !== undefined) {
    value = found.set === 0 ? null : found.set;
    source = found.source;
  }
  if (ceiling.unit === 'bytes' && hardMaxBytes !== undefined && (value === null || value > hardMaxBytes)) {
    return { value: hardMaxBytes, source: `limits.hardMaxBytes (clamped from ${source})` };
  }
  return { value, source };
}

/** The first block that sets the choice wins; else its built-in value. */
function resolveChoice(
  blocks: readonly ApplicableBlock[],
  tenant: string,
  choice: CeilingChoice,
): ResolvedChoice<string> {
  const found = firstSet(blocks, tenant, choice, (block) => settingIn(block, choice));
  return found === undefined
    ? { value: choice.builtin, source: BUILTIN_SOURCE }
    : { value: found.set, source: found.source };
}

/** A resolved choice of the effective limits, by its table entry. */
export function resolvedChoice(limits: EffectiveLimits, choice: CeilingChoice): ResolvedChoice<string> {
  return (limits[choice.direction] as unknown as Record<string, ResolvedChoice<string>>)[choice.key]!;
}

/** A resolved ceiling of the effective limits, by its table entry. */
export function resolvedCeiling(limits: EffectiveLimits, ceiling: Ceiling): ResolvedCeiling {
  return (limits[ceiling.direction] as Record<string, ResolvedCeiling>)[ceiling.key] as ResolvedCeiling;
}

function resolveMode(
  defaults: LimitsLayer,
  tenantLimits: LimitsLayer | undefined,
  tenant: string,
): { value: LimitMode; source: string } {
  if (tenantLimits?.mode !== undefined) {
    return { value: tenantLimits.mode, source: `tenants.${tenant}.limits.mode` };
  }
  if (defaults.mode !== undefined) return { value: defaults.mode, source: 'limits.mode' };
  return { value: BUILTIN_MODE, source: BUILTIN_SOURCE };
}

/** Resolved limits per policy (a reload makes a new policy object, so its cache starts empty). */
const resolvedByPolicy = new WeakMap<LimitPolicy, LimitsCache>();

/**
 * tenant -> method -> tool -> limits, keyed only by names the policy lists: every other name resolves as no
 * name does (no block names it), so the cache is bounded by the config, never by what clients send. Map keys
 * tell `undefined` from any string, so no key can be forged.
 */
interface LimitsCache {
  methods: ReadonlySet<string>;
  tools: ReadonlySet<string>;
  byTenant: Map<string | undefined, Map<string | undefined, Map<string | undefined, EffectiveLimits>>>;
}

function cacheOf(policy: LimitPolicy): LimitsCache {
  let cache = resolvedByPolicy.get(policy);
  if (cache === undefined) {
    const layers = [policy.defaults, ...Object.values(policy.tenants).map((t) => t.limits)];
    cache = {
      methods: new Set(layers.flatMap((layer) => Object.keys(layer?.methods ?? {}))),
      tools: new Set(layers.flatMap((layer) => Object.keys(layer?.tools ?? {}))),
      byTenant: new Map(),
    };
    resolvedByPolicy.set(policy, cache);
  }
  return cache;
}

function listed(names: ReadonlySet<string>, name: string | undefined): string | undefined {
  return name !== undefined && names.has(name) ? name : undefined;
}

/**
 * The effective ceilings and mode for one exchange. An unknown tenant gets the defaults. Resolved once per
 * (policy, tenant, method, tool) the policy lists, and shared: the result is frozen.
 */
export function resolveLimits(policy: LimitPolicy, query: LimitQuery): EffectiveLimits {
  const cache = cacheOf(policy);
  const tenant = Object.hasOwn(policy.tenants, query.tenant) ? query.tenant : undefined;
  const method = listed(cache.methods, query.method);
  const tool = listed(cache.tools, query.tool);
  let byMethod = cache.byTenant.get(tenant);
  if (byMethod === undefined) {
    byMethod = new Map();
    cache.byTenant.set(tenant, byMethod);
  }
  let byTool = byMethod.get(method);
  if (byTool === undefined) {
    byTool = new Map();
    byMethod.set(method, byTool);
  }
  let limits = byTool.get(tool);
  if (limits === undefined) {
    limits = deepFreeze(computeLimits(policy, { tenant: query.tenant, method, tool }));
    byTool.set(tool, limits);
  }
  return limits;
}

function deepFreeze<T extends object>(value: T): T {
  for (const member of Object.values(value)) {
    if (typeof member === 'object' && member !== null) deepFreeze(member);
  }
  return Object.freeze(value);
}

function computeLimits(policy: LimitPolicy, query: LimitQuery): EffectiveLimits {
  const { tenant, method, tool } = query;
  const defaults = policy.defaults;
  const tenantLimits = tenantLayer(policy, tenant);
  const blocks = applicableBlocks(defaults, tenantLimits, method, tool);
  const hard = defaults.hardMaxBytes;
  const sections: Record<Ceiling['direction'], Record<string, ResolvedCeiling | ResolvedChoice<string>>> = {
    request: {},
    response: {},
  };
  for (const ceiling of CEILINGS)
    sections[ceiling.direction][ceiling.key] = resolveCeiling(blocks, tenant, ceiling, hard);
  for (const choice of CEILING_CHOICES)
    sections[choice.direction][choice.key] = resolveChoice(blocks, tenant, choice);
  return {
    mode: resolveMode(defaults, tenantLimits, tenant),
    // Built key by key from the tables above: every key of both types is there.
    request: sections.request as unknown as EffectiveLimits['request'],
    response: sections.response as unknown as EffectiveLimits['response'],
  };
}

/** Every (method, tool) pair whose ceilings can differ from the tenant's base: one probe per configured override. */
function overrideProbes(policy: LimitPolicy, tenant: string): LimitQuery[] {
  const tenantLimits = tenantLayer(policy, tenant);
  const probes: LimitQuery[] = [{ tenant }];
  const methods = new Set([
    ...Object.keys(policy.defaults.methods ?? {}),
    ...Object.keys(tenantLimits?.methods ?? {}),
  ]);
  for (const method of methods) probes.push({ tenant, method });
  const tools = new Set([
    ...Object.keys(policy.defaults.tools ?? {}),
    ...Object.keys(tenantLimits?.tools ?? {}),
  ]);
  // A tool's own block may leave a key unset, so it falls through to whatever tools/call resolves to.
  for (const tool of tools) probes.push({ tenant, method: 'tools/call', tool });
  return probes;
}

function largestCeiling(
  policy: LimitPolicy,
  tenant: string,
  pick: (limits: EffectiveLimits) => ResolvedCeiling,
): number | null {
  let largest = 0;
  for (const probe of overrideProbes(policy, tenant)) {
    const bytes = pick(resolveLimits(policy, probe)).value;
    if (bytes === null) return null;
    if (bytes > largest) largest = bytes;
  }
  return largest;
}

/** The largest response.maxMessageBytes reachable for this tenant over any method/tool (null = some path has no ceiling). The proxy holds an SSE event/JSON body up to this while it does not yet know which message it is. */
export function maxResponseCeiling(policy: LimitPolicy, tenant: string): number | null {
  return largestCeiling(policy, tenant, (limits) => limits.response.maxMessageBytes);
}

/** The largest request.maxBodyBytes reachable for this tenant over any method/tool (null = some path has no ceiling). The proxy reads a request body up to this before it knows the method and tool inside. */
export function maxRequestBodyCeiling(policy: LimitPolicy, tenant: string): number | null {
  return largestCeiling(policy, tenant, (limits) => limits.request.maxBodyBytes);
}
