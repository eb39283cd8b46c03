// The error contract (docs/limits.md). Every error body mcp-edge sends is built here.
import { type CeilingRefusal, ceilingNamed, describeCeilingValue, unitDataName } from './ceilings.js';
import type { AmbiguousKey } from './key-names.js';
import type { Outcome } from './outcome.js';
import type { JsonRpcId, LimitViolation } from './types.js';

/** A request refused whole (it never reached the upstream). */
export const CODE_REQUEST_REFUSED = -32600;
/** JSON-RPC's parse error: the body is not JSON. */
export const CODE_PARSE_ERROR = -32700;
/** A response (or upstream exchange) that could not be delivered. Outside -32000..-32099 on purpose: the SDKs use that range. */
export const CODE_RESPONSE_UNDELIVERABLE = -32603;
/** MCP's HeaderMismatch (protocol revision 2026-07-28, SEP-2243): a request's headers disagree with its body. */
export const CODE_HEADER_MISMATCH = -32020;

export type EdgeErrorReason =
  | 'limit_exceeded'
  | 'upstream_unreachable'
  | 'upstream_timeout'
  | 'upstream_failed'
  | 'invalid_request'
  | 'unauthenticated'
  | 'forbidden_host'
  | 'forbidden_origin'
  | 'method_not_allowed'
  | 'pagination_bound_exceeded'
  | 'host_budget_exceeded'
  | 'shutting_down'
  | 'upstream_capacity'
  | 'session_streams_exceeded'
  | 'id_in_use'
  | 'quota_exceeded'
  | 'quota_keys_exhausted'
  | 'quota_store_unavailable'
  | 'ambiguous_message'
  | 'header_mismatch'
  | 'edge_failure';

export interface JsonRpcErrorMessage {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data: Record<string, unknown> };
}

/**
 * An HTTP answer built by the edge itself: status, headers, a serialized body, and how an exchange answered
 * with it ends (the outcome is the answer's, fixed here for each kind of answer, never by its sender).
 */
export interface EdgeHttpError {
  status: number;
  headers: Record<string, string>;
  body: string;
  outcome: Outcome;
}

/** The outcome of an exchange the edge refused for `reason`: who ended it. */
function refusalOutcome(reason: EdgeErrorReason): Outcome {
  return reason === 'shutting_down' ? 'shutdown' : 'refused';
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

export { describeBytes } from './ceilings.js';

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

/** The error's data: limitBytes/observedBytes for a byte ceiling, limitMessages/observedMessages for a count, limitLevels/observedLevels for nesting. */
export function limitErrorData(v: LimitViolation): Record<string, unknown> {
  const ceiling = ceilingNamed(v.limit);
  const unit = unitDataName(ceiling.unit);
  const data: Record<string, unknown> = {
    reason: ceiling.reason,
    direction: v.direction,
    limit: v.limit,
    [`limit${unit}`]: v.limitValue,
    [`observed${unit}`]: v.observedValue,
    [`observed${unit}IsLowerBound`]: v.observedIsLowerBound,
    tenant: v.tenant,
  };
  if (v.method !== undefined) data.method = v.method;
  if (v.tool !== undefined) data.tool = v.tool;
  data.enforcedBy = 'mcp-edge';
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
function answerRefusalText(v: LimitViolation): string {
  return `${limitMessage(v)}; mcp-edge replaced the answer whole. ${answerAdvice(v)}`;
}

/** The JSON-RPC error that stands in for a message over a ceiling. */
export function limitErrorMessage(v: LimitViolation): JsonRpcErrorMessage {
  const request = v.direction === 'request';
  return {
    jsonrpc: '2.0',
    id: v.id,
    error: {
      code: request ? CODE_REQUEST_REFUSED : CODE_RESPONSE_UNDELIVERABLE,
      message: request ? limitMessage(v) : answerRefusalText(v),
      data: limitErrorData(v),
    },
  };
}

/** limits.response.toolCallRefusal: how a refused answer to tools/call reaches the client. */
export type ToolCallRefusal = 'error' | 'result';

/** A tools/call answer the edge refused, worded as a tool's execution error: hosts show it to the model. */
export interface ToolErrorResultMessage {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: { resultType?: 'complete'; isError: true; content: [{ type: 'text'; text: string }] };
}

/** The first protocol revision whose results must say `resultType` (SDK v2 clients refuse one without). */
const RESULT_TYPE_FROM = '2026-07-28';

/** What the edge sends in place of an answer it refused: a JSON-RPC error, or (tools/call) a tool error result. */
export type AnswerReplacement = JsonRpcErrorMessage | ToolErrorResultMessage;

/**
 * A refused answer to tools/call in the form `form` asks: the error as it is, or (`result`) a result with
 * isError for the same id whose one text block is the error's message (it names the ceiling or budget, the
 * size and what to do); no structuredContent, so a tool's outputSchema does not apply (MCP: an error result
 * need not match it). `protocolVersion`: the exchange's revision; from 2026-07-28 the result says it is
 * complete (`resultType`).
 */
export function toolCallRefusal(
  error: JsonRpcErrorMessage,
  form: ToolCallRefusal,
  protocolVersion?: string,
): AnswerReplacement {
  if (form === 'error') return error;
  const content: [{ type: 'text'; text: string }] = [{ type: 'text', text: error.error.message }];
  return {
    jsonrpc: '2.0',
    id: error.id,
    result:
      protocolVersion !== undefined && protocolVersion >= RESULT_TYPE_FROM
        ? { resultType: 'complete', isError: true, content }
        : { isError: true, content },
  };
}

/** The HTTP status of a request refused over a ceiling, fixed once per refusal kind. */
const CEILING_REFUSAL_STATUS: Readonly<Record<CeilingRefusal, number>> = {
  limit_exceeded: 413,
  invalid_request: 400,
};

/**
 * A request over a ceiling: 413 with the JSON-RPC error (400 for nesting, which a small body reaches). SDK
 * clients surface it as a transport error carrying this body.
 */
export function requestRefusal(v: LimitViolation): EdgeHttpError {
  const status = CEILING_REFUSAL_STATUS[ceilingNamed(v.limit).reason];
  return {
    status,
    headers: { ...JSON_HEADERS },
    body: JSON.stringify(limitErrorMessage(v)),
    outcome: 'refused',
  };
}

/** An SSE event that replaces an oversized one. Keeps the event id so a resuming client does not replay from before it. */
export function sseErrorEvent(message: JsonRpcErrorMessage | object, eventId?: string): string {
  const idLine = eventId !== undefined && !/[\r\n]/.test(eventId) ? `id: ${eventId}\n` : '';
  return `${idLine}event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/** The in-band notice a client gets when a notification or server request towards it was dropped for its size. */
export function droppedMessageNotice(v: LimitViolation, droppedKind: 'notification' | 'request'): object {
  return {
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: {
      level: 'warning',
      logger: 'mcp-edge',
      data: {
        message: `mcp-edge dropped a ${droppedKind}${v.method ? ` (${v.method})` : ''} on its way to the client. ${limitMessage(v)}`,
        ...limitErrorData(v),
      },
    },
  };
}

/** `capacity`: no upstream connection of the edge's came free in time, so the request was never sent. */
export type UpstreamFailureKind = 'unreachable' | 'timeout' | 'capacity' | 'failed';

/** What an upstream failure was, for operators: in the log always, in the client's answer only when enabled. */
export interface UpstreamDiagnostic {
  detail: string;
  upstream: string;
}

const FAILURES: Record<
  UpstreamFailureKind,
  { status: number; reason: EdgeErrorReason; outcome: Outcome; summary: string }
> = {
  timeout: {
    status: 504,
    reason: 'upstream_timeout',
    outcome: 'upstream_timeout',
    summary: 'The MCP server behind mcp-edge did not answer in time',
  },
  unreachable: {
    status: 502,
    reason: 'upstream_unreachable',
    outcome: 'upstream_unreachable',
    summary: 'The MCP server behind mcp-edge is unreachable',
  },
  capacity: {
    status: 503,
    reason: 'upstream_capacity',
    outcome: 'upstream_capacity',
    summary:
      'mcp-edge has as many calls in flight to the MCP server as it may (upstream.maxConnections, set by the mcp-edge operator) and none ended within upstream.timeouts.queue; this request was not sent, so it is safe to send again',
  },
  failed: {
    status: 502,
    reason: 'upstream_failed',
    outcome: 'upstream_body_failed',
    summary: 'The exchange with the MCP server behind mcp-edge failed',
  },
};

/**
 * The upstream could not be reached or did not answer in time: 502 / 504 with a JSON-RPC error (503 when
 * no connection came free for the request, which was then never sent). The client
 * gets a stable sentence; the upstream's address and the socket error go to the log, and into the answer
 * only when the operator asks for them (server.exposeUpstreamErrors).
 */
export function upstreamFailure(
  kind: UpstreamFailureKind,
  id: JsonRpcId,
  diagnostic?: UpstreamDiagnostic,
): EdgeHttpError {
  const { status, reason, outcome, summary } = FAILURES[kind];
  const body: JsonRpcErrorMessage = {
    jsonrpc: '2.0',
    id,
    error: {
      code: CODE_RESPONSE_UNDELIVERABLE,
      message: diagnostic !== undefined ? `${summary}: ${diagnostic.detail}` : summary,
      data: { reason, ...diagnostic, enforcedBy: 'mcp-edge' },
    },
  };
  // A request that was never sent may be sent again at once: Retry-After says so to clients that read it.
  const headers: Record<string, string> =
    kind === 'capacity' ? { ...JSON_HEADERS, 'retry-after': '1' } : { ...JSON_HEADERS };
  return { status, headers, body: JSON.stringify(body), outcome };
}

/** A JSON-RPC error for a pending request whose answer was lost with the upstream stream. */
export function lostResponseMessage(id: JsonRpcId, detail: string): JsonRpcErrorMessage {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: CODE_RESPONSE_UNDELIVERABLE,
      message: `The response was lost: ${detail}`,
      data: { reason: 'upstream_failed', detail, enforcedBy: 'mcp-edge' },
    },
  };
}

/**
 * A request still waiting for its answer when mcp-edge's shutdown ended it (a GET's stream when shutdown began,
 * any other exchange once server.timeouts.shutdownGrace was over). Said whatever the stream's event ids: no
 * one can resume a stream through an edge that exits. The request reached the MCP server, which may have run it.
 */
export function shutdownMessage(id: JsonRpcId): JsonRpcErrorMessage {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: CODE_RESPONSE_UNDELIVERABLE,
      message:
        'mcp-edge is shutting down and ended this request before the MCP server had answered it; the request may be retried (through an mcp-edge that is serving), but the MCP server may have started it already',
      data: { reason: 'shutting_down', enforcedBy: 'mcp-edge' },
    },
  };
}

/** shutdownMessage as the whole answer of an exchange whose answer had not begun: 503, the connection closes. */
export function shutdownAnswer(id: JsonRpcId): EdgeHttpError {
  return {
    status: 503,
    headers: { ...JSON_HEADERS, connection: 'close' },
    body: JSON.stringify(shutdownMessage(id)),
    outcome: 'shutdown',
  };
}

/** A request that reached mcp-edge as it shut down: 503, never sent to the MCP server. */
export function shutdownRefusal(id: JsonRpcId): EdgeHttpError {
  return edgeRefusal(
    503,
    'shutting_down',
    'mcp-edge is shutting down; this request was not sent to the MCP server, so it is safe to send again (through an mcp-edge that is serving)',
    id,
    { connection: 'close' },
  );
}

/** A body that is not JSON at all: JSON-RPC's parse error, id null. */
export function parseErrorRefusal(detail: string): EdgeHttpError {
  const body: JsonRpcErrorMessage = {
    jsonrpc: '2.0',
    id: null,
    error: {
      code: CODE_PARSE_ERROR,
      message: `Request body is not valid JSON: ${detail}`,
      data: { reason: 'invalid_request', detail, enforcedBy: 'mcp-edge' },
    },
  };
  return { status: 400, headers: { ...JSON_HEADERS }, body: JSON.stringify(body), outcome: 'refused' };
}

/** A list request past the page bound of one listing: answered by the edge for the request's id. */
export function paginationBoundAnswer(
  id: JsonRpcId,
  method: string,
  page: number,
  maxPages: number,
): EdgeHttpError {
  const body: JsonRpcErrorMessage = {
    jsonrpc: '2.0',
    id,
    error: {
      code: CODE_REQUEST_REFUSED,
      message: `${method} page ${page} refused: one listing may take at most ${maxPages} pages (pagination.maxPagesPerListing, set by the mcp-edge operator); the server's nextCursor did not end. Start the listing again without a cursor.`,
      data: {
        reason: 'pagination_bound_exceeded',
        method,
        page,
        maxPagesPerListing: maxPages,
        enforcedBy: 'mcp-edge',
      },
    },
  };
  // 200: SDK clients surface a 2xx JSON-RPC error to the caller with its code and data.
  return {
    status: 200,
    headers: { ...JSON_HEADERS },
    body: JSON.stringify(body),
    outcome: 'pagination_bound',
  };
}

/**
 * The edge itself failed while serving this exchange (an exception in its own code): 500, with nothing of the
 * exception in the answer (it is in the edge's log, at error level). The exchange ends; the edge serves on.
 */
export function edgeFailure(id: JsonRpcId = null): EdgeHttpError {
  const body: JsonRpcErrorMessage = {
    jsonrpc: '2.0',
    id,
    error: {
      code: CODE_RESPONSE_UNDELIVERABLE,
      message: 'mcp-edge failed while handling this request; the failure is in its log',
      data: { reason: 'edge_failure', enforcedBy: 'mcp-edge' },
    },
  };
  // The connection may carry what is left of the failed exchange: it is not reused.
  return {
    status: 500,
    headers: { ...JSON_HEADERS, connection: 'close' },
    body: JSON.stringify(body),
    outcome: 'edge_failure',
  };
}

/** Anything else the edge refuses itself (bad input, forbidden Host/Origin, wrong method). */
export function edgeRefusal(
  status: number,
  reason: EdgeErrorReason,
  message: string,
  id: JsonRpcId = null,
  extra: Record<string, string> = {},
  data: Record<string, unknown> = {},
): EdgeHttpError {
  const body: JsonRpcErrorMessage = {
    jsonrpc: '2.0',
    id,
    error: { code: CODE_REQUEST_REFUSED, message, data: { reason, ...data, enforcedBy: 'mcp-edge' } },
  };
  return {
    status,
    headers: { ...JSON_HEADERS, ...extra },
    body: JSON.stringify(body),
    outcome: refusalOutcome(reason),
  };
}

/** A tool result over the budget of the host that called (hostBudgets.action: refuse), in the host's own unit. */
export interface HostBudgetViolation {
  host: string;
  /** The host's readable name (Claude Code, Gemini CLI, ...). */
  title: string;
  unit: 'tokens' | 'characters' | 'bytes' | 'lines';
  budget: number;
  observed: number;
  observedIsLowerBound: boolean;
  /** `observed` was extrapolated from part of the result (hostBudgets.maxTokenizedCharacters). */
  observedIsEstimate?: boolean | undefined;
  tenant: string;
  tool: string | undefined;
  id: JsonRpcId;
}

/**
 * The error that replaces a tool result over its host's budget. Hosts show a tool error to the model, so the
 * message tells the model what to do next: call again, narrower or by page. Nothing of the result is kept.
 */
export function hostBudgetErrorMessage(v: HostBudgetViolation): JsonRpcErrorMessage {
  const n = (value: number) => value.toLocaleString('en-US');
  const size = `${v.observedIsLowerBound ? 'at least ' : v.observedIsEstimate === true ? 'about ' : ''}${n(v.observed)} ${v.unit}`;
  const what = v.tool !== undefined ? `The result of tool "${v.tool}"` : 'The tool result';
  return {
    jsonrpc: '2.0',
    id: v.id,
    error: {
      code: CODE_RESPONSE_UNDELIVERABLE,
      message: `${what} is ${size}, over the ${n(v.budget)}-${v.unit.replace(/s$/, '')} budget of ${v.title}, the host that called it; mcp-edge replaced it whole (set by the mcp-edge operator for tenant "${v.tenant}") rather than let the host cut it. Call the tool again with narrower arguments (a filter, fewer fields, a smaller limit) or with its pagination parameters (cursor, page, offset) to get the result in parts.`,
      data: {
        reason: 'host_budget_exceeded',
        host: v.host,
        unit: v.unit,
        budget: v.budget,
        observed: v.observed,
        observedIsLowerBound: v.observedIsLowerBound,
        ...(v.observedIsEstimate === true ? { observedIsEstimate: true } : {}),
        tenant: v.tenant,
        ...(v.tool !== undefined ? { tool: v.tool } : {}),
        enforcedBy: 'mcp-edge',
      },
    },
  };
}

/**
 * The bound on an upstream's processes a new session ran into: all of them, or its tenant's; `setting` is
 * the config path the kind reads it from.
 */
export type ProcessBound =
  | { key: 'maxProcesses'; limit: number; setting: string }
  | { key: 'maxProcessesPerTenant'; limit: number; setting: string };

/** An upstream runs as many processes as the bound allows: a new session must wait. */
export function processLimitRefusal(id: JsonRpcId, bound: ProcessBound): EdgeHttpError {
  const [forWhom, ofWhom] = bound.key === 'maxProcesses' ? ['', ''] : [' for your tenant', ' of your tenant'];
  const body: JsonRpcErrorMessage = {
    jsonrpc: '2.0',
    id,
    error: {
      code: CODE_REQUEST_REFUSED,
      message: `mcp-edge runs as many stdio MCP server processes${forWhom} as it may (${bound.setting}: ${bound.limit}, set by the mcp-edge operator); try again once a session${ofWhom} has ended`,
      data: { reason: 'upstream_capacity', [bound.key]: bound.limit, enforcedBy: 'mcp-edge' },
    },
  };
  return {
    status: 503,
    headers: { ...JSON_HEADERS, 'retry-after': '5' },
    body: JSON.stringify(body),
    outcome: 'upstream_capacity',
  };
}

/**
 * A GET stream past a bound: its session's share (server.maxGetStreamsPerSession, any upstream) or the HTTP
 * upstream's stream connections in all (upstream.maxStreamConnections). 405 is what the MCP transport gives a
 * client for "no SSE stream at this endpoint": SDK clients (v1 and v2) then go on working without that stream,
 * where a 429 or 503 makes them report an error or retry against the same full capacity.
 */
export function getStreamRefusal(scope: 'session' | 'total', max: number): EdgeHttpError {
  const [reason, which]: [EdgeErrorReason, string] =
    scope === 'session'
      ? [
          'session_streams_exceeded',
          `this session has ${max} GET streams open already (server.maxGetStreamsPerSession)`,
        ]
      : [
          'upstream_capacity',
          `${max} GET streams are open through mcp-edge already (upstream.maxStreamConnections)`,
        ];
  return edgeRefusal(
    405,
    reason,
    `mcp-edge opens no further SSE stream now: ${which}, set by the mcp-edge operator. Calls (POST) go on working; their answers come on their own streams.`,
    null,
    { allow: 'POST, DELETE' },
  );
}

/**
 * A GET that resumes a call's stream after the answer the edge replaced, which ended that stream: nothing can
 * follow it. 204 is SSE's "do not reconnect" (WHATWG EventSource); both SDK clients end the resumption there.
 */
export const STREAM_COMPLETE_ANSWER: EdgeHttpError = Object.freeze({
  status: 204,
  headers: {},
  body: '',
  outcome: 'stream_complete',
}) as EdgeHttpError;

/** A CORS preflight the edge answers itself (server.cors), or without an upstream to ask: no body. */
export function preflightAnswer(headers: Record<string, string>): EdgeHttpError {
  return { status: 204, headers, body: '', outcome: 'refused' };
}

/** A stdio call whose id or progress token another call held past upstream.stdio.idWait (src/upstream/stdio-child.ts). */
export function idInUseRefusal(id: JsonRpcId, detail: string): EdgeHttpError {
  return edgeRefusal(409, 'id_in_use', detail, id);
}

/** A quota rule whose budget a request found used up (src/quotas). */
export interface QuotaRefusal {
  rule: string;
  /** The rule's window as written in the config ("1m"). */
  window: string;
  /** What the rule counts. */
  measure: 'requests' | 'requestBytes' | 'responseBytes';
  limit: number;
  used: number;
  retryAfterSeconds: number;
  tenant: string;
  tool: string | undefined;
}

/**
 * A request refused for a quota: 429 with Retry-After, shaped as a ceiling's refusal (the same JSON-RPC code,
 * the request's id), so every client that shows a ceiling's message shows this one.
 */
export function quotaRefusal(q: QuotaRefusal, id: JsonRpcId): EdgeHttpError {
  const unit =
    q.measure === 'requests' ? 'requests' : q.measure === 'requestBytes' ? 'request bytes' : 'response bytes';
  const scope = q.tool !== undefined ? `tenant "${q.tenant}", tool "${q.tool}"` : `tenant "${q.tenant}"`;
  const message = `Quota "${q.rule}" is used up for ${scope}: ${q.used.toLocaleString('en-US')} of ${q.limit.toLocaleString('en-US')} ${unit} per ${q.window} (set by the mcp-edge operator); retry in ${q.retryAfterSeconds} s`;
  return edgeRefusal(
    429,
    'quota_exceeded',
    message,
    id,
    { 'retry-after': String(q.retryAfterSeconds) },
    {
      rule: q.rule,
      window: q.window,
      measure: q.measure,
      limit: q.limit,
      used: q.used,
      retryAfterSeconds: q.retryAfterSeconds,
      tenant: q.tenant,
      ...(q.tool !== undefined ? { tool: q.tool } : {}),
    },
  );
}

/** A tenant's share of the memory quota store's keys, all held (src/quotas/memory-store.ts). */
export interface QuotaKeysRefusal {
  tenant: string;
  /** The tenant's share: quotas.maxKeys over the tenants the config knows. */
  keysPerTenant: number;
  maxKeys: number;
  tenants: number;
  /** The rule whose new key would have gone past the share. */
  rule: string;
  retryAfterSeconds: number;
}

/**
 * A request whose quota key would go past its tenant's share of quotas.maxKeys: 429 with Retry-After, for that
 * tenant only (each per-tool key is a tool the tenant named), shaped as a quota's refusal.
 */
export function quotaKeysRefusal(q: QuotaKeysRefusal, id: JsonRpcId): EdgeHttpError {
  const share = `${q.keysPerTenant.toLocaleString('en-US')} keys (quotas.maxKeys ${q.maxKeys.toLocaleString('en-US')} over ${q.tenants} ${q.tenants === 1 ? 'tenant' : 'tenants'}, set by the mcp-edge operator)`;
  const message = `Quotas cannot count more for tenant "${q.tenant}": it holds its share of the quota store, ${share}, and rule "${q.rule}" needs a new key (one per tool it is called with); retry in ${q.retryAfterSeconds} s`;
  return edgeRefusal(
    429,
    'quota_keys_exhausted',
    message,
    id,
    { 'retry-after': String(q.retryAfterSeconds) },
    {
      rule: q.rule,
      keysPerTenant: q.keysPerTenant,
      maxKeys: q.maxKeys,
      retryAfterSeconds: q.retryAfterSeconds,
      tenant: q.tenant,
    },
  );
}

/** quotas.onStoreError: refuse, and the quota store did not answer within quotas.storeTimeout: 503. */
export function quotaStoreRefusal(id: JsonRpcId, retryAfterSeconds: number): EdgeHttpError {
  return edgeRefusal(
    503,
    'quota_store_unavailable',
    'mcp-edge cannot check this request against its quotas: the quota store is unavailable (quotas.onStoreError: refuse, set by the mcp-edge operator); the request was not sent, so it is safe to send again',
    id,
    { 'retry-after': String(retryAfterSeconds) },
  );
}

/** What a message with an ambiguous key has, and who may read it otherwise (`reader`). */
function ambiguityWords(a: AmbiguousKey, reader: string): string {
  const place = a.in === 'message' ? '' : ` in ${a.in}`;
  if (a.sentAs === undefined) return `has the key "${a.key}"${place} twice; ${reader} may read either`;
  return `has the key "${a.sentAs}"${place}, which differs from "${a.key}" only in letter case; ${reader} may read it as "${a.key}"`;
}

/** The error data of an ambiguous message (within reason and enforcedBy). */
function ambiguityFields(a: AmbiguousKey): Record<string, unknown> {
  return { key: a.key, in: a.in, ...(a.sentAs === undefined ? { repeated: true } : { sentAs: a.sentAs }) };
}

function ambiguityData(a: AmbiguousKey): Record<string, unknown> {
  return { reason: 'ambiguous_message', ...ambiguityFields(a), enforcedBy: 'mcp-edge' };
}

/**
 * A client's message with a key the edge reads (its envelope's, or params' or params._meta's) repeated or in
 * another letter case: 400, with its id unless the id itself is the ambiguous one. An upstream may read such
 * a key otherwise than the edge (the first of repeated keys; any letter case, as Go's encoding/json does) and
 * run something other than what the edge judged.
 */
export function ambiguousRequestRefusal(a: AmbiguousKey, id: JsonRpcId | undefined): EdgeHttpError {
  return edgeRefusal(
    400,
    'ambiguous_message',
    `Request message ${ambiguityWords(a, 'an upstream')}, so mcp-edge refuses it`,
    a.idIsAmbiguous ? null : (id ?? null),
    {},
    ambiguityFields(a),
  );
}

/** An answer from the upstream with an ambiguous key: replaced by this error for the id the edge read. */
export function ambiguousAnswerError(a: AmbiguousKey, id: JsonRpcId | undefined): JsonRpcErrorMessage {
  return {
    jsonrpc: '2.0',
    id: id ?? null,
    error: {
      code: CODE_RESPONSE_UNDELIVERABLE,
      message: `Response message ${ambiguityWords(a, 'a client')}, so mcp-edge did not deliver it`,
      data: ambiguityData(a),
    },
  };
}

/** The notice a client gets for a notification or server request with an ambiguous key, dropped on its way. */
export function ambiguousMessageNotice(
  a: AmbiguousKey,
  droppedKind: 'notification' | 'request',
  method: string | undefined,
): object {
  const what = `${droppedKind}${method !== undefined ? ` (${method})` : ''}`;
  return {
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: {
      level: 'warning',
      logger: 'mcp-edge',
      data: {
        message: `mcp-edge dropped a ${what} on its way to the client: it ${ambiguityWords(a, 'a client')}`,
        ...ambiguityData(a),
      },
    },
  };
}

/** How a request's Mcp-Method or Mcp-Name header disagrees with its body (the values in their bounded forms). */
export interface HeaderMismatch {
  /** The header, as the specification spells it. */
  header: 'Mcp-Method' | 'Mcp-Name';
  /** The body's member it mirrors: `method`, `params.name` or `params.uri`. */
  field: string;
  /** The body's value of that member. */
  body: string;
  /** What the header says: undefined when it is missing, null when it is no value the specification allows. */
  sent: string | null | undefined;
}

/**
 * A request whose Mcp-Method or Mcp-Name header is missing, malformed or disagrees with its body (protocol
 * revision 2026-07-28, SEP-2243): 400 with -32020 (HeaderMismatch) for its id, nothing forwarded. Whoever routes,
 * limits or counts by the header while the server runs the body would be a confused deputy.
 */
export function headerMismatchRefusal(m: HeaderMismatch, id: JsonRpcId): EdgeHttpError {
  const said =
    m.sent === undefined
      ? `there is no ${m.header} header, which protocol revision 2026-07-28 requires`
      : m.sent === null
        ? `the ${m.header} header is no value the specification allows (plain ASCII, or for Mcp-Name a =?base64?...?= sentinel of UTF-8)`
        : `the ${m.header} header says "${m.sent}"`;
  const body: JsonRpcErrorMessage = {
    jsonrpc: '2.0',
    id,
    error: {
      code: CODE_HEADER_MISMATCH,
      message: `Header mismatch: the body's ${m.field} is "${m.body}" but ${said}; mcp-edge refuses a request whose headers and body disagree`,
      data: {
        reason: 'header_mismatch',
        header: m.header,
        field: m.field,
        bodyValue: m.body,
        ...(typeof m.sent === 'string' ? { headerValue: m.sent } : {}),
        enforcedBy: 'mcp-edge',
      },
    },
  };
  return { status: 400, headers: { ...JSON_HEADERS }, body: JSON.stringify(body), outcome: 'refused' };
}
