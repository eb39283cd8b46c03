// `mcp-edge check-config FILE`: the normalized config as YAML, secrets redacted, sizes and
// durations annotated in readable units.
import { Document, isMap, isPair, isScalar, isSeq, type Scalar } from 'yaml';
import { CEILINGS, type CeilingUnit } from '../core/ceilings.js';
import { REDACTED, redactUrl } from '../core/url-credentials.js';
import type { LoadedConfig } from './load.js';
import type { EdgeConfig, TenantResolverConfig } from './schema.js';
import { formatDuration, formatSize } from './sizes.js';

/** The ceilings of the table, by the key they sit under in a request or response block. */
const CEILING_UNITS = new Map<string, CeilingUnit>(CEILINGS.map((c) => [c.key, c.unit]));
const SIZE_KEYS = new Set(['hardMaxBytes', 'maxHeaderBytes']);
/** Durations outside a `timeouts` block. */
const DURATION_KEYS = new Set(['maxAge']);

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
  };
}

/** The readable form of a size, by the key it sits under; undefined when the key is not a size. */
function sizeComment(key: string, value: number): string | undefined {
  const unit = CEILING_UNITS.get(key);
  if (unit !== undefined) {
    if (value === 0) return ' no ceiling';
    return unit === 'bytes' ? ` ${formatSize(value)}` : ` ${value.toLocaleString('en-US')} ${unit}`;
  }
  if (SIZE_KEYS.has(key)) return ` ${formatSize(value)}`;
  return undefined;
}

/**
 * A byte ceiling as it is in force: limits.hardMaxBytes caps every byte ceiling, "no ceiling" (0) included,
 * as the limit resolver does (resolveCeiling in src/core/limits.ts), so a capped one shows the cap and says so.
 */
function annotateCeiling(
  value: Scalar,
  key: string,
  configured: number,
  hardMaxBytes: number | undefined,
): void {
  if (hardMaxBytes === undefined || (configured !== 0 && configured <= hardMaxBytes)) {
    value.comment = sizeComment(key, configured);
    return;
  }
  value.value = hardMaxBytes;
  const written = configured === 0 ? 'no ceiling' : formatSize(configured);
  value.comment = ` ${formatSize(hardMaxBytes)}: clamped by limits.hardMaxBytes (configured: ${written})`;
}

/** Sizes get a comment in readable units; durations (under a `timeouts` key, and maxAge) are written with a unit. */
function annotate(node: unknown, parentKey: string | undefined, hardMaxBytes: number | undefined): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      if (!isPair(pair) || !isScalar(pair.key)) continue;
      const key = String(pair.key.value);
      const value = pair.value;
      if (!isScalar(value)) annotate(value, key, hardMaxBytes);
      else if (typeof value.value !== 'number') continue;
      else if (parentKey === 'timeouts' || DURATION_KEYS.has(key))
        value.value = value.value === 0 ? 0 : formatDuration(value.value);
      else if (CEILING_UNITS.get(key) === 'bytes') annotateCeiling(value, key, value.value, hardMaxBytes);
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
