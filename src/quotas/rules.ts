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

/**
 * One key an exchange asks about: what it charges now. A responseBytes key is charged the answers' reservations
 * (an answer's response ceiling, at most the limit, per request): the answers' real bytes replace them as they
 * are delivered (src/proxy/filters/quota-reservations.ts).
 */
export interface QuotaCharge {
  key: QuotaKey;
  limit: number;
  cost: number;
  /**
   * The largest part of the cost one message (or one answer) brings: a bytes key admits the charge while every
   * part but the largest fits under the limit (roomNeeded), as if the parts came one after another.
   */
  largest: number;
  /** A responseBytes key's reservation per request message, by the message's index in the request. */
  reserved?: { message: number; amount: number }[];
}

/** A message of a request as quotas see it. */
export interface QuotaMessage {
  kind: string;
  tool: string | undefined;
  bytes: number;
}

/** The most bytes the answer to the request at this index may take (its response.maxMessageBytes); null: none. */
export type AnswerCeilingOf = (message: number) => number | null;

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
 * What an exchange's request asks of the rules: per key, the requests and request bytes it costs, and the bytes
 * each request reserves for its answer under every responseBytes key it will be charged to.
 */
export function chargesOf(
  rules: readonly QuotaRule[],
  tenant: string,
  messages: readonly QuotaMessage[],
  bodyBytes: number,
  answerCeilingOf: AnswerCeilingOf,
): QuotaCharge[] {
  const charges: QuotaCharge[] = [];
  // One message charges each key once (a rule's keys differ by measure): nothing to merge. A batch may charge
  // a key per message, merged by key id (a map: a hostile batch's thousands of messages stay linear).
  const merged = messages.length > 1 ? new Map<string, QuotaCharge>() : undefined;
  for (const rule of rules) {
    if (!coversTenant(rule, tenant)) continue;
    // A rule over every message charges the body's bytes as sent (batch brackets included).
    const wholeBody = rule.tools === undefined && !rule.perTool;
    const answerLimit = rule.limits.responseBytes;
    messages.forEach((message, index) => {
      if (!countsMessage(rule, message.tool)) return;
      const tool = message.tool;
      if (message.kind === 'request') charge(charges, merged, rule, 'requests', tenant, tool, 1);
      if (!wholeBody) charge(charges, merged, rule, 'requestBytes', tenant, tool, message.bytes);
      if (message.kind === 'request' && answerLimit !== undefined) {
        // An answer takes at most its ceiling; one without (or over the budget) is held to the budget.
        const amount = Math.min(answerCeilingOf(index) ?? answerLimit, answerLimit);
        const made = charge(charges, merged, rule, 'responseBytes', tenant, tool, amount);
        if (made === undefined) return;
        made.reserved ??= [];
        made.reserved.push({ message: index, amount });
      }
    });
    if (wholeBody && messages.length > 0)
      charge(
        charges,
        merged,
        rule,
        'requestBytes',
        tenant,
        undefined,
        bodyBytes,
        largestPart(messages, bodyBytes),
      );
  }
  return charges;
}

/**
 * The part of a body's bytes its largest message brings: the body less every other message (brackets and
 * commas go with the largest), so a batch is admitted while the messages but its largest fit.
 */
function largestPart(messages: readonly QuotaMessage[], bodyBytes: number): number {
  let sum = 0;
  let largest = 0;
  for (const { bytes } of messages) {
    sum += bytes;
    if (bytes > largest) largest = bytes;
  }
  return Math.max(0, bodyBytes - (sum - largest));
}

/**
 * Adds `cost` to the charge of the rule's key for `measure`, when the rule limits that measure; returns that
 * charge. `part`: what of the cost one message brings (the cost, unless a whole body stands for several).
 */
function charge(
  charges: QuotaCharge[],
  merged: Map<string, QuotaCharge> | undefined,
  rule: QuotaRule,
  measure: QuotaMeasure,
  tenant: string,
  tool: string | undefined,
  cost: number,
  part = cost,
): QuotaCharge | undefined {
  const limit = rule.limits[measure];
  if (limit === undefined) return undefined;
  const key = keyOf(rule, measure, tenant, tool);
  const known = merged?.get(key.id);
  if (known !== undefined) {
    known.cost += cost;
    if (part > known.largest) known.largest = part;
    return known;
  }
  const made: QuotaCharge = { key, limit, cost, largest: part };
  charges.push(made);
  merged?.set(key.id, made);
  return made;
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

/**
 * The room a charge needs to be admitted: requests fit whole; bytes need every part but the largest to fit,
 * and room for one byte more (the last message, or answer, may cross the limit: it is never cut).
 */
export function roomNeeded(charge: Pick<QuotaCharge, 'key' | 'cost' | 'largest'>): number {
  return charge.key.measure === 'requests' ? charge.cost : charge.cost - charge.largest + 1;
}

/** Whether a key with `used` of `limit` has room for a charge that needs `need` (roomNeeded). */
export function hasRoom(used: number, limit: number, need: number): boolean {
  return used + need <= limit;
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
