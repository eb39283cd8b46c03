// An edge with tracing on, exporting to a test's OTLP receiver the way an operator points one at a collector:
// the standard OTEL_* variables (set while the edge starts, when its exporter reads them) and
// telemetry.traces in the config.

import { startTestEdge, type TestEdge, type TestEdgeOptions } from './start-edge.js';
import { type StdioTestEdge, startStdioEdge } from './stdio-edge.js';

/**
 * The variables an operator's collector setup would hold: the endpoint, the service name, and the protocol
 * when one is named (unnamed, the exporter speaks the specification's default, http/protobuf).
 */
export function otlpEnv(endpoint: string, protocol?: 'http/json' | 'http/protobuf'): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint,
    OTEL_SERVICE_NAME: 'edge-under-test',
    ...(protocol !== undefined ? { OTEL_EXPORTER_OTLP_PROTOCOL: protocol } : {}),
  };
}

/** Runs `start` with `vars` in process.env, and puts the environment back as it was. */
export async function withEnv<T>(vars: Record<string, string>, start: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  Object.assign(process.env, vars);
  try {
    return await start();
  } finally {
    for (const [name, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

/** telemetry.traces on, with `traces` keys in flow style (e.g. `maxQueueSize: 8`). */
export function tracesYaml(traces = ''): string {
  return `telemetry: { traces: { exporter: otlp, scheduledDelay: 20ms${traces ? `, ${traces}` : ''} } }`;
}

export function startTracedEdge(
  upstreamUrl: string,
  endpoint: string,
  yaml = '',
  extra: TestEdgeOptions & { traces?: string; protocol?: 'http/json' | 'http/protobuf' } = {},
): Promise<TestEdge> {
  return withEnv(otlpEnv(endpoint, extra.protocol), () =>
    startTestEdge(upstreamUrl, `${tracesYaml(extra.traces)}\n${yaml}`, extra),
  );
}

export function startTracedStdioEdge(command: readonly string[], endpoint: string): Promise<StdioTestEdge> {
  return withEnv(otlpEnv(endpoint), () => startStdioEdge(command, { yaml: tracesYaml() }));
}
