// CORS for browser MCP clients (server.cors).
//
// Set: the edge answers preflights itself (204 with what server.cors allows, or 403 for an origin it does not
// grant) on the MCP endpoint and on the OAuth routes, and adds Access-Control-Allow-Origin and
// -Expose-Headers to every response to a granted origin there, its own errors (401, 413, ...) included, so a
// browser can read them. The upstream's own Access-Control-* headers are replaced: one policy, the edge's.
// Unset: the edge adds nothing, and a preflight is passed to the upstream (which answers as it would without
// the edge), after the same Host and Origin checks as any request; the upstream's CORS headers pass.
//
// server.allowedOrigins stays the gate: a foreign Origin gets 403 before CORS is considered, and the config
// refuses a server.cors origin that server.allowedOrigins would refuse.
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CorsConfig, EdgeConfig } from '../config/schema.js';
import { headerValue } from '../core/headers.js';
import { edgeAnswer } from '../core/refusals/answers.js';
import { upstreamFailureAnswer } from './edge-error.js';
import { hostOriginRefusal, pathOf, queryOf } from './host-origin.js';
import type { ShellAnswers } from './local-reply.js';
import { PlainForwardError, plainForward } from './plain-forward.js';

export interface CorsPolicy {
  anyOrigin: boolean;
  origins: ReadonlySet<string>;
  methods: readonly string[];
  /** Header names allowed as they are. */
  headers: readonly string[];
  /** Prefixes ("mcp-param-" from "mcp-param-*"): requested headers that start with one are allowed. */
  headerPrefixes: readonly string[];
  exposed: readonly string[];
  maxAgeSeconds: number;
}

export function corsPolicyOf(cors: CorsConfig | undefined): CorsPolicy | undefined {
  if (cors === undefined) return undefined;
  return {
    anyOrigin: cors.allowedOrigins.includes('*'),
    origins: new Set(cors.allowedOrigins.filter((origin) => origin !== '*')),
    methods: cors.methods,
    headers: cors.allowedHeaders.filter((name) => !name.endsWith('*')),
    headerPrefixes: cors.allowedHeaders.filter((name) => name.endsWith('*')).map((name) => name.slice(0, -1)),
    exposed: cors.exposedHeaders,
    maxAgeSeconds: Math.floor(cors.maxAge / 1000),
  };
}

/** A CORS preflight: OPTIONS with Origin and Access-Control-Request-Method (Fetch standard, section 3.2.2). */
export function isPreflight(method: string, headers: IncomingHttpHeaders): boolean {
  return (
    method === 'OPTIONS' &&
    headerValue(headers, 'origin') !== undefined &&
    headerValue(headers, 'access-control-request-method') !== undefined
  );
}

export function originGranted(policy: CorsPolicy, origin: string | undefined): origin is string {
  return origin !== undefined && origin !== 'null' && (policy.anyOrigin || policy.origins.has(origin));
}

/** The headers of a preflight answer for a granted origin. */
export function preflightHeaders(
  policy: CorsPolicy,
  origin: string,
  requestedHeaders: string | undefined,
): Record<string, string> {
  const requested = (requestedHeaders ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  const byPrefix = requested.filter(
    (name) =>
      !policy.headers.includes(name) && policy.headerPrefixes.some((prefix) => name.startsWith(prefix)),
  );
  return {
    'access-control-allow-origin': origin,
    'access-control-allow-methods': policy.methods.join(', '),
    'access-control-allow-headers': [...policy.headers, ...byPrefix].join(', '),
    'access-control-max-age': String(policy.maxAgeSeconds),
    vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
  };
}

/** The headers added to an actual response for a granted origin. */
export function actualResponseHeaders(policy: CorsPolicy, origin: string): Record<string, string> {
  const headers: Record<string, string> = { 'access-control-allow-origin': origin };
  if (policy.exposed.length > 0) headers['access-control-expose-headers'] = policy.exposed.join(', ');
  return headers;
}

function appendVary(existing: unknown, name: string): string {
  const current = Array.isArray(existing)
    ? existing.join(', ')
    : typeof existing === 'string'
      ? existing
      : '';
  const names = current
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
  if (names.some((v) => v === '*' || v.toLowerCase() === name.toLowerCase())) return current;
  return [...names, name].join(', ');
}

export interface CorsOptions {
  /** Paths besides the MCP endpoint that CORS covers (the OAuth routes). */
  serves(path: string): boolean;
}

export interface Cors {
  replace(next: EdgeConfig): void;
  /** What the onSend hook does to a response's headers, for a response written past Fastify's send. */
  decorateResponse(request: FastifyRequest, reply: FastifyReply): void;
}

/** Adds the preflight (onRequest) and response (onSend) hooks. Call before the endpoint's own onRequest checks. */
export function installCors(
  app: FastifyInstance,
  config: EdgeConfig,
  shell: ShellAnswers,
  options: CorsOptions,
): Cors {
  const { respond } = shell;
  let current = config;
  let settings = config.server;
  let policy = corsPolicyOf(settings.cors);
  const listenPath = config.listen.path;
  const covered = (url: string | undefined) => {
    const path = pathOf(url);
    return path === listenPath || options.serves(path);
  };

  /** server.cors unset: the upstream's MCP endpoint answers the preflight, as it would without the edge. */
  async function forwardPreflight(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // An upstream that is no HTTP origin (stdio) has no endpoint to ask: without server.cors, no origin is granted.
    const origin = shell.upstream.httpEndpoint;
    if (origin === undefined) {
      respond(reply, edgeAnswer('preflight', { headers: {} }));
      return;
    }
    const target = new URL(origin.href);
    target.search = queryOf(request.raw.url);
    try {
      const forwarded = await plainForward(config, target, {
        method: 'OPTIONS',
        headers: request.headers,
        credentials: false,
        withheld: [],
      });
      reply.code(forwarded.status).headers(forwarded.headers).send(forwarded.body);
    } catch (err) {
      // Anything else is the edge's own failure: Fastify's error handler answers and logs it.
      if (!(err instanceof PlainForwardError)) throw err;
      const detail = err.message;
      const kind = err.kind === 'timeout' ? 'timeout' : 'unreachable';
      request.log.warn({ http: 'OPTIONS', err: detail }, 'preflight pass-through failed');
      respond(
        reply,
        upstreamFailureAnswer({ config: current, upstream: shell.upstream }, kind, null, detail),
      );
    }
  }

  async function answerPreflight(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const refusal = hostOriginRefusal(settings, request.headers);
    if (refusal !== undefined) return respond(reply, refusal);
    if (policy === undefined) {
      // The upstream answers a preflight of the MCP endpoint; the OAuth routes pass theirs on themselves.
      if (pathOf(request.raw.url) === listenPath) return forwardPreflight(request, reply);
      return;
    }
    const origin = headerValue(request.headers, 'origin');
    if (!originGranted(policy, origin)) {
      const answer = edgeAnswer('cors_not_granted', { origin });
      return respond(reply, answer);
    }
    const headers = preflightHeaders(
      policy,
      origin,
      headerValue(request.headers, 'access-control-request-headers'),
    );
    respond(reply, edgeAnswer('preflight', { headers }));
  }

  // A callback hook: most requests are not preflights, and an async hook costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    if (!isPreflight(request.method, request.headers) || !covered(request.raw.url)) return done();
    answerPreflight(request, reply).then(
      () => {
        if (!reply.sent) done();
      },
      (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
    );
  });

  // Synchronous (a callback hook): an async onSend would let a relayed stream flow before Fastify pipes it.
  const onSend = (request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown => {
    if (policy === undefined || isPreflight(request.method, request.headers) || !covered(request.raw.url)) {
      return payload;
    }
    for (const name of Object.keys(reply.getHeaders())) {
      if (name.startsWith('access-control-')) reply.removeHeader(name);
    }
    const origin = headerValue(request.headers, 'origin');
    reply.header('vary', appendVary(reply.getHeader('vary'), 'Origin'));
    if (originGranted(policy, origin)) reply.headers(actualResponseHeaders(policy, origin));
    return payload;
  };
  app.addHook('onSend', (request, reply, payload, done) => done(null, onSend(request, reply, payload)));

  return {
    replace(next) {
      current = next;
      settings = next.server;
      policy = corsPolicyOf(settings.cors);
    },
    decorateResponse: (request, reply) => {
      onSend(request, reply, undefined);
    },
  };
}
