// Reads the YAML config: parse, interpolate ${VAR}, validate with the one schema, and turn every
// problem into `<file>:<line>:<col>: <key.path>: <reason>`, all problems at once.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve as resolvePath } from 'node:path';
import {
  type Document,
  isAlias,
  isCollection,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseDocument,
  type Scalar,
} from 'yaml';
import { type core, z } from 'zod';
import type { LimitPolicy } from '../core/types.js';
import {
  type EdgeConfig,
  edgeConfigSchema,
  type IssueElsewhere,
  type TenantResolverConfig,
} from './schema.js';

export interface ConfigProblem {
  /** Dotted path of the key, list indexes in brackets (`tenancy.resolve[0].header`); '' for the file as a whole. */
  keyPath: string;
  line: number | undefined;
  column: number | undefined;
  reason: string;
}

type PathSegment = string | number;

function formatKeyPath(path: readonly PathSegment[]): string {
  let text = '';
  for (const segment of path) {
    text += typeof segment === 'number' ? `[${segment}]` : text === '' ? segment : `.${segment}`;
  }
  return text;
}

function formatProblem(file: string, problem: ConfigProblem): string {
  const place = problem.line === undefined ? file : `${file}:${problem.line}:${problem.column ?? 1}`;
  return problem.keyPath === ''
    ? `${place}: ${problem.reason}`
    : `${place}: ${problem.keyPath}: ${problem.reason}`;
}

export class ConfigError extends Error {
  readonly file: string;
  readonly keyPath: string;
  readonly line: number | undefined;
  readonly column: number | undefined;
  readonly problems: readonly ConfigProblem[];

  constructor(file: string, problems: readonly ConfigProblem[]) {
    super(problems.map((problem) => formatProblem(file, problem)).join('\n'));
    this.name = 'ConfigError';
    this.file = file;
    this.problems = problems;
    const first = problems[0];
    this.keyPath = first?.keyPath ?? '';
    this.line = first?.line;
    this.column = first?.column;
  }
}

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

// ---- positions -------------------------------------------------------------------------------

interface Position {
  line: number;
  column: number;
}

function positionOf(node: unknown, lineCounter: LineCounter): Position | undefined {
  const range = (node as Partial<Node> | null | undefined)?.range;
  if (!range) return undefined;
  const { line, col } = lineCounter.linePos(range[0]);
  return { line, column: col };
}

function keyText(key: unknown): string {
  return isScalar(key) ? String(key.value) : String(key);
}

/**
 * Where a key path sits in the file. For a key that is missing, the nearest parent that exists.
 * Scalars and flow collections point at the value; block collections at their key (the value starts on a later line).
 */
function locate(
  doc: Document,
  lineCounter: LineCounter,
  path: readonly PathSegment[],
  target: 'key' | 'value',
): Position | undefined {
  let node: unknown = doc.contents;
  let keyNode: unknown;
  for (const segment of path) {
    const container = isAlias(node) ? node.resolve(doc) : node;
    let found = false;
    if (isMap(container)) {
      const pair = container.items.find((item) => keyText(item.key) === String(segment));
      if (pair) {
        node = pair.value;
        keyNode = pair.key;
        found = true;
      }
    } else if (isSeq(container) && typeof segment === 'number' && segment < container.items.length) {
      node = container.items[segment];
      keyNode = undefined;
      found = true;
    }
    if (!found) {
      if (node === doc.contents) return undefined; // missing at the top level: no line to point at
      return positionOf(keyNode, lineCounter) ?? positionOf(node, lineCounter);
    }
  }
  if (target === 'key' || (isCollection(node) && !node.flow)) {
    return positionOf(keyNode, lineCounter) ?? positionOf(node, lineCounter);
  }
  return positionOf(node, lineCounter) ?? positionOf(keyNode, lineCounter);
}

/** The key path whose key or value covers a source offset (best effort, for YAML syntax errors). */
function pathAtOffset(doc: Document, offset: number): PathSegment[] {
  const path: PathSegment[] = [];
  const covers = (node: unknown): boolean => {
    const range = (node as Partial<Node> | null | undefined)?.range;
    return range !== undefined && range !== null && range[0] <= offset && offset < range[2];
  };
  let node: unknown = doc.contents;
  for (;;) {
    if (isMap(node)) {
      const pair = node.items.find((item) => covers(item.key) || covers(item.value));
      if (!pair) return path;
      path.push(keyText(pair.key));
      if (covers(pair.key)) return path;
      node = pair.value;
    } else if (isSeq(node)) {
      const index = node.items.findIndex(covers);
      if (index < 0) return path;
      path.push(index);
      node = node.items[index];
    } else return path;
  }
}

// ---- scalar passes before validation ---------------------------------------------------------

/** Calls `visit` for every scalar that is a value (never a key), with its key path. Aliases are visited at their anchor. */
function forEachValueScalar(
  node: unknown,
  path: PathSegment[],
  visit: (scalar: Scalar, path: PathSegment[]) => void,
): void {
  if (isMap(node)) {
    for (const pair of node.items) forEachValueScalar(pair.value, [...path, keyText(pair.key)], visit);
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => {
      forEachValueScalar(item, [...path, index], visit);
    });
  } else if (isScalar(node)) visit(node, path);
}

/**
 * `__proto__` as a key would be dropped silently on its way into a plain object (or, worse, set a
 * prototype); refuse it wherever it appears.
 */
function refuseProtoKeys(node: unknown, path: PathSegment[], problemAt: (path: PathSegment[]) => void): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = keyText(pair.key);
      if (key === '__proto__') problemAt([...path, key]);
      else refuseProtoKeys(pair.value, [...path, key], problemAt);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => {
      refuseProtoKeys(item, [...path, index], problemAt);
    });
  }
}

const DECIMAL_INTEGER = /^-?(0|[1-9][0-9]*)$/;

/**
 * YAML reads `1e3`, `0x10` and `1.5` as numbers. No config value is anything but a decimal integer,
 * so such values stay the text they were written as and the schema names them ("1e3" is not a size).
 */
function keepNonDecimalNumbersAsText(doc: Document): void {
  forEachValueScalar(doc.contents, [], (scalar) => {
    if (
      typeof scalar.value === 'number' &&
      scalar.source !== undefined &&
      !DECIMAL_INTEGER.test(scalar.source)
    ) {
      scalar.value = scalar.source;
    }
  });
}

// `$${` is a literal `${`; `${NAME}` and `${NAME:-fallback}` are references; any other `${` is a mistake.
const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}$]*))?\}|\$\{/g;

interface Interpolation {
  text: string;
  /** True when a reference (not only an escape) was replaced. */
  replaced: boolean;
  missing: string[];
  malformed: boolean;
}

function interpolate(text: string, env: Record<string, string | undefined>): Interpolation {
  const result: Interpolation = { text, replaced: false, missing: [], malformed: false };
  result.text = text.replace(
    REFERENCE,
    (match: string, name: string | undefined, fallback: string | undefined) => {
      if (match === '$${') return '${';
      if (name === undefined) {
        result.malformed = true;
        return match;
      }
      const value = Object.hasOwn(env, name) ? env[name] : undefined;
      result.replaced = true;
      // Like the shell: `:-` also covers a variable that is set but empty.
      if (fallback !== undefined) return value === undefined || value === '' ? fallback : value;
      if (value === undefined) result.missing.push(name);
      return value ?? match;
    },
  );
  return result;
}

/** An unquoted value reads as YAML would have read the text in its place: integers and booleans keep their type. */
function retypePlain(text: string): string | number | boolean {
  if (DECIMAL_INTEGER.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

function interpolateEnv(
  doc: Document,
  env: Record<string, string | undefined>,
  problemAt: (path: PathSegment[], reason: string) => void,
): void {
  forEachValueScalar(doc.contents, [], (scalar, path) => {
    if (typeof scalar.value !== 'string' || !scalar.value.includes('${')) return;
    const result = interpolate(scalar.value, env);
    for (const name of result.missing) {
      problemAt(
        path,
        `environment variable ${name} is not set (write \${${name}:-fallback} to give a default)`,
      );
    }
    if (result.malformed) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the message shows the config's own ${...} syntax
      problemAt(path, 'a "${" must start ${NAME} or ${NAME:-fallback} (write $${ for a literal "${")');
    }
    scalar.value = scalar.type === 'PLAIN' && result.replaced ? retypePlain(result.text) : result.text;
  });
}

// ---- validation issues -> problems -----------------------------------------------------------

function describeValue(input: unknown): string {
  if (input === null || input === undefined) return 'nothing';
  if (Array.isArray(input)) return 'a list';
  if (typeof input === 'object') return 'a mapping';
  if (typeof input === 'string') return JSON.stringify(input);
  return String(input);
}

const EXPECTED_NAMES: Readonly<Record<string, string>> = {
  object: 'a mapping',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
};

function reasonOf(issue: core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.message.startsWith('Invalid input')) {
        return `expected ${EXPECTED_NAMES[issue.expected] ?? issue.expected}, got ${describeValue(issue.input)}`;
      }
      return `${issue.message}, got ${describeValue(issue.input)}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map(String).join(', ')}; got ${describeValue(issue.input)}`;
    case 'too_small':
      if (issue.origin === 'string') return 'must not be empty';
      if (issue.origin === 'array') return `must list at least ${String(issue.minimum)}`;
      return `must be at least ${String(issue.minimum)}, got ${describeValue(issue.input)}`;
    case 'too_big':
      return `must be at most ${String(issue.maximum)}, got ${describeValue(issue.input)}`;
    case 'invalid_key': {
      const inner = issue.issues[0];
      const why = inner ? reasonOf(inner as core.$ZodIssue) : issue.message;
      return `invalid name ${describeValue(issue.input)}: ${why}`;
    }
    default:
      return issue.message;
  }
}

/** The schema one step inside optional/default/transform wrappers, where its shape is. */
function unwrapSchema(schema: core.$ZodType): core.$ZodType {
  let current = schema;
  for (;;) {
    if (
      current instanceof z.ZodOptional ||
      current instanceof z.ZodDefault ||
      current instanceof z.ZodPrefault ||
      current instanceof z.ZodNullable
    ) {
      current = current.unwrap();
    } else if (current instanceof z.ZodPipe) {
      current = current.in instanceof z.ZodTransform ? current.out : current.in;
    } else return current;
  }
}

/** The keys the schema allows at a path, for "did you mean". */
function allowedKeysAt(path: readonly PathSegment[]): string[] {
  let schema = unwrapSchema(edgeConfigSchema);
  for (const segment of path) {
    if (schema instanceof z.ZodObject) {
      const next = (schema.shape as Record<string, core.$ZodType>)[String(segment)];
      if (next === undefined) return [];
      schema = unwrapSchema(next);
    } else if (schema instanceof z.ZodRecord) schema = unwrapSchema(schema.valueType);
    else if (schema instanceof z.ZodArray) schema = unwrapSchema(schema.element);
    else return [];
  }
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution =
        (previous[j - 1] ?? 0) + (a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function unknownKeyReason(key: string, allowed: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  for (const candidate of allowed) {
    const distance = editDistance(key, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const hint = best !== undefined ? `did you mean "${best}"?` : `allowed here: ${allowed.join(', ')}`;
  return allowed.length === 0 ? `unknown key "${key}"` : `unknown key "${key}"; ${hint}`;
}

function toSegments(path: readonly PropertyKey[]): PathSegment[] {
  return path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
}

/** The `elsewhere` of a cross-check issue (schema.ts), if it has one. */
function elsewhereOf(issue: core.$ZodIssue): IssueElsewhere | undefined {
  const elsewhere: unknown = issue.code === 'custom' ? issue.params?.elsewhere : undefined;
  if (typeof elsewhere !== 'object' || elsewhere === null) return undefined;
  const { path, message } = elsewhere as Partial<IssueElsewhere>;
  return Array.isArray(path) && typeof message === 'string' ? { path, message } : undefined;
}

function problemsOfIssues(
  issues: readonly core.$ZodIssue[],
  doc: Document,
  lineCounter: LineCounter,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const add = (path: PathSegment[], target: 'key' | 'value', reason: string): void => {
    const position = locate(doc, lineCounter, path, target);
    problems.push({ keyPath: formatKeyPath(path), line: position?.line, column: position?.column, reason });
  };
  for (const issue of issues) {
    const path = toSegments(issue.path);
    if (issue.code === 'unrecognized_keys') {
      const allowed = allowedKeysAt(path);
      for (const key of issue.keys) add([...path, key], 'key', unknownKeyReason(key, allowed));
    } else if (
      issue.code === 'custom' &&
      elsewhereOf(issue) !== undefined &&
      !locate(doc, lineCounter, path, 'key')
    ) {
      const elsewhere = elsewhereOf(issue);
      if (elsewhere !== undefined) add(elsewhere.path, 'value', elsewhere.message);
    } else {
      add(path, issue.code === 'invalid_key' ? 'key' : 'value', reasonOf(issue));
    }
  }
  return problems;
}

/** Top to bottom; problems without a line first (they concern the file as a whole). */
function sortedUnique(problems: readonly ConfigProblem[]): ConfigProblem[] {
  const seen = new Set<string>();
  const unique = problems.filter((problem) => {
    const key = `${problem.line}:${problem.column}:${problem.keyPath}:${problem.reason}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return unique.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
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
