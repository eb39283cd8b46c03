// The one place upstream responses are transformed: it records the upstream's status, lets the session
// know it is real, decodes a compressed body (bounded by the same ceilings), and hands JSON bodies and SSE
// streams to their relays. Anything else passes untouched, counted.
import type { IncomingHttpHeaders } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UpstreamFailureKind } from '../core/errors.js';
import type { UpstreamResponse } from '../upstream/upstream.js';
import { type EdgeContext, exchangeOf } from './edge-context.js';
import { sendEdgeError, upstreamFailureAnswer } from './edge-error.js';
import { acceptedBySession, type Exchange } from './exchange.js';
import { contentCoding, headerValue, isEventStream, isJson } from './headers.js';
import { relayJson } from './json-relay.js';
import { relaySse } from './sse-relay.js';

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

/** What the upstream's status says about the session the exchange named (or the one it just issued). */
function noteSession(
  ctx: EdgeContext,
  request: FastifyRequest,
  exchange: Exchange,
  res: UpstreamResponse,
): void {
  const issued = headerValue(res.headers as IncomingHttpHeaders, 'mcp-session-id');
  if (exchange.sessionId === undefined && issued !== undefined && res.statusCode < 300)
    exchange.sessionId = issued;
  const sessionId = exchange.sessionId;
  if (sessionId === undefined) return;
  if (request.method === 'DELETE' && res.statusCode < 300) ctx.sessions.forget(sessionId);
  else if (res.statusCode === 404) ctx.sessions.forget(sessionId);
  else if (res.statusCode >= 200 && res.statusCode < 300) acceptedBySession(exchange, ctx.sessions);
}

export function relayResponse(
  ctx: EdgeContext,
  request: FastifyRequest,
  reply: FastifyReply,
  res: UpstreamResponse,
): void {
  const exchange = exchangeOf(request);
  if (reply.sent || reply.raw.destroyed) {
    // Answered meanwhile (shutdown) or the client is gone: the upstream's answer has nowhere to go.
    res.stream.destroy();
    return;
  }
  exchange.upstreamStatus = res.statusCode;
  if (exchange.upstreamSentAt !== undefined) {
    const seconds = Number(process.hrtime.bigint() - exchange.upstreamSentAt) / 1e9;
    ctx.metrics?.upstreamResponded({ tenant: exchange.tenant, status: res.statusCode, seconds });
  }
  noteSession(ctx, request, exchange, res);
  const contentType = res.headers['content-type'];
  if (contentCoding(res.headers) === 'unsupported' || !(isEventStream(contentType) || isJson(contentType))) {
    reply.raw.once('close', () => res.stream.destroy());
    reply.send(res.stream);
    return;
  }
  const source = decodedStream(res);
  if (isEventStream(contentType)) relaySse(ctx, exchange, reply, source);
  else relayJson(ctx, exchange, reply, source);
}

/** The upstream could not answer the exchange: a 502/504 for its id, the detail in the log only. */
export function upstreamFailed(
  ctx: EdgeContext,
  reply: FastifyReply,
  kind: Exclude<UpstreamFailureKind, 'failed'>,
  detail: string,
): void {
  // The client left (the proxy then aborts the upstream request): there is no one to answer.
  if (reply.raw.destroyed) return;
  const exchange = reply.request.edge;
  const id = exchange?.waiting.length === 1 ? (exchange.waiting[0] ?? null) : null;
  if (exchange !== undefined)
    exchange.outcome = kind === 'timeout' ? 'upstream_timeout' : 'upstream_unreachable';
  reply.request.log.warn(
    { tenant: exchange?.tenant, upstream: ctx.upstream.label, detail },
    kind === 'timeout' ? 'upstream did not answer in time' : 'upstream unreachable',
  );
  sendEdgeError(reply, upstreamFailureAnswer(ctx.config, kind, id, detail));
}
