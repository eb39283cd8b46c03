// Inspects an application/json response: held up to the ceiling that can apply to it, then forwarded
// byte for byte, or answered with a JSON-RPC error for the same id (HTTP 200: SDK clients surface only
// a 2xx JSON-RPC error to the caller with its code and data). The edge's own answers to messages of the
// batch it refused (the others went upstream) join the upstream's in one batch, however the body goes.
import { CLOSE_BRACKET, contiguousView, decodeUtf8, isJsonWhitespace, OPEN_BRACKET } from '../core/bytes.js';
import { EnvelopeHeadScanner } from '../core/envelope-head.js';
import { parseAnswerBody } from '../core/jsonrpc.js';
import { scanJsonRpcBody } from '../core/message-scan.js';
import type { JsonRpcErrorMessage } from '../core/refusals/answers.js';
import type { JsonRpcId } from '../core/types.js';
import {
  type JudgeContext,
  judgeMessage,
  judgeOversized,
  judgeScannedMessage,
  type Verdict,
} from './message-verdict.js';
import type { RelayVerdict } from './relay-verdict.js';
import { settleUnanswered } from './settled-requests.js';

/** The body was already answered (replaced early): nothing more for anyone (shared, never written to). */
const ANSWERED: RelayVerdict = Object.freeze({
  action: 'drop',
  toClient: [],
  toUpstream: [],
}) as unknown as RelayVerdict;

/** A body still under its hold bound: nothing for the client yet (shared, never written to). */
const HOLD: RelayVerdict = Object.freeze({
  action: 'hold',
  toClient: [],
  toUpstream: [],
}) as unknown as RelayVerdict;

export class JsonResponseInspector {
  readonly #chunks: Uint8Array[] = [];
  #held = 0;
  #scanner: EnvelopeHeadScanner | undefined;
  /**
   * Replaced early (over its hold bound): its chunks are let go, so there is no body left to read. An `end`
   * the upstream's stream had queued before the relay stopped reading can still come.
   */
  #answered = false;
  /** Observe mode past every ceiling, with answers of the edge's own: joins them to the body as it streams. */
  #joined: JoinedStream | undefined;

  /**
   * holdBytes: the ceiling of the answer this exchange waits for (sum over a batch; null: none).
   * waiting: ids of the requests this response answers, for answers too large to read to their id.
   * local: the edge's own answers (serialized messages) to the refused messages of this exchange's batch.
   */
  constructor(
    private readonly ctx: JudgeContext,
    private readonly holdBytes: number | null,
    private readonly waiting: JsonRpcId[],
    private readonly local: readonly string[] = [],
  ) {}

  get heldBytes(): number {
    return this.#held;
  }

  /**
   * Adds a chunk: held ('hold') while the body may still be within its bound. Past it, enforce mode answers
   * with the limit error ('drop': the caller stops reading), observe mode streams the body on ('forward').
   */
  push(chunk: Uint8Array): RelayVerdict {
    if (this.#answered) return ANSWERED;
    this.#held += chunk.length;
    if (this.#scanner !== undefined) {
      this.#scanner.push(chunk);
      return { action: 'forward', toClient: this.#joined?.push(chunk) ?? [chunk], toUpstream: [] };
    }
    this.#chunks.push(chunk);
    if (this.holdBytes === null || this.#held <= this.holdBytes) return HOLD;
    if (this.ctx.mode === 'enforce') return this.overflow();
    return { action: 'forward', toClient: this.startPassThrough(), toUpstream: [] };
  }

  /** The upstream's body ended: the held body judged whole, or the end of a streamed-on one. */
  end(): RelayVerdict {
    if (this.#answered) return ANSWERED;
    if (this.#scanner === undefined) return this.finish();
    this.endPassThrough();
    const closing = this.#joined?.end();
    return { action: 'forward', toClient: closing !== undefined ? [closing] : [], toUpstream: [] };
  }

  /** The whole body arrived within the hold bound. */
  finish(): RelayVerdict {
    if (this.#answered) return ANSWERED;
    const body = contiguousView(this.#chunks, this.#held);
    // The common case: nothing changes and the body goes on as it came (its chunks), never decoded to text.
    const asItCame: Uint8Array[] = this.#chunks.length === 1 ? [body] : this.#chunks.splice(0);
    const read = this.#judge(body);
    const local = this.local;
    if (read === undefined) {
      // A body no client can read stays as it came (joined to the edge's answers it would be read no better);
      // an empty one (the upstream took the rest of a batch without an answer) leaves the edge's alone.
      if (local.length === 0 || this.#held > 0)
        return { action: 'forward', toClient: asItCame, toUpstream: [] };
      return { action: 'replace', toClient: [`[${local.join(',')}]`], toUpstream: [] };
    }
    if (local.length === 0 && read.verdicts.every((verdict) => verdict.action === 'forward'))
      return { action: 'forward', toClient: asItCame, toUpstream: [] };
    const { parsed, verdicts } = read;
    const parts: string[] = [];
    const toUpstream: JsonRpcErrorMessage[] = [];
    verdicts.forEach((verdict, i) => {
      if (verdict.action === 'forward') {
        parts.push(decodeUtf8(parsed.messages[i]!.bytes));
      } else if (verdict.action === 'replace') {
        parts.push(JSON.stringify(verdict.replacement));
      } else {
        // Only a response may sit in a JSON body; anything else was dropped, and the client is told.
        parts.push(JSON.stringify(verdict.notice));
        if (verdict.answerToSender !== undefined) toUpstream.push(verdict.answerToSender);
      }
    });
    const replaced =
      local.length > 0
        ? `[${[...local, ...parts].join(',')}]`
        : parsed.batch
          ? `[${parts.join(',')}]`
          : (parts[0] ?? '');
    return { action: 'replace', toClient: [replaced], toUpstream };
  }

  /**
   * Each message of the body judged, read from its bytes. A body the scan does not read is read as a client
   * reads it (a byte order mark, bytes no valid UTF-8 holds: clients decode them and read on), so whatever a
   * client can read is judged and measured as the same message in an SSE event is; a body no client can read
   * either is counted as unparsable: undefined.
   */
  #judge(
    body: Uint8Array,
  ): { parsed: { batch: boolean; messages: { bytes: Uint8Array }[] }; verdicts: Verdict[] } | undefined {
    const scanned = scanJsonRpcBody(body);
    if (scanned !== undefined) {
      return {
        parsed: scanned,
        verdicts: scanned.messages.map((message) => judgeScannedMessage(this.ctx, message)),
      };
    }
    const parsed = parseAnswerBody(body);
    if (!parsed.ok) {
      this.ctx.observer.unparsable(this.ctx.direction, body.length, `JSON response: ${parsed.error}`);
      return undefined;
    }
    return {
      parsed,
      verdicts: parsed.messages.map((message) =>
        judgeMessage(this.ctx, message.bytes, message.value, message),
      ),
    };
  }

  /**
   * The body outgrew the hold bound (enforce mode): the answer cannot be delivered. Every request it
   * answers gets the limit error; the read part was at least this large.
   */
  overflow(): RelayVerdict {
    const errors: string[] = [];
    for (const id of this.waiting.length > 0 ? this.waiting : [null]) {
      const verdict = judgeOversized(
        this.ctx,
        { id: id ?? undefined, method: undefined, hasResult: true, hasError: false },
        this.#held,
        true,
      );
      if (verdict.action === 'replace') errors.push(JSON.stringify(verdict.replacement));
    }
    this.#chunks.length = 0;
    this.#answered = true;
    errors.unshift(...this.local);
    const single = this.local.length === 0 && (errors.length === 1 || this.waiting.length <= 1);
    const body = single ? (errors[0] ?? '') : `[${errors.join(',')}]`;
    return { action: 'drop', toClient: [body], toUpstream: [] };
  }

  /**
   * The body is over, however it ended (judged, replaced, unreadable, broken off, left by its client): a JSON
   * body answers its exchange's requests and no other stream can, so none of them waits any longer, in the
   * exchange or in its session.
   */
  letGo(): void {
    for (const id of this.ctx.answered?.ids() ?? []) settleUnanswered(this.ctx, id);
  }

  /** Observe mode: the body is larger than any ceiling; it is streamed on while its id is scanned for the record. */
  startPassThrough(): (Uint8Array | string)[] {
    const held = this.#chunks.splice(0);
    this.#scanner = new EnvelopeHeadScanner();
    for (const chunk of held) this.#scanner.push(chunk);
    if (this.local.length === 0) return held;
    const joined = new JoinedStream(this.local.join(','));
    this.#joined = joined;
    return held.flatMap((chunk) => joined.push(chunk));
  }

  /** Observe mode: the passed-through body ended. */
  endPassThrough(): void {
    if (this.#scanner === undefined) return;
    judgeOversized(this.ctx, this.#scanner.snapshot(), this.#held, false);
    this.#scanner = undefined;
  }
}

/**
 * A body streamed on with the edge's own answers joined in front of its messages, as one batch: after the
 * body's `[` (or, for a lone message, a `[` of the edge's, closed at the end), then a comma unless the
 * body's batch is empty. Only the first bytes are looked at; the rest passes as it comes.
 */
class JoinedStream {
  /** Before the body's first byte, after its `[`, or past the point where anything is added. */
  #at: 'start' | 'open' | 'through' = 'start';
  /** The body was a lone message: the edge's `[` wants its `]`. */
  #wrapped = false;

  constructor(private readonly own: string) {}

  push(chunk: Uint8Array): (Uint8Array | string)[] {
    if (this.#at === 'through') return [chunk];
    const out: (Uint8Array | string)[] = [];
    let from = 0;
    if (this.#at === 'start') {
      const first = skipWhitespace(chunk, 0);
      if (first === chunk.length) return [chunk];
      if (chunk[first] !== OPEN_BRACKET) {
        this.#wrapped = true;
        this.#at = 'through';
        return [chunk.subarray(0, first), `[${this.own},`, chunk.subarray(first)];
      }
      out.push(chunk.subarray(0, first + 1), this.own);
      this.#at = 'open';
      from = first + 1;
    }
    // After the body's `[`: its next byte that is not whitespace tells whether a comma goes in front of it.
    const next = skipWhitespace(chunk, from);
    out.push(chunk.subarray(from, next));
    if (next === chunk.length) return out;
    if (chunk[next] !== CLOSE_BRACKET) out.push(',');
    out.push(chunk.subarray(next));
    this.#at = 'through';
    return out;
  }

  /** What closes the joined batch when the body ends. */
  end(): string | undefined {
    if (this.#wrapped) return ']';
    return this.#at === 'start' ? `[${this.own}]` : undefined;
  }
}

function skipWhitespace(bytes: Uint8Array, from: number): number {
  let i = from;
  while (i < bytes.length && isJsonWhitespace(bytes[i])) i++;
  return i;
}
