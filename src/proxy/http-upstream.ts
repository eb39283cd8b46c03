// The HTTP upstream: @fastify/http-proxy and its undici pool carry each admitted exchange to the MCP
// server, with the request headers rewritten for it and its response handed to the response relay.
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import httpProxy from '@fastify/http-proxy';
import type { RetryDetails } from '@fastify/reply-from';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { basicAuthorization } from '../core/url-credentials.js';
import { FORWARDED_METHODS } from './admission.js';
import { type EdgeContext, exchangeOf } from './edge-context.js';
import { sendEdgeError, upstreamFailureAnswer } from './edge-error.js';
import { upstreamCrossing } from './exchange.js';
import {
  clientResponseHeaders,
  contentCoding,
  headerValue,
  isEventStream,
  isJson,
  upstreamRequestHeaders,
} from './headers.js';
import { relayResponse, type UpstreamResponse } from './response-relay.js';

/** Errors of a request written to a connection the upstream had already closed. */
const STALE_CONNECTION_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE']);
/** Methods the edge may send twice: they change nothing upstream (RFC 9110 section 9.2.2). A POST is never resent. */
const RESENDABLE_METHODS: ReadonlySet<string> = new Set(['GET', 'DELETE']);

/**
 * A reset on a pooled connection cannot tell "closed before it read the request" from "read it, then
 * closed": the edge cannot prove a POST never reached the upstream, and a tools/call must never run twice
 * because of the edge. Only an idempotent GET or DELETE is sent once more.
 */
export function resendDelay(method: string, err: unknown, attempt: number): number | null {
  if (attempt > 0 || !RESENDABLE_METHODS.has(method)) return null;
  const code = (err as { code?: string } | null)?.code ?? '';
  return STALE_CONNECTION_CODES.has(code) ? 1 : null;
}

export async function registerHttpUpstream(app: FastifyInstance, ctx: EdgeContext): Promise<void> {
  const { config } = ctx;
  const upstream = new URL(config.upstream.url);
  // Userinfo in upstream.url is sent as Basic credentials, never in a URL (see src/core/url-credentials.ts).
  const upstreamAuthorization = basicAuthorization(config.upstream.url);
  await app.register(httpProxy, {
    upstream: upstream.origin,
    prefix: config.listen.path,
    rewritePrefix: upstream.pathname,
    routes: ['/'],
    disableRequestLogging: true,
    httpMethods: [...FORWARDED_METHODS],
    // Our own body reader runs instead of the plugin's raw pass-through parser.
    preValidation: async () => {},
    undici: {
      connections: config.upstream.maxConnections,
      pipelining: 1,
      headersTimeout: config.upstream.timeouts.headers,
      bodyTimeout: config.upstream.timeouts.idle,
      connect: {
        timeout: config.upstream.timeouts.connect,
        rejectUnauthorized: config.upstream.tls.rejectUnauthorized,
        ...(config.upstream.tls.ca !== undefined ? { ca: readFileSync(config.upstream.tls.ca, 'utf8') } : {}),
      },
    },
    handler: (request, reply, dest, replyOptions) => {
      exchangeOf(request as FastifyRequest).upstreamSentAt = process.hrtime.bigint();
      const body = request.body;
      if (request.method === 'POST') {
        return reply.from(dest, {
          ...replyOptions,
          body: Buffer.isBuffer(body) ? body : Buffer.alloc(0),
          contentType: headerValue(request.headers, 'content-type') ?? 'application/json',
        });
      }
      return reply.from(dest, replyOptions);
    },
    replyOptions: {
      retryDelay: ({ err, req, attempt }: RetryDetails) => resendDelay(req.method ?? '', err, attempt),
      rewriteRequestHeaders: (request, headers) => {
        const peer = request.socket.remoteAddress;
        const forwarded = upstreamRequestHeaders(
          headers as IncomingHttpHeaders,
          headerValue(request.headers, 'host'),
          {
            preserveHost: config.upstream.preserveHost,
            upstreamHost: upstream.host,
            clientAddress: peer ?? '',
            clientProtocol: 'http',
            authorization: upstreamAuthorization,
            ...upstreamCrossing(exchangeOf(request as FastifyRequest), request.headers, peer),
          },
        );
        return forwarded as IncomingHttpHeaders;
      },
      rewriteHeaders: (headers) => {
        const inspect = isEventStream(headers['content-type']) || isJson(headers['content-type']);
        const coding = contentCoding(headers);
        const decoded = inspect && coding !== 'identity' && coding !== 'unsupported';
        return clientResponseHeaders(headers, inspect, decoded) as IncomingHttpHeaders;
      },
      onResponse: (request, reply, res) =>
        relayResponse(
          ctx,
          request as FastifyRequest,
          reply as FastifyReply,
          res as unknown as UpstreamResponse,
        ),
      onError: (reply, { error }) => {
        const exchange = (reply.request as FastifyRequest).edge;
        // The client left (reply-from then aborts the upstream request): there is no one to answer.
        if (reply.raw.destroyed) return;
        const timeout = (error as { statusCode?: number }).statusCode === 504;
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        const detail = cause?.code ?? cause?.message ?? error.message;
        const id = exchange?.waiting.length === 1 ? (exchange.waiting[0] ?? null) : null;
        if (exchange !== undefined) exchange.outcome = timeout ? 'upstream_timeout' : 'upstream_unreachable';
        reply.request.log.warn(
          { tenant: exchange?.tenant, upstream: upstream.origin, detail },
          timeout ? 'upstream did not answer in time' : 'upstream unreachable',
        );
        sendEdgeError(
          reply as FastifyReply,
          upstreamFailureAnswer(config, timeout ? 'timeout' : 'unreachable', id, detail),
        );
      },
    },
  });
}

/** Readiness: can a TCP connection to the upstream be opened within the connect timeout? */
export function upstreamReachable(upstream: URL, timeoutMs: number): Promise<boolean> {
  const port = Number(upstream.port || (upstream.protocol === 'https:' ? 443 : 80));
  const host = upstream.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs > 0 ? timeoutMs : 5000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
