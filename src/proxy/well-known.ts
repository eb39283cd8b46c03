// OAuth-protected upstreams through the edge (MCP authorization, RFC 9728 and RFC 8414).
//
// An MCP client that meets a 401 discovers the authorization server from the resource it called: the
// protected-resource metadata at /.well-known/oauth-protected-resource[/<path>] (named by the 401's
// `WWW-Authenticate: Bearer resource_metadata="..."`), then the authorization server's metadata at
// /.well-known/oauth-authorization-server[/<path>] or /.well-known/openid-configuration[/<path>]. The client
// has called the edge, so all of this must be answered at the edge's address:
//
// - The discovery documents are passed through from the upstream's origin (upstream.oauth.discovery).
// - Paths listed in upstream.oauth.paths (the authorization server's /authorize, /token, /register when the
//   MCP server is its own authorization server) are passed through unchanged, with everything below them.
//
// This is the one place mcp-edge rewrites something it relays, and it rewrites exactly two values, neither of
// them an MCP message: the `resource` of the protected-resource metadata, and the `resource_metadata` URL in a
// WWW-Authenticate challenge. Both name the resource's own address, which for the client is the edge: a client
// must check that `resource` is the URL it called (RFC 9728 section 3.3) and cannot reach the upstream's
// address. Nothing else is rewritten: the authorization server's metadata (issuer, endpoints) is the
// authorization server's identity, to which its tokens are bound; an authorization server on the upstream must
// therefore be configured with its public (the edge's) issuer URL, and the upstream must accept tokens whose
// audience (`resource`) is the edge's public URL.
//
// The edge's public URL is server.publicUrl, or else http:// and the request's Host header (checked against
// server.allowedHosts). X-Forwarded-* headers are not consulted: set server.publicUrl behind a proxy that
// terminates TLS.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EdgeConfig } from '../config/schema.js';
import { boundedUri } from '../core/client-names.js';
import { headerValue } from '../core/headers.js';
import { nestingDepth } from '../core/json-scan.js';
import { type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';
import type { TenantResolver } from '../tenancy/tenant-resolver.js';
import { upstreamFailureAnswer } from './edge-error.js';
import { hostOriginRefusal, parseHost, pathOf, queryOf } from './host-origin.js';
import type { ShellAnswers } from './local-reply.js';
import { type PlainAnswer, PlainForwardError, plainForward } from './plain-forward.js';

export const PROTECTED_RESOURCE = '/.well-known/oauth-protected-resource';
const DISCOVERY_DOCUMENTS = [
  PROTECTED_RESOURCE,
  '/.well-known/oauth-authorization-server',
  '/.well-known/openid-configuration',
] as const;
/** Requests to the authorization server's own endpoints are small forms and JSON documents. */
export const OAUTH_MAX_BODY_BYTES = 64 * 1024;
const PASSED_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

function within(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** The suffix a resource path gives a well-known URL: "" for "/", else the path without a trailing "/". */
function resourceSuffix(path: string): string {
  return path === '/' ? '' : path.replace(/\/$/, '');
}

export function isDiscoveryPath(path: string): boolean {
  return DISCOVERY_DOCUMENTS.some((document) => within(path, document));
}

/**
 * The upstream path of a discovery document asked of the edge, or undefined when the edge serves no such
 * document. The edge serves one resource, its MCP endpoint: the protected-resource metadata of listen.path is
 * the upstream's for its own path (and the bare document is the bare one). Authorization-server documents
 * keep their path (its suffix is the issuer's path, not the resource's).
 */
export function upstreamDiscoveryPath(
  path: string,
  listenPath: string,
  upstreamPath: string,
): string | undefined {
  if (!within(path, PROTECTED_RESOURCE)) return isDiscoveryPath(path) ? path : undefined;
  if (path === PROTECTED_RESOURCE + resourceSuffix(listenPath))
    return PROTECTED_RESOURCE + resourceSuffix(upstreamPath);
  if (path === PROTECTED_RESOURCE) return PROTECTED_RESOURCE;
  return undefined;
}

/** The edge's public origin: server.publicUrl, else http:// and a well-formed Host header; undefined when neither. */
export function publicOrigin(publicUrl: string | undefined, host: string | undefined): string | undefined {
  if (publicUrl !== undefined) return publicUrl;
  return host === undefined ? undefined : parseHost(host)?.origin;
}

/** The resource the edge is: its public MCP endpoint URL. */
export function resourceUrl(origin: string, listenPath: string): string {
  return `${origin}${listenPath}`;
}

/** Where the edge serves that resource's metadata. */
export function resourceMetadataUrl(origin: string, listenPath: string): string {
  return `${origin}${PROTECTED_RESOURCE}${resourceSuffix(listenPath)}`;
}

/**
 * How deep protected-resource metadata may nest for the edge to rewrite it. RFC 9728's members are strings and
 * arrays of strings; a document nested far deeper is not metadata, and re-serializing it would recurse that deep.
 */
export const METADATA_MAX_DEPTH = 64;

/** Why the edge does not rewrite a metadata document it was sent. */
export class MetadataTooDeepError extends Error {
  constructor() {
    super(
      `the protected-resource metadata is nested deeper than ${METADATA_MAX_DEPTH} levels; mcp-edge does not rewrite it`,
    );
  }
}

/**
 * Protected-resource metadata with its `resource` set to the edge's; undefined when the body is not such a
 * document. Throws MetadataTooDeepError for a document nested past METADATA_MAX_DEPTH (checked on the bytes,
 * before anything recursive runs over it).
 */
export function rewriteResourceMetadata(body: Buffer, resource: string): Buffer | undefined {
  if (nestingDepth(body, METADATA_MAX_DEPTH) > METADATA_MAX_DEPTH) throw new MetadataTooDeepError();
  let document: unknown;
  try {
    document = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) return undefined;
  const metadata = document as Record<string, unknown>;
  if (typeof metadata.resource !== 'string') return undefined;
  return Buffer.from(JSON.stringify({ ...metadata, resource }));
}

const RESOURCE_METADATA_PARAM = /(\bresource_metadata\s*=\s*)(?:"([^"]*)"|([^\s,"]+))/gi;

/**
 * A WWW-Authenticate value with a `resource_metadata` URL on the upstream's origin replaced by the edge's own
 * metadata URL (other URLs are left alone). `addIfMissing` (the edge's own Bearer challenge) adds the parameter.
 */
export function rewriteChallenge(
  value: string,
  options: { upstreamOrigin: string; metadataUrl: string; addIfMissing: boolean },
): string {
  let found = false;
  const rewritten = value.replace(
    RESOURCE_METADATA_PARAM,
    (whole, prefix: string, quoted?: string, bare?: string) => {
      found = true;
      const url = quoted ?? bare ?? '';
      const onUpstream = URL.canParse(url) && new URL(url).origin === options.upstreamOrigin;
      return onUpstream ? `${prefix}"${options.metadataUrl}"` : whole;
    },
  );
  if (found || !options.addIfMissing || !/^\s*Bearer(\s|$)/i.test(value)) return rewritten;
  const parameter = `resource_metadata="${options.metadataUrl}"`;
  return /^\s*Bearer\s*$/i.test(value) ? `Bearer ${parameter}` : `${value}, ${parameter}`;
}

/** What the OAuth routes tell the rest of the edge. */
export interface OAuthRoutes {
  /** A path these routes serve (CORS applies to them as to the MCP endpoint). */
  serves(path: string): boolean;
  /** Swap the reloadable settings (server.*); upstream.oauth needs a restart, like all of upstream. */
  replace(next: EdgeConfig): void;
  /** What the onSend hook does to a response's headers, for a response written past Fastify's send. */
  decorateResponse(request: FastifyRequest, reply: FastifyReply): void;
}

/**
 * Registers the discovery and pass-through routes, and the WWW-Authenticate rewrite on the MCP endpoint's
 * responses. Call before the proxy is registered, so the hook applies to its routes.
 */
export async function registerOAuthRoutes(
  app: FastifyInstance,
  config: EdgeConfig,
  shell: ShellAnswers,
  /** The running tenancy: which of a request's headers are the edge's own (upstreamIdentity). */
  tenants: () => TenantResolver,
): Promise<OAuthRoutes> {
  let current = config;
  const { discovery, paths } = config.upstream.oauth;
  const listenPath = config.listen.path;
  // An upstream that is no HTTP server (stdio) has no origin to pass OAuth documents or endpoints through to.
  const endpoint = shell.upstream.httpEndpoint;
  if (endpoint === undefined) return { serves: () => false, replace() {}, decorateResponse() {} };
  const upstream: URL = endpoint;
  const serves = (path: string) =>
    (discovery && isDiscoveryPath(path)) || paths.some((prefix) => within(path, prefix));

  const surface: OAuthRoutes = {
    serves,
    replace(next) {
      current = next;
    },
    decorateResponse: (request, reply) => {
      onSend(request, reply, undefined);
    },
  };
  const send = (reply: FastifyReply, answer: EdgeHttpError) => {
    shell.respond(reply, answer);
    return reply;
  };

  // Synchronous (a callback hook): an async onSend would let a relayed stream flow before Fastify pipes it.
  const onSend = (request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown => {
    if (!discovery || pathOf(request.raw.url) !== listenPath) return payload;
    const challenge = reply.getHeader('www-authenticate');
    if (challenge === undefined) return payload;
    const origin = publicOrigin(current.server.publicUrl, headerValue(request.headers, 'host'));
    if (origin === undefined) return payload;
    const options = {
      upstreamOrigin: upstream.origin,
      metadataUrl: resourceMetadataUrl(origin, listenPath),
      // A challenge the edge wrote itself (its tenancy refused the request) also names the metadata.
      addIfMissing: request.exchange !== undefined && request.exchange.upstreamStatus === undefined,
    };
    const values = Array.isArray(challenge) ? challenge : [String(challenge)];
    const rewritten = values.map((value) => rewriteChallenge(value, options));
    reply.header('www-authenticate', rewritten.length === 1 ? rewritten[0] : rewritten);
    return payload;
  };
  app.addHook('onSend', (request, reply, payload, done) => done(null, onSend(request, reply, payload)));

  if (!discovery && paths.length === 0) return surface;

  async function passThrough(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const started = process.hrtime.bigint();
    const settings = current;
    const path = pathOf(request.raw.url);
    // What the log shows of a path the client chose (these routes end in a wildcard).
    const shownPath = boundedUri(path);
    const refusal = hostOriginRefusal(settings.server, request.headers);
    if (refusal !== undefined) return send(reply, refusal);
    const isDocument = isDiscoveryPath(path);
    const upstreamPath = isDocument ? upstreamDiscoveryPath(path, listenPath, upstream.pathname) : path;
    const target =
      upstreamPath === undefined
        ? undefined
        : new URL(upstreamPath + queryOf(request.raw.url), upstream.origin);
    // No dot segments, nor encoded separators or dots, that could leave the route once resolved (to the MCP
    // endpoint, say), here or by an upstream that decodes them.
    if (target === undefined || target.pathname !== upstreamPath || /%(2f|5c|2e)/i.test(path)) {
      return send(reply, edgeAnswer('not_found', { listenPath, path }));
    }
    const isResourceMetadata = isDocument && within(path, PROTECTED_RESOURCE) && request.method === 'GET';
    const origin = publicOrigin(settings.server.publicUrl, headerValue(request.headers, 'host'));
    if (isResourceMetadata && origin === undefined) {
      return send(reply, edgeAnswer('no_public_url', {}));
    }
    let forwarded: PlainAnswer;
    try {
      forwarded = await plainForward(settings, target, {
        method: request.method,
        headers: request.headers,
        body: Buffer.isBuffer(request.body) ? request.body : undefined,
        // Discovery documents are public; the authorization server's endpoints take client credentials, but
        // never the edge's own (an API key, a JWT its resolver does not forward): the MCP endpoint's rule.
        credentials: !isDocument,
        withheld: tenants().upstreamIdentity(
          request.headers,
          request.socket.remoteAddress,
          settings.tenancy.default,
        ).drop,
      });
    } catch (err) {
      // Anything else is the edge's own failure: Fastify's error handler answers and logs it.
      if (!(err instanceof PlainForwardError)) throw err;
      const failure = err;
      request.log.warn(
        { http: request.method, path: shownPath, err: failure.message },
        'oauth pass-through failed',
      );
      return send(
        reply,
        upstreamFailureAnswer(
          { config: settings, upstream: shell.upstream },
          failure.kind === 'timeout' ? 'timeout' : failure.kind === 'too_large' ? 'failed' : 'unreachable',
          null,
          failure.message,
        ),
      );
    }
    let body = forwarded.body;
    if (isResourceMetadata && origin !== undefined && forwarded.status === 200) {
      try {
        body = rewriteResourceMetadata(body, resourceUrl(origin, listenPath)) ?? body;
      } catch (err) {
        if (!(err instanceof MetadataTooDeepError)) throw err;
        // Passed on unrewritten, it would name the upstream as the resource: the client gets a clear 502.
        request.log.warn(
          { http: request.method, path: shownPath, err: err.message },
          'oauth pass-through refused',
        );
        return send(
          reply,
          upstreamFailureAnswer({ config: settings, upstream: shell.upstream }, 'failed', null, err.message),
        );
      }
    }
    request.log.info(
      {
        http: request.method,
        path: shownPath,
        status: forwarded.status,
        rewritten: body !== forwarded.body || undefined,
        durationMs: Math.round(Number(process.hrtime.bigint() - started) / 1e5) / 10,
      },
      'oauth pass-through',
    );
    return reply.code(forwarded.status).headers(forwarded.headers).send(body);
  }

  await app.register(async (scope) => {
    // These routes read their (small) bodies whole and pass them on as they are.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: OAUTH_MAX_BODY_BYTES },
      (_request, body, done) => done(null, body),
    );
    const routes: { url: string; methods: readonly string[] }[] = [];
    if (discovery) {
      for (const document of DISCOVERY_DOCUMENTS) {
        routes.push(
          { url: document, methods: ['GET', 'OPTIONS'] },
          { url: `${document}/*`, methods: ['GET', 'OPTIONS'] },
        );
      }
    }
    for (const prefix of paths) {
      routes.push({ url: prefix, methods: PASSED_METHODS }, { url: `${prefix}/*`, methods: PASSED_METHODS });
    }
    for (const { url, methods } of routes) scope.route({ method: [...methods], url, handler: passThrough });
  });
  return surface;
}
