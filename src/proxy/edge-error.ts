// An answer of the edge's own that a stage cannot send where it is (an onRequest hook, the body parser) is
// thrown as an EdgeError; Fastify's error handler hands it to respondLocally (local-reply.ts).
import type { EdgeConfig } from '../config/schema.js';
import { type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';
import type { UpstreamFailureKind } from '../core/refusals/facts.js';
import type { JsonRpcId } from '../core/types.js';
import type { Upstream } from '../upstream/upstream.js';

/** An error the edge answers itself, carried through Fastify's error path to respondLocally. */
export class EdgeError extends Error {
  constructor(readonly answer: EdgeHttpError) {
    super(answer.body);
  }
}

/** The 502/503/504 answer for an upstream failure: the detail goes with it only when the operator enabled that. */
export function upstreamFailureAnswer(
  ctx: { config: EdgeConfig; upstream: Pick<Upstream, 'publicName'> },
  kind: UpstreamFailureKind,
  id: JsonRpcId,
  detail: string,
): EdgeHttpError {
  const diagnostic = ctx.config.server.exposeUpstreamErrors
    ? { detail, upstream: ctx.upstream.publicName }
    : undefined;
  return edgeAnswer(`upstream_${kind}`, { diagnostic }, id);
}
