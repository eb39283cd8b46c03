// The HTTP upstream, the first kind of Upstream: undici Pools carry each admitted exchange to a Streamable
// HTTP MCP server, with the request headers rewritten for it; its answers go to the shell's sink. Calls (POST,
// DELETE) and GET streams have a pool and a count each (connection-slots.ts): a stream open for hours never
// holds a call's connection. A POST (the body is read and judged already) goes straight to its pool; GET
// and DELETE go through @fastify/http-proxy. Messages of the edge's own go by a plain POST; readiness is a
// TCP connect.
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import httpProxy from '@fastify/http-proxy';
import type { RetryDetails } from '@fastify/reply-from';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { type Dispatcher, Pool } from 'undici';
import type { EdgeConfig } from '../config/schema.js';
import { getStreamRefusal } from '../core/errors.js';
import {
  clientResponseHeaders,
  contentCoding,
  headerValue,
  isEventStream,
  isJson,
  upstreamRequestHeaders,
} from '../core/headers.js';
import { basicAuthorization, redactUrl, withoutCredentials } from '../core/url-credentials.js';
import { CallSlots, type Release, StreamSlots } from './connection-slots.js';
import { mcpReadiness } from './http-readiness.js';
import {
  FORWARDED_METHODS,
  type Upstream,
  type UpstreamExchange,
  type UpstreamResponse,
  type UpstreamSink,
} from './upstream.js';

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
    publicName: upstream.origin,
    httpEndpoint: upstream,
    register: (app, sink) => registerProxy(app, sink, config, upstream, upstreamAuthorization, log),
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
    ready: mcpReadiness(
      { url: plainUrl, authorization: upstreamAuthorization, label: redactUrl(url) },
      config,
      log,
    ),
  };
}

/** How the client's request headers go upstream (the body, if any, is `bodyLength` bytes). */
function requestHeadersFor(
  config: EdgeConfig,
  upstream: URL,
  upstreamAuthorization: string | undefined,
  exchange: UpstreamExchange,
  request: FastifyRequest,
  headers: IncomingHttpHeaders,
): IncomingHttpHeaders {
  const peer = request.socket.remoteAddress;
  return upstreamRequestHeaders(headers, headerValue(request.headers, 'host'), {
    preserveHost: config.upstream.preserveHost,
    upstreamHost: upstream.host,
    clientAddress: peer ?? '',
    clientProtocol: 'http',
    authorization: upstreamAuthorization,
    ...exchange.crossing(request.headers, peer),
  }) as IncomingHttpHeaders;
}

/** The upstream's response headers as the client gets them (length and coding go when the edge may rewrite). */
function responseHeadersFor(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const inspect = isEventStream(headers['content-type']) || isJson(headers['content-type']);
  const coding = contentCoding(headers);
  const decoded = inspect && coding !== 'identity' && coding !== 'unsupported';
  return clientResponseHeaders(headers, inspect, decoded) as IncomingHttpHeaders;
}

/** An undici failure as the sink takes it: a timeout (504) or an unreachable upstream (502), and its code. */
function failureOf(err: Error): { kind: 'timeout' | 'unreachable'; detail: string } {
  const code = (err as { code?: string }).code;
  const timeout =
    code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || err.name === 'TimeoutError';
  return { kind: timeout ? 'timeout' : 'unreachable', detail: code ?? err.message };
}

async function registerProxy(
  app: Parameters<Upstream['register']>[0],
  sink: UpstreamSink,
  config: EdgeConfig,
  upstream: URL,
  upstreamAuthorization: string | undefined,
  log: Logger,
): Promise<void> {
  const { timeouts, maxConnections, maxStreamConnections } = config.upstream;
  const poolOf = (connections: number) =>
    new Pool(upstream.origin, {
      connections,
      pipelining: 1,
      headersTimeout: timeouts.headers,
      bodyTimeout: timeouts.idle,
      connect: {
        timeout: timeouts.connect,
        rejectUnauthorized: config.upstream.tls.rejectUnauthorized,
        ...(config.upstream.tls.ca !== undefined ? { ca: readFileSync(config.upstream.tls.ca, 'utf8') } : {}),
      },
    });
  const calls = poolOf(maxConnections);
  const streams = poolOf(maxStreamConnections);
  const callSlots = new CallSlots(maxConnections, timeouts.queue);
  const streamSlots = new StreamSlots(maxStreamConnections);

  /**
   * Runs `send` once a call connection is free. A call that found none within upstream.timeouts.queue gets
   * the 503 of the sink's failure path and is never sent; a client that left stops waiting.
   */
  const withCallSlot = (reply: FastifyReply, send: (release: Release) => void) => {
    const leave = callSlots.acquire(send, () =>
      sink.fail(
        reply,
        'capacity',
        `no call connection came free within ${timeouts.queue} ms (upstream.maxConnections: ${maxConnections}, ${callSlots.waiting} waiting)`,
      ),
    );
    reply.raw.once('close', leave);
  };

  /** A GET stream opens only within its capacity; past it the client gets a 405 at once (getStreamRefusal). */
  const withStreamSlot = (request: FastifyRequest, reply: FastifyReply, send: (release: Release) => void) => {
    const slot = streamSlots.open();
    if (slot !== undefined) {
      send(slot);
      return;
    }
    const { tenant, sessionId } = sink.exchange(request);
    log.warn(
      { tenant, session: sessionId, maxStreamConnections },
      'no room for another GET stream; answered 405',
    );
    sink.respond(reply, getStreamRefusal('total', maxStreamConnections));
  };

  /**
   * A POST goes straight to the calls' pool: its body is read and judged, and it is never resent (resendDelay), so
   * nothing of @fastify/reply-from is needed on the path most exchanges take.
   */
  const post = (request: FastifyRequest, reply: FastifyReply) => {
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const exchange = sink.exchange(request);
    const headers = requestHeadersFor(
      config,
      upstream,
      upstreamAuthorization,
      exchange,
      request,
      request.headers,
    );
    headers['content-length'] = String(body.length);
    headers['content-type'] ??= 'application/json';
    const url = request.raw.url ?? '';
    const query = url.indexOf('?');
    withCallSlot(reply, (release) => {
      exchange.sent();
      // undici rethrows what its callback throws, where nothing catches it: the exchange's guard takes it, and
      // lets go of an answer's body that no one will read.
      let answer: Readable | undefined;
      calls.request(
        {
          path: query === -1 ? upstream.pathname : upstream.pathname + url.slice(query),
          method: 'POST',
          headers: headers as Record<string, string | string[]>,
          body,
        },
        sink.guard(reply, () => answer?.destroy())((err: Error | null, res: Dispatcher.ResponseData) => {
          answer = res?.body;
          if (err !== null) {
            release();
            const failure = failureOf(err);
            sink.fail(reply, failure.kind, failure.detail);
            return;
          }
          // The connection is the pool's again once the body ended or was destroyed.
          res.body.once('close', release);
          try {
            reply.code(res.statusCode);
          } catch {
            // A status Fastify cannot send (reply-from answers it the same way).
            res.body.destroy();
            sink.fail(reply, 'unreachable', `the upstream answered with status ${res.statusCode}`);
            return;
          }
          reply.headers(responseHeadersFor(res.headers));
          sink.deliver(request, reply, {
            statusCode: res.statusCode,
            headers: res.headers,
            stream: res.body,
          });
        }),
      );
    });
  };
  // reply-from takes anything with undici's request(): a GET goes to the streams' pool, a DELETE to the calls'.
  const byMethod = {
    request: ((options: Dispatcher.RequestOptions, callback: never) =>
      (options.method === 'GET' ? streams : calls).request(options, callback)) as Dispatcher['request'],
  };

  // The POST route is the edge's own: the plugin's per-request destination handling is not needed for it.
  app.route({ method: 'POST', url: config.listen.path, handler: post });
  await app.register(httpProxy, {
    upstream: upstream.origin,
    prefix: config.listen.path,
    rewritePrefix: upstream.pathname,
    routes: ['/'],
    disableRequestLogging: true,
    httpMethods: FORWARDED_METHODS.filter((method) => method !== 'POST'),
    // Our own body reader runs instead of the plugin's raw pass-through parser.
    preValidation: async () => {},
    undici: byMethod,
    handler: (request, reply, dest, replyOptions) => {
      // The slot is held until the client's response closes, when the relay ends the upstream request (one
      // still waiting for headers ends when they come, or at upstream.timeouts.headers).
      const send = (release: Release) => {
        reply.raw.once('close', release);
        sink.exchange(request as FastifyRequest).sent();
        reply.from(dest, replyOptions);
      };
      if (request.method === 'GET') withStreamSlot(request as FastifyRequest, reply as FastifyReply, send);
      else withCallSlot(reply as FastifyReply, send);
      return reply;
    },
    replyOptions: {
      retryDelay: ({ err, req, attempt }: RetryDetails) => resendDelay(req.method ?? '', err, attempt),
      rewriteRequestHeaders: (request, headers) =>
        requestHeadersFor(
          config,
          upstream,
          upstreamAuthorization,
          sink.exchange(request as FastifyRequest),
          request as FastifyRequest,
          headers as IncomingHttpHeaders,
        ),
      rewriteHeaders: (headers) => responseHeadersFor(headers as IncomingHttpHeaders),
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
