// The one path for answers the edge makes itself: an EdgeError thrown anywhere in a request's handling
// reaches Fastify's error handler, which sends it through sendEdgeError.
import type { FastifyReply } from 'fastify';
import type { EdgeConfig } from '../config/schema.js';
import { type EdgeHttpError, type UpstreamFailureKind, upstreamFailure } from '../core/errors.js';
import type { JsonRpcId } from '../core/types.js';
import { stdioProgramName } from '../upstream/stdio-command.js';

/** An error the edge answers itself, carried through Fastify's error path to sendEdgeError. */
export class EdgeError extends Error {
  constructor(readonly answer: EdgeHttpError) {
    super(answer.body);
  }
}

/** Sends an answer of the edge's own; an exchange that has no outcome yet was refused. */
export function sendEdgeError(reply: FastifyReply, answer: EdgeHttpError): FastifyReply {
  const exchange = reply.request.edge;
  if (exchange !== undefined) exchange.outcome ??= 'refused';
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}

/** The 502/504 answer for an upstream failure: the detail goes with it only when the operator enabled that. */
export function upstreamFailureAnswer(
  config: EdgeConfig,
  kind: UpstreamFailureKind,
  id: JsonRpcId,
  detail: string,
): EdgeHttpError {
  const diagnostic = config.server.exposeUpstreamErrors
    ? { detail, upstream: upstreamNameOf(config) }
    : undefined;
  return upstreamFailure(kind, id, diagnostic);
}

/** The upstream as an operator would name it in an answer: the URL's origin, or the stdio command's program. */
function upstreamNameOf(config: EdgeConfig): string {
  if (config.upstream.url !== undefined) return new URL(config.upstream.url).origin;
  return `stdio:${stdioProgramName(config.upstream.stdio?.command[0] ?? '')}`;
}
