// `npm start`: the bundled demo MCP server with mcp-edge in front of it, on the shipped demo config.
//   npm start [-- [CONFIG] [--port N] [--upstream-port N] [--metrics-port N]]
// The flags move mcp-edge (listen.port), the demo server (upstream.url's port) and the metrics listener
// off the config's ports, for a machine where something else holds 8080, 3000 or 9464.
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type LoadedConfig, loadConfigFile } from '../config/load.js';
import { ListenError, startEdge } from '../run.js';
import { LIMIT_EXCEEDED, REFUSAL_QUERY } from './refusal.js';
import { startDemoServer } from './server.js';

const PORT_FLAGS = {
  listen: '--port',
  upstream: '--upstream-port',
  metrics: '--metrics-port',
} as const;
type Role = keyof typeof PORT_FLAGS;
const ROLE_NAMES: Record<Role, string> = {
  listen: 'mcp-edge',
  upstream: 'the demo MCP server',
  metrics: "mcp-edge's metrics listener",
};

class PortInUse extends Error {}

function portOf(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new Error(`${flag}: "${value}" is not a port number`);
  return port;
}

/** The loaded config with the ports the flags name. */
function withPorts(loaded: LoadedConfig, ports: Partial<Record<Role, number>>): LoadedConfig {
  const { config } = loaded;
  const upstream = new URL(config.upstream.url ?? '');
  if (ports.upstream !== undefined) upstream.port = String(ports.upstream);
  return {
    ...loaded,
    config: {
      ...config,
      listen: { ...config.listen, port: ports.listen ?? config.listen.port },
      metrics: { ...config.metrics, port: ports.metrics ?? config.metrics.port },
      upstream: { ...config.upstream, url: upstream.toString() },
    },
  };
}

/** An address in use, said as which of the three it is, and the flag that moves it. */
function portInUse(role: Role, port: number): PortInUse {
  return new PortInUse(
    `port ${port} is taken (${ROLE_NAMES[role]}'s); another process listens there.\n` +
      `  choose other ports: npm start -- ${PORT_FLAGS[role]} N   (also ${Object.values(PORT_FLAGS)
        .filter((flag) => flag !== PORT_FLAGS[role])
        .join(', ')})`,
  );
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      'upstream-port': { type: 'string' },
      'metrics-port': { type: 'string' },
    },
  });
  const configPath = positionals[0] ?? fileURLToPath(new URL('../../config/demo.yaml', import.meta.url));
  const loaded = withPorts(await loadConfigFile(configPath), {
    listen: portOf('--port', values.port),
    upstream: portOf('--upstream-port', values['upstream-port']),
    metrics: portOf('--metrics-port', values['metrics-port']),
  });
  const upstream = new URL(loaded.config.upstream.url ?? '');
  const demo = await startDemoServer({ host: upstream.hostname, port: Number(upstream.port) }).catch(
    (error: unknown) => {
      const code = (error as NodeJS.ErrnoException).code;
      throw code === 'EADDRINUSE' ? portInUse('upstream', Number(upstream.port)) : error;
    },
  );
  const edge = await startEdge(loaded).catch(async (error: unknown) => {
    await demo.close();
    if (error instanceof ListenError && error.code === 'EADDRINUSE')
      throw portInUse(error.listener, error.port);
    throw error;
  });
  const metricsUrl = edge.metricsUrl ?? '(metrics.enabled is false)';
  process.stdout.write(
    [
      '',
      `  demo MCP server   ${demo.url}`,
      `  mcp-edge          ${edge.url}   <- point your MCP client here`,
      `  metrics           ${metricsUrl}`,
      `  config            ${configPath}`,
      '',
      `  try: npx tsx examples/call-demo.ts ${edge.url} ${metricsUrl}`,
      `  the refusal it causes, counted: ${REFUSAL_QUERY}`,
      `    curl -s ${metricsUrl} | grep '${LIMIT_EXCEEDED}{'`,
      '',
      '',
    ].join('\n'),
  );
  const stop = async () => {
    await edge.stop();
    await demo.close();
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`npm start failed: ${message}\n`);
  process.exitCode = 1;
});
