// What the standard OTEL_* variables ask of the edge's traces, read as plain values: whether tracing is on,
// which OTLP protocol, which sampler. Where spans go (endpoint, headers) the exporters read themselves; the
// service name and resource attributes the resource's env detector reads.
import { ConfigError } from '../config/config-error.js';
import type { TracesConfig } from '../config/telemetry-schema.js';

export type Env = Readonly<Record<string, string | undefined>>;

export type OtlpProtocol = 'http/protobuf' | 'http/json' | 'grpc';

const PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json', 'grpc'];

/** A variable the edge cannot use: a configuration error (the CLI exits 2 with it), naming the variable. */
function envError(variable: string, reason: string): ConfigError {
  return new ConfigError('environment', [{ keyPath: variable, line: undefined, column: undefined, reason }]);
}

function listOf(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item.length > 0);
}

/**
 * Tracing is on when the config says otlp, or says env and OTEL_TRACES_EXPORTER names otlp; never when
 * OTEL_SDK_DISABLED is true or the config says none.
 */
export function tracesEnabled(config: TracesConfig, env: Env): boolean {
  if (config.exporter === 'none') return false;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (config.exporter === 'otlp') return true;
  return listOf(env.OTEL_TRACES_EXPORTER).includes('otlp');
}

/** The OTLP protocol: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf. */
export function otlpProtocol(env: Env): OtlpProtocol {
  const named = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (named === undefined || named === '') return 'http/protobuf';
  const protocol = PROTOCOLS.find((p) => p === named);
  if (protocol === undefined) {
    throw envError(
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      `"${named}" is not one mcp-edge exports with (${PROTOCOLS.join(', ')})`,
    );
  }
  return protocol;
}

/** A sampler as the specification's OTEL_TRACES_SAMPLER names it. */
export type SamplerChoice =
  | { kind: 'always_on' | 'always_off' | 'parentbased_always_on' | 'parentbased_always_off' }
  | { kind: 'traceidratio' | 'parentbased_traceidratio'; ratio: number };

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** OTEL_TRACES_SAMPLER (default parentbased_always_on) with OTEL_TRACES_SAMPLER_ARG for a ratio (default 1). */
export function samplerChoice(env: Env): SamplerChoice {
  const named = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on';
  const kind = SAMPLERS.find((s) => s === named);
  if (kind === undefined) {
    throw envError('OTEL_TRACES_SAMPLER', `"${named}" is not one of ${SAMPLERS.join(', ')}`);
  }
  if (kind !== 'traceidratio' && kind !== 'parentbased_traceidratio') return { kind };
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const ratio = arg === undefined || arg === '' ? 1 : Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw envError('OTEL_TRACES_SAMPLER_ARG', `"${arg}" is not a ratio from 0 to 1`);
  }
  return { kind, ratio };
}
