// Relays an upstream SSE stream (an HTTP server's bytes, or messages the client gets as SSE events) to the
// client through the SSE inspector, writing to the client's response directly (what one event-loop turn
// produced goes out as one write). However the stream ends (the upstream
// finishes or breaks off, goes silent, the client leaves, shutdown), it ends once: the client's stream is
// closed well-formed, every request still waiting gets an error (unless the client can resume the stream
// through the edge, which shutdown rules out), and the stream is let go.
import type { MessageEvent } from '../core/message-events.js';
import { edgeError, type JsonRpcErrorMessage } from '../core/refusals/answers.js';
import type { JsonRpcId } from '../core/types.js';
import { type Exchange, judgeContext, responseHoldBytes, subjectsWaiting } from '../exchange/exchange.js';
import type { RelayVerdict } from '../inspect/relay-verdict.js';
import { SseResponseInspector } from '../inspect/sse-response.js';
import { type ClientResponse, CoalescedWriter } from './client-response.js';
import { answerUpstream, type EdgeContext } from './edge-context.js';
import { endedByEdge } from './local-reply.js';
import { type RelayedBody, sourceOf } from './relayed-answer.js';

/**
 * Why the edge itself ended a stream, as the requests it left unanswered are told (the refusals table words
 * each and names the exchange's outcome); none: the upstream ended it, or a message the edge dropped did.
 */
type Stop =
  | { ending: 'answer_stream_broke_off' | 'ended_by_shutdown' }
  | { ending: 'answer_stream_silent'; silentMs: number };

function isAbort(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR' || err.name === 'AbortError';
}

/** The error a request still waiting gets when the stream ends: why the edge stopped it, or that it ended. */
function lostError(why: Stop | undefined, id: JsonRpcId): JsonRpcErrorMessage {
  if (why === undefined) return edgeError('answer_stream_ended', {}, id);
  if (why.ending === 'answer_stream_silent') return edgeError(why.ending, { silentMs: why.silentMs }, id);
  return edgeError(why.ending, {}, id);
}

export type SseRelayContext = Pick<
  EdgeContext,
  'config' | 'filters' | 'sessions' | 'upstream' | 'answerSilence'
> &
  Partial<Pick<EdgeContext, 'held'>>;

/** The inspector of the exchange's stream: the ceilings of the answers it waits for, and of anything else. */
function inspectorFor(
  ctx: SseRelayContext,
  exchange: Exchange,
  longLived: boolean,
  onEvent: (() => void) | undefined,
): SseResponseInspector {
  return new SseResponseInspector(
    judgeContext(exchange, 'response', ctx.sessions),
    responseHoldBytes(exchange, subjectsWaiting(exchange)),
    onEvent,
    !longLived,
    // A notification or server request on a call's stream has a ceiling of its own, not its call's.
    responseHoldBytes(exchange, []),
  );
}

/** The edge's own answers to the messages of the batch it refused come first, each an event of its own. */
function writeLocalAnswers(writer: CoalescedWriter, exchange: Exchange): void {
  const local = exchange.localAnswers;
  if (local !== undefined) writer.write(local.map((answer) => `event: message\ndata: ${answer.body}\n\n`));
}

export function relaySse(
  ctx: SseRelayContext,
  exchange: Exchange,
  client: ClientResponse,
  body: RelayedBody,
  /** A GET stream's slot in its session (server.maxGetStreamsPerSession), let go with the stream. */
  releaseSlot?: () => void,
): void {
  const raw = client.raw;
  const source = sourceOf(body);
  // Every callback below runs outside Fastify's try/catch: through the exchange's guard.
  const guard = client.guard;
  const longLived = client.method === 'GET';
  const streamEvent = ctx.filters.streamEvent;
  const onEvent = streamEvent !== undefined ? () => streamEvent(exchange) : undefined;
  const messages = body.kind === 'messages';
  const inspector = inspectorFor(ctx, exchange, longLived, onEvent);
  /** Set when the edge ends the stream before the upstream did: what the waiting requests are told. */
  let stopReason: Stop | undefined;
  let stopped = false;
  let finished = false;
  /** The event being framed (mcp_edge_held_bytes). */
  const hold = ctx.held?.hold();

  client.start();
  const writer = new CoalescedWriter(
    raw,
    () => source.pause(),
    () => source.resume(),
    guard,
  );
  const emit = (out: RelayVerdict) => {
    writer.write(out.toClient);
    answerUpstream(ctx, exchange, out.toUpstream);
  };
  writeLocalAnswers(writer, exchange);

  /** The client's stream ends: what the framer still holds, errors for what waits, then the end. */
  function finish(): void {
    if (finished) return;
    finished = true;
    disarmStall();
    emit(inspector.end());
    // Ended without answering a request: unless the client can resume through the edge, it learns so now.
    // No one can resume a stream through an edge that exits.
    const resumable = stopReason?.ending !== 'ended_by_shutdown';
    emit(inspector.answerLost((id: JsonRpcId) => lostError(stopReason, id), resumable));
    writer.end();
    release();
  }

  /** Stops reading the upstream; the client's stream then ends (errors for what waits). */
  function stop(why: Stop | undefined): void {
    if (stopped) return;
    stopped = true;
    disarmStall();
    if (why !== undefined) endedByEdge(exchange, why.ending);
    stopReason = why;
    source.destroy();
    finish();
  }

  // A call's stream that goes silent past upstream.timeouts.answerStream would leave its caller waiting.
  const silence = longLived
    ? undefined
    : ctx.answerSilence.watch(
        guard(() => {
          const silentMs = ctx.config.upstream.timeouts.answerStream;
          client.log.warn(
            { tenant: exchange.tenant, silentMs },
            'upstream SSE answer went silent; ending it (upstream.timeouts.answerStream)',
          );
          stop({ ending: 'answer_stream_silent', silentMs });
        }),
      );
  const armStall = () => silence?.touch();
  const disarmStall = () => silence?.stop();

  // Not pipeline(): a broken upstream must not cut the client's stream; it is finished cleanly instead.
  source.on(
    'data',
    guard((item: Buffer | MessageEvent) => {
      if (stopped) return;
      armStall();
      const out = messages ? inspector.pushMessage(item as MessageEvent) : inspector.push(item as Buffer);
      hold?.set(inspector.heldBytes);
      emit(out);
      if (out.action === 'drop') stop(undefined);
    }),
  );
  source.once('end', guard(finish));
  source.on(
    'error',
    guard((err: Error) => {
      // The edge or the client ended it (an abort follows a client that left): nothing failed upstream.
      if (stopped || raw.destroyed || isAbort(err)) return;
      client.log.warn({ tenant: exchange.tenant, err: err.message }, 'upstream SSE stream failed');
      stop({ ending: 'answer_stream_broke_off' });
    }),
  );

  // Shutdown ends every exchange in one loop: one that throws must not keep the others from ending. A stream
  // that has finished already, its response not yet closed, ended by itself.
  exchange.shutdownEnding = {
    stream: true,
    end: guard(() => {
      if (finished) return;
      stop({ ending: 'ended_by_shutdown' });
    }),
  };
  const streamClosed = ctx.filters.streamOpened(exchange);
  let released = false;
  function release(): void {
    if (released) return;
    released = true;
    hold?.release();
    disarmStall();
    streamClosed();
    releaseSlot?.();
  }
  // However the response ends, the stream is let go with it (a client that left reads nothing more).
  raw.once(
    'close',
    guard(() => {
      writer.cancel();
      release();
      if (!stopped) {
        stopped = true;
        source.destroy();
      }
    }),
  );
}
