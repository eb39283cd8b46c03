// Relays an upstream SSE stream to the client through the SSE inspector. However the stream ends (the
// upstream finishes or breaks off, goes silent, the client leaves, shutdown), it ends once: the client's
// stream is closed well-formed, every request still waiting gets an error, and the stream is let go.
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { Outcome } from '../core/outcome.js';
import { type InspectorOutput, SseResponseInspector } from '../inspect/sse-response.js';
import { answerUpstream, type EdgeContext, type RelayedStream } from './edge-context.js';
import { type Exchange, judgeContext, responseHoldBytes, subjectsWaiting } from './exchange.js';

/** Why a stream the edge itself ended has left requests unanswered, as the client is told. */
const ENDED_WITHOUT_ANSWER = 'the MCP server ended the stream without answering';
const BROKE_OFF = 'the stream from the MCP server broke off';

function isAbort(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR' || err.name === 'AbortError';
}

export function relaySse(ctx: EdgeContext, exchange: Exchange, reply: FastifyReply, source: Readable): void {
  const { metrics } = ctx;
  const longLived = reply.request.method === 'GET';
  const onEvent = metrics !== undefined ? () => metrics.sseEvent(exchange.tenant) : undefined;
  const inspector = new SseResponseInspector(
    judgeContext(exchange, 'response', ctx.sessions),
    responseHoldBytes(exchange, subjectsWaiting(exchange)),
    onEvent,
  );
  /** Set when the edge ends the stream before the upstream did: what the waiting requests are told. */
  let lostDetail: string | undefined;
  let stopped = false;

  const emit = (out: InspectorOutput, push: (chunk: Uint8Array | string) => void) => {
    for (const piece of out.toClient) push(piece);
    answerUpstream(ctx, exchange, out.toUpstream);
  };

  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (!stopped) {
        armStall();
        emit(inspector.push(chunk), (piece) => this.push(piece));
        // The rest of an oversized answer that was already replaced can never be delivered: once nothing
        // else waits on this call's stream, stop reading it instead of draining it.
        if (!longLived && inspector.skippingReplacedAnswer && exchange.pending.size === 0) {
          stop(undefined, undefined);
        }
      }
      callback();
    },
    flush(callback) {
      disarmStall();
      emit(inspector.end(), (piece) => this.push(piece));
      // Ended without answering a request: unless the client can resume, it learns so now.
      emit(inspector.answerLost(lostDetail ?? ENDED_WITHOUT_ANSWER), (piece) => this.push(piece));
      callback();
    },
  });

  /** Stops reading the upstream; the client's stream then ends through flush (errors for what waits). */
  function stop(detail: string | undefined, outcome: Outcome | undefined): void {
    if (stopped) return;
    stopped = true;
    disarmStall();
    if (outcome !== undefined) exchange.outcome ??= outcome;
    lostDetail = detail;
    source.unpipe(transform);
    source.destroy();
    if (!transform.writableEnded && !transform.destroyed) transform.end();
  }

  // A call's stream that goes silent past upstream.timeouts.answerStream would leave its caller waiting.
  const silence = longLived
    ? undefined
    : ctx.answerSilence.watch(() => {
        const silentMs = ctx.config.upstream.timeouts.answerStream;
        reply.request.log.warn(
          { tenant: exchange.tenant, silentMs },
          'upstream SSE answer went silent; ending it (upstream.timeouts.answerStream)',
        );
        stop(
          `the MCP server sent nothing for ${silentMs} ms (upstream.timeouts.answerStream)`,
          'upstream_timeout',
        );
      });
  const armStall = () => silence?.touch();
  const disarmStall = () => silence?.stop();

  // Not pipeline(): a broken upstream must not cut the client's stream; it is finished cleanly instead.
  source.pipe(transform);
  source.once('end', disarmStall);
  source.on('error', (err: Error) => {
    // The edge or the client ended it (an abort follows a client that left): nothing failed upstream.
    if (stopped || reply.raw.destroyed || isAbort(err)) return;
    reply.request.log.warn({ tenant: exchange.tenant, err: err.message }, 'upstream SSE stream failed');
    stop(BROKE_OFF, 'upstream_stream_failed');
  });

  const stream: RelayedStream = { longLived, finish: (detail, outcome) => stop(detail, outcome) };
  ctx.streams.add(stream);
  const streamClosed = metrics?.sseStreamOpened(exchange.tenant);
  const release = () => {
    disarmStall();
    ctx.streams.delete(stream);
    streamClosed?.();
    if (!stopped) {
      stopped = true;
      source.destroy();
    }
  };
  transform.once('close', release);
  // However the response ends, the stream is let go with it (a client that left never drains the transform).
  reply.raw.once('close', () => {
    release();
    if (!transform.destroyed) transform.destroy();
  });
  // Fastify sends a stream's headers with its first byte; an SSE stream may stay silent for long (an idle GET
  // stream), so its headers go out as soon as Fastify has set them and pipes the stream.
  reply.raw.once('pipe', () => {
    if (!reply.raw.headersSent) reply.raw.flushHeaders();
  });
  reply.send(transform);
}
