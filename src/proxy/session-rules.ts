// The session rules of the MCP endpoint, for every kind of upstream that keeps its sessions itself (a stdio
// child per session): the edge answers from the facts the upstream reports (UpstreamSessions), before the
// upstream sees the exchange. An upstream that is an HTTP server is the authority on its own sessions, and
// its answers are relayed instead.
import { type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';
import { unattributableAct } from '../core/refusals/wording.js';
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
    return edgeAnswer('session_required', { method });
  }
  if (sessionId !== undefined) {
    if (!sessions.has(sessionId, tenant)) {
      return edgeAnswer('session_not_found', { sessionId });
    }
    if (method === 'GET' && sessions.streaming(sessionId)) {
      return edgeAnswer('get_stream_open', {});
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
  if (room === 'closing') return edgeAnswer('shutting_down', {}, id);
  log.warn(
    { tenant, upstream, bound: room.setting, limit: room.limit },
    'stdio: no room for another MCP server process',
  );
  return edgeAnswer('processes_full', { bound: room }, id);
}

/**
 * A client without a session answers a server request or cancels a request: where clients without a session
 * share a process, the edge cannot tell whose request that is (any client of the tenant may use any id), so
 * it refuses. Protocol 2026-07-28 has no server-to-client requests, and cancels a request by closing its
 * stream.
 */
function unattributable(log: RelayLog, exchange: UpstreamExchange, upstream: string): EdgeHttpError {
  const { answersServer } = exchange.routing;
  log.warn(
    { tenant: exchange.tenant, upstream },
    `stdio: a request without a session ${unattributableAct(answersServer)}; refused`,
  );
  return edgeAnswer('unattributable', { answersServer });
}
