// The sentences the table's templates (table.ts) share: a ceiling crossed, an ambiguous key, a quota used up,
// a host's budget, why a stdio child's message reached no client. Each is a function of a refusal's facts.
import { ceilingNamed, describeCeilingValue, unitDataName } from '../ceilings.js';
import type { AmbiguousKey } from '../key-names.js';
import type { LimitViolation } from '../types.js';
import type {
  HeaderMismatch,
  HostBudgetViolation,
  ProcessBound,
  QuotaKeysRefusal,
  QuotaRefusal,
  UndeliveredReason,
} from './facts.js';

function subjectOf(v: LimitViolation): string {
  if (v.tool !== undefined) return `tools/call "${v.tool}"`;
  return v.method ?? 'message';
}

/** One readable sentence naming the limit, the size and the limit. */
export function limitMessage(v: LimitViolation): string {
  const ceiling = ceilingNamed(v.limit);
  const observed = describeCeilingValue(ceiling, v.observedValue);
  const size = v.observedIsLowerBound ? `at least ${observed}` : observed;
  // A body (bytes or messages) is the client's whole request; a message is about its method and tool.
  const what =
    ceiling.name === 'request.maxMessageBytes' || ceiling.direction === 'response'
      ? `${ceiling.what} (${subjectOf(v)})`
      : ceiling.what;
  return `${what} is ${size}, over the ${v.limit} limit of ${describeCeilingValue(ceiling, v.limitValue)} set by the mcp-edge operator for tenant "${v.tenant}"`;
}

/** The error's data beside its reason: limitBytes/observedBytes for a byte ceiling, limitMessages/observedMessages for a count, limitLevels/observedLevels for nesting. */
export function limitFields(v: LimitViolation): Record<string, unknown> {
  const unit = unitDataName(ceilingNamed(v.limit).unit);
  const data: Record<string, unknown> = {
    direction: v.direction,
    limit: v.limit,
    [`limit${unit}`]: v.limitValue,
    [`observed${unit}`]: v.observedValue,
    [`observed${unit}IsLowerBound`]: v.observedIsLowerBound,
    tenant: v.tenant,
  };
  if (v.method !== undefined) data.method = v.method;
  if (v.tool !== undefined) data.tool = v.tool;
  return data;
}

/**
 * What whoever reads the refusal of an answer can do about it: for a tool's result, the model (ask again for
 * less); for any other answer, the client or the operator.
 */
function answerAdvice(v: LimitViolation): string {
  if (v.method === 'tools/call')
    return 'Call the tool again for less: with narrower arguments (a filter, fewer fields, a smaller limit), for one page at a time (its cursor, page or offset parameters), or for a resource link to the content instead of the content itself.';
  const scope =
    v.tool !== undefined ? `tool "${v.tool}"` : v.method !== undefined ? v.method : 'these answers';
  return `If answers this large are expected, the mcp-edge operator can raise ${v.limit} for ${scope}.`;
}

/** The words of an answer over its ceiling: the ceiling, the size, that it was replaced whole, what to do. */
export function answerRefusalText(v: LimitViolation): string {
  return `${limitMessage(v)}; mcp-edge replaced the answer whole. ${answerAdvice(v)}`;
}

/** What a message with an ambiguous key has, and who may read it otherwise (`reader`). */
export function ambiguityWords(a: AmbiguousKey, reader: string): string {
  const place = a.in === 'message' ? '' : ` in ${a.in}`;
  if (a.sentAs === undefined) return `has the key "${a.key}"${place} twice; ${reader} may read either`;
  return `has the key "${a.sentAs}"${place}, which differs from "${a.key}" only in letter case; ${reader} may read it as "${a.key}"`;
}

/** The error data of an ambiguous message beside its reason. */
/** What a request's Mcp-Method or Mcp-Name header said, against its body. */
export function headerSaid(m: HeaderMismatch): string {
  if (m.sent === undefined)
    return `there is no ${m.header} header, which protocol revision 2026-07-28 requires`;
  if (m.sent === null)
    return `the ${m.header} header is no value the specification allows (plain ASCII, or for Mcp-Name a =?base64?...?= sentinel of UTF-8)`;
  return `the ${m.header} header says "${m.sent}"`;
}

export function ambiguityFields(a: AmbiguousKey): Record<string, unknown> {
  return { key: a.key, in: a.in, ...(a.sentAs === undefined ? { repeated: true } : { sentAs: a.sentAs }) };
}

/** A tool result over its host's budget: what to do next is for the model (call again, narrower or by page). */
export function hostBudgetMessage(v: HostBudgetViolation): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const size = `${v.observedIsLowerBound ? 'at least ' : v.observedIsEstimate === true ? 'about ' : ''}${n(v.observed)} ${v.unit}`;
  const what = v.tool !== undefined ? `The result of tool "${v.tool}"` : 'The tool result';
  return `${what} is ${size}, over the ${n(v.budget)}-${v.unit.replace(/s$/, '')} budget of ${v.title}, the host that called it; mcp-edge replaced it whole (set by the mcp-edge operator for tenant "${v.tenant}") rather than let the host cut it. Call the tool again with narrower arguments (a filter, fewer fields, a smaller limit) or with its pagination parameters (cursor, page, offset) to get the result in parts.`;
}

export function hostBudgetFields(v: HostBudgetViolation): Record<string, unknown> {
  return {
    host: v.host,
    unit: v.unit,
    budget: v.budget,
    observed: v.observed,
    observedIsLowerBound: v.observedIsLowerBound,
    ...(v.observedIsEstimate === true ? { observedIsEstimate: true } : {}),
    tenant: v.tenant,
    ...(v.tool !== undefined ? { tool: v.tool } : {}),
  };
}

/** An upstream runs as many processes as its bound allows: a new session must wait. */
export function processesMessage(bound: ProcessBound): string {
  const [forWhom, ofWhom] = bound.key === 'maxProcesses' ? ['', ''] : [' for your tenant', ' of your tenant'];
  return `mcp-edge runs as many stdio MCP server processes${forWhom} as it may (${bound.setting}: ${bound.limit}, set by the mcp-edge operator); try again once a session${ofWhom} has ended`;
}

/** A GET stream past a bound: what is full, and that calls go on working. */
export function getStreamsMessage(which: string): string {
  return `mcp-edge opens no further SSE stream now: ${which}, set by the mcp-edge operator. Calls (POST) go on working; their answers come on their own streams.`;
}

export function quotaMessage(q: QuotaRefusal): string {
  const unit =
    q.measure === 'requests' ? 'requests' : q.measure === 'requestBytes' ? 'request bytes' : 'response bytes';
  const scope = q.tool !== undefined ? `tenant "${q.tenant}", tool "${q.tool}"` : `tenant "${q.tenant}"`;
  return `Quota "${q.rule}" is used up for ${scope}: ${q.used.toLocaleString('en-US')} of ${q.limit.toLocaleString('en-US')} ${unit} per ${q.window} (set by the mcp-edge operator); retry in ${q.retryAfterSeconds} s`;
}

export function quotaFields(q: QuotaRefusal): Record<string, unknown> {
  return {
    rule: q.rule,
    window: q.window,
    measure: q.measure,
    limit: q.limit,
    used: q.used,
    retryAfterSeconds: q.retryAfterSeconds,
    tenant: q.tenant,
    ...(q.tool !== undefined ? { tool: q.tool } : {}),
  };
}

export function quotaKeysMessage(q: QuotaKeysRefusal): string {
  const share = `${q.keysPerTenant.toLocaleString('en-US')} keys (quotas.maxKeys ${q.maxKeys.toLocaleString('en-US')} over ${q.tenants} ${q.tenants === 1 ? 'tenant' : 'tenants'}, set by the mcp-edge operator)`;
  return `Quotas cannot count more for tenant "${q.tenant}": it holds its share of the quota store, ${share}, and rule "${q.rule}" needs a new key (one per tool it is called with); retry in ${q.retryAfterSeconds} s`;
}

/** What a request without a session did that no one can be sure is its own (the refusal and its log line). */
export function unattributableAct(answersServer: boolean): string {
  return answersServer
    ? 'answers a request of the MCP server'
    : 'cancels a request with notifications/cancelled';
}

/** Why the edge delivered a stdio child's message to no client: the child's error, and the edge's log line. */
const UNDELIVERED_WHY: Readonly<Record<UndeliveredReason, string>> = {
  caller_gone: 'it belongs to a call whose client left (timed out or disconnected)',
  no_owner:
    "it names no call waiting on this MCP server (on a tenant's shared child, only an id or a progress token says whose it is)",
  no_stream:
    'no client stream opened to carry it within upstream.stdio.streamWait (or it was past streamWaitBytes)',
};

export function undeliveredWhy(reason: UndeliveredReason): string {
  return UNDELIVERED_WHY[reason];
}
