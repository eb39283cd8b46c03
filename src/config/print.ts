// `mcp-edge check-config FILE`: the normalized config as YAML, secrets redacted, sizes and
// durations annotated in readable units.
import { Document, isMap, isPair, isScalar, isSeq, type Scalar } from 'yaml';
import type { LoadedConfig } from './load.js';
import type { EdgeConfig, TenantResolverConfig } from './schema.js';
import { formatDuration, formatSize } from './sizes.js';

export const REDACTED = '<redacted>';

const CEILING_KEYS = new Set(['maxBodyBytes', 'maxMessageBytes']);
const SIZE_KEYS = new Set(['hardMaxBytes', 'maxHeaderBytes']);

/** A URL with its password (if any) replaced, so credentials never reach a terminal or a CI log. */
function redactUrl(text: string): string {
  if (!URL.canParse(text)) return text;
  const url = new URL(text);
  if (url.password === '') return text;
  url.password = REDACTED;
  return url.href;
}

function redactResolver(resolver: TenantResolverConfig): TenantResolverConfig {
  if ('apiKey' in resolver) {
    const tenants = Object.fromEntries(
      Object.entries(resolver.apiKey.tenants).map(([tenant, hashes]) => [tenant, hashes.map(() => REDACTED)]),
    );
    return { apiKey: { ...resolver.apiKey, tenants } };
  }
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
    upstream: { ...config.upstream, url: redactUrl(config.upstream.url) },
    tenancy: { ...config.tenancy, resolve: config.tenancy.resolve.map(redactResolver) },
  };
}

/** The readable form of a size, by the key it sits under; undefined when the key is not a size. */
function sizeComment(key: string, value: number): string | undefined {
  if (CEILING_KEYS.has(key)) return value === 0 ? ' no ceiling' : ` ${formatSize(value)}`;
  if (SIZE_KEYS.has(key)) return ` ${formatSize(value)}`;
  return undefined;
}

/**
 * A ceiling as it is in force: limits.hardMaxBytes caps every ceiling, "no ceiling" (0) included, as the
 * limit resolver does (resolveCeiling in src/core/limits.ts), so a capped one shows the cap and says so.
 */
function annotateCeiling(value: Scalar, configured: number, hardMaxBytes: number | undefined): void {
  if (hardMaxBytes === undefined || (configured !== 0 && configured <= hardMaxBytes)) {
    value.comment = sizeComment('maxMessageBytes', configured);
    return;
  }
  value.value = hardMaxBytes;
  const written = configured === 0 ? 'no ceiling' : formatSize(configured);
  value.comment = ` ${formatSize(hardMaxBytes)}: clamped by limits.hardMaxBytes (configured: ${written})`;
}

/** Sizes get a comment in readable units; durations (everything under a `timeouts` key) are written with a unit. */
function annotate(node: unknown, parentKey: string | undefined, hardMaxBytes: number | undefined): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      if (!isPair(pair) || !isScalar(pair.key)) continue;
      const key = String(pair.key.value);
      const value = pair.value;
      if (!isScalar(value)) annotate(value, key, hardMaxBytes);
      else if (typeof value.value !== 'number') continue;
      else if (parentKey === 'timeouts') value.value = value.value === 0 ? 0 : formatDuration(value.value);
      else if (CEILING_KEYS.has(key)) annotateCeiling(value, value.value, hardMaxBytes);
      else value.comment = sizeComment(key, value.value);
    }
  } else if (isSeq(node)) {
    for (const item of node.items) annotate(item, parentKey, hardMaxBytes);
  }
}

/** YAML of the effective (normalized) config: what mcp-edge will run with. */
export function formatEffectiveConfig(loaded: LoadedConfig): string {
  const doc = new Document(redacted(loaded.config));
  annotate(doc.contents, undefined, loaded.config.limits.hardMaxBytes);
  const hash = loaded.sha256 === '' ? '' : ` (sha256 ${loaded.sha256})`;
  doc.commentBefore = ` Effective config of ${loaded.source}${hash}\n Sizes in bytes (a ceiling of 0 = no ceiling); a duration of 0 = disabled. Ceilings are the values in force:\n one over limits.hardMaxBytes (or none) shows that cap.`;
  return doc.toString({ lineWidth: 0 });
}
