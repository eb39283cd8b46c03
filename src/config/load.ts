// Reads the YAML config: parse, interpolate ${VAR}, validate with the one schema, and turn every
// problem into `<file>:<line>:<col>: <key.path>: <reason>`, all problems at once. The steps have files of
// their own: yaml-passes.ts (before validation), yaml-positions.ts (where a key is), issue-problems.ts and
// did-you-mean.ts (validation issues as problems), config-error.ts (how a problem reads).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve as resolvePath } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import type { LimitPolicy } from '../core/types.js';
import {
  ConfigError,
  type ConfigProblem,
  formatKeyPath,
  formatProblem,
  type PathSegment,
} from './config-error.js';
import { problemsOfIssues, reasonOf, sortedUnique, toSegments } from './issue-problems.js';
import { type EdgeConfig, edgeConfigSchema, type TenantResolverConfig } from './schema.js';
import { interpolateEnv, keepNonDecimalNumbersAsText, refuseProtoKeys } from './yaml-passes.js';
import { locate, pathAtOffset } from './yaml-positions.js';

export { ConfigError, type ConfigProblem } from './config-error.js';

export interface LoadedConfig {
  config: EdgeConfig;
  /** The file path, or '<command line>' for a config built from flags. */
  source: string;
  text: string;
  /** SHA-256 (hex) of the file's bytes, for an info metric that tells which config is running. */
  sha256: string;
  /** Valid but probably not meant (`<file>:<line>:<col>: <key.path>: <reason>`): check-config prints them, a run logs them. */
  warnings?: readonly string[];
}

// ---- after validation ------------------------------------------------------------------------

/**
 * A valid config that is probably not what its author meant. Today: a tenant header trusted from a /0
 * range, i.e. from every peer, so any client can pick its own tenant (and with it its ceilings).
 */
function warningsOf(config: EdgeConfig): { path: PathSegment[]; reason: string }[] {
  const warnings: { path: PathSegment[]; reason: string }[] = [];
  config.tenancy.resolve.forEach((resolver, index) => {
    if (!('header' in resolver)) return;
    resolver.trustedProxies.forEach((range, rangeIndex) => {
      if (!range.endsWith('/0')) return;
      warnings.push({
        path: ['tenancy', 'resolve', index, 'trustedProxies', rangeIndex],
        reason: `warning: ${range} trusts every peer, so any client can pick its tenant with the ${resolver.header} header; list only the addresses of the proxy that sets it`,
      });
    });
  });
  return warnings;
}

/** File paths in the config are relative to the config file, not to wherever mcp-edge was started. */
function withAbsolutePaths(config: EdgeConfig, baseDir: string): EdgeConfig {
  const absolute = (path: string): string => (isAbsolute(path) ? path : resolvePath(baseDir, path));
  const resolvers = config.tenancy.resolve.map((resolver): TenantResolverConfig => {
    if (!('jwt' in resolver) || resolver.jwt.jwks === undefined || /^https?:/i.test(resolver.jwt.jwks)) {
      return resolver;
    }
    return { jwt: { ...resolver.jwt, jwks: absolute(resolver.jwt.jwks) } };
  });
  const tls = config.upstream.tls;
  return {
    ...config,
    upstream: { ...config.upstream, tls: tls.ca === undefined ? tls : { ...tls, ca: absolute(tls.ca) } },
    tenancy: { ...config.tenancy, resolve: resolvers },
  };
}

function baseDirOf(source: string): string {
  return source.startsWith('<') ? process.cwd() : dirname(resolvePath(source));
}

function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

// ---- public API ------------------------------------------------------------------------------

function parseWithHash(
  text: string,
  source: string,
  env: Record<string, string | undefined>,
  sha256: string,
): LoadedConfig {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const problems: ConfigProblem[] = [];
  for (const error of doc.errors) {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    const keyPath = error.code === 'DUPLICATE_KEY' ? formatKeyPath(pathAtOffset(doc, error.pos[0])) : '';
    const reason = error.code === 'DUPLICATE_KEY' ? 'duplicate key' : `YAML syntax: ${error.message}`;
    problems.push({ keyPath, line, column: col, reason });
  }
  if (problems.length > 0) throw new ConfigError(source, sortedUnique(problems));

  const problemAt = (path: PathSegment[], target: 'key' | 'value', reason: string): void => {
    const position = locate(doc, lineCounter, path, target);
    problems.push({ keyPath: formatKeyPath(path), line: position?.line, column: position?.column, reason });
  };
  refuseProtoKeys(doc.contents, [], (path) => problemAt(path, 'key', 'this name is reserved'));
  keepNonDecimalNumbersAsText(doc);
  interpolateEnv(doc, env, (path, reason) => problemAt(path, 'value', reason));
  if (problems.length > 0) throw new ConfigError(source, sortedUnique(problems));

  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    throw new ConfigError(source, [
      {
        keyPath: '',
        line: undefined,
        column: undefined,
        reason: error instanceof Error ? error.message : String(error),
      },
    ]);
  }
  const result = edgeConfigSchema.safeParse(raw ?? {}, { reportInput: true });
  if (!result.success) {
    throw new ConfigError(source, sortedUnique(problemsOfIssues(result.error.issues, doc, lineCounter)));
  }
  const warnings = warningsOf(result.data).map((warning) => {
    const position = locate(doc, lineCounter, warning.path, 'value');
    return formatProblem(source, {
      keyPath: formatKeyPath(warning.path),
      line: position?.line,
      column: position?.column,
      reason: warning.reason,
    });
  });
  return {
    config: withAbsolutePaths(result.data, baseDirOf(source)),
    source,
    text,
    sha256,
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/** Parses and validates config text. `source` names the file in messages and anchors relative paths. */
export function parseConfigText(
  text: string,
  source: string,
  env: Record<string, string | undefined> = process.env,
): LoadedConfig {
  return parseWithHash(text, source, env, sha256Hex(text));
}

export async function loadConfigFile(
  path: string,
  env: Record<string, string | undefined> = process.env,
): Promise<LoadedConfig> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'file not found' : `cannot read the file (${code ?? String(error)})`;
    throw new ConfigError(path, [{ keyPath: '', line: undefined, column: undefined, reason }]);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ConfigError(path, [
      { keyPath: '', line: undefined, column: undefined, reason: 'the file is not valid UTF-8' },
    ]);
  }
  return parseWithHash(text, path, env, sha256Hex(bytes));
}

export const COMMAND_LINE_SOURCE = '<command line>';

/** The config of `mcp-edge --upstream URL [--port N]` (or `--stdio -- ARGV`): built-in defaults around one upstream. */
export function defaultConfig(overrides: {
  upstreamUrl?: string;
  /** `--stdio -- ARGV`: the stdio MCP server to spawn instead of an upstream URL. */
  stdioCommand?: string[];
  host?: string;
  port?: number;
  metricsPort?: number;
}): EdgeConfig {
  const listen = {
    ...(overrides.host !== undefined ? { host: overrides.host } : {}),
    ...(overrides.port !== undefined ? { port: overrides.port } : {}),
  };
  const input = {
    upstream:
      overrides.stdioCommand !== undefined
        ? { stdio: { command: overrides.stdioCommand } }
        : { url: overrides.upstreamUrl },
    ...(Object.keys(listen).length > 0 ? { listen } : {}),
    ...(overrides.metricsPort !== undefined ? { metrics: { port: overrides.metricsPort } } : {}),
  };
  const result = edgeConfigSchema.safeParse(input, { reportInput: true });
  if (!result.success) {
    const flagOf = (keyPath: string): string =>
      keyPath === 'upstream.url'
        ? '--upstream'
        : keyPath.startsWith('upstream.stdio')
          ? '--stdio'
          : keyPath === 'listen.port'
            ? '--port'
            : keyPath === 'listen.host'
              ? '--host'
              : keyPath === 'metrics.port'
                ? '--metrics-port'
                : keyPath;
    throw new ConfigError(
      COMMAND_LINE_SOURCE,
      result.error.issues.map((issue) => ({
        keyPath: flagOf(formatKeyPath(toSegments(issue.path))),
        line: undefined,
        column: undefined,
        reason: reasonOf(issue),
      })),
    );
  }
  return result.data;
}

/** The limit resolver's view of a config. */
export function limitPolicyOf(config: EdgeConfig): LimitPolicy {
  return { defaults: config.limits, tenants: config.tenants };
}
