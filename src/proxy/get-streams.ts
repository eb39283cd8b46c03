// The GET streams of a session. One session holds at most server.maxGetStreamsPerSession of them open at
// once, counted in its SessionState from the moment the upstream's stream is relayed until the client's
// response closes; a GET past the bound gets a 405 (before the upstream when the session is known, else when
// the upstream answers). A GET resuming a call's stream after the answer the edge replaced, which ended
// that stream, is answered 204 by the edge: an SDK v1 client resumes after any JSON-RPC error on a POST
// stream (it counts only results as answers), and that stream has nothing left to carry.

import type { IncomingHttpHeaders } from 'node:http';
import { boundedOptional } from '../core/client-names.js';
import { headerValue } from '../core/headers.js';
import { type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';
import type { Exchange } from '../exchange/exchange.js';
import { getStreamsFull, openGetStream, type SessionState } from '../inspect/session-store.js';
import type { RelayLog } from './client-response.js';
import type { EdgeContext } from './edge-context.js';

type GetStreamContext = Pick<EdgeContext, 'sessions'>;

function sessionOf(ctx: GetStreamContext, exchange: Exchange): SessionState | undefined {
  return exchange.sessionId !== undefined ? ctx.sessions.known(exchange.sessionId) : undefined;
}

/** The refusal at the bound, logged (the exchange line counts it as refused, status 405). */
function refusal(log: RelayLog, exchange: Exchange, max: number): EdgeHttpError {
  log.warn(
    { tenant: exchange.tenant, session: boundedOptional(exchange.sessionId), maxGetStreamsPerSession: max },
    'GET stream refused: the session holds server.maxGetStreamsPerSession open already',
  );
  return edgeAnswer('session_streams_full', { max });
}

/** What the edge answers a GET itself, before the upstream sees it; undefined: it goes upstream. */
export function getAnsweredByEdge(
  ctx: GetStreamContext,
  exchange: Exchange,
  headers: IncomingHttpHeaders,
  log: RelayLog,
): EdgeHttpError | undefined {
  const session = sessionOf(ctx, exchange);
  if (session === undefined) return undefined;
  const lastEventId = headerValue(headers, 'last-event-id');
  if (lastEventId !== undefined && session.answered.replacedEvent(lastEventId)?.endedItsStream === true) {
    return edgeAnswer('stream_complete', {});
  }
  const max = exchange.runtime.maxGetStreamsPerSession;
  return getStreamsFull(session, max) ? refusal(log, exchange, max) : undefined;
}

/**
 * The upstream opened a GET stream: a slot of its session for it (the release, called once the client's
 * response closes), or the refusal when the session holds its maximum already. No session: nothing to bound.
 */
export function takeGetStreamSlot(
  ctx: GetStreamContext,
  exchange: Exchange,
  log: RelayLog,
): (() => void) | EdgeHttpError {
  const session = sessionOf(ctx, exchange);
  if (session === undefined) return () => {};
  const max = exchange.runtime.maxGetStreamsPerSession;
  return openGetStream(session, max) ?? refusal(log, exchange, max);
}
