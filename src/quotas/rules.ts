// Which quota rules apply to an exchange, under which keys, and what it costs each of them: plain functions
// over the config's rules and a request's messages (no store, no socket).
import type { QuotaRuleConfig } from '../config/schema.js';
import { formatDuration } from '../config/sizes.js';

export type QuotaMeasure = 'requests' | 'requestBytes' | 'responseBytes';

/** One rule, ready to be asked: its limits by measure, the tenants and tools it covers. */
export interface QuotaRule {
  name: string;
  windowMs: number;
  /** The window as the config writes it ("1m"), for errors and explain. */
  window: string;
  limits: Partial<Record<QuotaMeasure, number>>;
  tenants: ReadonlySet<string> | undefined;
  tools: ReadonlySet<string> | undefined;
  perTool: boolean;
  /**
   * Its keys without a tool, per measure and tenant, made once: an exchange asks for the same few and a store
   * finds a key made before by a string it hashed before. Tenants come from the config, so this is bounded;
   * keys with a tool (a client names it) are made per exchange.
   */
  readonly tenantKeys: Record<QuotaMeasure, Map<string, QuotaKey>>;
}

export const MEASURES: readonly QuotaMeasure[] = ['requests', 'requestBytes', 'responseBytes'];

export function quotaRulesOf(rules: readonly QuotaRuleConfig[]): QuotaRule[] {
  return rules.map((rule) => {
    const limits: Partial<Record<QuotaMeasure, number>> = {};
    for (const measure of MEASURES) {
      const value = rule[measure];
      if (value !== undefined) limits[measure] = value;
    }
    return {
      name: rule.name,
      windowMs: rule.window,
      window: formatDuration(rule.window),
      limits,
      tenants: rule.tenants !== undefined ? new Set(rule.tenants) : undefined,
      tools: rule.tools !== undefined ? new Set(rule.tools) : undefined,
      perTool: rule.per === 'tenant+tool',
      tenantKeys: { requests: new Map(), requestBytes: new Map(), responseBytes: new Map() },
    };
  });
}

/** What a store keeps one count under: a rule's measure for a tenant (and a tool). */
export interface QuotaKey {
  rule: QuotaRule;
  measure: QuotaMeasure;
  tenant: string;
  tool: string | undefined;
  /** The key as stores name it (rule, measure, tenant, tool), unique per count. */
  id: string;
}

/** One key an exchange asks about: what it charges now (0 for answers, charged when delivered). */
export interface QuotaCharge {
  key: QuotaKey;
  limit: number;
  cost: number;
}

/** A message of a request as quotas see it. */
export interface QuotaMessage {
  kind: string;
  tool: string | undefined;
  bytes: number;
}

export function keyOf(
  rule: QuotaRule,
  measure: QuotaMeasure,
  tenant: string,
  tool: string | undefined,
): QuotaKey {
  const keyTool = rule.perTool ? tool : undefined;
  if (keyTool !== undefined) return newKey(rule, measure, tenant, keyTool);
  const made = rule.tenantKeys[measure];
  let key = made.get(tenant);
  if (key === undefined) {
    key = newKey(rule, measure, tenant, undefined);
    made.set(tenant, key);
  }
  return key;
}

function newKey(
  rule: QuotaRule,
  measure: QuotaMeasure,
  tenant: string,
  keyTool: string | undefined,
): QuotaKey {
  // The tenant in braces is a Redis hash tag: every key of one tenant would share a slot of a sharded store.
  // The window is part of the key: a reload that changes it starts the count again, never reads slots of another size.
  const id = `{${tenant}}:${rule.name}:${measure}:${rule.windowMs}${keyTool !== undefined ? `:${keyTool}` : ''}`;
  return { rule, measure, tenant, tool: keyTool, id };
}

/** Whether `rule` covers this tenant at all. */
function coversTenant(rule: QuotaRule, tenant: string): boolean {
  return rule.tenants === undefined || rule.tenants.has(tenant);
}

/**
 * Whether a message counts for `rule`: a rule with tools (or per tenant+tool) counts only tools/call of its
 * tools (of any tool, per tenant+tool without a list); a rule without counts every message.
 */
function countsMessage(rule: QuotaRule, tool: string | undefined): boolean {
  if (rule.tools !== undefined) return tool !== undefined && rule.tools.has(tool);
  return !rule.perTool || tool !== undefined;
}

/**
 * What an exchange's request asks of the rules: per key, the requests and request bytes it costs, and a zero
 * charge for each responseBytes key its answers will be charged to (asked now: no budget left refuses).
 */
export function chargesOf(
  rules: readonly QuotaRule[],
  tenant: string,
  messages: readonly QuotaMessage[],
  bodyBytes: number,
): QuotaCharge[] {
  const charges: QuotaCharge[] = [];
  // One message charges each key once (a rule's keys differ by measure): nothing to merge. A batch may charge
  // a key per message, merged by key id (a map: a hostile batch's thousands of messages stay linear).
  const merged = messages.length > 1 ? new Map<string, QuotaCharge>() : undefined;
  for (const rule of rules) {
    if (!coversTenant(rule, tenant)) continue;
    // A rule over every message charges the body's bytes as sent (batch brackets included).
    const wholeBody = rule.tools === undefined && !rule.perTool;
    for (const message of messages) {
      if (!countsMessage(rule, message.tool)) continue;
      if (message.kind === 'request') charge(charges, merged, rule, 'requests', tenant, message.tool, 1);
      if (!wholeBody) charge(charges, merged, rule, 'requestBytes', tenant, message.tool, message.bytes);
      if (message.kind === 'request') charge(charges, merged, rule, 'responseBytes', tenant, message.tool, 0);
    }
    if (wholeBody && messages.length > 0)
      charge(charges, merged, rule, 'requestBytes', tenant, undefined, bodyBytes);
  }
  return charges;
}

/** Adds `cost` to the charge of the rule's key for `measure`, when the rule limits that measure. */
function charge(
  charges: QuotaCharge[],
  merged: Map<string, QuotaCharge> | undefined,
  rule: QuotaRule,
  measure: QuotaMeasure,
  tenant: string,
  tool: string | undefined,
  cost: number,
): void {
  const limit = rule.limits[measure];
  if (limit === undefined) return;
  const key = keyOf(rule, measure, tenant, tool);
  const known = merged?.get(key.id);
  if (known !== undefined) {
    known.cost += cost;
    return;
  }
  const made = { key, limit, cost };
  charges.push(made);
  merged?.set(key.id, made);
}

/** The responseBytes keys an answer about `tool` is charged to. */
export function answerKeys(
  rules: readonly QuotaRule[],
  tenant: string,
  tool: string | undefined,
): QuotaKey[] {
  const keys: QuotaKey[] = [];
  for (const rule of rules) {
    if (rule.limits.responseBytes === undefined || !coversTenant(rule, tenant)) continue;
    if (countsMessage(rule, tool)) keys.push(keyOf(rule, 'responseBytes', tenant, tool));
  }
  return keys;
}

/** Whether a key with `used` of `limit` has room for `cost`: requests fit whole; bytes need room for one byte. */
export function hasRoom(measure: QuotaMeasure, used: number, limit: number, cost: number): boolean {
  return measure === 'requests' ? used + cost <= limit : used < limit;
}

/** The rules that apply to a tenant (and a tool), for explain. */
export function rulesFor(rules: readonly QuotaRule[], tenant: string, tool: string | undefined): QuotaRule[] {
  return rules.filter(
    (rule) =>
      coversTenant(rule, tenant) &&
      (rule.tools === undefined
        ? !rule.perTool || tool !== undefined
        : tool !== undefined && rule.tools.has(tool)),
  );
}
