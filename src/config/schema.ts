// The one schema of the YAML config. Its output type is the normalized config (sizes in bytes,
// durations in ms) that the rest of mcp-edge reads. Every object is strict: a typo is an error.
import { isIP } from 'node:net';
import { z } from 'zod';
import { CEILINGS, type Ceiling } from '../core/ceilings.js';
import { basicCredentialProblem } from '../core/url-credentials.js';
import { hostBudgetsSchema, hostsSchema } from './hosts-schema.js';
import { DURATION_PATTERN, formatSize, parseDuration, parseSize, SIZE_PATTERN } from './sizes.js';

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A schema that accepts what `parse` accepts and reports what it throws as the reason. */
function parsedBy<T>(parse: (input: unknown) => T) {
  return z.unknown().transform((input, ctx): T => {
    try {
      return parse(input);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: messageOf(error), input });
      return z.NEVER;
    }
  });
}

/**
 * What a size or duration looks like to a JSON Schema validator (schema/mcp-edge.schema.json), which
 * cannot run parseSize or parseDuration: the same pattern, and the same integers.
 */
function sizeJsonSchema(minimum: number, description: string) {
  return {
    description,
    anyOf: [
      { type: 'integer', minimum },
      { type: 'string', pattern: SIZE_PATTERN.source },
    ],
  };
}

function sizeAtLeast(minimum: number) {
  return parsedBy((input) => {
    const bytes = parseSize(input);
    if (bytes < minimum) throw new Error(`must be at least ${formatSize(minimum)}`);
    return bytes;
  }).meta(
    sizeJsonSchema(
      minimum,
      `Bytes, or a number with B, KB, MB, GB, KiB, MiB or GiB (e.g. "32MiB"); at least ${formatSize(minimum)}.`,
    ),
  );
}

/** A ceiling: bytes, 0 = no ceiling. */
const ceilingSchema = parsedBy(parseSize).meta(
  sizeJsonSchema(
    0,
    'A ceiling: bytes, or a number with B, KB, MB, GB, KiB, MiB or GiB (e.g. "4MiB"); 0 = no ceiling.',
  ),
);
const durationSchema = parsedBy(parseDuration).meta({
  description: 'An integer with ms, s, m or h (e.g. "250ms", "30s", "2m"); 0 disables.',
  anyOf: [{ const: 0 }, { type: 'string', pattern: DURATION_PATTERN.source }],
});

const portSchema = z
  .number({ error: 'expected a port number (an integer 0..65535)' })
  .int({ error: 'expected a port number (an integer 0..65535)' })
  .min(0)
  .max(65535);

const hostSchema = z.string().regex(/^[^\s/]+$/, { error: 'expected a host name or IP address' });

const urlPathSchema = z
  .string()
  .regex(/^\/[^\s?#]*$/, { error: 'must be a path starting with "/" (no spaces, query or fragment)' });

export const TENANT_ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** Object keys that would collide with JavaScript's own object machinery if used as record keys. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const tenantIdSchema = z
  .string()
  .regex(TENANT_ID_PATTERN, {
    error: 'a tenant id is 1 to 64 characters of A-Z, a-z, 0-9, "_", "." or "-"',
  })
  .refine((id) => !RESERVED_KEYS.has(id), { error: 'this name is reserved' });

/** A method or tool name used as a key. */
const nameKeySchema = z
  .string()
  .min(1, { error: 'must not be empty' })
  .refine((name) => !RESERVED_KEYS.has(name), { error: 'this name is reserved' });

// ---- limits ----------------------------------------------------------------------------------

const limitModeSchema = z.enum(['enforce', 'observe']);

/** A ceiling's value as written: a size for a byte ceiling, a whole number for a count (0: no ceiling). */
function ceilingValueSchema(ceiling: Ceiling) {
  return ceiling.unit === 'bytes'
    ? ceilingSchema
    : z
        .number({ error: `must be a whole number of ${ceiling.unit} (0: no ceiling)` })
        .int()
        .min(0);
}

type Section<D extends Ceiling['direction']> = Extract<Ceiling, { direction: D }>['key'];

/** Which block a section is in: the top-level defaults (every key defaulted), a tenant's, or a method's or tool's. */
type SectionLayer = 'defaults' | 'tenant' | 'override';

/**
 * One `request` or `response` block of ceilings, built from the table: every key optional, or (for the
 * top-level defaults) defaulted to its built-in value. A method's or tool's block has only the ceilings
 * that can differ per method (a batch has no one method).
 */
function ceilingSectionSchema<D extends Ceiling['direction']>(
  direction: D,
  layer: 'defaults',
): z.ZodType<{ [K in Section<D>]: number }, { [K in Section<D>]?: unknown }>;
function ceilingSectionSchema<D extends Ceiling['direction']>(
  direction: D,
  layer: 'tenant' | 'override',
): z.ZodType<{ [K in Section<D>]?: number }, { [K in Section<D>]?: unknown }>;
function ceilingSectionSchema(direction: Ceiling['direction'], layer: SectionLayer): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  for (const ceiling of CEILINGS) {
    if (ceiling.direction !== direction || (layer === 'override' && !ceiling.perMethod)) continue;
    const value = ceilingValueSchema(ceiling);
    shape[ceiling.key] = layer === 'defaults' ? value.default(ceiling.builtin) : value.optional();
  }
  return z.strictObject(shape);
}

const overrideBlockSchema = z.strictObject({
  request: ceilingSectionSchema('request', 'override').optional(),
  response: ceilingSectionSchema('response', 'override').optional(),
});

const overridesSchema = z.record(nameKeySchema, overrideBlockSchema);

/** The top-level `limits`: the defaults of every tenant, completed with the built-in ceilings. */
const defaultLimitsSchema = z.strictObject({
  mode: limitModeSchema.default('enforce'),
  hardMaxBytes: sizeAtLeast(1).optional(),
  request: ceilingSectionSchema('request', 'defaults').prefault({}),
  response: ceilingSectionSchema('response', 'defaults').prefault({}),
  methods: overridesSchema.default({}),
  tools: overridesSchema.default({}),
});

/** A tenant's own `limits`: same shape, everything optional, no hardMaxBytes (that one is global). */
const tenantLimitsSchema = z.strictObject({
  request: ceilingSectionSchema('request', 'tenant').optional(),
  response: ceilingSectionSchema('response', 'tenant').optional(),
  mode: limitModeSchema.optional(),
  methods: overridesSchema.optional(),
  tools: overridesSchema.optional(),
});

/** One entry of `tenants`. `acme:` with nothing under it (YAML null) declares a tenant with no limits of its own. */
export const tenantSchema = z.preprocess(
  (value) => value ?? {},
  z.strictObject({ limits: tenantLimitsSchema.optional() }),
);

// ---- tenancy ---------------------------------------------------------------------------------

/** `10.0.0.0/8`, `::1/128`, or a bare address (one host). Normalized to always carry the prefix. */
export function normalizeCidr(input: string): string {
  const parts = input.split('/');
  const address = parts[0] ?? '';
  const family = address.includes('%') ? 0 : isIP(address);
  if (parts.length > 2 || family === 0) {
    throw new Error(`"${input}" is not a CIDR range; write e.g. 10.0.0.0/8, 127.0.0.1 or ::1/128`);
  }
  const maxPrefix = family === 4 ? 32 : 128;
  const prefix = parts[1];
  if (prefix === undefined) return `${address}/${maxPrefix}`;
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > maxPrefix) {
    throw new Error(`"${input}" has an invalid prefix length; IPv${family} prefixes are 0..${maxPrefix}`);
  }
  return `${address}/${prefix}`;
}

const cidrSchema = z.string().transform((input, ctx) => {
  try {
    return normalizeCidr(input);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: messageOf(error), input });
    return z.NEVER;
  }
});

const headerNameSchema = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: 'expected an HTTP header name' })
  .transform((name) => name.toLowerCase());

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

// ---- server side -----------------------------------------------------------------------------

const allowedHostSchema = z
  .string()
  .regex(/^[^\s/@?#]+$/, { error: 'expected a host or host:port, without scheme or path' })
  .transform((host) => host.toLowerCase());

/** An origin (scheme://host[:port], nothing else) as written in the config, normalized; `what` names it in the error. */
function originSchema(what: string) {
  return z.string().transform((input, ctx) => {
    const url = URL.canParse(input) ? new URL(input) : undefined;
    const isOrigin =
      url !== undefined &&
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      url.pathname === '/' &&
      !input.endsWith('/') &&
      url.search === '' &&
      url.hash === '' &&
      url.username === '' &&
      url.password === '';
    if (!isOrigin) {
      ctx.addIssue({ code: 'custom', input, message: `"${input}" is not ${what}` });
      return z.NEVER;
    }
    return url.origin;
  });
}

const allowedOriginSchema = originSchema('an origin; write scheme://host[:port]');

/** `server.publicUrl`: the edge's public origin as clients reach it (no path: the MCP path is listen.path). */
const publicUrlSchema = originSchema(
  'a public origin; write scheme://host[:port] (the MCP path is listen.path)',
);

/** The request headers a browser MCP client sends (a preflight asks for them); the Streamable HTTP transport's own. */
export const CORS_DEFAULT_ALLOWED_HEADERS = [
  'content-type',
  'authorization',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'mcp-method',
  'mcp-name',
] as const;
export const CORS_DEFAULT_EXPOSED_HEADERS = ['mcp-session-id', 'www-authenticate', 'x-request-id'] as const;
export const CORS_METHODS = ['POST', 'GET', 'DELETE'] as const;

/** An allowed request header: a header name, or a prefix ending in "*" (mcp-param-*). */
const corsHeaderPatternSchema = z
  .string()
  .regex(/^[!#$%&'+.^_`|~0-9A-Za-z-]+\*?$/, {
    error: 'expected an HTTP header name, or a prefix ending in "*"',
  })
  .transform((name) => name.toLowerCase());

const corsSchema = z.strictObject({
  // Origins granted CORS; "*" grants any origin (the response still names the caller's origin, never "*").
  allowedOrigins: z
    .array(z.union([z.literal('*'), allowedOriginSchema]))
    .min(1, { error: 'list the browser origins to allow (scheme://host[:port]), or "*"' }),
  methods: z
    .array(z.enum(CORS_METHODS))
    .min(1)
    .default([...CORS_METHODS]),
  allowedHeaders: z.array(corsHeaderPatternSchema).default([...CORS_DEFAULT_ALLOWED_HEADERS]),
  exposedHeaders: z.array(headerNameSchema).default([...CORS_DEFAULT_EXPOSED_HEADERS]),
  // How long a browser may cache a preflight answer (Access-Control-Max-Age, whole seconds).
  maxAge: durationSchema.default(600_000),
});
export type CorsConfig = z.output<typeof corsSchema>;

/** A path passed through to the upstream unchanged (with everything below it): an OAuth endpoint such as /token. */
const oauthPathSchema = z
  .string()
  .regex(/^(\/[A-Za-z0-9._~-]+)+$/, {
    error:
      'must be a path of one or more "/segment" (letters, digits, "." "_" "~" "-"), without a trailing "/"',
  })
  .refine((path) => !path.split('/').some((segment) => segment === '.' || segment === '..'), {
    error: 'must not contain "." or ".." segments',
  });

/** Userinfo in the URL (`http://user:password@host/mcp`) is sent upstream as Basic authentication. */
const upstreamUrlSchema = z
  .string({ error: 'expected the upstream MCP endpoint URL' })
  .refine(
    (input) => {
      if (!URL.canParse(input)) return false;
      const protocol = new URL(input).protocol;
      return protocol === 'http:' || protocol === 'https:';
    },
    { error: 'expected an absolute http:// or https:// URL' },
  )
  .superRefine((input, ctx) => {
    const problem = basicCredentialProblem(input);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * A stdio MCP server the edge spawns itself (src/upstream/stdio-upstream.ts): an argv, never run through a
 * shell; the child's environment is only what is listed here, plus PATH and HOME.
 */
const stdioSchema = z.strictObject({
  command: z
    .array(z.string().min(1, { error: 'must not be empty' }), {
      error: 'expected the command as an argv list, e.g. [npx, -y, "@modelcontextprotocol/server-memory"]',
    })
    .min(1),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).default({}),
  cwd: z.string().min(1, { error: 'must not be empty' }).optional(),
  // A session's child with no request for this long is ended (its client re-initializes).
  idleTimeout: durationSchema.default(15 * 60_000),
  // A session that has sent no request since its initialize is ended this long after it; 0: only idleTimeout.
  idleTimeoutBeforeFirstRequest: durationSchema.default(60_000),
  // Children alive at once (sessions and the sessionless pools); past it a new one gets a 503.
  maxProcesses: z.number().int().min(1).default(64),
  // Children one tenant may have alive at once. Default: half of maxProcesses, rounded up; all of them
  // when tenancy.resolve is empty (every request is then one tenant's): processesPerTenant in stdio-upstream.ts.
  maxProcessesPerTenant: z.number().int().min(1).optional(),
  // After SIGTERM, how long a child has to exit before SIGKILL.
  killGrace: durationSchema.default(5_000),
  // false: every call is answered as an SSE stream, as the MCP SDK's Streamable HTTP server answers.
  // true: a POST of one request whose answer comes first gets it as an application/json body (fewer bytes).
  jsonResponse: z.boolean().default(false),
  // How long a call waits for a request id (or progress token) that another call has in flight on the same
  // child (ids are never rewritten); past it, a 409 that says so. 0: refused at once.
  idWait: durationSchema.default(5_000),
  // What a session's child sends before the client opened its GET stream waits this long for it (0: not at
  // all), and at most this many bytes per session; past either, it is dropped and counted (a request answered).
  streamWait: durationSchema.default(5_000),
  streamWaitBytes: sizeAtLeast(0).default(256 * 1024),
});

/** Exactly one of upstream.url and upstream.stdio. */
function checkUpstreamKind(upstream: { url?: unknown; stdio?: unknown }, ctx: z.RefinementCtx): void {
  if (upstream.url === undefined && upstream.stdio === undefined) {
    ctx.addIssue({ code: 'custom', path: ['url'], message: 'is required' });
  } else if (upstream.url !== undefined && upstream.stdio !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['stdio'],
      message: 'upstream.url and upstream.stdio exclude each other: give exactly one of them',
    });
  }
}

// ---- the whole file --------------------------------------------------------------------------

/** For a cross-check issue whose key may be missing from the file: the key (and wording) to report instead. */
export interface IssueElsewhere {
  path: (string | number)[];
  message: string;
}

/** Reads a possibly invalid parsed value without trusting its shape (cross-checks run even after errors). */
function recordAt(value: unknown, ...path: string[]): Record<string, unknown> | undefined {
  let current: unknown = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return typeof current === 'object' && current !== null ? (current as Record<string, unknown>) : undefined;
}

/** Tenant references must name a defined tenant; a key hash may identify only one tenant. */
function checkCrossReferences(config: unknown, ctx: z.RefinementCtx): void {
  const tenants = recordAt(config, 'tenants') ?? {};
  const isDefined = (id: unknown): boolean => typeof id === 'string' && Object.hasOwn(tenants, id);
  const tenancy = recordAt(config, 'tenancy');
  const defaultTenant = tenancy?.default;
  if (typeof defaultTenant === 'string' && defaultTenant !== 'default' && !isDefined(defaultTenant)) {
    ctx.addIssue({
      code: 'custom',
      path: ['tenancy', 'default'],
      message: `tenant "${defaultTenant}" is not defined under tenants`,
    });
  }
  const resolvers = Array.isArray(tenancy?.resolve) ? (tenancy.resolve as unknown[]) : [];
  if (tenancy?.requireIdentified === true && resolvers.length === 0) {
    ctx.addIssue({
      code: 'custom',
      path: ['tenancy', 'requireIdentified'],
      message: 'requireIdentified is true but tenancy.resolve is empty, so every request would be refused',
    });
  }
  const hashOwners = new Map<string, string>();
  resolvers.forEach((resolver, index) => {
    const keyTenants = recordAt(resolver, 'apiKey', 'tenants') ?? {};
    for (const [tenant, hashes] of Object.entries(keyTenants)) {
      const path = ['tenancy', 'resolve', index, 'apiKey', 'tenants', tenant];
      if (!isDefined(tenant)) {
        ctx.addIssue({ code: 'custom', path, message: `tenant "${tenant}" is not defined under tenants` });
      }
      if (!Array.isArray(hashes)) continue;
      hashes.forEach((hash: unknown, hashIndex) => {
        if (typeof hash !== 'string') return;
        const owner = hashOwners.get(hash);
        if (owner !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [...path, hashIndex],
            message: `this key hash is already listed for tenant "${owner}"; a key identifies one tenant`,
          });
        } else hashOwners.set(hash, tenant);
      });
    }
  });
  for (const tenant of Object.keys(recordAt(config, 'hostBudgets', 'tenants') ?? {})) {
    if (tenant !== 'default' && !isDefined(tenant)) {
      ctx.addIssue({
        code: 'custom',
        path: ['hostBudgets', 'tenants', tenant],
        message: `tenant "${tenant}" is not defined under tenants`,
      });
    }
  }
  const listen = recordAt(config, 'listen');
  checkOAuthAndCors(config, typeof listen?.path === 'string' ? listen.path : '/mcp', ctx);
  const metrics = recordAt(config, 'metrics');
  if (metrics?.enabled !== false && typeof metrics?.port === 'number' && metrics.port !== 0) {
    if (metrics.port === listen?.port) {
      // Where metrics.port is left at its default, the file has no line for it: the loader then points at listen.port.
      const elsewhere: IssueElsewhere = {
        path: ['listen', 'port'],
        message: `must differ from metrics.port, which is ${metrics.port} by default; set one of them to another port`,
      };
      ctx.addIssue({
        code: 'custom',
        path: ['metrics', 'port'],
        message: 'must differ from listen.port',
        params: { elsewhere },
      });
    }
  }
}

/** Paths the edge serves itself: an OAuth pass-through path must not shadow them. */
const EDGE_OWN_PATHS = ['/healthz', '/readyz', '/.well-known'];

function within(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`);
}

/** OAuth pass-through paths stay clear of the edge's own; CORS grants only origins allowedOrigins lets in. */
function checkOAuthAndCors(config: unknown, listenPath: string, ctx: z.RefinementCtx): void {
  const paths = recordAt(config, 'upstream', 'oauth')?.paths;
  if (Array.isArray(paths)) {
    paths.forEach((path: unknown, index) => {
      if (typeof path !== 'string') return;
      const clash = [listenPath, ...EDGE_OWN_PATHS].find((own) => within(path, own) || within(own, path));
      if (clash !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['upstream', 'oauth', 'paths', index],
          message: `"${path}" overlaps "${clash}", which mcp-edge serves itself`,
        });
      }
    });
  }
  const server = recordAt(config, 'server');
  const allowed = Array.isArray(server?.allowedOrigins) ? (server.allowedOrigins as unknown[]) : [];
  const corsOrigins = recordAt(server, 'cors')?.allowedOrigins;
  if (allowed.length === 0 || !Array.isArray(corsOrigins)) return;
  corsOrigins.forEach((origin: unknown, index) => {
    if (typeof origin !== 'string' || allowed.includes(origin)) return;
    ctx.addIssue({
      code: 'custom',
      path: ['server', 'cors', 'allowedOrigins', index],
      message:
        origin === '*'
          ? '"*" would grant CORS to origins that server.allowedOrigins refuses with 403; list the origins'
          : `"${origin}" is not in server.allowedOrigins, so its requests would be refused with 403; add it there too`,
    });
  });
}

export const edgeConfigSchema = z
  .strictObject({
    listen: z
      .strictObject({
        // Loopback unless the operator says otherwise: in a container or pod, set 0.0.0.0.
        host: hostSchema.default('127.0.0.1'),
        port: portSchema.default(8080),
        path: urlPathSchema.default('/mcp'),
      })
      .prefault({}),
    upstream: z
      .strictObject({
        url: upstreamUrlSchema.optional(),
        // Instead of url: spawn a stdio MCP server, one child per session.
        stdio: stdioSchema.optional(),
        timeouts: z
          .strictObject({
            connect: durationSchema.default(10_000),
            headers: durationSchema.default(120_000),
            // Longest silence inside a JSON response body (an SSE stream is governed by idle instead).
            body: durationSchema.default(120_000),
            // Longest silence inside the SSE answer to a POST (a call); GET streams may idle, so they are exempt.
            answerStream: durationSchema.default(300_000),
            idle: durationSchema.default(0),
            // Longest wait of a call (POST, DELETE) for a free connection; past it a 503 JSON-RPC error, never sent. 0: no wait.
            queue: durationSchema.default(10_000),
          })
          .prefault({}),
        tls: z
          .strictObject({
            ca: z.string().min(1, { error: 'must not be empty' }).optional(),
            rejectUnauthorized: z.boolean().default(true),
          })
          .prefault({}),
        // Connections for calls (POST, DELETE), each held until its answer (JSON or SSE) ends.
        maxConnections: z.number().int().min(1).default(4096),
        // Connections for GET streams, apart from the calls'; past them a GET gets a 405 (a session's own share
        // is server.maxGetStreamsPerSession).
        maxStreamConnections: z.number().int().min(1).default(1024),
        // Forward the client's Host header instead of the upstream's own (for upstreams that check Host themselves).
        preserveHost: z.boolean().default(false),
        // An OAuth-protected upstream: its discovery documents and authorization-server endpoints (see well-known.ts).
        oauth: z
          .strictObject({
            // Pass /.well-known/oauth-protected-resource, oauth-authorization-server and openid-configuration through.
            discovery: z.boolean().default(true),
            // Further paths passed through unchanged, each with everything below it (/authorize, /token, /register).
            paths: z.array(oauthPathSchema).default([]),
          })
          .prefault({}),
      })
      .superRefine(checkUpstreamKind),
    metrics: z
      .strictObject({
        enabled: z.boolean().default(true),
        host: hostSchema.default('127.0.0.1'),
        port: portSchema.default(9464),
        path: urlPathSchema.default('/metrics'),
        // A message above this percentage of its own ceiling counts in mcp_edge_near_ceiling_messages_total.
        nearCeilingPercent: z.number().int().min(1).max(100).default(80),
        // Series switches (docs/operations.md#series-and-what-they-cost): the token histograms, and which tools
        // keep their own `tool` label value (all, none, or only those listed; the rest fold into __other__).
        tokenHistograms: z.boolean().default(true),
        toolLabels: z.union([z.enum(['all', 'none']), z.array(z.string().min(1).max(128))]).default('all'),
      })
      .prefault({}),
    server: z
      .strictObject({
        allowedHosts: z.array(allowedHostSchema).default([]),
        allowedOrigins: z.array(allowedOriginSchema).default([]),
        // The edge's public origin (scheme://host[:port]); unset: http:// and the request's Host header.
        publicUrl: publicUrlSchema.optional(),
        // Answer CORS preflights and grant browser origins; unset: preflights go to the upstream.
        cors: corsSchema.optional(),
        // Peers whose X-Forwarded-* and Forwarded headers are believed (the load balancer in front).
        trustedProxies: z.array(cidrSchema).default([]),
        timeouts: z
          .strictObject({
            requestHeaders: durationSchema.default(30_000),
            requestBody: durationSchema.default(60_000),
            keepAlive: durationSchema.default(72_000),
            shutdownGrace: durationSchema.default(10_000),
          })
          .prefault({}),
        maxHeaderBytes: sizeAtLeast(1024).default(16 * 1024),
        // GET streams (standalone or resumed) one session may hold open at once; past it a GET gets a 405.
        maxGetStreamsPerSession: z.number().int().min(1).default(16),
        // The upstream's address and socket errors in 502/504 answers; they are always in the log.
        exposeUpstreamErrors: z.boolean().default(false),
      })
      .prefault({}),
    logging: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      })
      .prefault({}),
    limits: defaultLimitsSchema.prefault({}),
    // Collection pagination is the server's contract; the edge only guards against listings that never end.
    pagination: z
      .strictObject({
        maxPagesPerListing: z.number().int().min(1).default(1000),
      })
      .prefault({}),
    tenancy: z
      .strictObject({
        default: tenantIdSchema.default('default'),
        requireIdentified: z.boolean().default(false),
        resolve: z.array(resolverItemSchema).default([]),
      })
      .prefault({}),
    tenants: z.record(tenantIdSchema, tenantSchema).default({}),
    // Host profiles (src/hosts) and what happens to a result over the budget of the host that called.
    hosts: hostsSchema,
    hostBudgets: hostBudgetsSchema,
  })
  .superRefine(checkCrossReferences, { when: () => true });

/** The normalized config: sizes in bytes, durations in milliseconds, defaults filled in. */
export type EdgeConfig = z.output<typeof edgeConfigSchema>;
export type DefaultLimitsConfig = EdgeConfig['limits'];
export type StdioUpstreamConfig = NonNullable<EdgeConfig['upstream']['stdio']>;
export type TenantLimitsConfig = z.output<typeof tenantLimitsSchema>;
