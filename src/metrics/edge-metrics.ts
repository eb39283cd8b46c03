// The metrics recorder: an InspectionObserver per tenant for what the inspectors see, plus the calls the
// proxy makes per exchange. Hot-path calls look up a cached prom-client child by a short string key; the
// label object and the child are built once per distinct label set.
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Outcome } from '../core/outcome.js';
import type {
  Direction,
  LimitName,
  LimitPolicy,
  LimitViolation,
  MessageKind,
  MessageMeasurement,
  MessageSubject,
  ResultChannelName,
} from '../core/types.js';
import { redactUrl } from '../core/url-credentials.js';
import type { InspectionObserver, LimitAction } from '../inspect/observer.js';
import type { DropReason } from '../telemetry/bounded-processor.js';
import { type CapacitySources, watchCapacity, withoutStdioFamilies } from './capacity-gauges.js';
import { configuredCeilings, namesInPolicy } from './configured-ceilings.js';
import { createFamilies, type EdgeFamilies, UPSTREAM_LABEL } from './families.js';
import { type CounterCell, counterCell, type HistogramCell, histogramCell } from './fast-children.js';
import { boundHttpMethod, boundStatus, LabelGuard, type ToolLabels, toolLabelGuard } from './label-guard.js';
import { recordConfigLoad, recordRuntimeInfo } from './runtime-info.js';
import { createToolRecorders, type ToolRecorders } from './tool-metrics.js';

export interface EdgeMetrics extends ToolRecorders {
  registry: Registry;
  /** Observer bound to one exchange's tenant; the proxy combines it with its own per-exchange summary. */
  observerFor(tenant: string): InspectionObserver;
  /** One per finished HTTP exchange on the MCP endpoint; `outcome` is one of OUTCOMES (src/core/outcome.ts). */
  exchangeFinished(e: { tenant: string; httpMethod: string; status: number; outcome: Outcome }): void;
  /** Time from sending upstream to its response headers. */
  upstreamResponded(e: { tenant: string; status: number; seconds: number }): void;
  /** Returns the function to call when the stream ends (gauge inc/dec; safe to call twice). */
  sseStreamOpened(tenant: string): () => void;
  sseEvent(tenant: string): void;
  /** A tenant header from a peer outside trustedProxies (ignored and counted). */
  untrustedTenantHeader(): void;
  /** Spans the trace exporter never got, and why (src/telemetry/bounded-processor.ts DROP_REASONS). */
  spansDropped(count: number, reason: DropReason): void;
  /** A message of the upstream's that reached no client (src/upstream/upstream.ts UndeliveredReason). */
  undelivered(tenant: string, reason: string): void;
  /**
   * A reload's result: the last-reload gauges (success, timestamp) set, and counted unless `unchanged` (a file
   * read again with the content that runs: a success for the gauges, which a fix back to that content resolves).
   */
  configReloaded(result: 'success' | 'failure' | 'unchanged'): void;
  /** Info metric: mcp_edge_config_info{sha256, source} 1 (old series removed on change). */
  configLoaded(sha256: string, source: string): void;
  /**
   * mcp_edge_limit_bytes{tenant, limit, method, tool}: the configured ceilings, for headroom panels. Replaces
   * all previous values. A ceiling that is off (0 in the config, no hardMaxBytes) is exported as +Inf, so a
   * tool override that lifts the ceiling still shadows the tenant's base ceiling in the headroom joins.
   */
  setLimits(policy: LimitPolicy, tenants: string[]): void;
  /** mcp_edge_held_bytes and the stdio process gauges read from their owners at each scrape. */
  watchCapacity(sources: CapacitySources): void;
}

export interface EdgeMetricsOptions {
  /** The upstream URL: the constant `upstream` label on every family (any userinfo redacted). */
  upstream: string;
  /** Distinct tool names from the wire that get their own label value (default 200). */
  maxToolLabels?: number;
  /** Distinct method names from the wire that get their own label value (default 100). */
  maxMethodLabels?: number;
  /** prom-client's default process metrics (default true). */
  collectDefault?: boolean;
  /** metrics.nearCeilingPercent: a message above this percentage of its ceiling counts as near it (default 80). */
  nearCeilingPercent?: number;
  /** metrics.tokenHistograms: export mcp_edge_message_estimated_tokens (default true). */
  tokenHistograms?: boolean;
  /** metrics.toolLabels: `all` (bounded by maxToolLabels), `none`, or the only tool names that keep their label. */
  toolLabels?: ToolLabels;
}

export const DEFAULT_MAX_TOOL_LABELS = 200;
export const DEFAULT_MAX_METHOD_LABELS = 100;
export const DEFAULT_NEAR_CEILING_PERCENT = 80;

const CHANNEL_NAMES: readonly ResultChannelName[] = [
  'content_text',
  'content_image',
  'content_audio',
  'content_resource_link',
  'content_resource',
  'structured',
];

/** Stores a new child and returns it. Used as `cache.get(key) ?? remember(cache, key, family.labels(...))`, so the
 * label object and the child are only built on a miss (no closure per call). */
function remember<C>(cache: Map<string, C>, key: string, child: C): C {
  cache.set(key, child);
  return child;
}

interface Guards {
  method: LabelGuard;
  tool: LabelGuard;
}

type HistogramChild = HistogramCell;
type CounterChild = CounterCell;
type GaugeChild = ReturnType<EdgeFamilies['sseStreamsActive']['labels']>;

/**
 * The prom-client children for one (tenant, direction, method, tool): everything a message about that subject
 * records, built on first use. One slot lookup per message instead of one keyed lookup per family.
 */
class SubjectSlot {
  private readonly sizes: Partial<Record<MessageKind, HistogramChild>> = {};
  private readonly channels: Partial<Record<ResultChannelName, HistogramChild>> = {};
  private readonly exceeded = new Map<string, CounterChild>();
  private readonly near = new Map<string, CounterChild>();
  private tokensChild: HistogramChild | undefined;
  private duplicatedChild: CounterChild | undefined;

  constructor(
    private readonly families: EdgeFamilies,
    private readonly tenant: string,
    private readonly direction: Direction,
    private readonly method: string,
    private readonly tool: string,
  ) {}

  size(kind: MessageKind): HistogramChild {
    const { direction, method, tool, tenant } = this;
    this.sizes[kind] ??= histogramCell(this.families.messageBytes, {
      direction,
      kind,
      method,
      tool,
      tenant,
    });
    return this.sizes[kind];
  }

  tokens(): HistogramChild {
    const { direction, method, tool, tenant } = this;
    this.tokensChild ??= histogramCell(this.families.messageTokens, { direction, method, tool, tenant });
    return this.tokensChild;
  }

  channel(channel: ResultChannelName): HistogramChild {
    const { tool, tenant } = this;
    this.channels[channel] ??= histogramCell(this.families.resultChannelBytes, { channel, tool, tenant });
    return this.channels[channel];
  }

  duplicated(): CounterChild {
    const { tool, tenant } = this;
    this.duplicatedChild ??= counterCell(this.families.duplicatedBytes, { tool, tenant });
    return this.duplicatedChild;
  }

  nearCeiling(limit: LimitName): CounterChild {
    let child = this.near.get(limit);
    if (child === undefined) {
      const { direction, method, tool, tenant } = this;
      child = counterCell(this.families.nearCeiling, { limit, direction, tenant, method, tool });
      this.near.set(limit, child);
    }
    return child;
  }

  limitExceeded(limit: LimitName, action: LimitAction): CounterChild {
    const key = `${limit} ${action}`;
    let child = this.exceeded.get(key);
    if (child === undefined) {
      const { direction, method, tool, tenant } = this;
      child = counterCell(this.families.limitExceeded, { limit, direction, action, tenant, method, tool });
      this.exceeded.set(key, child);
    }
    return child;
  }
}

/** What a tenant's observer records beyond the always-on families. */
interface Recording {
  tokens: boolean;
  nearCeilingPercent: number;
}

/** The observer for one tenant. Its slots are bounded by the label guards: directions x methods x tools. */
function createTenantObserver(
  tenant: string,
  families: EdgeFamilies,
  guards: Guards,
  recording: Recording,
): InspectionObserver {
  const { tokens, nearCeilingPercent } = recording;
  const slots: Record<Direction, Map<string, Map<string, SubjectSlot>>> = {
    request: new Map(),
    response: new Map(),
  };
  const unparsable: Partial<Record<Direction, CounterChild>> = {};

  function slotFor(
    direction: Direction,
    rawMethod: string | undefined,
    rawTool: string | undefined,
  ): SubjectSlot {
    const method = guards.method.bound(rawMethod);
    const tool = guards.tool.bound(rawTool);
    let byTool = slots[direction].get(method);
    if (byTool === undefined) {
      byTool = new Map();
      slots[direction].set(method, byTool);
    }
    let slot = byTool.get(tool);
    if (slot === undefined) {
      slot = new SubjectSlot(families, tenant, direction, method, tool);
      byTool.set(tool, slot);
    }
    return slot;
  }

  return {
    message(direction: Direction, m: MessageMeasurement, subject: MessageSubject): void {
      const slot = slotFor(direction, subject.method, subject.tool);
      slot.size(m.kind).observe(m.envelopeBytes);
      if (tokens) slot.tokens().observe(m.estimatedTokens);
      const channels = m.channels;
      if (channels !== undefined) {
        for (const channel of CHANNEL_NAMES) {
          const bytes = channels[channel];
          if (bytes > 0) slot.channel(channel).observe(bytes);
        }
      }
      if (m.duplicatedBytes > 0) slot.duplicated().inc(m.duplicatedBytes);
    },
    limitExceeded(v: LimitViolation, action: LimitAction): void {
      slotFor(v.direction, v.method, v.tool).limitExceeded(v.limit, action).inc();
    },
    ceilingMeasured(direction, limit, ceiling, bytes, subject): void {
      if (bytes * 100 > ceiling * nearCeilingPercent)
        slotFor(direction, subject.method, subject.tool).nearCeiling(limit).inc();
    },
    unparsable(direction: Direction): void {
      unparsable[direction] ??= counterCell(families.unparsableMessages, { direction, tenant });
      unparsable[direction].inc();
    },
    toolsListed(names: readonly string[]): void {
      guards.tool.list(names);
    },
  };
}

export function createEdgeMetrics(opts: EdgeMetricsOptions): EdgeMetrics {
  const registry = new Registry();
  // Credentials in upstream.url never become a label value.
  registry.setDefaultLabels({ [UPSTREAM_LABEL]: redactUrl(opts.upstream) });
  if (opts.collectDefault ?? true) collectDefaultMetrics({ register: registry });
  const recording: Recording = {
    tokens: opts.tokenHistograms ?? true,
    nearCeilingPercent: opts.nearCeilingPercent ?? DEFAULT_NEAR_CEILING_PERCENT,
  };
  const families = createFamilies(registry, { tokenHistograms: recording.tokens });
  recordRuntimeInfo(registry, families);
  withoutStdioFamilies(registry);
  const guards: Guards = {
    method: new LabelGuard(opts.maxMethodLabels ?? DEFAULT_MAX_METHOD_LABELS),
    tool: toolLabelGuard(opts.maxToolLabels ?? DEFAULT_MAX_TOOL_LABELS, opts.toolLabels ?? 'all'),
  };
  // Both results exist from the start at 0, so the first failed reload is an increase Prometheus can see.
  families.configReloads.labels({ result: 'success' }).inc(0);
  families.configReloads.labels({ result: 'failure' }).inc(0);

  const observers = new Map<string, InspectionObserver>();
  const requests = new Map<string, CounterChild>();
  const upstreamDurations = new Map<string, HistogramChild>();
  const sseStreams = new Map<string, GaugeChild>();
  const sseEvents = new Map<string, CounterChild>();

  return {
    registry,
    ...createToolRecorders(families, guards),
    observerFor(tenant) {
      return (
        observers.get(tenant) ??
        remember(observers, tenant, createTenantObserver(tenant, families, guards, recording))
      );
    },
    exchangeFinished({ tenant, httpMethod, status, outcome }) {
      const http_method = boundHttpMethod(httpMethod);
      const statusLabel = boundStatus(status);
      const key = `${tenant}\0${http_method}\0${statusLabel}\0${outcome}`;
      const child =
        requests.get(key) ??
        remember(
          requests,
          key,
          counterCell(families.requests, { tenant, http_method, status: statusLabel, outcome }),
        );
      child.inc();
    },
    upstreamResponded({ tenant, status, seconds }) {
      const statusLabel = boundStatus(status);
      const key = `${tenant}\0${statusLabel}`;
      const child =
        upstreamDurations.get(key) ??
        remember(
          upstreamDurations,
          key,
          histogramCell(families.upstreamDuration, { tenant, status: statusLabel }),
        );
      child.observe(seconds);
    },
    sseStreamOpened(tenant) {
      const gauge =
        sseStreams.get(tenant) ?? remember(sseStreams, tenant, families.sseStreamsActive.labels({ tenant }));
      gauge.inc();
      let open = true;
      return () => {
        if (!open) return;
        open = false;
        gauge.dec();
      };
    },
    sseEvent(tenant) {
      const child =
        sseEvents.get(tenant) ?? remember(sseEvents, tenant, counterCell(families.sseEvents, { tenant }));
      child.inc();
    },
    spansDropped(count, reason) {
      families.spansDropped.labels({ reason }).inc(count);
    },
    untrustedTenantHeader() {
      families.untrustedTenantHeader.inc();
    },
    undelivered(tenant, reason) {
      families.undeliveredMessages.inc({ reason, tenant });
    },
    configReloaded(result) {
      if (result !== 'unchanged') families.configReloads.inc({ result });
      recordConfigLoad(families, result !== 'failure');
    },
    configLoaded(sha256, source) {
      families.configInfo.reset();
      families.configInfo.set({ sha256, source }, 1);
    },
    setLimits(policy, tenants) {
      guards.method.reserve(namesInPolicy(policy, 'methods'));
      guards.tool.reserve(namesInPolicy(policy, 'tools'));
      families.limitBytes.reset();
      for (const c of configuredCeilings(policy, tenants)) {
        families.limitBytes.set(
          { tenant: c.tenant, limit: c.limit, method: c.method, tool: c.tool },
          c.bytes,
        );
      }
    },
    watchCapacity: (sources) => watchCapacity(registry, families, sources),
  };
}
