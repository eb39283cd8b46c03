#!/usr/bin/env node
// The command line. Exit codes: 0 ok, 2 usage or configuration error, 1 runtime failure.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
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
import { startEdge } from './run.js';
import { sha256Hex } from './tenancy/tenant-resolver.js';

const USAGE = `Usage:
  mcp-edge --config FILE                 run the proxy with a YAML config
  mcp-edge --upstream URL [--port N] [--metrics-port N]
                                         run the proxy with built-in defaults in front of URL
  mcp-edge check-config FILE             validate FILE and print the effective config
  mcp-edge explain --config FILE --tenant T [--method M] [--tool X]
                                         print the effective limits for T and where each comes from
  mcp-edge hash-key < key.txt            print the SHA-256 of an API key read from stdin (for tenancy.resolve apiKey)
  mcp-edge --help | --version

Exit codes: 0 ok, 2 usage or configuration error, 1 runtime failure.`;

class UsageError extends Error {}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

function portOption(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new UsageError(`${flag}: "${value}" is not a port number`);
  return port;
}

async function loadForRun(values: {
  config?: string;
  upstream?: string;
  port?: string;
  'metrics-port'?: string;
}): Promise<LoadedConfig> {
  if (values.config !== undefined) {
    if (values.upstream !== undefined || values.port !== undefined || values['metrics-port'] !== undefined) {
      throw new UsageError(
        '--config cannot be combined with --upstream, --port or --metrics-port; set them in the file',
      );
    }
    return loadConfigFile(values.config);
  }
  if (values.upstream === undefined) throw new UsageError('give --config FILE or --upstream URL');
  const port = portOption('--port', values.port);
  const metricsPort = portOption('--metrics-port', values['metrics-port']);
  const config = defaultConfig({
    upstreamUrl: values.upstream,
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

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      upstream: { type: 'string' },
      port: { type: 'string', short: 'p' },
      'metrics-port': { type: 'string' },
      tenant: { type: 'string' },
      method: { type: 'string' },
      tool: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const [command, ...rest] = positionals;
  if (command === 'check-config') {
    const file = rest[0] ?? values.config;
    if (file === undefined || rest.length > 1) throw new UsageError('check-config takes one FILE');
    const loaded = await loadConfigFile(file);
    process.stdout.write(formatEffectiveConfig(loaded));
    process.stderr.write(`${file}: configuration is valid\n`);
    return 0;
  }
  if (command === 'explain') {
    if (values.config === undefined || values.tenant === undefined || rest.length > 0) {
      throw new UsageError('explain takes --config FILE --tenant T [--method M] [--tool X]');
    }
    const loaded = await loadConfigFile(values.config);
    const method = values.method ?? (values.tool !== undefined ? 'tools/call' : undefined);
    const limits = resolveLimits(limitPolicyOf(loaded.config), {
      tenant: values.tenant,
      ...(method !== undefined ? { method } : {}),
      ...(values.tool !== undefined ? { tool: values.tool } : {}),
    });
    process.stdout.write(formatExplanation(limits, Object.hasOwn(loaded.config.tenants, values.tenant)));
    return 0;
  }
  if (command === 'hash-key') {
    const key = (await readStdin()).replace(/\r?\n$/, '');
    if (key === '') throw new UsageError('hash-key reads the key from stdin; it was empty');
    process.stdout.write(`${sha256Hex(key)}\n`);
    return 0;
  }
  if (command !== undefined) throw new UsageError(`unknown command "${command}"`);

  const loaded = await loadForRun(values);
  const running = await startEdge(loaded);
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

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`mcp-edge: configuration error\n${err.message}\n`);
      process.exitCode = 2;
    } else if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`mcp-edge: ${(err as Error).message}\n\n${USAGE}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`mcp-edge: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    }
  },
);
