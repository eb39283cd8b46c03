// When a request stops waiting for its answer: the one place it is let go, in its exchange and its session
// alike, whoever answered it (the upstream, or the edge when the answer cannot come).
import type { JsonRpcId, MessageSubject } from '../core/types.js';
import type { AnsweredRequests } from './answered-requests.js';
import type { PendingRequests } from './pending-requests.js';

/** Where a request waits (a JudgeContext's): its exchange's requests, its session's, the session's answers. */
export interface WaitingPlaces {
  answered: PendingRequests | undefined;
  answeredInSession: PendingRequests | undefined;
  answeredBefore?: AnsweredRequests | undefined;
}

/**
 * A request is answered, by the upstream or by the edge: it is let go everywhere it waits (this exchange, its
 * session), so no later answer is taken for it and the session keeps nothing of it. What it was about.
 */
export function settleRequest(
  ctx: Omit<WaitingPlaces, 'answeredBefore'>,
  id: JsonRpcId,
): MessageSubject | undefined {
  const inExchange = ctx.answered?.take(id);
  const inSession = ctx.answeredInSession?.take(id);
  return inExchange ?? inSession;
}

/**
 * A request ends without the upstream's answer reaching its client (the edge answered it, its stream ended, its
 * JSON body was not one): settled everywhere it waits, and kept with the session's answers, so an answer the
 * upstream still sends for it on another stream meets its request's ceiling, as a replay does.
 */
export function settleUnanswered(ctx: WaitingPlaces, id: JsonRpcId): void {
  const subject = settleRequest(ctx, id);
  if (subject !== undefined) ctx.answeredBefore?.answered(id, subject);
}
