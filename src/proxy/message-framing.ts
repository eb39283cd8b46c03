// An answer made of messages (a stdio child's lines) framed for the client, as an HTTP server would have
// framed it: SSE `data:` events, or a JSON body when the answer is a single message the exchange may take as
// JSON (one request, and the kind prefers JSON or the client does not accept SSE). Each message's bytes are
// the upstream's, unchanged; the framed bytes go to the same relays as an HTTP server's answer.
import type { IncomingHttpHeaders } from 'node:http';
import { pipeline, type Readable, Transform, type TransformCallback } from 'node:stream';
import { acceptsEventStream, headerValue } from '../core/headers.js';
import type { MessageEvent, UpstreamBody } from '../upstream/upstream.js';
import type { ByteAnswer } from './response-relay.js';

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
const JSON_HEADERS = { 'content-type': 'application/json' };
const DATA = Buffer.from('data: ');
const EVENT_END = Buffer.from('\n\n');

type MessagesBody = Extract<UpstreamBody, { kind: 'messages' }>;

/** Whether the answer goes as a JSON body: one message answering the exchange's one request. */
export function answersAsJson(
  body: MessagesBody,
  requests: number,
  clientHeaders: IncomingHttpHeaders,
): boolean {
  const mayAnswerJson =
    requests === 1 && (body.preferJson || !acceptsEventStream(headerValue(clientHeaders, 'accept')));
  return mayAnswerJson && body.firstIsAnswer;
}

/** Message events to SSE events: `data: ` before a message's first piece, a blank line after its last. */
class SseFraming extends Transform {
  #inMessage = false;

  constructor() {
    super({ writableObjectMode: true });
  }

  override _transform(event: MessageEvent, _encoding: BufferEncoding, done: TransformCallback): void {
    if (event.kind === 'cut') {
      // The event the source died inside is closed, so what follows stands alone.
      if (this.#inMessage) this.push(EVENT_END);
      this.#inMessage = false;
    } else {
      if (!this.#inMessage) this.push(DATA);
      if (event.bytes.length > 0) this.push(event.bytes);
      this.#inMessage = !event.last;
      if (event.last) this.push(EVENT_END);
    }
    done();
  }
}

/** One message as the body, unframed; a message cut short breaks the body off (the client gets an error). */
class JsonFraming extends Transform {
  constructor() {
    super({ writableObjectMode: true });
  }

  override _transform(event: MessageEvent, _encoding: BufferEncoding, done: TransformCallback): void {
    if (event.kind === 'cut') {
      done(new Error(event.detail));
      return;
    }
    if (event.bytes.length > 0) this.push(event.bytes);
    done();
  }
}

/** The answer with its framing: its content type added, its messages as the bytes a relay reads. */
export function framedAnswer(
  statusCode: number,
  headers: ByteAnswer['headers'],
  body: MessagesBody,
  json: boolean,
): ByteAnswer {
  const framing = json ? new JsonFraming() : new SseFraming();
  // One stream for the relay: destroying it (a client that left) lets go of the upstream's events too.
  const stream: Readable = pipeline(body.events, framing, () => {});
  return { statusCode, headers: { ...headers, ...(json ? JSON_HEADERS : SSE_HEADERS) }, stream };
}
