// The `telemetry:` section: OpenTelemetry traces (src/telemetry). Where spans go, how they are sampled and
// what the service is called come from the standard OTEL_* variables, so a collector's usual settings work
// unchanged; this section only says whether tracing is on and bounds what the edge holds for the exporter.
import { z } from 'zod';
import { durationSchema, sizeAtLeast } from './value-schemas.js';

export const tracesSchema = z.strictObject({
  // env: on when OTEL_TRACES_EXPORTER names otlp (off when unset); otlp: on; none: off whatever the env says.
  exporter: z.enum(['env', 'otlp', 'none']).default('env'),
  // Finished spans waiting for the exporter, at most; past it a span is dropped and counted
  // (mcp_edge_spans_dropped_total), so an exporter that is down or slow never holds more.
  maxQueueSize: z.number().int().min(1).max(1_000_000).default(2048),
  // What those spans may hold together (their names and attributes), the batch in flight included: past it a
  // span is dropped and counted (reason queue_bytes).
  maxQueueBytes: sizeAtLeast(64 * 1024).default(8 * 1024 * 1024),
  // Spans per export request (at most maxQueueSize).
  maxExportBatchSize: z.number().int().min(1).max(100_000).default(512),
  // How long a span waits at most before its batch is sent.
  scheduledDelay: durationSchema.default(5_000),
  // How long one export may take before it is abandoned (its spans counted as dropped).
  exportTimeout: durationSchema.default(10_000),
  // Request spans one exchange records, at most: a batch's requests past it get none (counted as dropped,
  // and on the exchange span), so a client's batch cannot hold a span per message while it waits.
  maxRequestSpans: z.number().int().min(1).max(100_000).default(100),
});
export type TracesConfig = z.output<typeof tracesSchema>;

export const telemetrySchema = z.strictObject({
  traces: tracesSchema.prefault({}),
});
