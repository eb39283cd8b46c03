// Relays an upstream application/json body through the JSON inspector: held up to the ceiling that can
// apply to it, then forwarded byte for byte or replaced whole; a body that stalls or breaks off gets the
// client a JSON-RPC error for its id instead of a cut connection.
import { PassThrough, Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { JsonResponseInspector } from '../inspect/json-response.js';
import { answerUpstream, type EdgeContext } from './edge-context.js';
import { sendEdgeError, upstreamFailureAnswer } from './edge-error.js';
import { type Exchange, judgeContext, responseHoldBytes, subjectsWaiting } from './exchange.js';

/** A JSON response body that went silent for longer than upstream.timeouts.body. */
class StalledBodyError extends Error {
  constructor(ms: number) {
    super(`the JSON response body stalled for ${ms} ms (upstream.timeouts.body)`);
  }
}

function sendBody(reply: FastifyReply, body: Uint8Array | readonly Uint8Array[] | string): void {
  if (typeof body === 'string') {
    reply.send(body);
  } else if (!Array.isArray(body)) {
    const bytes = body as Uint8Array;
    reply.send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } else {
    // A held body goes on as the chunks it came in (never copied into one), with its length declared as before.
    let length = 0;
    for (const chunk of body) length += chunk.length;
    reply.header('content-length', length);
    reply.send(Readable.from(body, { objectMode: false }));
  }
}

export function relayJson(ctx: EdgeContext, exchange: Exchange, reply: FastifyReply, source: Readable): void {
  const inspector = new JsonResponseInspector(
    judgeContext(exchange, 'response', ctx.sessions),
    responseHoldBytes(exchange, subjectsWaiting(exchange)),
    exchange.waiting,
  );
  let passThrough: PassThrough | undefined;
  // A JSON answer that stalls mid-body would leave the client waiting: past the body timeout it gets a 504.
  const silence = ctx.bodySilence.watch(() =>
    source.destroy(new StalledBodyError(ctx.config.upstream.timeouts.body)),
  );
  const armStall = () => silence.touch();
  const disarmStall = () => silence.stop();
  // A client that leaves takes the upstream body with it.
  reply.raw.once('close', () => {
    disarmStall();
    if (!source.destroyed) source.destroy();
  });
  const onData = (chunk: Buffer) => {
    armStall();
    if (passThrough !== undefined) {
      inspector.push(chunk);
      if (!passThrough.write(chunk)) source.pause();
      return;
    }
    if (inspector.push(chunk)) return;
    if (exchange.mode === 'enforce') {
      // Known to be over the ceiling: stop reading rather than drain the rest.
      source.off('data', onData);
      disarmStall();
      source.destroy();
      sendBody(reply.code(200), inspector.overflow().body);
      return;
    }
    passThrough = new PassThrough();
    passThrough.on('drain', () => source.resume());
    for (const held of inspector.startPassThrough()) passThrough.write(held);
    reply.send(passThrough);
  };
  source.on('data', onData);
  source.on('end', () => {
    disarmStall();
    if (passThrough !== undefined) {
      inspector.endPassThrough();
      passThrough.end();
      return;
    }
    if (reply.sent) return;
    const outcome = inspector.finish();
    if (outcome.action === 'replace') {
      answerUpstream(ctx, exchange, outcome.toUpstream);
      reply.code(200);
    }
    sendBody(reply, outcome.body);
  });
  source.on('error', (err) => {
    disarmStall();
    if (passThrough !== undefined) {
      passThrough.destroy(err);
      return;
    }
    if (reply.sent || reply.raw.destroyed) return;
    const id = exchange.waiting.length === 1 ? (exchange.waiting[0] ?? null) : null;
    const stalled = err instanceof StalledBodyError;
    exchange.outcome = stalled ? 'upstream_timeout' : 'upstream_body_failed';
    const detail = stalled ? err.message : `the response body broke off: ${err.message}`;
    reply.request.log.warn({ tenant: exchange.tenant, detail }, 'upstream JSON body failed');
    reply.removeHeader('content-type');
    sendEdgeError(reply, upstreamFailureAnswer(ctx.config, stalled ? 'timeout' : 'failed', id, detail));
  });
}
