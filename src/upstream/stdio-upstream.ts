// The stdio upstream, the second kind of Upstream: mcp-edge spawns the MCP server itself and is the
// Streamable HTTP endpoint for it. Each MCP session (a client's initialize) gets its own child; requests
// without a session (protocol 2026-07-28, which has none) go to one child per tenant, where requests whose
// ids another client has in flight wait their turn (bounded by upstream.stdio.idWait), so no id is ever
// rewritten, and where no client may answer or cancel what it cannot be told apart from another's. Answers
// are the child's lines (stdio-child.ts), handed to the shell's relays like any upstream's.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { EdgeConfig, StdioUpstreamConfig } from '../config/schema.js';
import { boundedOptional, idKey } from '../core/client-names.js';
import { splitTopLevel } from '../core/json-scan.js';
import { withMetaEntries } from '../core/meta-entries.js';
import { bodyAsLines } from '../core/stdio-lines.js';
import type { JsonRpcId } from '../core/types.js';
import type { BodyRouting } from '../inspect/body-routing.js';
import type { StdioCall } from './stdio-call.js';
import { StdioChild } from './stdio-child.js';
import { StdioChildren } from './stdio-children.js';
import { resolveProgram, stdioProgramName } from './stdio-command.js';
import { groupGuard } from './stdio-group-guard.js';
import { giveWay, startQuietSweep } from './stdio-idle.js';
import type { Upstream, UpstreamCall, UpstreamEvents, UpstreamExchange, UpstreamKind } from './upstream.js';

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

/** The kind: upstream.stdio; described by its program, never its arguments or environment values. */
export const stdioKind: UpstreamKind = {
  configured: (config) => config.upstream.stdio !== undefined,
  create: (config, log) => stdioUpstream(config, log),
  describe(config) {
    const stdio = config.upstream.stdio;
    if (stdio === undefined) return '';
    const envNames = Object.keys(stdio.env);
    return `stdio server "${stdioProgramName(stdio.command[0] ?? '')}" (${stdio.command.length - 1} argument(s); env: ${envNames.length > 0 ? envNames.join(', ') : 'PATH and HOME only'}; one process per session, at most ${stdio.maxProcesses})`;
  },
};

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
  let stopSweep = () => {};
  let events: UpstreamEvents | undefined;

  function spawnChild(exchange: UpstreamExchange, sessionId: string | undefined): StdioChild {
    const hold = exchange.responseHoldBytes ?? UNBOUNDED_HOLD_BYTES;
    const child = new StdioChild({
      spec,
      env,
      // Every line of the child (started, stderr, exited) names the tenant it serves.
      log: log.child({ tenant: exchange.tenant }),
      sessionId,
      holdBytes: hold,
      idWaitMs: spec.idWait,
      streamWait: { ms: spec.streamWait, bytes: spec.streamWaitBytes },
      onUndelivered: (reason) => events?.undelivered(exchange.tenant, reason),
      onSpawn: () => {
        startFailure = undefined;
      },
      onExit: (gone) => {
        children.remove(gone);
        if (gone.failedToStart !== undefined) startFailure = gone.failedToStart;
      },
    });
    children.add(child, exchange.tenant, sessionId);
    return child;
  }

  /** Spawns a new child in a place that is free, or that an idle child gives up (stdio-idle.ts: giveWay). */
  function withRoom(call: UpstreamCall, spawn: () => void): void {
    const { tenant } = call.exchange;
    const room = children.room(tenant);
    if (room.kind === 'free') {
      spawn();
      return;
    }
    // The session rules found room for this exchange a moment ago, in the same turn: none is a bug.
    if (room.kind === 'full')
      throw new Error(`a new stdio child of ${tenant} found no room (${room.bound.setting})`);
    const guard = call.guard();
    void giveWay(children, tenant, room, log, program).then(
      guard(() => {
        if (closing) call.fail('unreachable', 'mcp-edge is shutting down');
        else if (call.isOpen()) spawn();
      }),
      // Ending a child does not fail; should it, this exchange ends with the error (logged), not the process.
      guard((err: unknown) => {
        throw err;
      }),
    );
  }

  /** The session's child (the shell's session rules have checked it is live and the tenant's). */
  const sessionChild = (sessionId: string, tenant: string): StdioChild | undefined => {
    const session = sessions.get(sessionId);
    return session !== undefined && session.tenant === tenant && session.child.alive
      ? session.child
      : undefined;
  };

  const upstream: StdioUpstream = {
    label: `stdio:${program}`,
    publicName: `stdio:${program}`,
    sessions: {
      has: (sessionId, tenant) => sessionChild(sessionId, tenant) !== undefined,
      streaming: (sessionId) => sessions.get(sessionId)?.child.streaming ?? false,
      sharedWithoutSession: true,
      roomFor(exchange) {
        if (!exchange.initializes && children.pool(exchange.tenant)?.alive) return undefined;
        if (closing) return 'closing';
        return children.boundFor(exchange.tenant);
      },
    },
    start(reported) {
      events = reported;
      stopSweep = startQuietSweep(children, spec, log, program);
    },
    handle(call) {
      const { exchange, request } = call;
      const sessionId = exchange.sessionId;
      let lines: Uint8Array[] = [];
      if (request.method === 'POST') {
        // Before any child is spawned for it: a body that is not JSON-RPC lines is refused.
        const split = splitTopLevel(request.body);
        if (!split.ok) {
          call.refuse({ kind: 'malformed', detail: `The request body is not JSON-RPC: ${split.error}` });
          return;
        }
        lines = bodyAsLines(request.body, split.spans);
        const meta = exchange.meta;
        if (meta !== undefined) lines = lines.map((line) => withMetaEntries(line, meta) ?? line);
      }
      if (sessionId === undefined) {
        // Only a POST comes without a session (the shell's session rules answered the others).
        const pooled = () => {
          const pool = exchange.initializes ? undefined : children.pool(exchange.tenant);
          return pool?.alive ? pool : undefined;
        };
        const live = pooled();
        if (live !== undefined) post(call, live, lines);
        // A tenant's child started by another call while this one waited for room is shared, not doubled.
        else
          withRoom(call, () =>
            post(
              call,
              pooled() ?? spawnChild(exchange, exchange.initializes ? randomUUID() : undefined),
              lines,
            ),
          );
        return;
      }
      const child = sessionChild(sessionId, exchange.tenant);
      // The shell's session rules answered an unknown session: none reaches here.
      if (child === undefined) throw new Error(`stdio session ${sessionId} reached the upstream unknown`);
      const answerHeaders = { 'mcp-session-id': sessionId };
      if (request.method === 'POST') post(call, child, lines);
      else if (request.method === 'DELETE') {
        children.forgetSession(sessionId);
        void child.stop('the client ended its session (DELETE)');
        deliverNothing(call, 200, answerHeaders);
      } else {
        opened(call, child);
        child.openGetStream((events) => deliverMessages(call, answerHeaders, events, false));
      }
    },
    send(sessionId, message) {
      const session = sessionId !== undefined ? sessions.get(sessionId) : undefined;
      if (session === undefined) {
        log.warn(
          { session: boundedOptional(sessionId) },
          'no stdio MCP server to send a message of the edge to',
        );
        return;
      }
      session.child.write([Buffer.from(JSON.stringify(message))]);
    },
    async ready() {
      if (startFailure !== undefined) return false;
      return resolveProgram(spec.command[0] ?? '', env.PATH, cwd) !== undefined;
    },
    pids: () => [...children.all].flatMap((child) => (child.pid !== undefined ? [child.pid] : [])),
    processes: { alive: () => upstream.pids().length, limit: spec.maxProcesses },
    async close() {
      closing = true;
      stopSweep();
      await Promise.all([...children.all].map((child) => child.stop('mcp-edge is shutting down')));
      // Groups whose leader exited by itself are still being ended: mcp-edge does not exit before they are.
      await groupGuard.settled();
    },
  };

  /** The exchange keeps its child from being idle until its client's response has closed. */
  function opened(call: UpstreamCall, child: StdioChild): void {
    if (!call.isOpen()) return; // its client left already: its close may have passed
    children.opened(child);
    call.onClose(() => children.closed(child));
  }

  /** An answer without a body (a notification taken, a session ended). */
  function deliverNothing(call: UpstreamCall, statusCode: number, headers: Record<string, string>): void {
    call.exchange.sent();
    call.deliver({ statusCode, headers, body: { kind: 'bytes', stream: Readable.from([]) } });
  }

  /** An answer of the child's messages, which the shell frames for the client. */
  function deliverMessages(
    call: UpstreamCall,
    headers: Record<string, string>,
    events: Readable,
    firstIsAnswer: boolean,
  ): void {
    call.exchange.sent();
    call.deliver({
      statusCode: 200,
      headers,
      body: { kind: 'messages', events, firstIsAnswer, preferJson: spec.jsonResponse },
    });
  }

  /** A POST's lines to the child; a call waits for their answers. */
  function post(call: UpstreamCall, child: StdioChild, lines: Uint8Array[]): void {
    const { exchange } = call;
    const sessionId = exchange.sessionId;
    const ids = exchange.requestIds;
    const routing = exchange.routing;
    opened(call, child);
    if (sessionId !== undefined && ids.length > 0) {
      const session = sessions.get(sessionId);
      if (session !== undefined) session.used = true;
    }
    if (!child.acceptsInput) {
      call.fail('timeout', `the MCP server (${program}) is not reading its input`);
      return;
    }
    child.setHoldBytes(exchange.responseHoldBytes ?? UNBOUNDED_HOLD_BYTES);
    exchange.sent();
    // An initialize's answer issues the session of the child it spawned.
    const answerHeaders: Record<string, string> =
      child.sessionId !== undefined ? { 'mcp-session-id': child.sessionId } : {};
    if (ids.length === 0) {
      child.write(lines);
      child.cancelled(routing.cancelled);
      deliverNothing(call, 202, answerHeaders);
      return;
    }
    const stdioCall = newCall(call, answerHeaders, ids, routing, () => children.answered(child));
    const timeoutMs = config.upstream.timeouts.headers;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            if (stdioCall.answer !== undefined) return;
            child.abandon(stdioCall);
            stdioCall.fail(
              'timeout',
              `the MCP server (${program}) did not answer within ${timeoutMs} ms (upstream.timeouts.headers)`,
            );
          }, timeoutMs)
        : undefined;
    call.onClose(() => {
      clearTimeout(timer);
      if (stdioCall.waiting.size > 0) child.abandon(stdioCall);
    });
    child.start(stdioCall, lines);
  }

  function newCall(
    call: UpstreamCall,
    answerHeaders: Record<string, string>,
    ids: readonly JsonRpcId[],
    routing: BodyRouting,
    onAnswer: () => void,
  ): StdioCall {
    const waiting = new Map(ids.map((id) => [idKey(id), id] as const));
    return {
      waiting,
      progressTokens: routing.progressTokens,
      enforce: call.exchange.enforced,
      open: (events, firstIsAnswer) => {
        onAnswer();
        deliverMessages(call, answerHeaders, events, firstIsAnswer);
      },
      fail: (kind, detail) => {
        if (call.isOpen()) call.fail(kind, detail);
      },
      refuse: (detail) => {
        if (call.isOpen()) call.refuse({ kind: 'id_in_use', detail });
      },
    };
  }

  return upstream;
}
