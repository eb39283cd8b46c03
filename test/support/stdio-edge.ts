// Starts a real mcp-edge in the test process with a stdio upstream (a real server it spawns), its log
// lines captured, and the commands of the stdio servers the tests use.
import { join } from 'node:path';
import { parseConfigText } from '../../src/config/load.js';
import { createLogger, type RunningEdge, startEdge } from '../../src/run.js';
import type { StdioUpstream } from '../../src/upstream/stdio-upstream.js';
import { type ConnectedV1Client, connectV1Client, type V1ClientOptionsForTests } from './clients.js';
import { sample } from './exposition.js';
import { REPO_ROOT, waitFor } from './processes.js';
import { capturedLog } from './start-edge.js';

const NODE = process.execPath;
const bin = (path: string) => join(REPO_ROOT, 'node_modules', path);

/** The argv of each stdio server the tests run (all on this machine, none fetched). */
export const STDIO_SERVERS = {
  everything: [NODE, bin('@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
  memory: [NODE, bin('@modelcontextprotocol/server-memory/dist/index.js')],
  filesystem: (dir: string) => [NODE, bin('@modelcontextprotocol/server-filesystem/dist/index.js'), dir],
  v1Fixture: [NODE, '--import', 'tsx', join(REPO_ROOT, 'test/fixtures/stdio-v1-server.ts')],
  v2Fixture: [NODE, '--import', 'tsx', join(REPO_ROOT, 'test/fixtures/stdio-v2-server.ts')],
  scripted: [NODE, '--import', 'tsx', join(REPO_ROOT, 'test/fixtures/stdio-scripted-server.ts')],
};

export interface StdioEdgeOptions {
  /** Extra keys under `upstream.stdio:` (indented four spaces), e.g. `    maxProcesses: 1`. */
  stdioYaml?: string;
  /** Top-level keys (limits, tenancy, ...). */
  yaml?: string;
  metrics?: boolean;
  /** logging.level (default info). */
  logLevel?: 'debug' | 'info';
}

export interface StdioTestEdge extends RunningEdge {
  upstream: StdioUpstream;
  logs: Record<string, unknown>[];
  logText(): string;
}

export function stdioEdgeYaml(command: readonly string[], options: StdioEdgeOptions = {}): string {
  return [
    'listen: { host: 127.0.0.1, port: 0, path: /mcp }',
    'upstream:',
    '  stdio:',
    `    command: ${JSON.stringify(command)}`,
    `    cwd: ${JSON.stringify(REPO_ROOT)}`,
    ...(options.stdioYaml ? [options.stdioYaml] : []),
    options.metrics ? 'metrics: { enabled: true, host: 127.0.0.1, port: 0 }' : 'metrics: { enabled: false }',
    `logging: { level: ${options.logLevel ?? 'info'} }`,
    options.yaml ?? '',
  ].join('\n');
}

export async function startStdioEdge(
  command: readonly string[],
  options: StdioEdgeOptions = {},
): Promise<StdioTestEdge> {
  const loaded = parseConfigText(stdioEdgeYaml(command, options), 'stdio-test.yaml', {});
  const log = capturedLog();
  const running = await startEdge(loaded, createLogger(options.logLevel ?? 'info', log.sink), {
    watch: false,
  });
  return {
    ...running,
    upstream: running.upstream as StdioUpstream,
    get logs() {
      return log.records();
    },
    logText: log.text,
  };
}

/** mcp_edge_undelivered_messages_total of one reason (the tests run one tenant); 0 before the first. */
export async function undeliveredCount(edge: StdioTestEdge, reason: string): Promise<number> {
  if (edge.metricsUrl === undefined) throw new Error('the edge was started without metrics');
  const text = await (await fetch(edge.metricsUrl)).text();
  return sample(text, 'mcp_edge_undelivered_messages_total', { reason }) ?? 0;
}

/**
 * An SDK v1 client whose session is in use: connected, and its GET stream open at the edge (the client opens
 * it just after connect() returns). Until then its session is idle, and a new session at a process bound
 * may take its place.
 */
export async function connectStreaming(
  edge: StdioTestEdge,
  options: V1ClientOptionsForTests = {},
): Promise<ConnectedV1Client> {
  const connected = await connectV1Client(edge.url, options);
  const sessionId = connected.sessionId();
  const open = () => sessionId !== undefined && edge.upstream.sessions?.streaming(sessionId) === true;
  if (!(await waitFor(open, 10_000))) {
    await connected.close();
    throw new Error(`the GET stream of session ${sessionId} did not open within 10 s`);
  }
  return connected;
}
