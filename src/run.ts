// Runs mcp-edge: the proxy, its metrics listener, and config reloads (SIGHUP or a changed file).
import { isDeepStrictEqual } from 'node:util';
import pino, { type Logger } from 'pino';
import {
  COMMAND_LINE_SOURCE,
  ConfigError,
  type LoadedConfig,
  limitPolicyOf,
  loadConfigFile,
} from './config/load.js';
import type { EdgeConfig } from './config/schema.js';
import { type FileWatch, watchFile } from './config/watch-file.js';
import { createEdgeMetrics, type EdgeMetrics } from './metrics/edge-metrics.js';
import { startMetricsServer } from './metrics/metrics-server.js';
import { createEdgeServer, type EdgeServer } from './proxy/edge-server.js';
import type { ExchangeFilter } from './proxy/filters/exchange-filter.js';
import { tenantsOf } from './tenancy/tenants.js';
import { upstreamOf } from './upstream/select.js';
import type { Upstream } from './upstream/upstream.js';
import { packageVersion } from './version.js';

export interface RunningEdge {
  edge: EdgeServer;
  /** Where exchanges go (the HTTP upstream of upstream.url, or the stdio upstream's children). */
  upstream: Upstream;
  url: string;
  metrics: EdgeMetrics | undefined;
  metricsUrl: string | undefined;
  /** Re-reads the config file; an invalid file changes nothing. */
  reload(): Promise<ReloadResult>;
  stop(): Promise<void>;
}

export type ReloadResult =
  | { ok: true; changed: boolean; restartRequired: string[] }
  | { ok: false; error: string };

/** A listener that could not open, named by its config key, so the CLI can say which flag or key moves it. */
export class ListenError extends Error {
  readonly listener: 'listen' | 'metrics';
  readonly host: string;
  readonly port: number;
  readonly code: string | undefined;

  private constructor(
    listener: 'listen' | 'metrics',
    host: string,
    port: number,
    code: string | undefined,
    cause: unknown,
  ) {
    const reason =
      code === 'EADDRINUSE'
        ? 'the address is already in use (EADDRINUSE): another process, perhaps another mcp-edge, listens there'
        : code === 'EACCES'
          ? 'permission denied (EACCES): ports below 1024 need privileges'
          : code === 'EADDRNOTAVAIL'
            ? 'this machine has no such address (EADDRNOTAVAIL)'
            : cause instanceof Error
              ? cause.message
              : String(cause);
    const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    super(`cannot listen on ${where} (${listener}.port): ${reason}`, { cause });
    this.name = 'ListenError';
    this.listener = listener;
    this.host = host;
    this.port = port;
    this.code = code;
  }

  static of(listener: 'listen' | 'metrics', at: { host: string; port: number }, cause: unknown): ListenError {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    return new ListenError(listener, at.host, at.port, typeof code === 'string' ? code : undefined, cause);
  }
}

/** Fields that must never reach a log line, wherever they appear. */
const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  'err.config',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'mcp-edge' }, redact: REDACT }, destination);
}

/**
 * Keys a running edge cannot change without a restart (its listeners and its upstream connection): which of
 * them the next config changes, and the next config with their running values kept, so nothing is half-applied.
 */
function keepRestartOnly(
  running: EdgeConfig,
  next: EdgeConfig,
): { restartRequired: string[]; applied: EdgeConfig } {
  const applied: EdgeConfig = {
    ...next,
    listen: running.listen,
    upstream: running.upstream,
    metrics: running.metrics,
    server: {
      ...next.server,
      timeouts: running.server.timeouts,
      maxHeaderBytes: running.server.maxHeaderBytes,
    },
  };
  const compared: [string, unknown, unknown][] = [
    ['listen', running.listen, next.listen],
    ['upstream', running.upstream, next.upstream],
    ['metrics', running.metrics, next.metrics],
    ['server.timeouts', running.server.timeouts, next.server.timeouts],
    ['server.maxHeaderBytes', running.server.maxHeaderBytes, next.server.maxHeaderBytes],
    // The quota filter runs only when the section was there at start; its rules and store then reload.
    ['quotas', running.quotas === undefined, next.quotas === undefined],
  ];
  const restartRequired = compared.filter(([, a, b]) => !isDeepStrictEqual(a, b)).map(([key]) => key);
  return { restartRequired, applied };
}

/**
 * With OAuth discovery on and neither server.publicUrl nor server.allowedHosts set, the `resource` the edge
 * writes into discovery documents and 401 challenges comes from each request's Host header, which any client
 * sets as it likes. Valid (a loopback edge, a trusted network), so a warning at start, not an error.
 */
export function hostDecidesResourceWarning(config: EdgeConfig): string | undefined {
  const { server, upstream } = config;
  // A stdio upstream has no OAuth documents to pass through.
  if (upstream.url === undefined || !upstream.oauth.discovery) return undefined;
  if (server.publicUrl !== undefined || server.allowedHosts.length > 0) return undefined;
  return "upstream.oauth.discovery is on, and neither server.publicUrl nor server.allowedHosts is set: the resource URL in OAuth discovery documents and 401 challenges is taken from each request's Host header, which any client can set. Set server.publicUrl to the URL clients use (or list server.allowedHosts), or set upstream.oauth.discovery: false if the MCP server is not OAuth-protected";
}

/** A stdio upstream's children alive and its bound, for the process gauges. */

export async function startEdge(
  loaded: LoadedConfig,
  logger?: Logger,
  options: {
    watch?: boolean;
    /** Ask the upstream once at start whether it is ready, so the log says so (default true). */
    probeUpstream?: boolean;
    /** An embedding program's own exchange filters, run after the edge's. */
    filters?: readonly ExchangeFilter[];
  } = {},
): Promise<RunningEdge> {
  const { config } = loaded;
  const log = logger ?? createLogger(config.logging.level);
  const upstream = upstreamOf(config, log);
  const metrics = config.metrics.enabled
    ? createEdgeMetrics({
        upstream: upstream.label,
        nearCeilingPercent: config.metrics.nearCeilingPercent,
        tokenHistograms: config.metrics.tokenHistograms,
        toolLabels: config.metrics.toolLabels,
      })
    : undefined;
  const edge = await createEdgeServer(config, {
    logger: log,
    upstream,
    ...(metrics ? { metrics } : {}),
    ...(options.filters ? { filters: options.filters } : {}),
  });
  metrics?.watchCapacity({
    heldBytes: () => edge.held.total,
    ...(upstream.processes ? { stdio: upstream.processes } : {}),
  });

  // The metrics listener first: once the MCP listener is up (and has said so), nothing else can fail.
  let metricsServer: { url: string; close(): Promise<void> } | undefined;
  if (metrics !== undefined) {
    metrics.configLoaded(loaded.sha256, loaded.source);
    metrics.setLimits(limitPolicyOf(config), tenantsOf(config));
    try {
      metricsServer = await startMetricsServer(metrics, config.metrics);
    } catch (err) {
      await edge.close();
      throw ListenError.of('metrics', config.metrics, err);
    }
  }
  try {
    await edge.listen();
  } catch (err) {
    await metricsServer?.close();
    await edge.close();
    throw ListenError.of('listen', config.listen, err);
  }
  // The address the socket is bound to, as the kernel says: what the operator exposed.
  const address = edge.app.server.address();
  const bound = typeof address === 'object' && address !== null ? address : undefined;
  const port = bound?.port ?? config.listen.port;
  const boundHost = bound?.address ?? config.listen.host;
  const host = boundHost.includes(':') ? `[${boundHost}]` : boundHost;
  const url = `http://${host}:${port}${config.listen.path}`;

  log.info(
    {
      version: packageVersion(),
      node: process.versions.node,
      upstream: upstream.label,
      metrics: metricsServer?.url,
      configSha256: loaded.sha256,
    },
    `mcp-edge serving ${url}`,
  );

  // The readiness check logs its verdict (an HTTP upstream: whether an MCP endpoint answers at upstream.url).
  if (options.probeUpstream !== false) {
    upstream.ready().catch((err: unknown) => log.warn({ err: String(err) }, 'the readiness check failed'));
  }
  for (const warning of loaded.warnings ?? []) log.warn({ file: loaded.source }, warning);
  const hostWarning = hostDecidesResourceWarning(config);
  if (hostWarning !== undefined) log.warn({ keys: ['server.publicUrl', 'server.allowedHosts'] }, hostWarning);

  let current = loaded;
  const reload = async (): Promise<ReloadResult> => {
    if (current.source === COMMAND_LINE_SOURCE) {
      log.warn(
        'reload requested, but there is no config file to reload (started with --upstream); restart mcp-edge to change its settings',
      );
      return { ok: true, changed: false, restartRequired: [] };
    }
    let next: LoadedConfig;
    try {
      next = await loadConfigFile(current.source);
    } catch (err) {
      const error = err instanceof ConfigError ? err.message : String(err);
      metrics?.configReloaded('failure');
      log.error({ file: current.source, error }, 'config reload failed; the running config stays in force');
      return { ok: false, error };
    }
    if (next.sha256 === current.sha256) {
      metrics?.configReloaded('unchanged');
      log.info(
        { file: next.source, configSha256: next.sha256 },
        'config reload: the file is unchanged; the running config stays in force',
      );
      return { ok: true, changed: false, restartRequired: [] };
    }
    const { restartRequired, applied } = keepRestartOnly(current.config, next.config);
    edge.replacePolicy(next.config);
    log.level = next.config.logging.level;
    metrics?.configReloaded('success');
    metrics?.configLoaded(next.sha256, next.source);
    metrics?.setLimits(limitPolicyOf(next.config), tenantsOf(next.config));
    current = { ...next, config: applied };
    log.info({ file: next.source, configSha256: next.sha256, restartRequired }, 'config reloaded');
    for (const warning of next.warnings ?? []) log.warn({ file: next.source }, warning);
    if (restartRequired.length > 0) {
      log.warn({ keys: restartRequired }, 'these config changes take effect only after a restart');
    }
    return { ok: true, changed: true, restartRequired };
  };

  const onHangup = () => void reload();
  process.on('SIGHUP', onHangup);
  const watcher: FileWatch | undefined =
    options.watch !== false && loaded.source !== COMMAND_LINE_SOURCE
      ? watchFile(loaded.source, onHangup)
      : undefined;

  return {
    edge,
    upstream,
    url,
    metrics,
    metricsUrl: metricsServer?.url,
    reload,
    async stop() {
      process.off('SIGHUP', onHangup);
      watcher?.close();
      const drained = await edge.close();
      await metricsServer?.close();
      log.info({ version: packageVersion(), ...drained }, 'mcp-edge stopped');
    },
  };
}
