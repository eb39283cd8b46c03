// The `listen:` and `server:` sections: where the edge listens, which Hosts and Origins it admits, its
// public origin, CORS, trusted proxies, client-side timeouts and header bounds.
import { z } from 'zod';
import {
  cidrSchema,
  durationSchema,
  headerNameSchema,
  hostSchema,
  portSchema,
  sizeAtLeast,
  urlPathSchema,
} from './value-schemas.js';

export const listenSchema = z.strictObject({
  // Loopback unless the operator says otherwise: in a container or pod, set 0.0.0.0.
  host: hostSchema.default('127.0.0.1'),
  port: portSchema.default(8080),
  path: urlPathSchema.default('/mcp'),
});

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

export const serverSchema = z.strictObject({
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
});
