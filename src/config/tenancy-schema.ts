// The `tenancy:` section: which tenant a request belongs to (header, API key or JWT resolvers, in order),
// the default tenant, and the tenant id every `tenants:` key must be.
import { z } from 'zod';
import { cidrSchema, headerNameSchema, RESERVED_KEYS } from './value-schemas.js';

export const TENANT_ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

export const tenantIdSchema = z
  .string()
  .regex(TENANT_ID_PATTERN, {
    error: 'a tenant id is 1 to 64 characters of A-Z, a-z, 0-9, "_", "." or "-"',
  })
  .refine((id) => !RESERVED_KEYS.has(id), { error: 'this name is reserved' });

const sha256HexSchema = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, { error: 'expected the SHA-256 of the key as 64 hex digits' })
  .transform((hash) => hash.toLowerCase());

const apiKeySchema = z
  .strictObject({
    header: headerNameSchema.optional(),
    bearer: z.boolean().default(false),
    tenants: z.record(
      tenantIdSchema,
      z.array(sha256HexSchema).min(1, { error: 'list at least one key hash' }),
    ),
  })
  .transform(({ header, bearer, tenants }) => ({
    // With bearer the key travels as `<header>: Bearer <key>`, which is the Authorization header unless told otherwise.
    header: header ?? (bearer ? 'authorization' : 'x-api-key'),
    bearer,
    tenants,
  }));

export const JWT_ALGORITHMS = [
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

const jwksLocationSchema = z
  .string()
  .min(1, { error: 'must not be empty' })
  .refine((location) => !/^https?:/i.test(location) || URL.canParse(location), {
    error: 'expected an http(s) URL or a file path',
  });

// RFC 7518 section 3.2: an HMAC key must be at least as long as the hash output.
const MIN_HMAC_SECRET_BYTES = 32;

/** Exactly one key source, a long enough HMAC secret, algorithms that fit the key. Reads defensively: it runs even when a field failed. */
function checkJwt(jwt: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  const hasSecret = jwt.secret !== undefined;
  if ((jwt.jwks === undefined) === !hasSecret) {
    ctx.addIssue({ code: 'custom', message: 'set exactly one of jwks (public keys) or secret (HMAC)' });
    return;
  }
  if (typeof jwt.secret === 'string' && Buffer.byteLength(jwt.secret) < MIN_HMAC_SECRET_BYTES) {
    ctx.addIssue({
      code: 'custom',
      path: ['secret'],
      message: `an HMAC secret must be at least ${MIN_HMAC_SECRET_BYTES} bytes`,
    });
  }
  const algorithms: unknown[] = Array.isArray(jwt.algorithms) ? jwt.algorithms : [];
  algorithms.forEach((algorithm, index) => {
    if (typeof algorithm === 'string' && algorithm.startsWith('HS') !== hasSecret) {
      ctx.addIssue({
        code: 'custom',
        path: ['algorithms', index],
        message: `${algorithm} cannot be verified with ${hasSecret ? 'a secret' : 'jwks'}`,
      });
    }
  });
}

const jwtSchema = z
  .strictObject({
    jwks: jwksLocationSchema.optional(),
    secret: z.string().optional(),
    issuer: z.string().min(1).optional(),
    audience: z.string().min(1).optional(),
    claim: z.string().min(1).default('tenant'),
    algorithms: z.array(z.enum(JWT_ALGORITHMS)).min(1).optional(),
    // A verified JWT is passed on to the upstream (MCP authorization: the bearer token is the server's); false stops it here.
    forward: z.boolean().default(true),
    // A bearer token that is not a JWT: ignore (later resolvers, then tenancy.default) or reject (401).
    opaqueTokens: z.enum(['ignore', 'reject']).default('ignore'),
  })
  .superRefine(checkJwt, { when: () => true })
  .transform((jwt) => {
    const fallback: JwtAlgorithm = jwt.secret !== undefined ? 'HS256' : 'RS256';
    return { ...jwt, algorithms: jwt.algorithms ?? [fallback] };
  });

const RESOLVER_KINDS = ['header', 'apiKey', 'jwt'] as const;

/** One kind per item; trustedProxies only with header, and required there. Runs even when a field failed. */
function checkResolverItem(item: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  const kinds = RESOLVER_KINDS.filter((kind) => item[kind] !== undefined);
  if (kinds.length !== 1) {
    ctx.addIssue({
      code: 'custom',
      message:
        kinds.length === 0
          ? 'a resolver needs one of header, apiKey or jwt'
          : `a resolver is exactly one of header, apiKey or jwt, not ${kinds.join(' and ')}; write one list item each`,
    });
    return;
  }
  const proxies = item.trustedProxies;
  if (
    item.header !== undefined &&
    (proxies === undefined || (Array.isArray(proxies) && proxies.length === 0))
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['trustedProxies'],
      message:
        'a tenant header is trusted only from listed proxies; list their CIDR ranges (0.0.0.0/0 and ::/0 trust everyone)',
    });
  }
  if (item.header === undefined && proxies !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['trustedProxies'],
      message: 'trustedProxies belongs to a header resolver',
    });
  }
}

/** One resolver item: exactly one of header, apiKey, jwt (trustedProxies belongs to header). */
const resolverItemSchema = z
  .strictObject({
    header: headerNameSchema.optional(),
    trustedProxies: z.array(cidrSchema).optional(),
    apiKey: apiKeySchema.optional(),
    jwt: jwtSchema.optional(),
  })
  .superRefine(checkResolverItem, { when: () => true })
  .transform(
    (item): TenantResolverConfig =>
      item.apiKey !== undefined
        ? { apiKey: item.apiKey }
        : item.jwt !== undefined
          ? { jwt: item.jwt }
          : { header: item.header ?? '', trustedProxies: item.trustedProxies ?? [] },
  );

export interface HeaderResolverConfig {
  header: string;
  trustedProxies: string[];
}
export interface ApiKeyResolverConfig {
  apiKey: z.output<typeof apiKeySchema>;
}
export interface JwtResolverConfig {
  jwt: z.output<typeof jwtSchema>;
}
export type TenantResolverConfig = HeaderResolverConfig | ApiKeyResolverConfig | JwtResolverConfig;

export const tenancySchema = z.strictObject({
  default: tenantIdSchema.default('default'),
  requireIdentified: z.boolean().default(false),
  resolve: z.array(resolverItemSchema).default([]),
});
