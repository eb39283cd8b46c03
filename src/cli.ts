#!/usr/bin/env node
// The command line. Exit codes: 0 ok, 2 usage or configuration error, 1 runtime failure (audit: 3 too).
import { parseArgs } from 'node:util';
import { AUDIT_USAGE } from './audit/args.js';
import { formatExplanation } from './config/explain.js';
import {
  COMMAND_LINE_SOURCE,
  ConfigError,
  defaultConfig,
  type LoadedConfig,
  limitPolicyOf,
  loadConfigFile,
} from './config/load.js';
import { formatEffectiveConfig } from './config/print.js';
import { resolveLimits } from './core/limits.js';
import { formatHostExplanation } from './hosts/explain-host.js';
import { DEFAULT_HOST_BUDGETS, HostTable } from './hosts/host-table.js';
import { formatQuotaExplanation } from './quotas/explain.js';
import { ListenError, startEdge } from './run.js';
import { sha256Hex } from './tenancy/tenant-resolver.js';
import { describeUpstream } from './upstream/select.js';
import { packageVersion } from './version.js';

const USAGE = `Usage:
  mcp-edge --config FILE                 run the proxy with a YAML config
  mcp-edge --upstream URL [--host H] [--port N] [--metrics-port N]
                                         run the proxy with built-in defaults in front of URL
                                         (defaults: --host 127.0.0.1 --port 8080 --metrics-port 9464;
                                         --host 0.0.0.0 serves every interface: see docs/stdio.md)
  mcp-edge --stdio [--host H] [--port N] [--metrics-port N] -- COMMAND [ARG...]
                                         spawn the stdio MCP server COMMAND (one process per session,
                                         never through a shell) and serve it over Streamable HTTP
  mcp-edge check-config FILE             validate FILE and print the effective config
  mcp-edge explain --config FILE --tenant T [--method M] [--tool X]
                                         print the effective limits for T and where each comes from
  mcp-edge explain --config FILE --host NAME [--tenant T] [--tool X]
                                         print the host profile NAME (or the host a client NAME maps to),
                                         its budget, its sources, and hostBudgets.action for T and X
${AUDIT_USAGE}
  mcp-edge hash-key < key.txt            print the SHA-256 of an API key read from stdin (for tenancy.resolve apiKey)
  mcp-edge --help | --version

Exit codes: 0 ok, 2 usage or configuration error, 1 runtime failure (audit: over a budget);
audit: 3 the server could not be reached or initialized.`;

class UsageError extends Error {}

function portOption(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new UsageError(`${flag}: "${value}" is not a port number`);
  return port;
}

async function loadForRun(values: {
  config?: string;
  upstream?: string;
  stdio?: string[];
  host?: string;
  port?: string;
  'metrics-port'?: string;
}): Promise<LoadedConfig> {
  if (values.config !== undefined) {
    if (
      values.upstream !== undefined ||
      values.stdio !== undefined ||
      values.host !== undefined ||
      values.port !== undefined ||
      values['metrics-port'] !== undefined
    ) {
      throw new UsageError(
        '--config cannot be combined with --upstream, --stdio, --host, --port or --metrics-port; set them in the file',
      );
    }
    return loadConfigFile(values.config);
  }
  if (values.upstream !== undefined && values.stdio !== undefined) {
    throw new UsageError('give --upstream URL or --stdio -- COMMAND, not both');
  }
  if (values.upstream === undefined && values.stdio === undefined) {
    throw new UsageError('give --config FILE or --upstream URL (or --stdio -- COMMAND)');
  }
  const port = portOption('--port', values.port);
  const metricsPort = portOption('--metrics-port', values['metrics-port']);
  const config = defaultConfig({
    ...(values.upstream !== undefined ? { upstreamUrl: values.upstream } : {}),
    ...(values.stdio !== undefined ? { stdioCommand: values.stdio } : {}),
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(metricsPort !== undefined ? { metricsPort } : {}),
  });
  return { config, source: COMMAND_LINE_SOURCE, text: '', sha256: '' };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  upstream: { type: 'string' },
  stdio: { type: 'boolean' },
  host: { type: 'string' },
  port: { type: 'string', short: 'p' },
  'metrics-port': { type: 'string' },
  tenant: { type: 'string' },
  method: { type: 'string' },
  tool: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** Edit distance (insertions, deletions, substitutions, swaps of neighbours), for "did you mean". */
function distance(a: string, b: string): number {
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      let cost = Math.min(
        (previous[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        cost = Math.min(cost, (beforePrevious[j - 2] ?? 0) + 1);
      }
      row[j] = cost;
    }
    beforePrevious = previous;
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** The known flag closest to `given` (`--metric-port` -> `--metrics-port`), if one is close enough to be meant. */
function closestFlag(given: string): string | undefined {
  const name = given.replace(/^-+/, '').split('=')[0] ?? '';
  const candidates = Object.keys(OPTIONS).map((flag) => ({ flag, cost: distance(name, flag) }));
  const best = candidates.sort((a, b) => a.cost - b.cost)[0];
  const tolerated = Math.max(1, Math.floor(name.length / 4));
  if (best !== undefined && best.cost <= tolerated) return `--${best.flag}`;
  const prefixed = Object.keys(OPTIONS).filter((flag) => name.length >= 3 && flag.startsWith(name));
  return prefixed.length === 1 ? `--${prefixed[0]}` : undefined;
}

/** parseArgs' own errors, in our words: the option, what is wrong, and the flag probably meant. */
function usageErrorOf(error: unknown): UsageError | undefined {
  const code = (error as { code?: string } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) return undefined;
  const message = error instanceof Error ? error.message : String(error);
  const unknown = /^Unknown option '([^']+)'/.exec(message)?.[1];
  if (unknown !== undefined) {
    const meant = closestFlag(unknown);
    return new UsageError(
      `unknown option ${unknown}${meant !== undefined ? `; did you mean ${meant}?` : ''}`,
    );
  }
  const missing = /^Option '(-\S+)(?:, (--\S+))?(?: <value>)?' argument missing/.exec(message);
  if (missing !== null) return new UsageError(`${missing[2] ?? missing[1]} needs a value`);
  return new UsageError(message.split('. ')[0] ?? message);
}

async function main(argv: string[]): Promise<number> {
  // audit has options of its own (src/audit/args.ts); its MCP client is loaded only when it runs.
  if (argv[0] === 'audit') {
    const { runAudit } = await import('./audit/audit.js');
    return runAudit(argv.slice(1), {
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
    });
  }
  let parsed: ReturnType<
    typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>
  >;
  // Everything after `--` is the stdio server's argv, never read as the edge's own options.
  const dash = argv.indexOf('--');
  const stdioArgv = dash >= 0 ? argv.slice(dash + 1) : undefined;
  try {
    parsed = parseArgs({
      args: dash >= 0 ? argv.slice(0, dash) : argv,
      allowPositionals: true,
      options: OPTIONS,
    });
  } catch (error) {
    throw usageErrorOf(error) ?? error;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  const [command, ...rest] = positionals;
  if (command === 'check-config') {
    const file = rest[0] ?? values.config;
    if (file === undefined || rest.length > 1) throw new UsageError('check-config takes one FILE');
    const loaded = await loadConfigFile(file);
    process.stdout.write(formatEffectiveConfig(loaded));
    for (const warning of loaded.warnings ?? []) process.stderr.write(`${warning}\n`);
    process.stderr.write(`${file}: configuration is valid\n`);
    return 0;
  }
  if (command === 'explain' && values.host !== undefined) {
    if (values.config === undefined || rest.length > 0 || values.method !== undefined) {
      throw new UsageError('explain --host takes --config FILE --host NAME [--tenant T] [--tool X]');
    }
    const { config } = await loadConfigFile(values.config);
    const table = new HostTable(config.hosts ?? {}, config.hostBudgets ?? DEFAULT_HOST_BUDGETS);
    const text = formatHostExplanation(
      table,
      values.host,
      values.tenant ?? config.tenancy.default,
      values.tool,
    );
    if (text === undefined) {
      throw new UsageError(
        `no host profile matches "${values.host}"; its results count as host "other" (profiles: ${table.profiles.map((p) => p.name).join(', ')})`,
      );
    }
    process.stdout.write(text);
    return 0;
  }
  if (command === 'explain') {
    if (values.config === undefined || values.tenant === undefined || rest.length > 0) {
      throw new UsageError('explain takes --config FILE --tenant T [--method M] [--tool X]');
    }
    if (values.tool !== undefined && values.method !== undefined && values.method !== 'tools/call') {
      throw new UsageError(
        `--tool applies only to --method tools/call: tool ceilings bound tools/call, not ${values.method}; drop --tool to see the limits of ${values.method}`,
      );
    }
    const loaded = await loadConfigFile(values.config);
    process.stdout.write(`Upstream: ${describeUpstream(loaded.config)}\n`);
    const method = values.method ?? (values.tool !== undefined ? 'tools/call' : undefined);
    const query = { tenant: values.tenant, method, tool: values.tool };
    const limits = resolveLimits(limitPolicyOf(loaded.config), query);
    process.stdout.write(
      formatExplanation(query, limits, Object.hasOwn(loaded.config.tenants, values.tenant)),
    );
    process.stdout.write(await formatQuotaExplanation(loaded.config.quotas, values.tenant, values.tool));
    return 0;
  }
  if (command === 'hash-key') {
    const key = (await readStdin()).replace(/\r?\n$/, '');
    if (key === '') throw new UsageError('hash-key reads the key from stdin; it was empty');
    process.stdout.write(`${sha256Hex(key)}\n`);
    return 0;
  }
  if (command !== undefined) throw new UsageError(`unknown command "${command}"`);

  if (values.stdio === true && (stdioArgv === undefined || stdioArgv.length === 0)) {
    throw new UsageError(
      '--stdio needs the server command after --, e.g. --stdio -- npx -y @modelcontextprotocol/server-memory',
    );
  }
  if (values.stdio !== true && stdioArgv !== undefined) {
    throw new UsageError('a command after -- is the stdio server to run: add --stdio');
  }
  const { stdio: _stdio, ...flags } = values;
  const loaded = await loadForRun({ ...flags, ...(values.stdio === true ? { stdio: stdioArgv } : {}) });
  runSource = loaded.source;
  const running = await startEdge(loaded);
  // The last resort, not the mechanism. What one exchange's code throws ends that exchange only: every
  // callback the shell runs outside Fastify's try/catch goes through the exchange's guard (src/core/guard.ts).
  // An exception that still reaches the process came from code every exchange shares (a timer of all streams,
  // the session store) and may have left its state half-changed; serving on could hand one client another's
  // state. So it is logged at fatal level, with its stack, and the process exits 1 for its supervisor to
  // restart it (docs/reliability.md).
  process.on('uncaughtException', (err) => {
    running.edge.app.log.fatal(
      { err },
      'an exception escaped every exchange; mcp-edge exits to be restarted',
    );
    process.exit(1);
  });
  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      running.edge.app.log.info({ signal }, 'mcp-edge stopping');
      running.stop().then(resolve, resolve);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  return 0;
}

/** Which flag or key moves the listener that could not open. */
function listenHint(err: ListenError): string {
  if (runSource === undefined || runSource === COMMAND_LINE_SOURCE) {
    return err.listener === 'metrics'
      ? '  pick another port for the metrics listener with --metrics-port N'
      : '  pick another port with --port N (or another address with --host H)';
  }
  return `  change ${err.listener}.port (or ${err.listener}.host) in ${runSource}`;
}

/** The config source of the proxy being started, for listenHint. */
let runSource: string | undefined;

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`mcp-edge: configuration error\n${err.message}\n`);
      process.exitCode = 2;
    } else if (err instanceof UsageError) {
      process.stderr.write(`mcp-edge: ${err.message}\n\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (err instanceof ListenError) {
      process.stderr.write(`mcp-edge: ${err.message}\n${listenHint(err)}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`mcp-edge: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    }
  },
);
