// The Fastify shell: wires the stages together. Admission decides which requests become exchanges, the
// body reader reads them within their ceilings, an Upstream (src/upstream) carries them, the response relay
// transforms answers, every answer of the edge's own goes through respondLocally, and each exchange ends
// with exactly one log line and one count (recordExchangeEnd).
import type { Readable } from 'node:stream';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import type { EdgeConfig } from '../config/schema.js';
import { asError, EXCHANGE_FAILED, guardWith } from '../core/guard.js';
import { headerValue } from '../core/headers.js';
import { type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';
import { runtimeOf } from '../exchange/exchange.js';
import { SessionStore } from '../inspect/session-store.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import { UntrustedHeaderLog } from '../tenancy/untrusted-header-log.js';
import { upstreamOf } from '../upstream/select.js';
import type { Upstream } from '../upstream/upstream.js';
import { type Admission, admit } from './admission.js';
import { readBoundedBody } from './body-reader.js';
import { trackConnections } from './connections.js';
import { installCors } from './cors.js';
import { Drain, type DrainReport } from './drain.js';
import type { EdgeContext } from './edge-context.js';
import { EdgeError } from './edge-error.js';
import { recordExchangeEnd } from './exchange-end.js';
import { filterChainOf } from './filters/chosen.js';
import type { ExchangeFilter } from './filters/exchange-filter.js';
import { getAnsweredByEdge } from './get-streams.js';
import { HeldBytes } from './held-bytes.js';
import { replyWriter, respondLocally } from './local-reply.js';
import { filterRequest } from './request-filters.js';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id.js';
import { Shutdown } from './shutdown.js';
import { SilenceWatch } from './silence-watch.js';
import { registerMcpRoutes } from './upstream-call.js';
import { registerOAuthRoutes } from './well-known.js';

export { EdgeError } from './edge-error.js';

export interface EdgeServerOptions {
  logger: Logger;
  /** Prometheus metrics; every exchange, message and violation is recorded there. */
  metrics?: EdgeMetrics;
  /** Where exchanges go; by default the HTTP upstream of `upstream.url`. */
  upstream?: Upstream;
  /** Filters of the embedding program's own, run after the edge's (filters/chosen.ts). */
  filters?: readonly ExchangeFilter[];
}

export interface EdgeServer {
  app: FastifyInstance;
  listen(): Promise<string>;
  /** Stops accepting, drains what is in flight (server.timeouts.shutdownGrace); says what was drained. */
  close(): Promise<DrainReport>;
  /** Swap the limit policy; exchanges in flight keep the one they started with. */
  replacePolicy(config: EdgeConfig): void;
  /** The bytes held in flight now (mcp_edge_held_bytes). */
  readonly held: HeldBytes;
  /** What the edge keeps per session (requests waiting, answers kept for replays, GET streams), bounded. */
  readonly sessions: SessionStore;
}

export async function createEdgeServer(config: EdgeConfig, options: EdgeServerOptions): Promise<EdgeServer> {
  const log = options.logger;
  const upstream: Upstream = options.upstream ?? upstreamOf(config, log);
  const ctx: EdgeContext = {
    config,
    log,
    filters: filterChainOf({ config, metrics: options.metrics, log }, options.filters),
    sessions: new SessionStore(),
    upstream,
    answerSilence: new SilenceWatch(config.upstream.timeouts.answerStream),
    bodySilence: new SilenceWatch(config.upstream.timeouts.body),
    untrustedHeaders: new UntrustedHeaderLog(log),
    held: new HeldBytes(),
  };
  let runtime = runtimeOf(config);
  const drain = new Drain();
  const { server: serverConfig } = config;

  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    // mcp-edge writes its own single line per exchange (recordExchangeEnd).
    logController: new LogController({ disableRequestLogging: true }),
    // One place decides the request id (request-id.ts); Fastify's own header handling would take any value.
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers),
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
  // Node answers `Expect: 100-continue` with a 100 before any handler runs unless the server listens for
  // it; the body reader sends the 100 itself once it knows it will read the body (a 413 comes instead).
  app.server.on('checkContinue', (req, res) => app.server.emit('request', req, res));

  app.decorateRequest('exchange', undefined);
  app.decorateRequest('sendContinue', undefined);
  const connections = trackConnections(app.server);
  // Callback hooks where nothing waits: an async hook costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    connections.track(request, reply);
    // On the raw response, so every answer carries it: Fastify's, a relay's (hijacked), a stream's.
    reply.raw.setHeader(REQUEST_ID_HEADER, request.id);
    done();
  });

  /** The one way the shell answers a request itself (local-reply.ts). */
  const respond = (reply: FastifyReply, answer: EdgeHttpError): void =>
    respondLocally(reply.request.exchange, replyWriter(reply), answer);
  const shutdown = new Shutdown(respond, log);

  app.setErrorHandler((error: unknown, request, reply) => {
    if (error instanceof EdgeError) return respond(reply, error.answer);
    const statusCode = (error as { statusCode?: unknown }).statusCode;
    const status = typeof statusCode === 'number' && statusCode >= 400 && statusCode < 600 ? statusCode : 500;
    // A client's mistake is its answer and an info line; only the edge's own failure is an error, and what
    // it was stays in the log (the same line and answer as ClientResponse.fail).
    if (status >= 500) {
      request.log.error({ err: error }, EXCHANGE_FAILED);
      return respond(reply, edgeAnswer('edge_failure', {}));
    }
    request.log.info({ err: error instanceof Error ? error.message : String(error) }, 'request refused');
    const message = error instanceof Error ? error.message : String(error);
    return respond(reply, edgeAnswer('unhandled_request', { status, detail: message }));
  });

  app.setNotFoundHandler((request, reply) =>
    respond(reply, edgeAnswer('not_found', { listenPath: config.listen.path, path: request.url })),
  );

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const reachable = await upstream.ready();
    // The upstream's address is for operators (the log, the config), not for anyone who can reach /readyz.
    return reply.code(reachable ? 200 : 503).send({ status: reachable ? 'ready' : 'upstream unreachable' });
  });

  // OAuth discovery and pass-through routes (well-known.ts), CORS (cors.ts): before the endpoint's own checks.
  // The pass-through paths withhold the edge's own credentials by the same rule as the MCP endpoint.
  const oauth = await registerOAuthRoutes(app, config, { upstream, respond }, () => runtime.tenants);
  const cors = installCors(app, config, { upstream, respond }, oauth);

  // Everything but POST, GET and DELETE on the MCP endpoint is refused in onRequest, before any body is read.
  app.route({
    method: ['HEAD', 'PUT', 'PATCH', 'OPTIONS'],
    url: config.listen.path,
    handler: async () => {},
  });

  /** An admitted request carries its exchange from here; a refused one is answered now. */
  const admitted = (
    request: FastifyRequest,
    reply: FastifyReply,
    admission: Admission,
  ): EdgeError | undefined => {
    request.exchange = admission.exchange;
    // This exchange's bytes are what its connection carries from here on.
    admission.exchange.wireBytesBefore = request.raw.socket.bytesWritten;
    if (!admission.ok) return new EdgeError(admission.refusal);
    if (headerValue(request.headers, 'expect')?.toLowerCase() === '100-continue') {
      request.sendContinue = () => {
        if (!reply.raw.headersSent) reply.raw.writeContinue();
      };
    }
    if (request.method === 'GET') {
      const answered = getAnsweredByEdge(ctx, admission.exchange, request.headers, request.log);
      if (answered !== undefined) return new EdgeError(answered);
    }
    return undefined;
  };

  // A callback hook: admission is synchronous unless a tenant resolver must wait (a JWT's keys).
  app.addHook('onRequest', (request, reply, done) => {
    // Health routes answer probes whatever their Host; only the MCP endpoint is an exchange, and only at its
    // exact path: no trailing segments, no encoded or dot-segment variants reach the upstream.
    const url = request.raw.url ?? '';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    if (path !== config.listen.path) {
      if (request.routeOptions.url?.startsWith(config.listen.path)) {
        done(new EdgeError(edgeAnswer('not_found', { listenPath: config.listen.path })));
        return;
      }
      done();
      return;
    }
    // Every exchange, admitted or refused, ends with its one log line and count when its response closes.
    const ticket = drain.opened();
    reply.raw.once(
      'close',
      afterClose(request)(() => {
        const exchange = request.exchange;
        // A client that left before admission decided (a JWT's keys still loading) had no exchange yet.
        drain.closed(
          ticket,
          exchange !== undefined ? recordExchangeEnd(request, reply, exchange, ctx.filters) : 'client_closed',
        );
      }),
    );
    const admission = admit(ctx, runtime, {
      method: request.method,
      headers: request.headers,
      peer: request.socket.remoteAddress,
    });
    if (admission instanceof Promise) {
      // What admitted() throws rejects too: Fastify's error handler answers it.
      admission
        .then((settled) => admitted(request, reply, settled))
        .then(
          (refusal) => done(refusal),
          (err: unknown) => done(asError(err)),
        );
    } else done(admitted(request, reply, admission));
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, payload, done) => {
    const body = {
      method: request.method,
      exchange: request.exchange,
      headers: request.headers,
      sendContinue: request.sendContinue,
    };
    readBoundedBody(ctx, body, payload as Readable, (refusal, read) => done(refusal ?? null, read));
  });

  // The filters' request hook: after the body is read and judged (none for GET, DELETE), before the upstream.
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.exchange === undefined) done();
    else filterRequest(ctx, request.exchange, request.headers, (refusal) => done(refusal));
  });

  /** Guards a listener of a response that has closed: nothing is left to answer; what it throws is logged. */
  const afterClose = (request: FastifyRequest) =>
    guardWith((err) =>
      request.log.error({ err }, 'mcp-edge failed after an exchange ended; the edge serves on'),
    );

  // POST, GET and DELETE on the MCP endpoint, for every kind of upstream (upstream-call.ts).
  registerMcpRoutes(app, ctx, {
    respond,
    decorate: (request, reply) => {
      oauth.decorateResponse(request, reply);
      cors.decorateResponse(request, reply);
    },
    sending: (reply) => shutdown.sending(reply),
  });
  upstream.start?.({ undelivered: (tenant, reason) => ctx.filters.undelivered(tenant, reason) });
  app.addHook('onClose', async () => ctx.filters.close());
  const closeUpstream = upstream.close;
  if (closeUpstream !== undefined) app.addHook('onClose', async () => closeUpstream.call(upstream));

  return {
    app,
    held: ctx.held,
    sessions: ctx.sessions,
    async listen() {
      return app.listen({ host: config.listen.host, port: config.listen.port });
    },
    async close() {
      // Stop accepting. GET exchanges (long-lived) end now; the others get the grace period, then end with the
      // shutdown error for every request still waiting (shutdown.ts), and the connections close once that
      // has been written.
      drain.begin(shutdown.streams());
      const closing = app.close();
      // Connections that finish their last exchange during shutdown close at once, not after keepAlive.
      const sweep = setInterval(() => connections.closeIdle(), 200);
      sweep.unref();
      shutdown.begin();
      const timer = setTimeout(() => {
        shutdown.graceOver();
        setTimeout(() => app.server.closeAllConnections(), 500).unref();
      }, serverConfig.timeouts.shutdownGrace);
      timer.unref();
      await closing;
      clearTimeout(timer);
      clearInterval(sweep);
      return drain.report();
    },
    replacePolicy(next: EdgeConfig) {
      runtime = runtimeOf(next);
      ctx.filters.reload(next);
      oauth.replace(next);
      cors.replace(next);
    },
  };
}
