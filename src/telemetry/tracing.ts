// The edge's own OpenTelemetry tracer: a TracerProvider of its own (no global registration, no
// auto-instrumentation), the OTLP exporter the environment asks for, the bounded batch processor, the W3C
// trace-context propagator. The SDK is loaded here, only when tracing is on: an edge without tracing loads
// nothing of OpenTelemetry.
import { createRequire } from 'node:module';
import type * as Api from '@opentelemetry/api';
import type { TracesConfig } from '../config/telemetry-schema.js';
import { packageVersion } from '../version.js';
import { BoundedBatchProcessor, type DropReason } from './bounded-processor.js';
import { type Env, type OtlpProtocol, otlpProtocol, type SamplerChoice, samplerChoice } from './otel-env.js';

type Sdk = typeof import('@opentelemetry/sdk-trace');
type SpanExporter = import('@opentelemetry/sdk-trace').SpanExporter;

const load = createRequire(import.meta.url);

export interface EdgeTracing {
  readonly api: typeof Api;
  readonly tracer: Api.Tracer;
  readonly propagator: Api.TextMapPropagator;
  readonly protocol: OtlpProtocol;
  /** Sends what is queued, then stops the exporter. */
  shutdown(): Promise<void>;
  /** Sends what is queued now. */
  flush(): Promise<void>;
}

function samplerOf(sdk: Sdk, choice: SamplerChoice): import('@opentelemetry/sdk-trace').Sampler {
  switch (choice.kind) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return new sdk.TraceIdRatioBasedSampler(choice.ratio);
    case 'parentbased_always_on':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(choice.ratio) });
  }
}

/** The OTLP exporter of the protocol; it reads its endpoint, headers and compression from OTEL_EXPORTER_OTLP_*. */
function exporterOf(protocol: OtlpProtocol, timeoutMillis: number): SpanExporter {
  const options = { timeoutMillis };
  switch (protocol) {
    case 'http/protobuf': {
      const { OTLPTraceExporter }: typeof import('@opentelemetry/exporter-trace-otlp-proto') = load(
        '@opentelemetry/exporter-trace-otlp-proto',
      );
      return new OTLPTraceExporter(options);
    }
    case 'http/json': {
      const { OTLPTraceExporter }: typeof import('@opentelemetry/exporter-trace-otlp-http') = load(
        '@opentelemetry/exporter-trace-otlp-http',
      );
      return new OTLPTraceExporter(options);
    }
    case 'grpc': {
      const { OTLPTraceExporter }: typeof import('@opentelemetry/exporter-trace-otlp-grpc') = load(
        '@opentelemetry/exporter-trace-otlp-grpc',
      );
      return new OTLPTraceExporter(options);
    }
  }
}

/**
 * Starts the edge's tracer. Throws, naming the variable, when OTEL_EXPORTER_OTLP_PROTOCOL or
 * OTEL_TRACES_SAMPLER holds what the edge cannot use.
 */
export function startTracing(
  config: TracesConfig,
  env: Env,
  dropped: (count: number, reason: DropReason) => void,
): EdgeTracing {
  const protocol = otlpProtocol(env);
  const sampler = samplerChoice(env);
  const api: typeof Api = load('@opentelemetry/api');
  const sdk: Sdk = load('@opentelemetry/sdk-trace');
  const resources: typeof import('@opentelemetry/resources') = load('@opentelemetry/resources');
  const core: typeof import('@opentelemetry/core') = load('@opentelemetry/core');
  // The edge names itself; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win (the env detector).
  const resource = resources
    .defaultResource()
    .merge(
      resources.resourceFromAttributes({ 'service.name': 'mcp-edge', 'service.version': packageVersion() }),
    )
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const processor = new BoundedBatchProcessor(exporterOf(protocol, config.exportTimeout), {
    maxQueueSize: config.maxQueueSize,
    maxQueueBytes: config.maxQueueBytes,
    maxExportBatchSize: config.maxExportBatchSize,
    scheduledDelayMs: config.scheduledDelay,
    exportTimeoutMs: config.exportTimeout,
    dropped,
  });
  const provider = new sdk.TracerProvider({
    resource,
    sampler: samplerOf(sdk, sampler),
    spanProcessors: [processor],
  });
  return {
    api,
    tracer: provider.getTracer('mcp-edge', packageVersion()),
    propagator: new core.W3CTraceContextPropagator(),
    protocol,
    shutdown: () => provider.shutdown(),
    flush: () => processor.forceFlush(),
  };
}
