// The HTTP upstream, the first kind of Upstream: @fastify/http-proxy and its undici pool carry each admitted
// exchange to a Streamable HTTP MCP server, with the request headers rewritten for it; its answers go to the
// shell's sink. Messages of the edge's own go by a plain POST; readiness is a TCP connect.
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import httpProxy from '@fastify/http-proxy';
import type { RetryDetails } from '@fastify/reply-from';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { EdgeConfig } from '../config/schema.js';
import { basicAuthorization, redactUrl, withoutCredentials } from '../core/url-credentials.js';
import { FORWARDED_METHODS } from '../proxy/admission.js';
import { exchangeOf } from '../proxy/edge-context.js';
import { upstreamCrossing } from '../proxy/exchange.js';
import {
  clientResponseHeaders,
  contentCoding,
  headerValue,
  isEventStream,
  isJson,
  upstreamRequestHeaders,
} from '../proxy/headers.js';
import type { Upstream, UpstreamResponse, UpstreamSink } from './upstream.js';

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

export function httpUpstream(config: EdgeConfig, log: Logger): Upstream {
  const url = config.upstream.url;
  if (url === undefined) throw new Error('the HTTP upstream needs upstream.url');
  const upstream = new URL(url);
  // Userinfo in upstream.url is sent as Basic credentials, never in a URL (see src/core/url-credentials.ts).
  const upstreamAuthorization = basicAuthorization(url);
  // fetch refuses a URL with credentials (and its error would name it).
  const plainUrl = withoutCredentials(url);
  return {
    label: redactUrl(url),
    register: (app, sink) => registerProxy(app, sink, config, upstream, upstreamAuthorization),
    send(sessionId, message) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      if (sessionId !== undefined) headers['mcp-session-id'] = sessionId;
      if (upstreamAuthorization !== undefined) headers.authorization = upstreamAuthorization;
      fetch(plainUrl, { method: 'POST', headers, body: JSON.stringify(message) })
        .then((res) => res.body?.cancel())
        .catch((err: unknown) =>
          log.warn({ err: String(err) }, 'could not send a message of the edge upstream'),
        );
    },
    ready: () => tcpReachable(upstream, config.upstream.timeouts.connect),
  };
}

async function registerProxy(
  app: Parameters<Upstream['register']>[0],
  sink: UpstreamSink,
  config: EdgeConfig,
  upstream: URL,
  upstreamAuthorization: string | undefined,
): Promise<void> {
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
        sink.deliver(request as FastifyRequest, reply as FastifyReply, res as unknown as UpstreamResponse),
      onError: (reply, { error }) => {
        const timeout = (error as { statusCode?: number }).statusCode === 504;
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        sink.fail(
          reply as FastifyReply,
          timeout ? 'timeout' : 'unreachable',
          cause?.code ?? cause?.message ?? error.message,
        );
      },
    },
  });
}

/** Readiness: can a TCP connection to the upstream be opened within the connect timeout? */
function tcpReachable(upstream: URL, timeoutMs: number): Promise<boolean> {
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
