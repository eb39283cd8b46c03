// The stdio upstream, the second kind of Upstream: mcp-edge spawns the MCP server itself and is the
// Streamable HTTP endpoint for it. Each MCP session (a client's initialize) gets its own child; requests
// without a session (protocol 2026-07-28, which has none) go to one child per tenant, where requests whose
// ids another client has in flight wait their turn (bounded by upstream.stdio.idWait), so no id is ever
// rewritten, and where no client may answer or cancel what it cannot be told apart from another's. Answers
// are the child's lines (stdio-child.ts), handed to the shell's relays like any upstream's.
import { randomUUID } from 'node:crypto';
import { type PassThrough, Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { EdgeConfig, StdioUpstreamConfig } from '../config/schema.js';
import { edgeRefusal, idInUseRefusal, processLimitRefusal } from '../core/errors.js';
import { acceptsEventStream, clientResponseHeaders, headerValue } from '../core/headers.js';
import { splitTopLevel } from '../core/json-scan.js';
import { bodyAsLines } from '../core/stdio-lines.js';
import type { JsonRpcId } from '../core/types.js';
import type { BodyRouting } from '../inspect/body-routing.js';
import { idKey } from '../inspect/pending-requests.js';
import type { StdioCall } from './stdio-call.js';
import { StdioChild } from './stdio-child.js';
import { StdioChildren } from './stdio-children.js';
import { resolveProgram, stdioProgramName } from './stdio-command.js';
import { groupGuard } from './stdio-group-guard.js';
import type { Upstream, UpstreamExchange, UpstreamSink } from './upstream.js';

/** The line a child may hold when the tenant has no response ceiling: enough to route it, then it streams. */
const UNBOUNDED_HOLD_BYTES = 16 * 1024 * 1024;

export interface StdioUpstream extends Upstream {
  /** The PIDs of the children alive now (tests check the process table by them). */
  pids(): number[];
  /** Ends every child (SIGTERM, then SIGKILL after upstream.stdio.killGrace). */
  close(): Promise<void>;
}

/** The child's environment: only what the operator listed, plus PATH and HOME (the edge's own secrets stay). */
export function childEnvironment(
  spec: StdioUpstreamConfig,
  parent: NodeJS.ProcessEnv,
): Record<string, string> {
  const env: Record<string, string> = {};
  if (parent.PATH !== undefined) env.PATH = parent.PATH;
  if (parent.HOME !== undefined) env.HOME = parent.HOME;
  return { ...env, ...spec.env };
}

/**
 * upstream.stdio.maxProcessesPerTenant, or its default: half of maxProcesses, rounded up, so that one tenant
 * (the anonymous one, say) cannot take every process; all of them when tenancy.resolve is empty, as every
 * request is then one tenant's.
 */
export function processesPerTenant(config: EdgeConfig): number {
  const stdio = config.upstream.stdio;
  if (stdio === undefined) return 0;
  if (stdio.maxProcessesPerTenant !== undefined) return stdio.maxProcessesPerTenant;
  return config.tenancy.resolve.length === 0 ? stdio.maxProcesses : Math.ceil(stdio.maxProcesses / 2);
}

export function stdioUpstream(config: EdgeConfig, log: Logger): StdioUpstream {
  if (config.upstream.stdio === undefined) throw new Error('the stdio upstream needs upstream.stdio');
  const spec: StdioUpstreamConfig = config.upstream.stdio;
  const program = stdioProgramName(spec.command[0] ?? '');
  const env = childEnvironment(spec, process.env);
  const cwd = spec.cwd ?? process.cwd();
  const children = new StdioChildren(spec.maxProcesses, processesPerTenant(config));
  const { sessions } = children;
  let startFailure: string | undefined;
  let closing = false;
  let sweep: NodeJS.Timeout | undefined;

  function spawnChild(
    exchange: UpstreamExchange,
    sessionId: string | undefined,
    sink: UpstreamSink,
  ): StdioChild {
    const hold = exchange.responseHoldBytes ?? UNBOUNDED_HOLD_BYTES;
    const child = new StdioChild({
      spec,
      env,
      log,
      sessionId,
      holdBytes: hold,
      answerHeaders: sessionId !== undefined ? { 'mcp-session-id': sessionId } : {},
      idWaitMs: spec.idWait,
      streamWait: { ms: spec.streamWait, bytes: spec.streamWaitBytes },
      onUndelivered: (reason) => sink.undelivered(exchange.tenant, reason),
      onSpawn: () => {
        startFailure = undefined;
      },
      onExit: (gone) => {
        children.remove(gone, exchange.tenant, sessionId);
        if (gone.failedToStart !== undefined) startFailure = gone.failedToStart;
        if (!closing && gone.failedToStart === undefined) {
          log.info({ session: sessionId, tenant: exchange.tenant, program }, 'stdio MCP server ended');
        }
      },
    });
    children.add(child, exchange.tenant, sessionId);
    return child;
  }

  function endIdle(): void {
    const now = Date.now();
    const unusedAfter = spec.idleTimeoutBeforeFirstRequest;
    if (unusedAfter > 0) {
      for (const [sessionId, session] of sessions) {
        const { child } = session;
        if (session.used || !child.alive || child.inFlight > 0 || now - session.idleSince < unusedAfter)
          continue;
        log.info(
          { session: sessionId, tenant: session.tenant, program, idleTimeoutBeforeFirstRequest: unusedAfter },
          'stdio: a session that sent no request after initialize is ended',
        );
        void child.stop(
          `no request since initialize for ${unusedAfter} ms (upstream.stdio.idleTimeoutBeforeFirstRequest)`,
        );
      }
    }
    if (spec.idleTimeout <= 0) return;
    for (const child of children.all) {
      if (child.alive && child.inFlight === 0 && now - child.lastActivity >= spec.idleTimeout) {
        void child.stop(`no request for ${spec.idleTimeout} ms (upstream.stdio.idleTimeout)`);
      }
    }
  }

  const upstream: StdioUpstream = {
    label: `stdio:${program}`,
    publicName: `stdio:${program}`,
    async register(app, sink) {
      app.route({
        method: ['POST', 'GET', 'DELETE'],
        url: config.listen.path,
        handler: async (request, reply) => {
          handle(request, reply, sink);
          return reply;
        },
      });
      app.addHook('onClose', async () => upstream.close());
      const timeouts = [spec.idleTimeout, spec.idleTimeoutBeforeFirstRequest].filter((ms) => ms > 0);
      if (timeouts.length > 0) {
        sweep = setInterval(endIdle, Math.min(5000, Math.max(50, Math.min(...timeouts) / 4)));
        sweep.unref();
      }
    },
    send(sessionId, message) {
      const session = sessionId !== undefined ? sessions.get(sessionId) : undefined;
      if (session === undefined) {
        log.warn({ session: sessionId }, 'no stdio MCP server to send a message of the edge to');
        return;
      }
      session.child.write([Buffer.from(JSON.stringify(message))]);
    },
    async ready() {
      if (startFailure !== undefined) return false;
      return resolveProgram(spec.command[0] ?? '', env.PATH, cwd) !== undefined;
    },
    pids: () => [...children.all].flatMap((child) => (child.pid !== undefined ? [child.pid] : [])),
    async close() {
      closing = true;
      if (sweep !== undefined) clearInterval(sweep);
      await Promise.all([...children.all].map((child) => child.stop('mcp-edge is shutting down')));
      // Groups whose leader exited by itself are still being ended: mcp-edge does not exit before they are.
      await groupGuard.settled();
    },
  };

  function deliver(
    sink: UpstreamSink,
    request: FastifyRequest,
    reply: FastifyReply,
    statusCode: number,
    headers: Record<string, string>,
    stream: Readable,
  ): void {
    sink.exchange(request).sent();
    const clientHeaders = clientResponseHeaders(headers, true, false) as Record<string, string>;
    reply.code(statusCode).headers(clientHeaders);
    sink.deliver(request, reply, { statusCode, headers: clientHeaders, stream });
  }

  function notFound(sink: UpstreamSink, reply: FastifyReply, sessionId: string): void {
    sink.respond(
      reply,
      edgeRefusal(
        404,
        'invalid_request',
        `Session not found: ${sessionId} is not a session of this MCP server (it ended, or never was); initialize again`,
      ),
    );
  }

  /** The child a request goes to, or undefined when the edge has answered it already. */
  function childFor(
    reply: FastifyReply,
    sink: UpstreamSink,
    exchange: UpstreamExchange,
    sessionId: string | undefined,
    initialize: boolean,
  ): StdioChild | undefined {
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      // A session belongs to the tenant that opened it: another tenant never reaches its child.
      if (session === undefined || session.tenant !== exchange.tenant || !session.child.alive) {
        notFound(sink, reply, sessionId);
        return undefined;
      }
      return session.child;
    }
    const pooled = initialize ? undefined : children.pool(exchange.tenant);
    if (pooled?.alive) return pooled;
    if (closing) {
      sink.respond(reply, edgeRefusal(503, 'shutting_down', 'mcp-edge is shutting down'));
      return undefined;
    }
    const bound = children.boundFor(exchange.tenant);
    if (bound !== undefined) {
      const ids = exchange.requestIds;
      const id = ids.length === 1 ? (ids[0] ?? null) : null;
      log.warn(
        { tenant: exchange.tenant, program, bound: `upstream.stdio.${bound.key}`, limit: bound.limit },
        'stdio: no room for another MCP server process',
      );
      sink.respond(reply, processLimitRefusal(id, bound));
      return undefined;
    }
    return spawnChild(exchange, initialize ? randomUUID() : undefined, sink);
  }

  function handle(request: FastifyRequest, reply: FastifyReply, sink: UpstreamSink): void {
    const exchange = sink.exchange(request);
    const sessionId = headerValue(request.headers, 'mcp-session-id');
    if (request.method === 'GET' || request.method === 'DELETE') {
      if (sessionId === undefined) {
        sink.respond(
          reply,
          edgeRefusal(
            405,
            'method_not_allowed',
            `${request.method} needs an Mcp-Session-Id: without a session there is no stream to open or end`,
            null,
            { allow: 'POST' },
          ),
        );
        return;
      }
      const child = childFor(reply, sink, exchange, sessionId, false);
      if (child === undefined) return;
      if (request.method === 'DELETE') {
        children.forgetSession(sessionId);
        void child.stop('the client ended its session (DELETE)');
        deliver(sink, request, reply, 200, { 'mcp-session-id': sessionId }, Readable.from([]));
        return;
      }
      const opened = child.openGetStream((stream) =>
        deliver(
          sink,
          request,
          reply,
          200,
          { 'content-type': 'text/event-stream', 'mcp-session-id': sessionId },
          stream,
        ),
      );
      if (!opened) {
        sink.respond(
          reply,
          edgeRefusal(409, 'invalid_request', 'Conflict: this session has a GET stream open already'),
        );
      }
      return;
    }
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const split = splitTopLevel(body);
    if (!split.ok) {
      sink.respond(
        reply,
        edgeRefusal(400, 'invalid_request', `The request body is not JSON-RPC: ${split.error}`),
      );
      return;
    }
    const ids = exchange.requestIds;
    const initialize = exchange.initializes;
    const routing = exchange.routing;
    if (sessionId === undefined && !initialize && (routing.answersServer || routing.cancelled.length > 0)) {
      refuseUnattributable(sink, reply, exchange, routing);
      return;
    }
    const child = childFor(reply, sink, exchange, sessionId, initialize);
    if (child === undefined) return;
    if (sessionId !== undefined && ids.length > 0) {
      const session = sessions.get(sessionId);
      if (session !== undefined) session.used = true;
    }
    if (!child.acceptsInput) {
      sink.fail(reply, 'timeout', `the MCP server (${program}) is not reading its input`);
      return;
    }
    child.setHoldBytes(exchange.responseHoldBytes ?? UNBOUNDED_HOLD_BYTES);
    const lines = bodyAsLines(body, split.spans);
    exchange.sent();
    const answerHeaders: Record<string, string> =
      sessionId !== undefined ? { 'mcp-session-id': sessionId } : {};
    if (ids.length === 0) {
      child.write(lines);
      child.cancelled(routing.cancelled);
      deliver(sink, request, reply, 202, answerHeaders, Readable.from([]));
      return;
    }
    const call = newCall(sink, request, reply, exchange, ids, routing, () => children.answered(child));
    const timeoutMs = config.upstream.timeouts.headers;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            if (call.answer !== undefined) return;
            child.abandon(call);
            call.fail(
              'timeout',
              `the MCP server (${program}) did not answer within ${timeoutMs} ms (upstream.timeouts.headers)`,
            );
          }, timeoutMs)
        : undefined;
    reply.raw.once('close', () => {
      clearTimeout(timer);
      if (call.waiting.size > 0) child.abandon(call);
    });
    child.start(call, lines);
  }

  function newCall(
    sink: UpstreamSink,
    request: FastifyRequest,
    reply: FastifyReply,
    exchange: UpstreamExchange,
    ids: readonly JsonRpcId[],
    routing: BodyRouting,
    onAnswer: () => void,
  ): StdioCall {
    const waiting = new Map(ids.map((id) => [idKey(id), id] as const));
    return {
      waiting,
      progressTokens: routing.progressTokens,
      mayAnswerJson:
        ids.length === 1 &&
        (spec.jsonResponse || !acceptsEventStream(headerValue(request.headers, 'accept'))),
      enforce: exchange.enforced,
      open: (statusCode, headers, stream: PassThrough) => {
        onAnswer();
        deliver(sink, request, reply, statusCode, headers, stream);
      },
      fail: (kind, detail) => {
        if (!reply.sent && !reply.raw.destroyed) sink.fail(reply, kind, detail);
      },
      refuse: (detail) => {
        if (!reply.sent && !reply.raw.destroyed)
          sink.respond(reply, idInUseRefusal(ids.length === 1 ? (ids[0] ?? null) : null, detail));
      },
    };
  }

  /**
   * A client without a session answers a server request or cancels a request: on the tenant's shared child
   * the edge cannot tell whose request that is (any client of the tenant may use any id), so it refuses.
   * Protocol 2026-07-28 has no server-to-client requests, and cancels a request by closing its stream.
   */
  function refuseUnattributable(
    sink: UpstreamSink,
    reply: FastifyReply,
    exchange: UpstreamExchange,
    routing: BodyRouting,
  ): void {
    const what = routing.answersServer
      ? 'answers a request of the MCP server'
      : 'cancels a request with notifications/cancelled';
    log.warn({ tenant: exchange.tenant, program }, `stdio: a request without a session ${what}; refused`);
    sink.respond(
      reply,
      edgeRefusal(
        400,
        'invalid_request',
        `This request ${what}, but it carries no Mcp-Session-Id: clients without a session share one MCP server process per tenant, and mcp-edge cannot tell whose request that is, so none may answer or cancel one (close the request's stream to cancel it; initialize a session to answer server requests)`,
      ),
    );
  }

  return upstream;
}
