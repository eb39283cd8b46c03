// Every Prometheus family mcp-edge exports, in one place: names, help, label names and buckets.
// The dashboard (grafana/dashboards/mcp-edge.json) and the alert rules (deploy/prometheus/alerts.yaml)
// query exactly these names; change them together.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * Powers of 2 from 256 B to 64 MiB (19 buckets), for the size panels. How near a message came to its own
 * ceiling is counted exactly (mcp_edge_near_ceiling_messages_total), not read from these buckets.
 */
export const BYTE_BUCKETS: readonly number[] = Object.freeze(
  Array.from({ length: 19 }, (_, i) => 2 ** (8 + i)),
);

/** Powers of 4 from 64 to 16 Mi tokens: an estimate is rough, so coarse buckets are enough. */
export const TOKEN_BUCKETS: readonly number[] = Object.freeze(
  Array.from({ length: 10 }, (_, i) => 64 * 4 ** i),
);

/** Time to upstream response headers: from a fast local server to a slow tool call. */
export const SECONDS_BUCKETS: readonly number[] = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
]);

/** A tool result's size as a share of the calling host's budget: 1 is the budget itself. */
export const SHARE_BUCKETS: readonly number[] = Object.freeze([
  0.1, 0.25, 0.5, 0.75, 0.9, 1, 1.25, 1.5, 2, 4, 10,
]);

/** The registry's default label on every family (and on the process metrics). */
export const UPSTREAM_LABEL = 'upstream';

export const METRIC_NAMES = Object.freeze({
  messageBytes: 'mcp_edge_message_bytes',
  messageTokens: 'mcp_edge_message_estimated_tokens',
  resultChannelBytes: 'mcp_edge_result_channel_bytes',
  duplicatedBytes: 'mcp_edge_duplicated_bytes_total',
  limitExceeded: 'mcp_edge_limit_exceeded_total',
  limitBytes: 'mcp_edge_limit_bytes',
  requests: 'mcp_edge_requests_total',
  upstreamDuration: 'mcp_edge_upstream_duration_seconds',
  sseStreamsActive: 'mcp_edge_sse_streams_active',
  sseEvents: 'mcp_edge_sse_events_total',
  unparsableMessages: 'mcp_edge_unparsable_messages_total',
  undeliveredMessages: 'mcp_edge_undelivered_messages_total',
  untrustedTenantHeader: 'mcp_edge_untrusted_tenant_header_total',
  configReloads: 'mcp_edge_config_reloads_total',
  configInfo: 'mcp_edge_config_info',
  hostBudgetExceeded: 'mcp_edge_host_budget_exceeded_total',
  hostBudgetRatio: 'mcp_edge_host_budget_ratio',
  callDuration: 'mcp_edge_call_duration_seconds',
  toolErrors: 'mcp_edge_tool_errors_total',
  toolDescriptorBytes: 'mcp_edge_tool_descriptor_bytes',
  toolCatalogBytes: 'mcp_edge_tool_catalog_bytes',
  toolCatalogTools: 'mcp_edge_tool_catalog_tools',
  nearCeiling: 'mcp_edge_near_ceiling_messages_total',
  buildInfo: 'mcp_edge_build_info',
  configLastReloadSuccess: 'mcp_edge_config_last_reload_success',
  configLastReloadTimestamp: 'mcp_edge_config_last_reload_timestamp_seconds',
  memoryLimit: 'mcp_edge_memory_limit_bytes',
  heldBytes: 'mcp_edge_held_bytes',
  spansDropped: 'mcp_edge_spans_dropped_total',
  stdioProcesses: 'mcp_edge_stdio_processes',
  stdioProcessesLimit: 'mcp_edge_stdio_processes_limit',
});

/** What the operator chose to export (metrics.tokenHistograms); the rest of the families are always there. */
export interface FamilyOptions {
  /** mcp_edge_message_estimated_tokens (default true). */
  tokenHistograms?: boolean;
}

/** Creates every family on `registry` (each family exists once per registry). */
export function createFamilies(registry: Registry, options: FamilyOptions = {}) {
  const registers = [registry];
  return {
    messageBytes: new Histogram({
      name: METRIC_NAMES.messageBytes,
      help: 'Envelope bytes of every JSON-RPC message, as the peer sent it. method/tool: what the message is about (its own method, or the request it answers).',
      labelNames: ['direction', 'kind', 'method', 'tool', 'tenant'] as const,
      buckets: [...BYTE_BUCKETS],
      registers,
    }),
    messageTokens: new Histogram({
      name: METRIC_NAMES.messageTokens,
      help: 'Rough token estimate of every JSON-RPC message (observational only).',
      labelNames: ['direction', 'method', 'tool', 'tenant'] as const,
      buckets: [...TOKEN_BUCKETS],
      // metrics.tokenHistograms: false keeps the family out of the registry (nothing is observed into it).
      registers: options.tokenHistograms === false ? [] : registers,
    }),
    resultChannelBytes: new Histogram({
      name: METRIC_NAMES.resultChannelBytes,
      help: 'Bytes of each non-empty channel of a tool result (content_* blocks by type, structured = structuredContent).',
      labelNames: ['channel', 'tool', 'tenant'] as const,
      buckets: [...BYTE_BUCKETS],
      registers,
    }),
    duplicatedBytes: new Counter({
      name: METRIC_NAMES.duplicatedBytes,
      help: 'Bytes of tool-result text blocks whose text repeats the serialized structuredContent.',
      labelNames: ['tool', 'tenant'] as const,
      registers,
    }),
    limitExceeded: new Counter({
      name: METRIC_NAMES.limitExceeded,
      help: 'Ceilings that tripped. action=rejected: enforced (refused or replaced); observed: observe mode, forwarded.',
      labelNames: ['limit', 'direction', 'action', 'tenant', 'method', 'tool'] as const,
      registers,
    }),
    limitBytes: new Gauge({
      name: METRIC_NAMES.limitBytes,
      help: 'Configured ceilings in bytes per tenant; method/tool empty for the base ceiling, set for each configured override. +Inf: no ceiling.',
      labelNames: ['tenant', 'limit', 'method', 'tool'] as const,
      registers,
    }),
    requests: new Counter({
      name: METRIC_NAMES.requests,
      help: 'Finished HTTP exchanges on the MCP endpoint by the status the client got and how the exchange ended.',
      labelNames: ['tenant', 'http_method', 'status', 'outcome'] as const,
      registers,
    }),
    upstreamDuration: new Histogram({
      name: METRIC_NAMES.upstreamDuration,
      help: 'Seconds from sending a request upstream to its response headers, by upstream status.',
      labelNames: ['tenant', 'status'] as const,
      buckets: [...SECONDS_BUCKETS],
      registers,
    }),
    sseStreamsActive: new Gauge({
      name: METRIC_NAMES.sseStreamsActive,
      help: 'Server-sent event streams currently open through the proxy.',
      labelNames: ['tenant'] as const,
      registers,
    }),
    sseEvents: new Counter({
      name: METRIC_NAMES.sseEvents,
      help: 'Server-sent events relayed to clients.',
      labelNames: ['tenant'] as const,
      registers,
    }),
    unparsableMessages: new Counter({
      name: METRIC_NAMES.unparsableMessages,
      help: 'Messages that are not JSON-RPC (not JSON, or not a JSON-RPC shape); forwarded unchanged.',
      labelNames: ['direction', 'tenant'] as const,
      registers,
    }),
    undeliveredMessages: new Counter({
      name: METRIC_NAMES.undeliveredMessages,
      help: 'Messages from the MCP server that mcp-edge delivered to no client: their caller left, they name no caller on a shared stdio child, or no client stream opened in time.',
      labelNames: ['reason', 'tenant'] as const,
      registers,
    }),
    untrustedTenantHeader: new Counter({
      name: METRIC_NAMES.untrustedTenantHeader,
      help: 'Tenant headers sent by peers outside trustedProxies (ignored).',
      registers,
    }),
    configReloads: new Counter({
      name: METRIC_NAMES.configReloads,
      help: 'Configuration reloads by result.',
      labelNames: ['result'] as const,
      registers,
    }),
    configInfo: new Gauge({
      name: METRIC_NAMES.configInfo,
      help: 'The configuration in use: its SHA-256 and where it was loaded from (always 1).',
      labelNames: ['sha256', 'source'] as const,
      registers,
    }),
    hostBudgetExceeded: new Counter({
      name: METRIC_NAMES.hostBudgetExceeded,
      help: 'Tool results over the budget of the host that called (host profiles: docs/limits.md), in the host unit. action=refused: replaced by an error (hostBudgets: refuse); observed: forwarded.',
      labelNames: ['host', 'tenant', 'tool', 'unit', 'action'] as const,
      registers,
    }),
    hostBudgetRatio: new Histogram({
      name: METRIC_NAMES.hostBudgetRatio,
      help: 'Size of each tool result as a ratio to the budget of the host that called (1 = the budget; below 0.5 an upper bound from raw bytes, tokens as bytes/4).',
      labelNames: ['host', 'tenant'] as const,
      buckets: [...SHARE_BUCKETS],
      registers,
    }),
    callDuration: new Histogram({
      name: METRIC_NAMES.callDuration,
      help: 'Seconds of a whole POST exchange, from the request received to the last byte of its answer (a streamed call included), by its method and tool (method "batch" for a batch).',
      labelNames: ['tenant', 'method', 'tool'] as const,
      buckets: [...SECONDS_BUCKETS],
      registers,
    }),
    toolErrors: new Counter({
      name: METRIC_NAMES.toolErrors,
      help: 'Tool calls the MCP server answered with an error: kind=is_error (a result with isError: true) or jsonrpc_error. Refusals by the edge itself are not counted here.',
      labelNames: ['tenant', 'tool', 'kind'] as const,
      registers,
    }),
    toolDescriptorBytes: new Gauge({
      name: METRIC_NAMES.toolDescriptorBytes,
      help: 'Bytes of each tool descriptor in tools/list (compact JSON: name, description, schemas, annotations), as last listed; __other__ sums the tools past the label bound.',
      labelNames: ['tenant', 'tool'] as const,
      registers,
    }),
    toolCatalogBytes: new Gauge({
      name: METRIC_NAMES.toolCatalogBytes,
      help: 'Bytes of all tool descriptors listed by the MCP server (every page), the context a host pays for the catalog.',
      labelNames: ['tenant'] as const,
      registers,
    }),
    toolCatalogTools: new Gauge({
      name: METRIC_NAMES.toolCatalogTools,
      help: 'Distinct tools listed by the MCP server (every page).',
      labelNames: ['tenant'] as const,
      registers,
    }),
    nearCeiling: new Counter({
      name: METRIC_NAMES.nearCeiling,
      help: 'Messages larger than metrics.nearCeilingPercent percent of the ceiling that applied to them (their tool, method or tenant ceiling), those over it included. Divided by mcp_edge_message_bytes_count: the share of messages near their ceiling.',
      labelNames: ['limit', 'direction', 'tenant', 'method', 'tool'] as const,
      registers,
    }),
    buildInfo: new Gauge({
      name: METRIC_NAMES.buildInfo,
      help: 'The mcp-edge version and the Node.js version it runs on (always 1).',
      labelNames: ['version', 'node'] as const,
      registers,
    }),
    configLastReloadSuccess: new Gauge({
      name: METRIC_NAMES.configLastReloadSuccess,
      help: 'Whether the last configuration load succeeded (1) or was refused (0, the previous configuration stays in force). The start counts as the first load.',
      registers,
    }),
    configLastReloadTimestamp: new Gauge({
      name: METRIC_NAMES.configLastReloadTimestamp,
      help: 'Unix time of the last configuration load, successful or not (the start counts as the first).',
      registers,
    }),
    memoryLimit: new Gauge({
      name: METRIC_NAMES.memoryLimit,
      help: 'The memory limit of the container or cgroup mcp-edge runs in, in bytes (absent when there is none). Compare with process_resident_memory_bytes.',
      registers,
    }),
    spansDropped: new Counter({
      name: METRIC_NAMES.spansDropped,
      help: 'Finished trace spans the exporter never got: the queue was full (telemetry.traces.maxQueueSize), or their export failed or timed out. No samples while traces are off.',
      labelNames: ['reason'] as const,
      registers,
    }),
    heldBytes: new Gauge({
      name: METRIC_NAMES.heldBytes,
      help: 'Bytes the edge holds in flight now: request bodies being read, JSON answers held until judged, the SSE event being framed. The in-flight term of the memory formula (docs/operations.md, Sizing memory).',
      registers,
    }),
    stdioProcesses: new Gauge({
      name: METRIC_NAMES.stdioProcesses,
      help: 'stdio MCP server processes alive now (a stdio upstream only).',
      registers,
    }),
    stdioProcessesLimit: new Gauge({
      name: METRIC_NAMES.stdioProcessesLimit,
      help: 'upstream.stdio.maxProcesses: the children the edge may run at once (a stdio upstream only). Divide mcp_edge_stdio_processes by it for the share in use.',
      registers,
    }),
  };
}

export type EdgeFamilies = ReturnType<typeof createFamilies>;
