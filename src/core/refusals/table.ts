// Every answer and error of the edge's own, in one table (as Fastify's lib/errors.js, and as CEILINGS are in
// ceilings.ts): each refusal's HTTP status, JSON-RPC code, the outcome an exchange it ends takes, the `reason`
// clients key on, and its words as a template of its facts (facts.ts). A call site names a refusal and hands
// its facts; answers.ts builds the body. The contract is docs/limits.md; test/unit/one-place.test.ts keeps
// words, statuses and outcomes out of every other file.
import { ceilingNamed } from '../ceilings.js';
import type { Outcome } from '../outcome.js';
import type { RefusalFacts, RefusalName } from './facts.js';
import {
  CODE_HEADER_MISMATCH,
  CODE_PARSE_ERROR,
  CODE_REQUEST_REFUSED,
  CODE_RESPONSE_UNDELIVERABLE,
  lost,
  type Row,
  upstreamFailure,
} from './rows.js';
import {
  ambiguityFields,
  ambiguityWords,
  answerRefusalText,
  getStreamsMessage,
  headerSaid,
  hostBudgetFields,
  hostBudgetMessage,
  limitFields,
  limitMessage,
  processesMessage,
  quotaFields,
  quotaKeysMessage,
  quotaMessage,
  unattributableAct,
  undeliveredWhy,
} from './wording.js';

/** The HTTP status of a request refused over a ceiling, fixed once per ceiling's refusal kind. */
const CEILING_STATUS = { limit_exceeded: 413, invalid_request: 400 } as const;

/** A body the scan does not read that JSON.parse takes (one it reads otherwise). */
const NOT_ONE_BODY = 'body is not one JSON-RPC body';

const REFUSED = { code: CODE_REQUEST_REFUSED, outcome: 'refused' } as const;
const INVALID = { ...REFUSED, reason: 'invalid_request', status: 400 } as const;
export const REFUSALS = {
  empty_batch: { ...INVALID, message: () => 'Request body is an empty JSON-RPC batch' },
  not_json_rpc: {
    ...INVALID,
    message: () =>
      'Request body holds a message that is not JSON-RPC 2.0 (it needs "jsonrpc":"2.0" and a method, result or error)',
  },
  not_json: {
    ...INVALID,
    code: CODE_PARSE_ERROR,
    message: (f) => `Request body is not valid JSON: ${f.detail ?? NOT_ONE_BODY}`,
    data: (f) => ({ detail: f.detail ?? NOT_ONE_BODY }),
  },
  // An upstream may read such a key otherwise than the edge (the first of repeated keys; any letter case, as
  // Go's encoding/json does) and run something other than what the edge judged.
  ambiguous_request: {
    ...REFUSED,
    reason: 'ambiguous_message',
    status: 400,
    message: (f) => `Request message ${ambiguityWords(f.ambiguous, 'an upstream')}, so mcp-edge refuses it`,
    data: (f) => ambiguityFields(f.ambiguous),
    keepsId: (f) => !f.ambiguous.idIsAmbiguous,
  },
  // Protocol revision 2026-07-28 (SEP-2243): whoever routes, limits or counts by the headers while the server
  // runs the body would be a confused deputy, so a request whose headers and body disagree goes no further.
  header_mismatch: {
    ...REFUSED,
    reason: 'header_mismatch',
    status: 400,
    code: CODE_HEADER_MISMATCH,
    message: ({ mismatch: m }) =>
      `Header mismatch: the body's ${m.field} is "${m.body}" but ${headerSaid(m)}; mcp-edge refuses a request whose headers and body disagree`,
    data: ({ mismatch: m }) => ({
      header: m.header,
      field: m.field,
      bodyValue: m.body,
      ...(typeof m.sent === 'string' ? { headerValue: m.sent } : {}),
    }),
  },
  // 413 (400 for nesting, which a small body reaches); SDK clients surface it as a transport error with this body.
  request_over_ceiling: {
    ...REFUSED,
    reason: (f) => ceilingNamed(f.violation.limit).reason,
    status: (f) => CEILING_STATUS[ceilingNamed(f.violation.limit).reason],
    message: (f) => limitMessage(f.violation),
    data: (f) => limitFields(f.violation),
  },
  unsupported_content_type: {
    ...INVALID,
    status: 415,
    message: (f) => `Unsupported Content-Type "${f.contentType ?? ''}": MCP requests are application/json`,
  },
  unsupported_content_encoding: {
    ...INVALID,
    status: 415,
    message: (f) => `Unsupported Content-Encoding "${f.coding}": mcp-edge accepts identity request bodies`,
  },
  unreadable_body: { ...INVALID, message: (f) => `The request body could not be read: ${f.detail}` },
  unhandled_request: {
    ...INVALID,
    status: (f) => f.status,
    message: (f) => `mcp-edge could not handle the request: ${f.detail}`,
  },
  not_found: {
    ...INVALID,
    status: 404,
    message: (f) =>
      `Not found: mcp-edge serves MCP at ${f.listenPath}${f.path === undefined ? ' only' : `, not ${f.path}`}`,
  },
  no_public_url: { ...INVALID, message: () => 'mcp-edge cannot name its public URL: set server.publicUrl' },
  invalid_host: {
    ...INVALID,
    message: (f) => `Host "${f.host}" is not a valid host[:port] (RFC 9110 section 7.2)`,
  },
  forbidden_host: {
    ...REFUSED,
    reason: 'forbidden_host',
    status: 403,
    message: (f) => `Host "${f.host ?? ''}" is not allowed by this mcp-edge (server.allowedHosts)`,
  },
  forbidden_origin: {
    ...REFUSED,
    reason: 'forbidden_origin',
    status: 403,
    message: (f) => `Origin "${f.origin}" is not allowed by this mcp-edge (server.allowedOrigins)`,
  },
  cors_not_granted: {
    ...REFUSED,
    reason: 'forbidden_origin',
    status: 403,
    message: (f) =>
      `Origin "${f.origin ?? ''}" is not granted CORS by this mcp-edge (server.cors.allowedOrigins)`,
  },
  method_not_allowed: {
    ...REFUSED,
    reason: 'method_not_allowed',
    status: 405,
    headers: (f) => ({ allow: f.allow }),
    message: (f) => `Method not allowed: the MCP endpoint takes ${f.allow}`,
  },
  unauthenticated: {
    ...REFUSED,
    reason: 'unauthenticated',
    status: 401,
    headers: (f) => ({ 'www-authenticate': f.wwwAuthenticate }),
    message: (f) => f.detail,
  },
  session_required: {
    ...REFUSED,
    reason: 'method_not_allowed',
    status: 405,
    headers: { allow: 'POST' },
    message: (f) =>
      `${f.method} needs an Mcp-Session-Id: without a session there is no stream to open or end`,
  },
  session_not_found: {
    ...INVALID,
    status: 404,
    message: (f) =>
      `Session not found: ${f.sessionId} is not a session of this MCP server (it ended, or never was); initialize again`,
  },
  get_stream_open: {
    ...INVALID,
    status: 409,
    message: () => 'Conflict: this session has a GET stream open already',
  },
  // Where clients without a session share a process, no one can tell whose request that is.
  unattributable: {
    ...INVALID,
    message: (f) =>
      `This request ${unattributableAct(f.answersServer)}, but it carries no Mcp-Session-Id: clients without a session share one MCP server process per tenant, and mcp-edge cannot tell whose request that is, so none may answer or cancel one (close the request's stream to cancel it; initialize a session to answer server requests)`,
  },
  upstream_malformed: { ...INVALID, message: (f) => f.detail },
  id_in_use: { ...REFUSED, reason: 'id_in_use', status: 409, message: (f) => f.detail },
  // 405 is the MCP transport's "no SSE stream at this endpoint": SDK clients (v1 and v2) go on without that
  // stream, where a 429 or 503 makes them report an error or retry against the same full capacity.
  session_streams_full: {
    ...REFUSED,
    reason: 'session_streams_exceeded',
    status: 405,
    headers: { allow: 'POST, DELETE' },
    message: (f) =>
      getStreamsMessage(
        `this session has ${f.max} GET streams open already (server.maxGetStreamsPerSession)`,
      ),
  },
  stream_connections_full: {
    ...REFUSED,
    reason: 'upstream_capacity',
    status: 405,
    headers: { allow: 'POST, DELETE' },
    message: (f) =>
      getStreamsMessage(
        `${f.max} GET streams are open through mcp-edge already (upstream.maxStreamConnections)`,
      ),
  },
  processes_full: {
    ...REFUSED,
    reason: 'upstream_capacity',
    status: 503,
    outcome: 'upstream_capacity',
    headers: { 'retry-after': '5' },
    message: (f) => processesMessage(f.bound),
    data: (f) => ({ [f.bound.key]: f.bound.limit }),
  },
  // Shaped as a ceiling's refusal (the same code, the request's id), so every client that shows one shows this.
  quota_exceeded: {
    ...REFUSED,
    reason: 'quota_exceeded',
    status: 429,
    headers: (f) => ({ 'retry-after': String(f.quota.retryAfterSeconds) }),
    message: (f) => quotaMessage(f.quota),
    data: (f) => quotaFields(f.quota),
  },
  quota_keys_exhausted: {
    ...REFUSED,
    reason: 'quota_keys_exhausted',
    status: 429,
    headers: (f) => ({ 'retry-after': String(f.share.retryAfterSeconds) }),
    message: (f) => quotaKeysMessage(f.share),
    data: ({ share: q }) => ({
      rule: q.rule,
      keysPerTenant: q.keysPerTenant,
      maxKeys: q.maxKeys,
      retryAfterSeconds: q.retryAfterSeconds,
      tenant: q.tenant,
    }),
  },
  quota_store_unavailable: {
    ...REFUSED,
    reason: 'quota_store_unavailable',
    status: 503,
    headers: (f) => ({ 'retry-after': String(f.retryAfterSeconds) }),
    message: () =>
      'mcp-edge cannot check this request against its quotas: the quota store is unavailable (quotas.onStoreError: refuse, set by the mcp-edge operator); the request was not sent, so it is safe to send again',
  },
  // 200: SDK clients surface a 2xx JSON-RPC error to the caller with its code and data.
  pagination_bound: {
    ...REFUSED,
    reason: 'pagination_bound_exceeded',
    status: 200,
    outcome: 'pagination_bound',
    message: (f) =>
      `${f.method} page ${f.page} refused: one listing may take at most ${f.maxPages} pages (pagination.maxPagesPerListing, set by the mcp-edge operator); the server's nextCursor did not end. Start the listing again without a cursor.`,
    data: (f) => ({ method: f.method, page: f.page, maxPagesPerListing: f.maxPages }),
  },
  shutting_down: {
    ...REFUSED,
    reason: 'shutting_down',
    status: 503,
    outcome: 'shutdown',
    headers: { connection: 'close' },
    message: () =>
      'mcp-edge is shutting down; this request was not sent to the MCP server, so it is safe to send again (through an mcp-edge that is serving)',
  },
  // Said whatever the stream's event ids: no one can resume a stream through an edge that exits.
  ended_by_shutdown: {
    reason: 'shutting_down',
    code: CODE_RESPONSE_UNDELIVERABLE,
    status: 503,
    outcome: 'shutdown',
    headers: { connection: 'close' },
    message: () =>
      'mcp-edge is shutting down and ended this request before the MCP server had answered it; the request may be retried (through an mcp-edge that is serving), but the MCP server may have started it already',
  },
  upstream_timeout: {
    ...upstreamFailure('The MCP server behind mcp-edge did not answer in time'),
    reason: 'upstream_timeout',
    status: 504,
    outcome: 'upstream_timeout',
  },
  upstream_unreachable: {
    ...upstreamFailure('The MCP server behind mcp-edge is unreachable'),
    reason: 'upstream_unreachable',
    status: 502,
    outcome: 'upstream_unreachable',
  },
  // Never sent: Retry-After says to clients that read it that it may be sent again at once.
  upstream_capacity: {
    ...upstreamFailure(
      'mcp-edge has as many calls in flight to the MCP server as it may (upstream.maxConnections, set by the mcp-edge operator) and none ended within upstream.timeouts.queue; this request was not sent, so it is safe to send again',
    ),
    reason: 'upstream_capacity',
    status: 503,
    outcome: 'upstream_capacity',
    headers: { 'retry-after': '1' },
  },
  upstream_failed: {
    ...upstreamFailure('The exchange with the MCP server behind mcp-edge failed'),
    reason: 'upstream_failed',
    status: 502,
    outcome: 'upstream_body_failed',
  },
  // Nothing of the exception in the answer (it is in the log); the connection may carry what is left of it.
  edge_failure: {
    reason: 'edge_failure',
    code: CODE_RESPONSE_UNDELIVERABLE,
    status: 500,
    outcome: 'edge_failure',
    headers: { connection: 'close' },
    message: () => 'mcp-edge failed while handling this request; the failure is in its log',
  },
  // A GET resuming a call's stream after the answer the edge replaced: 204 is SSE's "do not reconnect".
  stream_complete: { empty: true, status: 204, headers: {}, outcome: 'stream_complete' },
  preflight: { empty: true, status: 204, headers: (f) => f.headers, outcome: 'refused' },
  answer_over_ceiling: {
    reason: (f) => ceilingNamed(f.violation.limit).reason,
    code: CODE_RESPONSE_UNDELIVERABLE,
    message: (f) => answerRefusalText(f.violation),
    data: (f) => limitFields(f.violation),
  },
  answer_over_host_budget: {
    reason: 'host_budget_exceeded',
    code: CODE_RESPONSE_UNDELIVERABLE,
    message: (f) => hostBudgetMessage(f.violation),
    data: (f) => hostBudgetFields(f.violation),
  },
  ambiguous_answer: {
    reason: 'ambiguous_message',
    code: CODE_RESPONSE_UNDELIVERABLE,
    message: (f) =>
      `Response message ${ambiguityWords(f.ambiguous, 'a client')}, so mcp-edge did not deliver it`,
    data: (f) => ambiguityFields(f.ambiguous),
  },
  answer_stream_ended: lost(() => 'the MCP server ended the stream without answering'),
  answer_stream_broke_off: {
    ...lost(() => 'the stream from the MCP server broke off'),
    outcome: 'upstream_stream_failed',
  },
  answer_stream_silent: {
    ...lost<{ silentMs: number }>(
      (f) => `the MCP server sent nothing for ${f.silentMs} ms (upstream.timeouts.answerStream)`,
    ),
    outcome: 'upstream_timeout',
  },
  answer_framing_too_large: lost(() => 'its SSE framing was larger than mcp-edge holds'),
  answer_line_too_large: lost<{ totalBytes: number }>(
    (f) =>
      `the answer was ${f.totalBytes} bytes, larger than mcp-edge holds for a stdio line whose id comes last while several calls wait`,
  ),
  answer_lost: lost<{ detail: string }>((f) => f.detail),
  // The stdio child's request of its own that no client can take: it does not wait.
  undelivered_request: {
    reason: (f) => f.reason,
    code: CODE_RESPONSE_UNDELIVERABLE,
    message: (f) => `mcp-edge: no client can take this request: ${undeliveredWhy(f.reason)}`,
  },
} as const satisfies { readonly [K in RefusalName]: Row<RefusalFacts[K]> };

type Table = typeof REFUSALS;

/** The refusals that can be a whole HTTP answer (respondLocally sends them). */
export type AnswerName = {
  [K in RefusalName]: Table[K] extends { status: unknown; outcome: Outcome } ? K : never;
}[RefusalName];
/** The refusals with a JSON-RPC error (in an answer, or as one). */
export type ErrorName = { [K in RefusalName]: Table[K] extends { code: number } ? K : never }[RefusalName];
/** The refusals an exchange whose answer had begun can end with (endedByEdge): they name an outcome. */
export type EndingName = {
  [K in RefusalName]: Table[K] extends { outcome: Outcome } ? K : never;
}[RefusalName];

/** The table as rows of their facts, for the builders (answers.ts). */
export const ROWS: { readonly [K in RefusalName]: Row<RefusalFacts[K]> } = REFUSALS;
