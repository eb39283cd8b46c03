// The Fastify shell: wires the pure inspectors into @fastify/http-proxy. It reads requests in one place
// (the bounded body reader), transforms responses in one place (relayResponse), and sends every error
// the edge builds through one place (sendEdgeError).
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { PassThrough, pipeline, type Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import httpProxy from '@fastify/http-proxy';
import type { RetryDetails } from '@fastify/reply-from';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import type { EdgeConfig } from '../config/schema.js';
import {
  type EdgeHttpError,
  edgeRefusal,
  type JsonRpcErrorMessage,
  paginationBoundAnswer,
  requestRefusal,
  upstreamFailure,
} from '../core/errors.js';
import { EnvelopeHeadScanner } from '../core/json-scan.js';
import { resolveLimits } from '../core/limits.js';
import type { JsonRpcId, MessageSubject } from '../core/types.js';
import { JsonResponseInspector } from '../inspect/json-response.js';
import { PaginationGuard } from '../inspect/pagination-guard.js';
import { SessionRegistry } from '../inspect/pending-requests.js';
import { bodyViolation, judgeRequestBody } from '../inspect/request-body.js';
import { type InspectorOutput, SseResponseInspector } from '../inspect/sse-response.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import { installCors } from './cors.js';
import {
  type Exchange,
  holdBounds,
  judgeContext,
  responseHoldBytes,
  runtimeOf,
  startExchange,
} from './exchange.js';
import {
  clientResponseHeaders,
  contentCoding,
  isEventStream,
  isJson,
  upstreamRequestHeaders,
} from './headers.js';
import { registerOAuthRoutes } from './well-known.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set in onRequest for the MCP endpoint; other routes (health, 404) are not exchanges. */
    edge: Exchange | undefined;
  }
}

/** The exchange of a request routed to the proxy (onRequest has created it, or refused the request). */
function exchangeOf(request: FastifyRequest): Exchange {
  if (request.edge === undefined) throw new Error('a proxied request without an exchange');
  return request.edge;
}

/** An SSE stream being relayed, so shutdown can end it cleanly. */
interface RelayedStream {
  longLived: boolean;
  finish(detail: string): void;
}

/** A JSON response body that went silent for longer than upstream.timeouts.body. */
class StalledBodyError extends Error {
  constructor(ms: number) {
    super(`the JSON response body stalled for ${ms} ms (upstream.timeouts.body)`);
  }
}

/** An error the edge answers itself, carried through Fastify's error path to sendEdgeError. */
export class EdgeError extends Error {
  constructor(readonly answer: EdgeHttpError) {
    super(answer.body);
  }
}

export interface EdgeServerOptions {
  logger: Logger;
  /** Prometheus metrics; every exchange, message and violation is recorded there. */
  metrics?: EdgeMetrics;
}

export interface EdgeServer {
  app: FastifyInstance;
  listen(): Promise<string>;
  close(): Promise<void>;
  /** Swap the limit policy; exchanges in flight keep the one they started with. */
  replacePolicy(config: EdgeConfig): void;
}

const FORWARDED_METHODS = ['POST', 'GET', 'DELETE'] as const;
/** Errors of a request written to a connection the upstream had already closed. */
const STALE_CONNECTION_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE']);
/** How much of a refused body is read and dropped (never held) so the client sees the 413. */
const DISCARD_MAX_BYTES = 8 * 1024 * 1024;
const DISCARD_GRACE_MS = 2_000;
const ALLOW = FORWARDED_METHODS.join(', ');

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Mcp-Method / Mcp-Name (protocol 2026-07-28) let a per-tool ceiling apply before the body is read. */
function subjectFromHeaders(headers: IncomingHttpHeaders): MessageSubject {
  const method = headerValue(headers, 'mcp-method');
  const name = headerValue(headers, 'mcp-name');
  return { method, tool: method === 'tools/call' ? name : undefined };
}

function hostAllowed(allowed: readonly string[], host: string | undefined): boolean {
  if (allowed.length === 0) return true;
  if (host === undefined) return false;
  const lower = host.toLowerCase();
  const bare = lower.replace(/:\d+$/, '');
  return allowed.some((a) => {
    const entry = a.toLowerCase();
    return entry === lower || entry === bare;
  });
}

function elapsedMs(since: bigint): number {
  return Number(process.hrtime.bigint() - since) / 1e6;
}

export async function createEdgeServer(config: EdgeConfig, options: EdgeServerOptions): Promise<EdgeServer> {
  const log = options.logger;
  const metrics = options.metrics;
  const upstream = new URL(config.upstream.url);
  const upstreamOrigin = upstream.origin;
  const pagination = new PaginationGuard();
  const sessions = new SessionRegistry({
    maxSessions: 10_000,
    maxPendingPerSession: 1_000,
    ttlMs: 60 * 60 * 1000,
  });
  let runtime = runtimeOf(config);
  /** SSE streams being relayed, so shutdown can end them cleanly. */
  const openStreams = new Set<RelayedStream>();
  /** GET exchanges (standalone streams) still waiting for the upstream's answer. */
  const waitingGets = new Set<{ reply: FastifyReply }>();
  const { server: serverConfig } = config;

  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    // mcp-edge writes its own single line per exchange (onResponse hook below).
    logController: new LogController({ disableRequestLogging: true }),
    exposeHeadRoutes: false,
    bodyLimit: Number.MAX_SAFE_INTEGER,
    keepAliveTimeout: serverConfig.timeouts.keepAlive,
    requestTimeout: serverConfig.timeouts.requestBody,
    http: {
      // Node checks the header and request timeouts only this often (30 s by default).
      connectionsCheckingInterval: 1000,
      headersTimeout: serverConfig.timeouts.requestHeaders,
      maxHeaderSize: serverConfig.maxHeaderBytes,
    },
    routerOptions: { ignoreTrailingSlash: false, ignoreDuplicateSlashes: false },
    return503OnClosing: true,
  });

  function sendEdgeError(reply: FastifyReply, answer: EdgeHttpError): FastifyReply {
    const exchange = reply.request.edge;
    if (exchange !== undefined) {
      if (exchange.outcome === 'forwarded') exchange.outcome = `refused:${answer.status}`;
      exchange.responseBytes += Buffer.byteLength(answer.body);
    }
    return reply.code(answer.status).headers(answer.headers).send(answer.body);
  }

  app.decorateRequest('edge', undefined);

  // Client connections and how many responses each is carrying, so shutdown can close the idle ones itself
  // (Node's own idle list misses a keep-alive connection whose earlier response was cut off).
  const busyResponses = new Map<Socket, number>();
  app.server.on('connection', (socket: Socket) => {
    busyResponses.set(socket, 0);
    socket.once('close', () => busyResponses.delete(socket));
  });
  app.addHook('onRequest', async (request, reply) => {
    const socket = request.raw.socket;
    busyResponses.set(socket, (busyResponses.get(socket) ?? 0) + 1);
    reply.raw.once('close', () => {
      // A response the client walked away from leaves its connection half-open; it can never be reused.
      if (!reply.raw.writableFinished) socket.destroy();
      if (busyResponses.has(socket))
        busyResponses.set(socket, Math.max(0, (busyResponses.get(socket) ?? 1) - 1));
    });
  });
  const closeIdleConnections = () => {
    for (const [socket, busy] of busyResponses) if (busy === 0) socket.destroy();
  };

  app.setErrorHandler((error: unknown, request, reply) => {
    if (error instanceof EdgeError) return sendEdgeError(reply, error.answer);
    const statusCode = (error as { statusCode?: unknown }).statusCode;
    const status = typeof statusCode === 'number' && statusCode >= 400 && statusCode < 600 ? statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'edge failure');
    const message = error instanceof Error ? error.message : String(error);
    return sendEdgeError(
      reply,
      edgeRefusal(status, 'invalid_request', `mcp-edge could not handle the request: ${message}`),
    );
  });

  app.setNotFoundHandler((request, reply) =>
    sendEdgeError(
      reply,
      edgeRefusal(
        404,
        'invalid_request',
        `Not found: mcp-edge serves MCP at ${config.listen.path}, not ${request.url}`,
      ),
    ),
  );

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const reachable = await upstreamReachable(upstream, config.upstream.timeouts.connect);
    return reply
      .code(reachable ? 200 : 503)
      .send({ status: reachable ? 'ready' : 'upstream unreachable', upstream: upstreamOrigin });
  });

  // OAuth discovery and pass-through routes (well-known.ts), CORS (cors.ts): before the endpoint's own checks.
  const oauth = await registerOAuthRoutes(app, config);
  const cors = installCors(app, config, oauth);

  // Everything but POST, GET and DELETE on the MCP endpoint is refused in onRequest, before any body is read.
  app.route({
    method: ['HEAD', 'PUT', 'PATCH', 'OPTIONS'],
    url: config.listen.path,
    handler: async () => {},
  });

  app.addHook('onRequest', async (request, reply) => {
    // Health routes answer probes whatever their Host; only the MCP endpoint is an exchange, and only at its
    // exact path: no trailing segments, no encoded or dot-segment variants reach the upstream.
    const path = request.raw.url?.split('?')[0];
    if (path !== config.listen.path) {
      if (request.routeOptions.url?.startsWith(config.listen.path)) {
        throw new EdgeError(
          edgeRefusal(404, 'invalid_request', `Not found: mcp-edge serves MCP at ${config.listen.path} only`),
        );
      }
      return;
    }
    const current = runtime;
    const sessionId = headerValue(request.headers, 'mcp-session-id');
    const begin = (tenant: string) =>
      startExchange(current, tenant, sessionId, metrics !== undefined ? [metrics.observerFor(tenant)] : []);
    // Refusals before the tenant is known are logged and counted under the default tenant.
    const refuse = (answer: EdgeHttpError): never => {
      request.edge = begin(current.defaultTenant);
      throw new EdgeError(answer);
    };
    if (!FORWARDED_METHODS.some((m) => m === request.method)) {
      refuse(
        edgeRefusal(405, 'method_not_allowed', `Method not allowed: the MCP endpoint takes ${ALLOW}`, null, {
          allow: ALLOW,
        }),
      );
    }
    const host = headerValue(request.headers, 'host');
    if (!hostAllowed(current.allowedHosts, host)) {
      refuse(
        edgeRefusal(
          403,
          'forbidden_host',
          `Host "${host ?? ''}" is not allowed by this mcp-edge (server.allowedHosts)`,
        ),
      );
    }
    const origin = headerValue(request.headers, 'origin');
    if (
      origin !== undefined &&
      current.allowedOrigins.length > 0 &&
      !current.allowedOrigins.includes(origin)
    ) {
      refuse(
        edgeRefusal(
          403,
          'forbidden_origin',
          `Origin "${origin}" is not allowed by this mcp-edge (server.allowedOrigins)`,
        ),
      );
    }
    const decision = await current.tenants.resolve(request.headers, request.socket.remoteAddress);
    if (decision.untrustedHeader) metrics?.untrustedTenantHeader();
    if (!decision.ok) {
      refuse(
        edgeRefusal(401, 'unauthenticated', decision.message, null, {
          'www-authenticate': decision.wwwAuthenticate,
        }),
      );
      return;
    }
    request.edge = begin(decision.tenant);
    if (request.method === 'GET') {
      // A GET waits on the upstream for as long as it likes; shutdown must be able to answer it.
      const waiting = { reply };
      waitingGets.add(waiting);
      reply.raw.once('close', () => waitingGets.delete(waiting));
    }
  });

  // The one place a request body is read: never past the ceiling that can apply to it.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, payload, done) => {
    readBoundedBody(request, payload as Readable)
      .then((body) => done(null, body))
      .catch((err: unknown) => done(err instanceof Error ? err : new Error(String(err)), undefined));
  });

  async function readBoundedBody(request: FastifyRequest, payload: Readable): Promise<Buffer> {
    const exchange = request.edge;
    // Not the MCP endpoint (a 404 follows): the body is not read, let alone forwarded.
    if (exchange === undefined) {
      discardRest(payload);
      return Buffer.alloc(0);
    }
    // The transport carries JSON-RPC as application/json; anything else is not the upstream's to parse.
    const contentType = headerValue(request.headers, 'content-type');
    if (!isJson(contentType)) {
      discardRest(payload);
      throw new EdgeError(
        edgeRefusal(
          415,
          'invalid_request',
          `Unsupported Content-Type "${contentType ?? ''}": MCP requests are application/json`,
        ),
      );
    }
    const coding = headerValue(request.headers, 'content-encoding');
    if (coding !== undefined && coding.toLowerCase() !== 'identity') {
      discardRest(payload);
      throw new EdgeError(
        edgeRefusal(
          415,
          'invalid_request',
          `Unsupported Content-Encoding "${coding}": mcp-edge accepts identity request bodies`,
        ),
      );
    }
    const hint = subjectFromHeaders(request.headers);
    const limits = resolveLimits(exchange.runtime.policy, {
      tenant: exchange.tenant,
      method: hint.method,
      tool: hint.tool,
    });
    const ceiling =
      hint.method !== undefined
        ? limits.request.maxBodyBytes.bytes
        : holdBounds(exchange.runtime, exchange.tenant).requestBody;
    const enforce = exchange.mode === 'enforce' && ceiling !== null;
    const declared = Number(headerValue(request.headers, 'content-length') ?? Number.NaN);
    if (enforce && Number.isFinite(declared) && declared > ceiling) {
      discardRest(payload);
      refuseBody(exchange, ceiling, declared, false, hint, undefined);
    }
    const body = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        chunks.push(chunk);
        if (!enforce || size <= ceiling) return;
        // Stop holding here: the id is recovered only if it came early in the body.
        payload.off('data', onData);
        payload.off('end', onEnd);
        discardRest(payload);
        const scanner = new EnvelopeHeadScanner();
        for (const c of chunks) scanner.push(c);
        try {
          refuseBody(exchange, ceiling, size, true, hint, scanner.snapshot().id);
        } catch (err) {
          reject(err);
        }
      };
      const onEnd = () => resolve(Buffer.concat(chunks, size));
      payload.on('data', onData);
      payload.once('end', onEnd);
      payload.once('error', reject);
    });
    exchange.requestBytes = body.length;
    const verdict = judgeRequestBody(judgeContext(exchange, 'request', sessions), body);
    if (!verdict.ok) throw new EdgeError(verdict.refusal);
    const listing = verdict.listings.length === 1 && !verdict.batch ? verdict.listings[0] : undefined;
    if (listing !== undefined && exchange.sessionId !== undefined) {
      const bound = exchange.runtime.maxPagesPerListing;
      const page = pagination.overBound(exchange.sessionId, listing, bound);
      if (page !== undefined) {
        exchange.outcome = 'pagination_bound';
        throw new EdgeError(paginationBoundAnswer(listing.id, listing.method, page, bound));
      }
    }
    return body;
  }

  /**
   * After a refusal, the rest of a body is read and thrown away for a short while, so the client can
   * receive the 413 instead of a connection reset; then the connection is closed.
   */
  function discardRest(payload: Readable): void {
    let discarded = 0;
    const close = () => payload.destroy();
    const timer = setTimeout(close, DISCARD_GRACE_MS);
    timer.unref();
    payload.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > DISCARD_MAX_BYTES) close();
    });
    payload.once('close', () => clearTimeout(timer));
    payload.resume();
  }

  function refuseBody(
    exchange: Exchange,
    ceiling: number,
    observed: number,
    lowerBound: boolean,
    hint: MessageSubject,
    id: JsonRpcId | undefined,
  ): never {
    const v = bodyViolation(exchange, ceiling, observed, lowerBound, hint, id);
    exchange.observer.limitExceeded(v, 'rejected');
    const answer = requestRefusal(v);
    // The rest of the body is not read: the connection cannot be reused.
    answer.headers.connection = 'close';
    throw new EdgeError(answer);
  }

  await app.register(httpProxy, {
    upstream: upstreamOrigin,
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
      // A pooled connection the upstream closed while it sat idle resets the next request written to it; that
      // request never reached the upstream, so it is sent once more on a fresh connection. Nothing else is retried.
      retryDelay: ({ err, attempt }: RetryDetails) =>
        attempt === 0 && STALE_CONNECTION_CODES.has((err as { code?: string } | null)?.code ?? '') ? 1 : null,
      rewriteRequestHeaders: (request, headers) => {
        const forwarded = upstreamRequestHeaders(
          headers as IncomingHttpHeaders,
          headerValue(request.headers, 'host'),
          {
            preserveHost: config.upstream.preserveHost,
            upstreamHost: upstream.host,
            clientAddress: request.socket.remoteAddress ?? '',
            clientProtocol: 'http',
          },
        );
        for (const name of exchangeOf(request as FastifyRequest).runtime.edgeCredentialHeaders)
          delete forwarded[name];
        return forwarded as IncomingHttpHeaders;
      },
      rewriteHeaders: (headers) => {
        const inspect = isEventStream(headers['content-type']) || isJson(headers['content-type']);
        const coding = contentCoding(headers);
        const decoded = inspect && coding !== 'identity' && coding !== 'unsupported';
        return clientResponseHeaders(headers, inspect, decoded) as IncomingHttpHeaders;
      },
      onResponse: (request, reply, res) =>
        relayResponse(request as FastifyRequest, reply as FastifyReply, res as unknown as UpstreamResponse),
      onError: (reply, { error }) => {
        const exchange = (reply.request as FastifyRequest).edge;
        const timeout = (error as { statusCode?: number }).statusCode === 504;
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        const detail = cause?.code ?? cause?.message ?? error.message;
        const id = exchange?.waiting.length === 1 ? (exchange.waiting[0] ?? null) : null;
        if (exchange !== undefined) exchange.outcome = timeout ? 'upstream_timeout' : 'upstream_unreachable';
        sendEdgeError(
          reply as FastifyReply,
          upstreamFailure(timeout ? 'timeout' : 'unreachable', id, detail, upstreamOrigin),
        );
      },
    },
  });

  interface UpstreamResponse {
    statusCode: number;
    headers: Record<string, string | string[] | undefined>;
    stream: Readable;
  }

  function decodedStream(res: UpstreamResponse): Readable {
    switch (contentCoding(res.headers)) {
      case 'gzip':
        return pipeline(res.stream, zlib.createGunzip(), () => {});
      case 'deflate':
        return pipeline(res.stream, zlib.createInflate(), () => {});
      case 'br':
        return pipeline(res.stream, zlib.createBrotliDecompress(), () => {});
      default:
        return res.stream;
    }
  }

  /** The one place responses are transformed. */
  function relayResponse(request: FastifyRequest, reply: FastifyReply, res: UpstreamResponse): void {
    const exchange = exchangeOf(request);
    if (reply.sent || reply.raw.destroyed) {
      // Answered meanwhile (shutdown) or the client is gone: the upstream's answer has nowhere to go.
      res.stream.destroy();
      return;
    }
    exchange.upstreamStatus = res.statusCode;
    if (exchange.upstreamSentAt !== undefined) {
      const seconds = Number(process.hrtime.bigint() - exchange.upstreamSentAt) / 1e9;
      metrics?.upstreamResponded({ tenant: exchange.tenant, status: res.statusCode, seconds });
    }
    const sessionId = headerValue(res.headers as IncomingHttpHeaders, 'mcp-session-id');
    if (exchange.sessionId === undefined && sessionId !== undefined) exchange.sessionId = sessionId;
    if (request.method === 'DELETE' && exchange.sessionId !== undefined && res.statusCode < 300) {
      sessions.forget(exchange.sessionId);
    }
    const contentType = res.headers['content-type'];
    if (
      contentCoding(res.headers) === 'unsupported' ||
      !(isEventStream(contentType) || isJson(contentType))
    ) {
      reply.send(countBytes(exchange, res.stream));
      return;
    }
    const source = decodedStream(res);
    if (isEventStream(contentType)) relaySse(exchange, reply, source);
    else relayJson(exchange, reply, source);
  }

  function countBytes(exchange: Exchange, stream: Readable): Readable {
    stream.on('data', (chunk: Buffer) => {
      exchange.responseBytes += chunk.length;
    });
    return stream;
  }

  function relaySse(exchange: Exchange, reply: FastifyReply, source: Readable): void {
    const ctx = judgeContext(exchange, 'response', sessions);
    const onEvent = metrics !== undefined ? () => metrics.sseEvent(exchange.tenant) : undefined;
    const inspector = new SseResponseInspector(
      ctx,
      responseHoldBytes(exchange, subjectsWaiting(exchange)),
      onEvent,
    );
    const forward = (toClient: (Uint8Array | string)[], push: (chunk: Uint8Array | string) => void) => {
      for (const piece of toClient) {
        exchange.responseBytes += typeof piece === 'string' ? Buffer.byteLength(piece) : piece.length;
        push(piece);
      }
    };
    const emit = (out: InspectorOutput, push: (chunk: Uint8Array | string) => void) => {
      forward(out.toClient, push);
      answerUpstream(exchange, out.toUpstream);
    };
    const transform = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        emit(inspector.push(chunk), (piece) => this.push(piece));
        callback();
      },
      flush(callback) {
        emit(inspector.end(), (piece) => this.push(piece));
        // Ended without answering a request: unless the client can resume, it learns so now.
        emit(inspector.answerLost('the MCP server ended the stream without answering'), (piece) =>
          this.push(piece),
        );
        callback();
      },
    });
    // Stop reading the upstream, let the requests still waiting know, and end the client's stream cleanly.
    const finish = (detail: string) => {
      source.unpipe(transform);
      source.destroy();
      if (transform.writableEnded || transform.destroyed) return;
      emit(inspector.end(), (piece) => transform.push(piece));
      emit(inspector.answerLost(detail), (piece) => transform.push(piece));
      transform.push(null);
    };
    // Not pipeline(): a broken upstream must not cut the client's stream; it is finished cleanly instead.
    source.pipe(transform);
    source.once('error', (err) => {
      exchange.outcome = 'upstream_stream_failed';
      reply.request.log.warn({ tenant: exchange.tenant, err: err.message }, 'upstream SSE stream failed');
      finish(`the stream from the MCP server broke off (${err.message})`);
    });
    transform.once('close', () => source.destroy());
    const stream: RelayedStream = { longLived: reply.request.method === 'GET', finish };
    openStreams.add(stream);
    const streamClosed = metrics?.sseStreamOpened(exchange.tenant);
    transform.once('close', () => {
      openStreams.delete(stream);
      streamClosed?.();
    });
    // Fastify sends a stream's headers with its first byte; an SSE stream may stay silent for long (an idle GET
    // stream), so its headers go out as soon as Fastify has set them and pipes the stream.
    reply.raw.once('pipe', () => {
      if (!reply.raw.headersSent) reply.raw.flushHeaders();
    });
    reply.send(transform);
  }

  function relayJson(exchange: Exchange, reply: FastifyReply, source: Readable): void {
    const ctx = judgeContext(exchange, 'response', sessions);
    const inspector = new JsonResponseInspector(
      ctx,
      responseHoldBytes(exchange, subjectsWaiting(exchange)),
      exchange.waiting,
    );
    let passThrough: PassThrough | undefined;
    // A JSON answer that stalls mid-body would leave the client waiting: past the body timeout it gets a 504.
    const stallMs = config.upstream.timeouts.body;
    let stall: NodeJS.Timeout | undefined;
    const armStall = () => {
      if (stallMs === 0) return;
      if (stall !== undefined) clearTimeout(stall);
      stall = setTimeout(() => source.destroy(new StalledBodyError(stallMs)), stallMs);
      stall.unref();
    };
    const disarmStall = () => {
      if (stall !== undefined) clearTimeout(stall);
    };
    armStall();
    const onData = (chunk: Buffer) => {
      armStall();
      if (passThrough !== undefined) {
        inspector.push(chunk);
        exchange.responseBytes += chunk.length;
        if (!passThrough.write(chunk)) source.pause();
        return;
      }
      if (inspector.push(chunk)) return;
      if (exchange.mode === 'enforce') {
        // Known to be over the ceiling: stop reading rather than drain the rest.
        source.off('data', onData);
        source.destroy();
        const outcome = inspector.overflow();
        exchange.outcome = 'response_replaced';
        sendBody(exchange, reply.code(200), outcome.body);
        return;
      }
      passThrough = new PassThrough();
      passThrough.on('drain', () => source.resume());
      for (const held of inspector.startPassThrough()) {
        exchange.responseBytes += held.length;
        passThrough.write(held);
      }
      reply.send(passThrough);
    };
    source.on('data', onData);
    source.on('end', () => {
      disarmStall();
      if (passThrough !== undefined) {
        inspector.endPassThrough();
        passThrough.end();
        return;
      }
      if (reply.sent) return;
      const outcome = inspector.finish();
      if (outcome.action === 'replace') {
        exchange.outcome = 'response_replaced';
        answerUpstream(exchange, outcome.toUpstream);
        reply.code(200);
      }
      sendBody(exchange, reply, outcome.body);
    });
    source.on('error', (err) => {
      disarmStall();
      if (passThrough !== undefined) {
        passThrough.destroy(err);
        return;
      }
      if (reply.sent) return;
      const id = exchange.waiting.length === 1 ? (exchange.waiting[0] ?? null) : null;
      const stalled = err instanceof StalledBodyError;
      exchange.outcome = stalled ? 'upstream_timeout' : 'upstream_body_failed';
      reply.removeHeader('content-type');
      const detail = stalled ? err.message : `the response body broke off: ${err.message}`;
      sendEdgeError(reply, upstreamFailure(stalled ? 'timeout' : 'failed', id, detail, upstreamOrigin));
    });
  }

  function sendBody(exchange: Exchange, reply: FastifyReply, body: Uint8Array | string): void {
    exchange.responseBytes += typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    reply.send(typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  }

  function subjectsWaiting(exchange: Exchange): MessageSubject[] {
    const subjects: MessageSubject[] = [];
    for (const id of exchange.waiting) {
      const subject = exchange.pending.peek(id);
      if (subject !== undefined) subjects.push(subject);
    }
    return subjects;
  }

  /** Dropped server-to-client requests are answered to the upstream, so it does not wait forever. */
  function answerUpstream(exchange: Exchange, messages: JsonRpcErrorMessage[]): void {
    for (const message of messages) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      if (exchange.sessionId !== undefined) headers['mcp-session-id'] = exchange.sessionId;
      fetch(config.upstream.url, { method: 'POST', headers, body: JSON.stringify(message) })
        .then((res) => res.body?.cancel())
        .catch((err: unknown) =>
          log.warn(
            { err: String(err), tenant: exchange.tenant },
            'could not answer a dropped server request upstream',
          ),
        );
    }
  }

  // One log line per exchange, never a body or a credential.
  app.addHook('onResponse', async (request, reply) => {
    const exchange = request.edge;
    if (exchange === undefined) return;
    metrics?.exchangeFinished({
      tenant: exchange.tenant,
      httpMethod: request.method,
      status: reply.statusCode,
      outcome: exchange.outcome,
    });
    const s = exchange.summary;
    request.log.info(
      {
        tenant: exchange.tenant,
        http: request.method,
        path: request.routeOptions.url ?? request.url.split('?')[0],
        status: reply.statusCode,
        upstreamStatus: exchange.upstreamStatus,
        rpc: [...s.methods],
        tools: s.tools.size > 0 ? [...s.tools] : undefined,
        requestBytes: exchange.requestBytes,
        responseBytes: exchange.responseBytes,
        messages: { request: s.requestMessages, response: s.responseMessages },
        largestResponseMessage: s.largestResponseMessage || undefined,
        violations: s.violations.length > 0 ? s.violations : undefined,
        outcome: exchange.outcome,
        durationMs: Math.round(elapsedMs(exchange.startedAt) * 10) / 10,
      },
      'exchange',
    );
  });

  return {
    app,
    async listen() {
      return app.listen({ host: config.listen.host, port: config.listen.port });
    },
    async close() {
      // Stop accepting. GET streams (long-lived, resumable) end now; POST streams get the grace period, then
      // end cleanly with errors for what still waits, and the connections close once that has been written.
      const closing = app.close();
      // Connections that finish their last exchange during shutdown close at once, not after keepAlive.
      const sweep = setInterval(closeIdleConnections, 200);
      sweep.unref();
      for (const stream of openStreams) if (stream.longLived) stream.finish('mcp-edge is shutting down');
      for (const { reply } of waitingGets) {
        if (!reply.sent && !reply.raw.headersSent) {
          sendEdgeError(reply, edgeRefusal(503, 'shutting_down', 'mcp-edge is shutting down'));
        }
      }
      const timer = setTimeout(() => {
        for (const stream of openStreams) stream.finish('mcp-edge shut down before the MCP server answered');
        setTimeout(() => app.server.closeAllConnections(), 500).unref();
      }, serverConfig.timeouts.shutdownGrace);
      timer.unref();
      await closing;
      clearTimeout(timer);
      clearInterval(sweep);
    },
    replacePolicy(next: EdgeConfig) {
      runtime = runtimeOf(next);
      oauth.replace(next);
      cors.replace(next);
    },
  };
}

/** Readiness: can a TCP connection to the upstream be opened within the connect timeout? */
function upstreamReachable(upstream: URL, timeoutMs: number): Promise<boolean> {
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
