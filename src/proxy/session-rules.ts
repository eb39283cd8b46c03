// The session rules of the MCP endpoint, for every kind of upstream that keeps its sessions itself (a stdio
// child per session): the edge answers from the facts the upstream reports (UpstreamSessions), before the
// upstream sees the exchange. An upstream that is an HTTP server is the authority on its own sessions, and
// its answers are relayed instead.
import { type EdgeHttpError, edgeRefusal, processLimitRefusal, shutdownRefusal } from '../core/errors.js';
import type { ForwardedMethod, UpstreamExchange, UpstreamSessions } from '../upstream/upstream.js';
import type { RelayLog } from './client-response.js';

/** What the edge answers for the upstream's sessions; undefined: the exchange goes to the upstream. */
export function sessionRuleAnswer(
  sessions: UpstreamSessions,
  method: ForwardedMethod,
  exchange: UpstreamExchange,
  log: RelayLog,
  /** How logs name the upstream. */
  upstream: string,
): EdgeHttpError | undefined {
  const { sessionId, tenant } = exchange;
  if (method !== 'POST' && sessionId === undefined) {
    return edgeRefusal(
      405,
      'method_not_allowed',
      `${method} needs an Mcp-Session-Id: without a session there is no stream to open or end`,
      null,
      { allow: 'POST' },
    );
  }
  if (sessionId !== undefined) {
    if (!sessions.has(sessionId, tenant)) {
      return edgeRefusal(
        404,
        'invalid_request',
        `Session not found: ${sessionId} is not a session of this MCP server (it ended, or never was); initialize again`,
      );
    }
    if (method === 'GET' && sessions.streaming(sessionId)) {
      return edgeRefusal(409, 'invalid_request', 'Conflict: this session has a GET stream open already');
    }
    return undefined;
  }
  const { routing, initializes } = exchange;
  if (
    sessions.sharedWithoutSession &&
    !initializes &&
    (routing.answersServer || routing.cancelled.length > 0)
  ) {
    return unattributable(log, exchange, upstream);
  }
  const room = sessions.roomFor(exchange);
  if (room === undefined) return undefined;
  const ids = exchange.requestIds;
  const id = ids.length === 1 ? (ids[0] ?? null) : null;
  if (room === 'closing') return shutdownRefusal(id);
  log.warn(
    { tenant, upstream, bound: room.setting, limit: room.limit },
    'stdio: no room for another MCP server process',
  );
  return processLimitRefusal(id, room);
}

/**
 * A client without a session answers a server request or cancels a request: where clients without a session
 * share a process, the edge cannot tell whose request that is (any client of the tenant may use any id), so
 * it refuses. Protocol 2026-07-28 has no server-to-client requests, and cancels a request by closing its
 * stream.
 */
function unattributable(log: RelayLog, exchange: UpstreamExchange, upstream: string): EdgeHttpError {
  const what = exchange.routing.answersServer
    ? 'answers a request of the MCP server'
    : 'cancels a request with notifications/cancelled';
  log.warn({ tenant: exchange.tenant, upstream }, `stdio: a request without a session ${what}; refused`);
  return edgeRefusal(
    400,
    'invalid_request',
    `This request ${what}, but it carries no Mcp-Session-Id: clients without a session share one MCP server process per tenant, and mcp-edge cannot tell whose request that is, so none may answer or cancel one (close the request's stream to cancel it; initialize a session to answer server requests)`,
  );
}
