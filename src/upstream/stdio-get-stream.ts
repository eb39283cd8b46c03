// A session's GET stream on a stdio child, and what the child sent for it before the client opened one.
// An SDK client opens its GET stream only after notifications/initialized is answered, while a server may
// send a request (roots/list) or a notification (list_changed) as soon as it reads that notification: such
// messages wait here, bounded by upstream.stdio.streamWait and streamWaitBytes, and go out in order when the
// stream opens. Past either bound a message is dropped through `drop` (a request among them is answered to
// the child there), counted and logged.
import type { PassThrough } from 'node:stream';
import type { Logger } from 'pino';
import type { LineEnvelope } from '../core/stdio-lines.js';
import { messageStream } from './stdio-call.js';
import type { UndeliveredReason } from './upstream.js';

export interface GetStreamOptions {
  /** How long a message may wait for the stream (upstream.stdio.streamWait); 0: it does not wait. */
  waitMs: number;
  /** Bytes that may wait at once (upstream.stdio.streamWaitBytes). */
  maxBytes: number;
  /** A new stream, tied to the child's output flow (a slow reader pauses the child). */
  flowing(stream: PassThrough): PassThrough;
  /** Writes a piece of a message to a stream under the child's backpressure (`last`: the message is complete). */
  forward(stream: PassThrough, bytes: Uint8Array, last: boolean): void;
  drop(envelope: LineEnvelope, bytes: number, reason: UndeliveredReason): void;
  log: Logger;
  /** The session and program, for the log. */
  fields: Record<string, unknown>;
}

interface Waiting {
  envelope: LineEnvelope;
  bytes: Uint8Array;
  deadline: number;
}

export class SessionGetStream {
  private stream: PassThrough | undefined;
  private readonly waiting: Waiting[] = [];
  private waitingBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(private readonly options: GetStreamOptions) {}

  /** The open stream of message events, if any (an oversized message streams straight into it). */
  get open(): PassThrough | undefined {
    return this.stream !== undefined && !this.stream.destroyed ? this.stream : undefined;
  }

  /** Opens the stream and sends what waited for it. False when one is open already. */
  openWith(open: (stream: PassThrough) => void): boolean {
    if (this.open !== undefined) return false;
    const stream = this.options.flowing(messageStream());
    this.stream = stream;
    stream.once('close', () => {
      if (this.stream === stream) this.stream = undefined;
    });
    open(stream);
    if (this.ended) {
      stream.end();
      return true;
    }
    for (const message of this.waiting.splice(0)) this.write(stream, message.bytes);
    this.waitingBytes = 0;
    this.clearTimer();
    return true;
  }

  /** A message no call asked for: sent now, or held for the stream within the bounds, or dropped. */
  send(envelope: LineEnvelope, bytes: Uint8Array): void {
    const stream = this.open;
    if (stream !== undefined) {
      this.write(stream, bytes);
      return;
    }
    if (this.ended || this.options.waitMs <= 0 || this.waitingBytes + bytes.length > this.options.maxBytes) {
      this.options.drop(envelope, bytes.length, 'no_stream');
      return;
    }
    this.options.log.debug(
      { ...this.options.fields, message: envelope.method, bytes: bytes.length },
      'stdio: a message waits for the client to open its GET stream',
    );
    // The line is a view of the framer's chunk: a copy is what waits.
    this.waiting.push({
      envelope,
      bytes: Uint8Array.prototype.slice.call(bytes),
      deadline: Date.now() + this.options.waitMs,
    });
    this.waitingBytes += bytes.length;
    if (this.timer === undefined) this.arm();
  }

  /** The child is gone: the stream ends, and what waited for it is dropped. */
  end(): void {
    this.ended = true;
    this.stream?.end();
    this.expire(Number.POSITIVE_INFINITY);
  }

  private write(stream: PassThrough, bytes: Uint8Array): void {
    this.options.forward(stream, bytes, true);
  }

  private arm(): void {
    const first = this.waiting[0];
    if (first === undefined) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.expire(Date.now());
        this.arm();
      },
      Math.max(0, first.deadline - Date.now()),
    );
    this.timer.unref();
  }

  private expire(now: number): void {
    while (this.waiting.length > 0 && this.waiting[0]!.deadline <= now) {
      const message = this.waiting.shift()!;
      this.waitingBytes -= message.bytes.length;
      this.options.drop(message.envelope, message.bytes.length, 'no_stream');
    }
    if (this.waiting.length === 0) this.clearTimer();
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
