// The one place upstream responses are transformed: it records the upstream's status, lets the session
// know it is real, decodes a compressed body (bounded by the same ceilings), and hands JSON bodies and SSE
// streams to their relays. Anything else passes untouched, counted.
import type { IncomingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream';
import zlib from 'node:zlib';
import { contentCoding, headerValue, isEventStream, isJson } from '../core/headers.js';
import type { UpstreamFailureKind } from '../core/refusals/facts.js';
import { acceptedBySession, type Exchange, onlyRequestWaiting } from '../exchange/exchange.js';
import { batchAnswer } from '../exchange/refused-messages.js';
import type { ClientResponse } from './client-response.js';
import type { EdgeContext } from './edge-context.js';
import { upstreamFailureAnswer } from './edge-error.js';
import { takeGetStreamSlot } from './get-streams.js';
import { relayJson } from './json-relay.js';
import { respondLocally } from './local-reply.js';
import { type RelayedAnswer, type RelayedBody, sourceOf } from './relayed-answer.js';
import { relaySse } from './sse-relay.js';

function decoded(res: RelayedAnswer): RelayedBody {
  if (res.body.kind === 'messages') return res.body;
  const stream = res.body.stream;
  switch (contentCoding(res.headers)) {
    case 'gzip':
      return { kind: 'bytes', stream: pipeline(stream, zlib.createGunzip(), () => {}) };
    case 'deflate':
      return { kind: 'bytes', stream: pipeline(stream, zlib.createInflate(), () => {}) };
    case 'br':
      return { kind: 'bytes', stream: pipeline(stream, zlib.createBrotliDecompress(), () => {}) };
    default:
      return res.body;
  }
}

/** What the upstream's status says about the session the exchange named (or the one it just issued). */
function noteSession(ctx: EdgeContext, method: string, exchange: Exchange, res: RelayedAnswer): void {
  const issued = headerValue(res.headers as IncomingHttpHeaders, 'mcp-session-id');
  if (exchange.sessionId === undefined && issued !== undefined && res.statusCode < 300)
    exchange.sessionId = issued;
  const sessionId = exchange.sessionId;
  if (sessionId === undefined) return;
  if (method === 'DELETE' && res.statusCode < 300) ctx.sessions.forget(sessionId);
  else if (res.statusCode === 404) ctx.sessions.forget(sessionId);
  else if (res.statusCode >= 200 && res.statusCode < 300) acceptedBySession(exchange, ctx.sessions);
}

export function relayResponse(
  ctx: EdgeContext,
  exchange: Exchange,
  client: ClientResponse,
  res: RelayedAnswer,
): void {
  if (client.closed) {
    // Answered meanwhile (shutdown) or the client is gone: the upstream's answer has nowhere to go.
    sourceOf(res.body).destroy();
    return;
  }
  exchange.upstreamStatus = res.statusCode;
  if (exchange.upstreamSentAt !== undefined) {
    const seconds = Number(process.hrtime.bigint() - exchange.upstreamSentAt) / 1e9;
    ctx.filters.upstreamAnswered(exchange, res.statusCode, seconds);
  }
  noteSession(ctx, client.method, exchange, res);
  const contentType = res.headers['content-type'];
  if (
    res.body.kind === 'bytes' &&
    (contentCoding(res.headers) === 'unsupported' || !(isEventStream(contentType) || isJson(contentType)))
  ) {
    const local = exchange.localAnswers;
    if (local !== undefined && res.statusCode < 300) {
      // The upstream took the rest of a batch without an answer (a 202 for its notifications): the client
      // still gets the edge's answers to the messages it refused.
      res.body.stream.destroy();
      respondLocally(exchange, client, batchAnswer(local, 200));
      return;
    }
    client.pipeFrom(res.body.stream);
    return;
  }
  if (!isEventStream(contentType)) {
    relayJson(ctx, exchange, client, decoded(res));
    return;
  }
  let releaseSlot: (() => void) | undefined;
  if (client.method === 'GET') {
    const slot = takeGetStreamSlot(ctx, exchange, client.log);
    if (typeof slot !== 'function') {
      // The session filled while this GET went upstream (or was not known then): its stream is let go.
      sourceOf(res.body).destroy();
      respondLocally(exchange, client, slot);
      return;
    }
    releaseSlot = slot;
  }
  relaySse(ctx, exchange, client, decoded(res), releaseSlot);
}

type SinkFailure = Exclude<UpstreamFailureKind, 'failed'>;

const FAILURE_LOG_LINES: Record<SinkFailure, string> = {
  timeout: 'upstream did not answer in time',
  unreachable: 'upstream unreachable',
  capacity: 'no upstream connection came free in time; the request was not sent',
};

/** The upstream could not answer the exchange: a 502/503/504 for its id, the detail in the log only. */
export function upstreamFailed(
  ctx: Pick<EdgeContext, 'config' | 'upstream'>,
  exchange: Exchange | undefined,
  client: ClientResponse,
  kind: SinkFailure,
  detail: string,
): void {
  // The client left (the proxy then aborts the upstream request): there is no one to answer.
  if (client.closed) return;
  const id = onlyRequestWaiting(exchange);
  client.log.warn(
    { tenant: exchange?.tenant, upstream: ctx.upstream.label, detail },
    FAILURE_LOG_LINES[kind],
  );
  respondLocally(exchange, client, upstreamFailureAnswer(ctx, kind, id, detail));
}
