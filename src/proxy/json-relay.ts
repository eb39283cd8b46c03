// Relays an upstream application/json body through the JSON inspector: held up to the ceiling that can
// apply to it, then forwarded byte for byte or replaced whole; a body that stalls or breaks off, or is still
// held when shutdown ends the exchange, gets the client a JSON-RPC error for its id instead of a cut
// connection. An answer made of messages is its one message's pieces, judged as the chunks of a body; a
// message cut short is a body that broke off.
import type { MessageEvent } from '../core/message-events.js';
import { edgeAnswer } from '../core/refusals/answers.js';
import {
  type Exchange,
  judgeContext,
  onlyRequestWaiting,
  responseHoldBytes,
  subjectsWaiting,
} from '../exchange/exchange.js';
import { JsonResponseInspector } from '../inspect/json-response.js';
import type { RelayVerdict } from '../inspect/relay-verdict.js';
import type { ClientResponse } from './client-response.js';
import { answerUpstream, type EdgeContext } from './edge-context.js';
import { upstreamFailureAnswer } from './edge-error.js';
import { endedByEdge, respondLocally } from './local-reply.js';
import { type RelayedBody, sourceOf } from './relayed-answer.js';

/** A JSON response body that went silent for longer than upstream.timeouts.body. */
class StalledBodyError extends Error {
  constructor(ms: number) {
    super(`the JSON response body stalled for ${ms} ms (upstream.timeouts.body)`);
  }
}

export type JsonRelayContext = Pick<EdgeContext, 'config' | 'sessions' | 'upstream' | 'bodySilence'> &
  Partial<Pick<EdgeContext, 'held'>>;

/** The inspector of the exchange's answer: its ceilings, the requests it answers, the edge's own answers to join. */
function inspectorFor(ctx: JsonRelayContext, exchange: Exchange): JsonResponseInspector {
  return new JsonResponseInspector(
    judgeContext(exchange, 'response', ctx.sessions),
    responseHoldBytes(exchange, subjectsWaiting(exchange)),
    exchange.pending.ids(),
    exchange.localAnswers?.map((answer) => answer.body),
  );
}

export function relayJson(
  ctx: JsonRelayContext,
  exchange: Exchange,
  client: ClientResponse,
  body: RelayedBody,
): void {
  const raw = client.raw;
  const source = sourceOf(body);
  const messages = body.kind === 'messages';
  // Every callback below runs outside Fastify's try/catch: through the exchange's guard.
  const guard = client.guard;
  const inspector = inspectorFor(ctx, exchange);
  /** Set once bytes go to the client as they arrive (observe mode, past every ceiling). */
  let streaming = false;
  /** The body held until it is judged (mcp_edge_held_bytes); let go once it is sent, replaced or dropped. */
  const hold = ctx.held?.hold();
  // A JSON answer that stalls mid-body would leave the client waiting: past the body timeout it gets a 504.
  const silence = ctx.bodySilence.watch(
    guard(() => source.destroy(new StalledBodyError(ctx.config.upstream.timeouts.body))),
  );
  // A client that leaves takes the upstream body with it. However the answer ended, its requests are done.
  raw.once(
    'close',
    guard(() => {
      silence.stop();
      hold?.release();
      inspector.letGo();
      if (!source.destroyed) source.destroy();
    }),
  );
  const stream = (out: RelayVerdict) => {
    if (!streaming) {
      streaming = true;
      client.start();
      raw.on(
        'drain',
        guard(() => source.resume()),
      );
    }
    for (const piece of out.toClient) if (!raw.write(piece)) source.pause();
  };
  /** The whole answer at once: the upstream's status for its bytes, 200 for the edge's own error. */
  const sendWhole = (out: RelayVerdict) => {
    answerUpstream(ctx, exchange, out.toUpstream);
    client.sendWhole(out.toClient, out.action === 'forward' ? undefined : 200);
  };
  const onData = guard((item: Buffer | MessageEvent) => {
    silence.touch();
    const event = messages ? (item as MessageEvent) : undefined;
    if (event?.kind === 'cut') {
      source.destroy(new Error(event.detail));
      return;
    }
    const out = inspector.push(event?.kind === 'piece' ? event.bytes : (item as Buffer));
    if (out.action === 'hold') {
      hold?.set(inspector.heldBytes);
      return;
    }
    hold?.release();
    if (out.action === 'forward') {
      stream(out);
      return;
    }
    // Known to be over the ceiling: stop reading rather than drain the rest.
    source.off('data', onData);
    silence.stop();
    source.destroy();
    sendWhole(out);
  });
  source.on('data', onData);
  // Shutdown: a body still held is answered in its place; one streaming (past every ceiling) cannot be
  // completed well-formed, so its connection closes.
  exchange.shutdownEnding = {
    stream: false,
    end: guard(() => {
      if (raw.writableEnded || raw.destroyed) return;
      source.off('data', onData);
      silence.stop();
      hold?.release();
      source.destroy();
      if (streaming) {
        endedByEdge(exchange, 'ended_by_shutdown');
        raw.destroy();
        return;
      }
      respondLocally(exchange, client, edgeAnswer('ended_by_shutdown', {}, onlyRequestWaiting(exchange)));
    }),
  };
  source.on(
    'end',
    guard(() => {
      silence.stop();
      hold?.release();
      const out = inspector.end();
      // Answered already (replaced early): an end queued before the relay stopped reading has nothing to add.
      if (out.action === 'drop') return;
      if (streaming) {
        // What closes a streamed body the edge joined its own answers to, if anything.
        raw.end(out.toClient[0]);
        return;
      }
      if (client.closed) return;
      sendWhole(out);
    }),
  );
  source.on(
    'error',
    guard((err: Error) => {
      silence.stop();
      hold?.release();
      if (streaming) {
        raw.destroy(err);
        return;
      }
      if (client.closed) return;
      const id = onlyRequestWaiting(exchange);
      const stalled = err instanceof StalledBodyError;
      const detail = stalled ? err.message : `the response body broke off: ${err.message}`;
      client.log.warn({ tenant: exchange.tenant, detail }, 'upstream JSON body failed');
      respondLocally(
        exchange,
        client,
        upstreamFailureAnswer(ctx, stalled ? 'timeout' : 'failed', id, detail),
      );
    }),
  );
}
