// What the standard OTEL_* variables turn on and choose (src/telemetry/otel-env.ts).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import type { TracesConfig } from '../../src/config/telemetry-schema.js';
import { otlpProtocol, samplerChoice, tracesEnabled } from '../../src/telemetry/otel-env.js';

const traces = (exporter: TracesConfig['exporter']): TracesConfig => ({
  exporter,
  maxQueueSize: 2048,
  maxQueueBytes: 8 * 1024 * 1024,
  maxExportBatchSize: 512,
  scheduledDelay: 5000,
  exportTimeout: 10000,
  maxRequestSpans: 100,
});

describe('whether tracing is on', () => {
  it('is off by default, on when OTEL_TRACES_EXPORTER names otlp', () => {
    expect(tracesEnabled(traces('env'), {})).toBe(false);
    expect(tracesEnabled(traces('env'), { OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(tracesEnabled(traces('env'), { OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(tracesEnabled(traces('env'), { OTEL_TRACES_EXPORTER: 'console, OTLP' })).toBe(true);
  });

  it('follows telemetry.traces.exporter over the environment, and OTEL_SDK_DISABLED over both', () => {
    expect(tracesEnabled(traces('otlp'), {})).toBe(true);
    expect(tracesEnabled(traces('none'), { OTEL_TRACES_EXPORTER: 'otlp' })).toBe(false);
    expect(tracesEnabled(traces('otlp'), { OTEL_SDK_DISABLED: 'true' })).toBe(false);
  });
});

describe('the OTLP protocol', () => {
  it('is http/protobuf unless the traces or the general variable names another', () => {
    expect(otlpProtocol({})).toBe('http/protobuf');
    expect(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBe('grpc');
    expect(
      otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }),
    ).toBe('http/json');
  });

  it('refuses one it cannot export with: a configuration error naming the variable', () => {
    expect(() => otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' })).toThrow(
      new ConfigError('environment', [
        {
          keyPath: 'OTEL_EXPORTER_OTLP_PROTOCOL',
          line: undefined,
          column: undefined,
          reason: '"thrift" is not one mcp-edge exports with (http/protobuf, http/json, grpc)',
        },
      ]),
    );
    expect(() => otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' })).toThrow(ConfigError);
  });
});

describe('the sampler', () => {
  it('is parent-based, always on for a root, by default', () => {
    expect(samplerChoice({})).toEqual({ kind: 'parentbased_always_on' });
  });

  it('takes a ratio from OTEL_TRACES_SAMPLER_ARG', () => {
    expect(
      samplerChoice({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }),
    ).toEqual({ kind: 'parentbased_traceidratio', ratio: 0.25 });
    expect(samplerChoice({ OTEL_TRACES_SAMPLER: 'traceidratio' })).toEqual({
      kind: 'traceidratio',
      ratio: 1,
    });
  });

  it('refuses an unknown sampler or a ratio outside 0 to 1', () => {
    expect(() => samplerChoice({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })).toThrow(
      /OTEL_TRACES_SAMPLER: "jaeger_remote"/,
    );
    expect(() =>
      samplerChoice({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }),
    ).toThrow('OTEL_TRACES_SAMPLER_ARG: "2" is not a ratio from 0 to 1');
  });
});
