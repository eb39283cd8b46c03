// Starts a real mcp-edge in the test process on 127.0.0.1 (ephemeral ports), from YAML, with its log
// lines captured so tests can read them.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadConfigFile, parseConfigText } from '../../src/config/load.js';
import type { ExchangeFilter } from '../../src/proxy/filters/exchange-filter.js';
import { createLogger, type RunningEdge, startEdge } from '../../src/run.js';

export interface TestEdge extends RunningEdge {
  /** Parsed JSON log lines, in order. */
  logs: Record<string, unknown>[];
  /** The raw log text (for greps). */
  logText(): string;
  /** The config file, when the edge was started from one (reload tests rewrite it). */
  configFile: string | undefined;
}

export interface TestEdgeOptions {
  /** Extra lines under `upstream:` (indented two spaces). */
  upstreamYaml?: string;
  /** Serve metrics on an ephemeral loopback port; a string adds its keys under `metrics:` (flow style, e.g. `tokenHistograms: false`). */
  metrics?: boolean | string;
  /** Write the config to a temp file and load it from there, so it can be reloaded. */
  fromFile?: boolean;
  /** Listen on this port instead of an ephemeral one (when the config must name the edge's own URL). */
  port?: number;
  /** Serve metrics on this port instead of an ephemeral one (a scraper that must find a restarted edge again). */
  metricsPort?: number;
  /** Exchange filters of the test's own, run after the edge's. */
  filters?: readonly ExchangeFilter[];
  /** Ask the upstream at start whether it is an MCP endpoint, as `mcp-edge` does (default false: scripted
   * upstreams count what they receive). */
  probeUpstream?: boolean;
}

/** The YAML a test edge runs: a minimal base plus the test's own top-level keys. */
export function testEdgeYaml(upstreamUrl: string, yaml = '', extra: TestEdgeOptions = {}): string {
  return [
    `listen: { host: 127.0.0.1, port: ${extra.port ?? 0}, path: /mcp }`,
    `upstream:\n  url: ${upstreamUrl}${extra.upstreamYaml ? `\n${extra.upstreamYaml}` : ''}`,
    extra.metrics
      ? `metrics: { enabled: true, host: 127.0.0.1, port: ${extra.metricsPort ?? 0}${typeof extra.metrics === 'string' ? `, ${extra.metrics}` : ''} }`
      : 'metrics: { enabled: false }',
    'logging: { level: info }',
    yaml,
  ].join('\n');
}

/**
 * `yaml` is appended to a minimal config (listen on 127.0.0.1:0, metrics off, upstream). Give it
 * top-level keys such as `limits:`; do not repeat `listen`, `upstream` or `metrics`.
 */
export async function startTestEdge(
  upstreamUrl: string,
  yaml = '',
  extra: TestEdgeOptions = {},
): Promise<TestEdge> {
  const text = testEdgeYaml(upstreamUrl, yaml, extra);
  let configFile: string | undefined;
  let loaded: ReturnType<typeof parseConfigText>;
  if (extra.fromFile) {
    configFile = join(mkdtempSync(join(tmpdir(), 'mcp-edge-test-')), 'edge.yaml');
    writeFileSync(configFile, text);
    loaded = await loadConfigFile(configFile, {});
  } else {
    loaded = parseConfigText(text, 'test.yaml', {});
  }
  const log = capturedLog();
  const running = await startEdge(loaded, createLogger('info', log.sink), {
    watch: extra.fromFile === true,
    ...(extra.filters ? { filters: extra.filters } : {}),
    probeUpstream: extra.probeUpstream ?? false,
  });
  return {
    ...running,
    configFile,
    get logs() {
      return log.records();
    },
    logText: log.text,
  };
}

/** A log sink for an edge under test: its JSON lines, kept to be read back. */
export function capturedLog(): {
  sink: Writable;
  records: () => Record<string, unknown>[];
  text: () => string;
} {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      callback();
    },
  });
  return {
    sink,
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    text: () => lines.join('\n'),
  };
}
