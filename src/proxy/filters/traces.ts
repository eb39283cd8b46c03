// OpenTelemetry traces as an exchange filter (src/telemetry): a server span per exchange, continuing the
// client's W3C trace context, and inside it a span per JSON-RPC request or notification the exchange carries,
// named and attributed per the semantic conventions for MCP (src/telemetry/mcp-spans.ts) with the edge's
// verdicts. The exchange span is the parent of the upstream request (its traceparent header); the log line
// carries trace_id and span_id. Built only when tracing is on (filterChainOf): off, nothing of it runs.

import type { IncomingHttpHeaders } from 'node:http';
import type { Context, Span, SpanOptions, TextMapGetter, TextMapSetter } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { EdgeConfig } from '../../config/schema.js';
import type { TracesConfig } from '../../config/telemetry-schema.js';
import { boundedOptional } from '../../core/client-names.js';
import { headerValue } from '../../core/headers.js';
import type { Direction, LimitName, LimitViolation, MessageMeasurement } from '../../core/types.js';
import type { HostBudgetObservation } from '../../hosts/host-judge.js';
import type { InspectionObserver } from '../../inspect/observer.js';
import type { EdgeMetrics } from '../../metrics/edge-metrics.js';
import { DROP_REASONS, type DropReason } from '../../telemetry/bounded-processor.js';
import {
  answerOutcome,
  ceilingAttributes,
  type ExchangeFacts,
  exchangeEndAttributes,
  exchangeSpanName,
  hostBudgetAttributes,
  measurementAttributes,
  outcomeIsError,
  requestAttributes,
  requestIdText,
  requestSpanName,
  STABLE,
  sessionAttributes,
  tracedMessage,
  violationAttributes,
} from '../../telemetry/mcp-spans.js';
import { type Env, tracesEnabled } from '../../telemetry/otel-env.js';
import { type EdgeTracing, startTracing } from '../../telemetry/tracing.js';
import type { ExchangeEnding, ExchangeFilter, ExchangeRequest } from './exchange-filter.js';
import { ExchangeSlot } from './exchange-slot.js';

/**
 * One exchange's spans while it runs, and the observer of its messages: one object per exchange, kept in the
 * filter's slot on the exchange (made before admission, its span started at admission).
 */
class ExchangeTrace implements InspectionObserver {
  /** The exchange span, from admission on. */
  span: Span | undefined;
  /**
   * The sampler kept the exchange span: else nothing of the exchange is recorded (its request spans would not
   * be either: every sampler the edge offers decides a child as its parent or by the same trace id), and only
   * its trace context goes on, upstream and to the log line.
   */
  recording = false;
  /** The context whose active span is the exchange's: the parent of its request spans and of the upstream. */
  context: Context | undefined;
  /** Request spans waiting for their answer, by jsonrpc.request.id. */
  readonly waiting = new Map<string, Span>();
  /** Notification spans and requests without a usable id: they end with the exchange. */
  readonly others: Span[] = [];
  /** The span the message being judged belongs to (its ceiling and host budget are told next). */
  current: Span | undefined;

  message(direction: Direction, measurement: MessageMeasurement): void {
    // A request is measured before its span starts: its ceiling shows on a span only when crossed
    // (limitExceeded, on the exchange's span).
    if (direction === 'request' || !this.recording) {
      this.current = undefined;
      return;
    }
    const id = requestIdText(measurement.id);
    const span = id !== undefined ? this.waiting.get(id) : undefined;
    this.current = span;
    if (span?.isRecording()) span.setAttributes(measurementAttributes(measurement));
  }

  limitExceeded(violation: LimitViolation): void {
    if (!this.recording) return;
    const id = violation.direction === 'response' ? requestIdText(violation.id) : undefined;
    const span = (id !== undefined ? this.waiting.get(id) : undefined) ?? this.span;
    span?.setAttributes(violationAttributes(violation));
  }

  ceilingMeasured(_direction: Direction, limit: LimitName, ceiling: number): void {
    this.current?.setAttributes(ceilingAttributes(limit, ceiling));
  }

  hostBudget(observation: HostBudgetObservation): void {
    this.current?.setAttributes(hostBudgetAttributes(observation));
  }

  unparsable(): void {}
}

const headerGetter: TextMapGetter<IncomingHttpHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** The propagator writes the trace context straight onto the upstream request: headers, and _meta for stdio. */
const upstreamSetter: TextMapSetter<ExchangeRequest> = {
  set(request, name, value) {
    request.setUpstreamHeader(name, value);
    request.setUpstreamMeta(name, value);
  },
};

/** SpanKind.SERVER and SpanStatusCode.ERROR of @opentelemetry/api. */
const SERVER = 1;
const ERROR = 2;
/** The exchange span's options, the same for every exchange (the SDK only reads them). */
const EXCHANGE_SPAN: SpanOptions = { kind: SERVER };

/**
 * What counts the spans the exporter never got (and the request spans past an exchange's bound, never
 * started): mcp_edge_spans_dropped_total when metrics are on, and the log at warn (at most once a minute,
 * with the totals), so a drop is never silent.
 */
export function spanDropCounter(
  metrics: EdgeMetrics | undefined,
  log: Logger,
): (n: number, r: DropReason) => void {
  const totals = new Map<DropReason, number>(DROP_REASONS.map((reason) => [reason, 0]));
  // Each reason's series exists from the start at 0, so the first drop is an increase Prometheus can see.
  for (const reason of DROP_REASONS) metrics?.spansDropped(0, reason);
  let lastWarned = 0;
  return (count, reason) => {
    totals.set(reason, (totals.get(reason) ?? 0) + count);
    metrics?.spansDropped(count, reason);
    const now = Date.now();
    if (now - lastWarned >= 60_000) {
      lastWarned = now;
      log.warn(
        { dropped: Object.fromEntries(totals) },
        'spans dropped: the trace exporter is down, slow or behind, or a batch passed maxRequestSpans',
      );
    }
  };
}

/** A request span no answer ended: it ends with its exchange, whose outcome it takes. */
function endUnanswered(span: Span, outcome: ExchangeEnding['outcome'], failed: boolean): void {
  span.setAttribute('mcp_edge.outcome', outcome);
  if (failed) span.setStatus({ code: ERROR, message: `mcp-edge: ${outcome}` });
  span.end();
}

export function tracesFilter(
  tracing: EdgeTracing,
  config: TracesConfig,
  transport: ExchangeFacts['transport'],
  log: Logger,
  dropped: (count: number, reason: DropReason) => void,
): ExchangeFilter {
  const { api, tracer, propagator } = tracing;
  const traces = new ExchangeSlot<ExchangeTrace>();

  /**
   * A span per traced message of the request, children of the exchange span (`context`), up to
   * maxRequestSpans: the rest are counted (a span waits for its answer, so a client's batch would otherwise
   * hold one per message).
   */
  const startRequestSpans = (
    trace: ExchangeTrace,
    request: ExchangeRequest,
    exchangeSpan: Span,
    context: Context,
    sessionId: string | undefined,
  ): void => {
    const facts: ExchangeFacts = {
      protocolVersion: boundedOptional(headerValue(request.headers, 'mcp-protocol-version')),
      sessionId: boundedOptional(sessionId),
      transport,
    };
    let spans = 0;
    let skipped = 0;
    for (const message of request.messages) {
      if (!tracedMessage(message)) continue;
      if (spans === config.maxRequestSpans) {
        skipped++;
        continue;
      }
      spans++;
      const span = tracer.startSpan(
        requestSpanName(message),
        { kind: SERVER, attributes: requestAttributes(message, facts) },
        context,
      );
      const id = message.kind === 'request' ? requestIdText(message.id) : undefined;
      if (id !== undefined && !trace.waiting.has(id)) trace.waiting.set(id, span);
      else trace.others.push(span);
    }
    if (skipped > 0) {
      exchangeSpan.setAttribute('mcp_edge.request_spans_skipped', skipped);
      dropped(skipped, 'exchange_bound');
    }
    // The MCP attributes go on the MCP spans; an exchange without one (a GET stream, a DELETE, a body of
    // responses) carries them itself.
    if (spans === 0) {
      exchangeSpan.setAttributes(sessionAttributes(facts));
      exchangeSpan.setAttribute(STABLE.networkTransport, transport);
    }
  };

  return {
    name: 'traces',
    observe(_tenant, exchange) {
      const trace = new ExchangeTrace();
      traces.set(exchange, trace);
      return [trace];
    },
    admit(exchange, facts) {
      const trace = traces.get(exchange);
      if (trace === undefined) return undefined;
      const parent = propagator.extract(api.ROOT_CONTEXT, facts.headers, headerGetter);
      const span = tracer.startSpan('mcp-edge exchange', EXCHANGE_SPAN, parent);
      const { traceId, spanId } = span.spanContext();
      exchange.logFields ??= {};
      exchange.logFields.trace_id = traceId;
      exchange.logFields.span_id = spanId;
      trace.span = span;
      trace.recording = span.isRecording();
      trace.context = api.trace.setSpan(parent, span);
      return undefined;
    },
    request(exchange, request) {
      const trace = traces.get(exchange);
      const context = trace?.context;
      if (trace?.span === undefined || context === undefined) return undefined;
      if (trace.recording) startRequestSpans(trace, request, trace.span, context, exchange.sessionId);
      propagator.inject(context, request, upstreamSetter);
      return undefined;
    },
    responseMessage(exchange, message) {
      const trace = traces.get(exchange);
      if (trace === undefined || !trace.recording) return;
      const id = requestIdText(message.id);
      if (id === undefined) return;
      const span = trace.waiting.get(id);
      if (span === undefined) return;
      trace.waiting.delete(id);
      if (trace.current === span) trace.current = undefined;
      const { attributes, error } = answerOutcome(message);
      span.setAttributes(attributes);
      if (error !== undefined) span.setStatus({ code: ERROR, message: error.message });
      span.end();
    },
    end(exchange, ending) {
      const trace = traces.get(exchange);
      if (trace === undefined) return;
      traces.set(exchange, undefined);
      // Not sampled: no span of it is recorded, so none is ended.
      if (!trace.recording) return;
      const failed = outcomeIsError(ending.outcome);
      // Requests no answer reached in this exchange (a notification, a client that left, a refusal).
      for (const span of trace.waiting.values()) endUnanswered(span, ending.outcome, failed);
      for (const span of trace.others) endUnanswered(span, ending.outcome, failed);
      const { span } = trace;
      if (span === undefined) return;
      span.updateName(exchangeSpanName(ending.httpMethod, ending.path));
      span.setAttributes(
        exchangeEndAttributes({
          httpMethod: ending.httpMethod,
          path: ending.path,
          status: ending.status,
          outcome: ending.outcome,
          tenant: exchange.tenant,
          host: exchange.initializedHost ?? exchange.host,
          requestBytes: exchange.requestBytes,
          responseBytes: ending.responseBytes,
          clientAddress: ending.clientAddress,
        }),
      );
      if (failed) span.setStatus({ code: ERROR, message: `mcp-edge: ${ending.outcome}` });
      span.end();
    },
    close: () => tracing.shutdown(),
    reload(next) {
      if (JSON.stringify(next.telemetry.traces) !== JSON.stringify(config)) {
        log.warn('telemetry.traces changed: the tracer keeps its settings until mcp-edge restarts');
      }
    },
  };
}

/** The traces filter when tracing is on (telemetry.traces, OTEL_TRACES_EXPORTER), else none. */
export function tracesOf(
  config: EdgeConfig,
  env: Env,
  metrics: EdgeMetrics | undefined,
  log: Logger,
): ExchangeFilter[] {
  const traces = config.telemetry.traces;
  if (!tracesEnabled(traces, env)) return [];
  const dropped = spanDropCounter(metrics, log);
  const tracing = startTracing(traces, env, dropped);
  log.info({ protocol: tracing.protocol }, 'traces are exported over OTLP');
  return [tracesFilter(tracing, traces, config.upstream.stdio !== undefined ? 'pipe' : 'tcp', log, dropped)];
}
