// The client's side of an exchange as the relays see it: a node:http ServerResponse, the request's method and
// logger, and a hook that runs once before the status line (the Fastify wiring puts its reply's headers and
// response hooks there). The relays write bytes to the raw response themselves; nothing here knows Fastify.
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { EXCHANGE_FAILED, type Guard, guardWith } from '../core/guard.js';
import { type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';
import { type AnswerWriter, answerWriter, respondLocally } from './local-reply.js';

/** What the relays log; a pino logger is one. */
export interface RelayLog {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface ClientResponseOptions {
  /** Runs once, just before the status line is written: headers set on another layer are copied there. */
  beforeStart?: () => void;
  /** Whether another layer has answered the request already (shutdown's 503 for a waiting GET). */
  answeredElsewhere?: () => boolean;
  /**
   * Runs once when a stage of this exchange threw (fail): what it holds upstream, and the edge's answer. With
   * `client`, nothing of the answer was sent: answer the failure there (respondLocally, the table's edge_failure); without
   * it, the answer had begun and the connection is closed after this: the exchange ends by the edge.
   * Without the option, the failure is answered with no exchange to settle.
   */
  onFailure?: (client: AnswerWriter | undefined) => void;
}

export class ClientResponse {
  #started = false;
  #failed = false;
  /**
   * Every callback of this exchange that runs outside Fastify's try/catch (stream listeners, timers, the
   * upstream's callbacks) is wrapped by this: what it throws ends this exchange (fail), not the process.
   */
  readonly guard: Guard = guardWith((err) => this.fail(err));

  constructor(
    readonly raw: ServerResponse,
    /** The request's HTTP method: a GET's stream is the long-lived standalone one. */
    readonly method: string,
    readonly log: RelayLog,
    private readonly options: ClientResponseOptions = {},
  ) {}

  /** The answer has been started (here or elsewhere), or the client is gone: nothing more may be sent. */
  get closed(): boolean {
    return (
      this.#started ||
      this.raw.headersSent ||
      this.raw.destroyed ||
      (this.options.answeredElsewhere?.() ?? false)
    );
  }

  /** Sets the status and headers to be written with the first bytes (status undefined: keep the one set). */
  start(status?: number, headers?: OutgoingHttpHeaders): void {
    if (!this.#started) {
      this.#started = true;
      this.options.beforeStart?.();
    }
    if (status !== undefined) this.raw.statusCode = status;
    if (headers !== undefined)
      for (const name of Object.keys(headers)) this.raw.setHeader(name, headers[name]!);
  }

  /**
   * Sends a whole body: one write for one piece (status line, headers and body together); a held body
   * that came in several chunks goes on as those chunks, corked into as few writes, never copied into one.
   */
  sendWhole(body: Uint8Array | string | readonly (Uint8Array | string)[], status?: number): void {
    this.start(status);
    // A 204 or 304 has no body, and no Content-Length (RFC 9110 section 8.6).
    if (this.raw.statusCode === 204 || this.raw.statusCode === 304) {
      this.raw.end();
      return;
    }
    const pieces = typeof body === 'string' || !Array.isArray(body) ? [body as Uint8Array | string] : body;
    let length = 0;
    for (const piece of pieces)
      length += typeof piece === 'string' ? Buffer.byteLength(piece) : piece.byteLength;
    this.raw.setHeader('content-length', length);
    if (pieces.length === 1) {
      this.raw.end(pieces[0]);
      return;
    }
    this.raw.cork();
    for (const piece of pieces) this.raw.write(piece);
    this.raw.end();
  }

  /**
   * Writes an answer of the edge's own in place of the upstream's; upstream headers of another body go. Called
   * only by respondLocally (local-reply.ts), which also settles the exchange's outcome.
   */
  sendAnswer(answer: EdgeHttpError): void {
    this.start();
    this.raw.removeHeader('content-type');
    this.raw.removeHeader('content-encoding');
    this.start(answer.status, answer.headers);
    this.sendWhole(answer.body);
  }

  /** Streams a body the edge does not look into, with backpressure; a client that leaves takes it with it. */
  pipeFrom(source: Readable): void {
    this.start();
    this.raw.once(
      'close',
      this.guard(() => source.destroy()),
    );
    source.once(
      'error',
      this.guard(() => this.raw.destroy()),
    );
    source.pipe(this.raw);
  }

  /**
   * A stage of this exchange threw: the exchange ends here, the edge serves on. Logged at error level; the
   * client gets a 500 JSON-RPC error when nothing of the answer was sent, else its connection is closed (a
   * half-sent answer cannot be completed well-formed). Never throws.
   */
  fail(err: unknown): void {
    const raw = this.raw;
    this.log.error({ err }, EXCHANGE_FAILED);
    if (this.#failed) return;
    this.#failed = true;
    // The failed stage's hook before the status line does not run now: the answer is the edge's own.
    this.#started = true;
    try {
      if (raw.headersSent || raw.writableEnded || raw.destroyed) {
        this.options.onFailure?.(undefined);
        raw.destroy();
        return;
      }
      // Whatever the failed stage set (the upstream's headers) goes.
      for (const name of raw.getHeaderNames()) raw.removeHeader(name);
      const client = answerWriter({
        isClosed: () => raw.headersSent || raw.destroyed,
        sendAnswer: (answer) => this.sendAnswer(answer),
      });
      if (this.options.onFailure !== undefined) this.options.onFailure(client);
      else respondLocally(undefined, client, edgeAnswer('edge_failure', {}));
    } catch (second) {
      this.log.error(
        { err: second },
        'mcp-edge could not answer the failed exchange; closing its connection',
      );
      raw.destroy();
    }
  }
}

/**
 * Writes to the client what one event-loop turn produced as one write (one syscall for a small answer:
 * status line, headers, body and the chunked terminator together). With nothing to write by the end of the
 * turn, the headers go out alone: a stream that stays silent (an idle GET stream) must still be seen open.
 */
export class CoalescedWriter {
  #pending: (Uint8Array | string)[] = [];
  #scheduled: NodeJS.Immediate | undefined;
  #ended = false;

  readonly #flushGuarded: () => void;
  readonly #resumeGuarded: () => void;

  constructor(
    private readonly raw: ServerResponse,
    /** Called when the client's connection cannot take more for now; `resume` once it drains. */
    private readonly pause: () => void,
    private readonly resume: () => void,
    /** The exchange's guard (ClientResponse.guard): the flush runs in an immediate, outside any try. */
    guard: Guard,
  ) {
    this.#flushGuarded = guard(() => this.#flush());
    this.#resumeGuarded = guard(() => this.resume());
    this.#schedule();
  }

  write(pieces: readonly (Uint8Array | string)[]): void {
    if (this.#ended || pieces.length === 0) return;
    for (const piece of pieces) this.#pending.push(piece);
    this.#schedule();
  }

  /** Writes what is pending and ends the response, in one write when it can. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#cancel();
    if (this.raw.destroyed) return;
    this.raw.cork();
    this.#writePending();
    this.raw.end();
    this.raw.uncork();
  }

  /** Stops without writing (the client is gone). */
  cancel(): void {
    this.#ended = true;
    this.#cancel();
    this.#pending = [];
  }

  #schedule(): void {
    if (this.#scheduled === undefined) this.#scheduled = setImmediate(this.#flushGuarded);
  }

  #cancel(): void {
    if (this.#scheduled !== undefined) clearImmediate(this.#scheduled);
    this.#scheduled = undefined;
  }

  #flush(): void {
    this.#scheduled = undefined;
    if (this.#ended || this.raw.destroyed) return;
    if (this.#pending.length === 0) {
      if (!this.raw.headersSent) this.raw.flushHeaders();
      return;
    }
    this.raw.cork();
    const more = this.#writePending();
    // Listen before uncorking: the socket may take it all at once and emit 'drain' inside uncork() (it does
    // on Node 24), and a listener added after it would wait forever, the upstream paused, the client too.
    if (!more) {
      this.pause();
      this.raw.once('drain', this.#resumeGuarded);
    }
    this.raw.uncork();
  }

  #writePending(): boolean {
    const pieces = this.#pending;
    if (pieces.length === 0) return true;
    this.#pending = [];
    let more = true;
    for (const piece of pieces) more = this.raw.write(piece);
    return more;
  }
}
