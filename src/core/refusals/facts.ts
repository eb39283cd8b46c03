// The facts each refusal is worded from: a call site names a refusal of the table (table.ts) and hands it
// these, typed per refusal, so no refusal can be given another's facts, and none is handed words or a status.
import type { AmbiguousKey } from '../key-names.js';
import type { JsonRpcId, LimitViolation } from '../types.js';

/** A refusal that needs no fact beyond its name. */
export type NoFacts = Record<string, never>;

/** `capacity`: no upstream connection of the edge's came free in time, so the request was never sent. */
export type UpstreamFailureKind = 'unreachable' | 'timeout' | 'capacity' | 'failed';

/** What an upstream failure was, for operators: in the log always, in the client's answer only when enabled. */
export interface UpstreamDiagnostic {
  detail: string;
  upstream: string;
}

/**
 * The bound on an upstream's processes a new session ran into: all of them, or its tenant's; `setting` is
 * the config path the kind reads it from.
 */
export type ProcessBound =
  | { key: 'maxProcesses'; limit: number; setting: string }
  | { key: 'maxProcessesPerTenant'; limit: number; setting: string };

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
 * Why a message from the upstream reached no client: its caller left, it names no caller (a shared stdio
 * child), or no client stream opened in time. The `reason` label of mcp_edge_undelivered_messages_total.
 */
export type UndeliveredReason = 'caller_gone' | 'no_owner' | 'no_stream';

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

/** The facts of each refusal, by its name in the table. */
export interface RefusalFacts {
  // A request refused whole, before the upstream: its body.
  empty_batch: NoFacts;
  not_json_rpc: NoFacts;
  /** `detail`: JSON.parse's words, when it found the body wrong too. */
  not_json: { detail: string | undefined };
  ambiguous_request: { ambiguous: AmbiguousKey };
  header_mismatch: { mismatch: HeaderMismatch };
  request_over_ceiling: { violation: LimitViolation };
  unsupported_content_type: { contentType: string | undefined };
  unsupported_content_encoding: { coding: string };
  unreadable_body: { detail: string };
  /** A client error Fastify found (its status, 4xx) before any stage of the edge's. */
  unhandled_request: { status: number; detail: string };
  // Its path, Host, Origin, method, credentials.
  /** `path` undefined: a path under the endpoint's own. */
  not_found: { listenPath: string; path?: string };
  no_public_url: NoFacts;
  invalid_host: { host: string };
  forbidden_host: { host: string | undefined };
  forbidden_origin: { origin: string };
  cors_not_granted: { origin: string | undefined };
  method_not_allowed: { allow: string };
  /** `detail`: the tenant resolver's finding; `wwwAuthenticate`: its challenge. */
  unauthenticated: { detail: string; wwwAuthenticate: string };
  // The session rules and the upstream's own refusals.
  session_required: { method: string };
  session_not_found: { sessionId: string };
  get_stream_open: NoFacts;
  unattributable: { answersServer: boolean };
  /** `detail`: what the upstream kind found wrong with the body. */
  upstream_malformed: { detail: string };
  /** `detail`: whose id or token it is and for how long (the stdio upstream's words). */
  id_in_use: { detail: string };
  session_streams_full: { max: number };
  stream_connections_full: { max: number };
  processes_full: { bound: ProcessBound };
  // The operator's bounds over time.
  quota_exceeded: { quota: QuotaRefusal };
  quota_keys_exhausted: { share: QuotaKeysRefusal };
  quota_store_unavailable: { retryAfterSeconds: number };
  pagination_bound: { method: string; page: number; maxPages: number };
  // Shutdown, the upstream's failures, the edge's own.
  shutting_down: NoFacts;
  ended_by_shutdown: NoFacts;
  upstream_timeout: { diagnostic: UpstreamDiagnostic | undefined };
  upstream_unreachable: { diagnostic: UpstreamDiagnostic | undefined };
  upstream_capacity: { diagnostic: UpstreamDiagnostic | undefined };
  upstream_failed: { diagnostic: UpstreamDiagnostic | undefined };
  edge_failure: NoFacts;
  // Answers without a body.
  stream_complete: NoFacts;
  preflight: { headers: Record<string, string> };
  // Errors inside an answer: one message replaced, or an answer that never came.
  answer_over_ceiling: { violation: LimitViolation };
  answer_over_host_budget: { violation: HostBudgetViolation };
  ambiguous_answer: { ambiguous: AmbiguousKey };
  answer_stream_ended: NoFacts;
  answer_stream_broke_off: NoFacts;
  answer_stream_silent: { silentMs: number };
  answer_framing_too_large: NoFacts;
  answer_line_too_large: { totalBytes: number };
  /** `detail`: how the stdio child ended. */
  answer_lost: { detail: string };
  undelivered_request: { reason: UndeliveredReason };
}

/** A refusal's name. */
export type RefusalName = keyof RefusalFacts;
