// `mcp-edge check-config FILE`: the normalized config as YAML, secrets redacted, sizes and
// durations in readable units; which number is which comes from the config's JSON Schema.
import { Document, isMap, isPair, isScalar, isSeq, type Scalar } from 'yaml';
import { CEILING_CHOICES, CEILINGS, type CeilingUnit } from '../core/ceilings.js';
import { BUILTIN_SOURCE, resolvedCeiling, resolvedChoice, resolveLimits } from '../core/limits.js';
import { REDACTED, redactUrl } from '../core/url-credentials.js';
import { configJsonSchema, type JsonSchema } from './json-schema.js';
import { type LoadedConfig, limitPolicyOf } from './load.js';
import type { EdgeConfig, TenantResolverConfig } from './schema.js';
import { DURATION_PATTERN, formatDuration, formatSize, SIZE_PATTERN } from './sizes.js';

/** The ceilings of the table, by the key they sit under in a request or response block. */
const CEILING_UNITS = new Map<string, CeilingUnit>(CEILINGS.map((c) => [c.key, c.unit]));

/** The part of the config's JSON Schema a value sits under: what tells a duration or a size from a number. */
type SchemaNode = JsonSchema | undefined;

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A node and the alternatives of its anyOf: a value matches one of them. */
function alternatives(node: SchemaNode): JsonSchema[] {
  if (node === undefined) return [];
  const anyOf = Array.isArray(node.anyOf) ? node.anyOf.filter(isSchema) : [];
  return [node, ...anyOf.flatMap((alternative) => alternatives(alternative))];
}

/** The schema of `key` inside a mapping's schema (a named property, or a record's entries). */
function propertySchema(node: SchemaNode, key: string): SchemaNode {
  for (const candidate of alternatives(node)) {
    const properties = candidate.properties;
    if (isSchema(properties) && isSchema(properties[key])) return properties[key];
    if (isSchema(candidate.additionalProperties)) return candidate.additionalProperties;
  }
  return undefined;
}

function itemSchema(node: SchemaNode): SchemaNode {
  return alternatives(node)
    .map((candidate) => candidate.items)
    .find(isSchema);
}

/** Whether the schema takes a string of this pattern here (a duration or a size with a unit). */
function takesPattern(node: SchemaNode, pattern: RegExp): boolean {
  return alternatives(node).some((candidate) => candidate.pattern === pattern.source);
}

let configSchemaCache: JsonSchema | undefined;
function configSchema(): JsonSchema {
  configSchemaCache ??= configJsonSchema();
  return configSchemaCache;
}

/**
 * A resolver with its secrets redacted. An apiKey resolver's hashes are shown: they are one-way digests (the
 * file holds them, not the keys), and the printout must load back.
 */
function redactResolver(resolver: TenantResolverConfig): TenantResolverConfig {
  if ('jwt' in resolver) {
    const jwt = { ...resolver.jwt };
    if (jwt.secret !== undefined) jwt.secret = REDACTED;
    if (jwt.jwks !== undefined) jwt.jwks = redactUrl(jwt.jwks);
    return { jwt };
  }
  return resolver;
}

function redacted(config: EdgeConfig): EdgeConfig {
  return {
    ...config,
    upstream: {
      ...config.upstream,
      ...(config.upstream.url !== undefined ? { url: redactUrl(config.upstream.url) } : {}),
      // The child's environment may hold secrets: its names are shown, never its values.
      ...(config.upstream.stdio !== undefined
        ? {
            stdio: {
              ...config.upstream.stdio,
              env: Object.fromEntries(Object.keys(config.upstream.stdio.env).map((name) => [name, REDACTED])),
            },
          }
        : {}),
    },
    tenancy: { ...config.tenancy, resolve: config.tenancy.resolve.map(redactResolver) },
    ...(config.quotas !== undefined
      ? { quotas: { ...config.quotas, store: redactUrl(config.quotas.store) } }
      : {}),
  };
}

/** The readable form of a ceiling, by the key it sits under: bytes in binary units, or a count in its unit. */
function ceilingComment(unit: CeilingUnit, value: number): string {
  if (value === 0) return ' no ceiling';
  return unit === 'bytes' ? ` ${formatSize(value)}` : ` ${value.toLocaleString('en-US')} ${unit}`;
}

/**
 * A byte ceiling as it is in force: limits.hardMaxBytes caps every byte ceiling, "no ceiling" (0) included,
 * as the limit resolver does (resolveCeiling in src/core/limits.ts), so a capped one shows the cap and says so.
 */
function annotateCeiling(value: Scalar, configured: number, hardMaxBytes: number | undefined): void {
  if (hardMaxBytes === undefined || (configured !== 0 && configured <= hardMaxBytes)) {
    value.comment = ceilingComment('bytes', configured);
    return;
  }
  value.value = hardMaxBytes;
  const written = configured === 0 ? 'no ceiling' : formatSize(configured);
  value.comment = ` ${formatSize(hardMaxBytes)}: clamped by limits.hardMaxBytes (configured: ${written})`;
}

/**
 * Every number is written in a form the loader reads back, as the config's schema says the key takes
 * it: a duration with its unit ("30s"), a size in bytes with a comment in readable units, a ceiling as
 * it is in force.
 */
function annotate(node: unknown, schema: SchemaNode, hardMaxBytes: number | undefined): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      if (!isPair(pair) || !isScalar(pair.key)) continue;
      const key = String(pair.key.value);
      const value = pair.value;
      const valueSchema = propertySchema(schema, key);
      if (!isScalar(value)) annotate(value, valueSchema, hardMaxBytes);
      else if (typeof value.value === 'number')
        annotateNumber(value, value.value, key, valueSchema, hardMaxBytes);
    }
  } else if (isSeq(node)) {
    for (const item of node.items) annotate(item, itemSchema(schema), hardMaxBytes);
  }
}

function annotateNumber(
  value: Scalar,
  number: number,
  key: string,
  schema: SchemaNode,
  hardMaxBytes: number | undefined,
): void {
  if (takesPattern(schema, DURATION_PATTERN)) {
    value.value = number === 0 ? 0 : formatDuration(number);
    return;
  }
  const ceilingUnit = CEILING_UNITS.get(key);
  if (ceilingUnit === 'bytes' && takesPattern(schema, SIZE_PATTERN))
    annotateCeiling(value, number, hardMaxBytes);
  else if (ceilingUnit !== undefined) value.comment = ceilingComment(ceilingUnit, number);
  else if (takesPattern(schema, SIZE_PATTERN)) value.comment = ` ${formatSize(number)}`;
}

/**
 * The top-level limits the file leaves out, as the limit resolver fills them in (its built-in values, a byte
 * ceiling capped by limits.hardMaxBytes): comment lines, so the printout still loads back to the same config.
 */
function builtinLimitsComment(loaded: LoadedConfig): string | undefined {
  // '' is no tenant id (the config refuses it): the query gets the top-level limits alone.
  const limits = resolveLimits(limitPolicyOf(loaded.config), { tenant: '' });
  const lines: string[] = [];
  if (limits.mode.source === BUILTIN_SOURCE) lines.push(`mode: ${limits.mode.value}`);
  for (const ceiling of CEILINGS) {
    const { value, source } = resolvedCeiling(limits, ceiling);
    if (!source.endsWith(BUILTIN_SOURCE) && !source.endsWith(`(clamped from ${BUILTIN_SOURCE})`)) continue;
    const clamped = source.startsWith('limits.hardMaxBytes') ? ', clamped by limits.hardMaxBytes' : '';
    lines.push(`${ceiling.name}: ${value ?? 0} #${ceilingComment(ceiling.unit, value ?? 0)}${clamped}`);
  }
  for (const choice of CEILING_CHOICES) {
    const { value, source } = resolvedChoice(limits, choice);
    if (source === BUILTIN_SOURCE) lines.push(`${choice.name}: ${value}`);
  }
  if (lines.length === 0) return undefined;
  return [
    ' Built-in defaults in force where this file sets none (limits.<key>):',
    ...lines.map((l) => `   ${l}`),
  ].join('\n');
}

/**
 * YAML of the effective (normalized) config: what mcp-edge will run with, in a form the loader reads
 * back. Secrets are redacted unless `redact: false` (tests compare the two); an apiKey resolver's hashes
 * are shown either way.
 */
export function formatEffectiveConfig(loaded: LoadedConfig, options: { redact?: boolean } = {}): string {
  const doc = new Document(options.redact === false ? loaded.config : redacted(loaded.config));
  annotate(doc.contents, configSchema(), loaded.config.limits.hardMaxBytes);
  const limitsKey = isMap(doc.contents)
    ? doc.contents.items.find((pair) => isScalar(pair.key) && pair.key.value === 'limits')?.key
    : undefined;
  const builtins = builtinLimitsComment(loaded);
  if (isScalar(limitsKey) && builtins !== undefined) limitsKey.commentBefore = builtins;
  const hash = loaded.sha256 === '' ? '' : ` (sha256 ${loaded.sha256})`;
  doc.commentBefore = ` Effective config of ${loaded.source}${hash}\n Sizes in bytes (a ceiling of 0 = no ceiling); a duration of 0 = disabled. Ceilings are the values in force:\n one over limits.hardMaxBytes (or none) shows that cap.`;
  return doc.toString({ lineWidth: 0 });
}
