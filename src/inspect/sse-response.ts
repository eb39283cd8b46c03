// Inspects an SSE response stream: every event is forwarded byte for byte as soon as it completes,
// or replaced whole by an error event for the same id; never cut, never re-serialized. Its events come from
// an HTTP server's bytes (push: SseFramer finds them) or from messages the shell frames (pushMessage: each
// message is one event, its bytes the message's with the SSE framing around them).
import { decodeUtf8 } from '../core/bytes.js';
import { EnvelopeHeadScanner } from '../core/envelope-head.js';
import { splitTopLevel } from '../core/json-scan.js';
import { parseLossily } from '../core/jsonrpc.js';
import { type MessageEvent, MessageSseItems, sseFraming } from '../core/message-events.js';
import { scanSingleMessage } from '../core/message-scan.js';
import { edgeError, type JsonRpcErrorMessage, sseErrorEvent } from '../core/refusals/answers.js';
import { closingOfCutEvent, SseFramer, type SseItem } from '../core/sse-framer.js';
import type { JsonRpcId } from '../core/types.js';
import {
  type JudgeContext,
  judgeMessage,
  judgeOversized,
  judgeScannedMessage,
  type Verdict,
} from './message-verdict.js';
import { addToClient, heldVerdict, type RelayVerdict } from './relay-verdict.js';
import { settleUnanswered } from './settled-requests.js';

export class SseResponseInspector {
  /** Where the events come from: created by the first push of bytes or of a message. */
  #framer: SseFramer | undefined;
  #messages: MessageSseItems | undefined;
  #scanner: EnvelopeHeadScanner | undefined;
  /** The last three bytes sent to the client (-1: none yet), oldest first: where the client's parser stands. */
  #sent1 = -1;
  #sent2 = -1;
  #sent3 = -1;
  #sawEventId = false;
  #answeredEarly = false;
  readonly #holdBytes: number;
  readonly #messageHoldBytes: number;

  /**
   * holdBytes: what an event is held to while it may be an answer this stream waits for, the sum of their
   * ceilings (null: no ceiling); an answer past it is replaced at once. messageHoldBytes: the largest ceiling
   * any other message can have (a notification, a server request, an answer to another request): an event
   * that is not one of the awaited answers is held on to there, so it is judged whole by its own ceiling.
   * endsWithItsAnswers: a call's stream (not a standalone GET stream), which has nothing left to deliver once
   * every request it carries is answered; an answer replaced early then makes a push say 'drop'.
   */
  constructor(
    private readonly ctx: JudgeContext,
    holdBytes: number | null,
    /** Called once per event that carries data (for the events counter). */
    private readonly onEvent?: () => void,
    private readonly endsWithItsAnswers = false,
    messageHoldBytes: number | null = holdBytes,
  ) {
    this.#holdBytes = holdBytes ?? Number.POSITIVE_INFINITY;
    this.#messageHoldBytes = Math.max(this.#holdBytes, messageHoldBytes ?? Number.POSITIVE_INFINITY);
  }

  /** Past holdBytes, an event is held on to messageHoldBytes unless it is an answer to be replaced now. */
  #holdPast(): ((heldData: Uint8Array) => number) | undefined {
    if (this.#messageHoldBytes <= this.#holdBytes) return undefined;
    return (heldData) => {
      const scanner = new EnvelopeHeadScanner();
      scanner.push(heldData);
      return this.#answersNow(scanner) ? this.#holdBytes : this.#messageHoldBytes;
    };
  }

  get heldBytes(): number {
    return (this.#framer?.heldBytes ?? 0) + (this.#messages?.heldBytes ?? 0);
  }

  /** An oversized answer was replaced early and the rest of its event is being skipped: none of it can be delivered. */
  get skippingReplacedAnswer(): boolean {
    return this.#answeredEarly;
  }

  /** Bytes of an SSE stream, as they arrived. */
  push(chunk: Uint8Array): RelayVerdict {
    this.#framer ??= new SseFramer({ maxDataBytes: this.#holdBytes, holdPast: this.#holdPast() });
    return this.#take(this.#framer.push(chunk), [chunk]);
  }

  /** An event of an answer made of messages: the client gets each message as one SSE event. */
  pushMessage(event: MessageEvent): RelayVerdict {
    this.#messages ??= new MessageSseItems(this.#holdBytes, this.#holdPast());
    const framed = sseFraming(event, this.#messages.inMessage);
    return this.#take(this.#messages.push(event, framed), framed);
  }

  /** The items of what arrived; `arrived` is its bytes for the client, as they come. */
  #take(items: readonly SseItem[], arrived: readonly Uint8Array[]): RelayVerdict {
    const out = heldVerdict();
    if (this.ctx.mode === 'observe') {
      // Observe mode forwards the stream as it arrives; framing only feeds the measurements.
      this.#forward(out, arrived);
      for (const item of items) this.#handle(item, heldVerdict());
      return out;
    }
    for (const item of items) this.#handle(item, out);
    // The rest of an oversized answer that was already replaced can never be delivered: once nothing else
    // waits on this call's stream, the relay stops reading it instead of draining it.
    if (this.endsWithItsAnswers && this.#answeredEarly && (this.ctx.answered?.size ?? 0) === 0)
      out.action = 'drop';
    return out;
  }

  end(): RelayVerdict {
    const out = heldVerdict();
    const sink = this.ctx.mode === 'observe' ? heldVerdict() : out;
    for (const item of this.#framer?.end() ?? []) this.#handle(item, sink);
    for (const item of this.#messages?.end() ?? []) this.#handle(item, sink);
    return out;
  }

  /**
   * An event of the edge's own must stand alone: after bytes that stop inside an event (an upstream that
   * broke off mid-event, an unterminated tail) that event is closed first as one clients ignore. The framer
   * also ends a CRLF block at its last CR (so CR-only streams are never delayed); the LF then opens the next
   * block, so a replacement of that block starts with the LF and the bytes before it stay exact.
   */
  #emitOwn(out: RelayVerdict, piece: string): void {
    if (this.#sent3 === 0x0d) this.#send(out, '\n', true);
    const closing = closingOfCutEvent(this.#sent1, this.#sent2, this.#sent3);
    if (closing !== '') this.#send(out, closing, true);
    this.#send(out, piece, true);
  }

  /** The upstream's own bytes of a block, as the pieces they came in. */
  #forward(out: RelayVerdict, raw: readonly Uint8Array[]): void {
    for (const piece of raw) this.#send(out, piece, false);
  }

  #send(out: RelayVerdict, piece: Uint8Array | string, own: boolean): void {
    addToClient(out, piece, own);
    const n = piece.length;
    const at = (k: number) => (typeof piece === 'string' ? piece.charCodeAt(k) : (piece[k] ?? -1));
    if (n >= 3) {
      this.#sent1 = at(n - 3);
      this.#sent2 = at(n - 2);
      this.#sent3 = at(n - 1);
    } else if (n === 2) {
      this.#sent1 = this.#sent3;
      this.#sent2 = at(0);
      this.#sent3 = at(1);
    } else if (n === 1) {
      this.#sent1 = this.#sent2;
      this.#sent2 = this.#sent3;
      this.#sent3 = at(0);
    }
  }

  /**
   * The stream ended (or broke) while requests of this exchange still wait for answers: each gets the error
   * `errorFor` words, so no caller waits for its own timeout. While `resumable` (the edge keeps running), a
   * stream that carried event ids is left to the client's resumption through the edge instead.
   */
  answerLost(errorFor: (id: JsonRpcId) => JsonRpcErrorMessage, resumable: boolean): RelayVerdict {
    const out = heldVerdict();
    const waiting = this.ctx.answered;
    if ((resumable && this.#sawEventId) || waiting === undefined) return out;
    for (const id of waiting.ids()) {
      settleUnanswered(this.ctx, id);
      this.#emitOwn(out, sseErrorEvent(errorFor(id)));
    }
    return out;
  }

  #handle(item: SseItem, out: RelayVerdict): void {
    if ((item.type === 'event' || item.type === 'oversized-end') && item.id !== undefined)
      this.#sawEventId = true;
    switch (item.type) {
      case 'event':
        if (item.data === null) {
          this.#forward(out, item.raw);
        } else if (item.data.length === 0) {
          // Empty data (2025-11-25's priming event: an id and `data:`): clients dispatch no message for it.
          this.onEvent?.();
          this.#forward(out, item.raw);
        } else {
          this.onEvent?.();
          this.#handleEvent(item.raw, item.data, item.id, out);
        }
        return;
      case 'tail':
        this.#forward(out, item.raw);
        return;
      case 'oversized-start':
        this.#scanner = new EnvelopeHeadScanner();
        this.#scanner.push(item.heldData);
        this.#answeredEarly = this.#answerEarly(item.heldData.length, item.id, out);
        return;
      case 'oversized-data':
        if (!this.#answeredEarly) this.#scanner?.push(item.data);
        return;
      case 'oversized-end': {
        if (item.hadData) this.onEvent?.();
        const scanner = this.#scanner;
        this.#scanner = undefined;
        if (this.#answeredEarly) {
          this.#answeredEarly = false;
          return;
        }
        if (!item.hadData || scanner === undefined) {
          // A block of comments and fields larger than any message may be: nothing a client can use.
          this.ctx.observer.unparsable(this.ctx.direction, item.rawBytes, 'oversized SSE block without data');
          return;
        }
        const head = scanner.snapshot();
        const verdict = judgeOversized(this.ctx, head, item.dataBytes, false, item.id);
        if (verdict.action === 'forward') {
          // Within its ceiling, but framed with more overhead than the edge holds: it cannot be sent whole.
          this.ctx.observer.unparsable(
            this.ctx.direction,
            item.rawBytes,
            'SSE event framing larger than the edge holds',
          );
          const lost = edgeError('answer_framing_too_large', {}, head.id ?? null);
          if (head.method === undefined) this.#emitOwn(out, sseErrorEvent(lost, item.id));
          return;
        }
        this.#apply(verdict, undefined, item.id, out);
        return;
      }
    }
  }

  /**
   * An oversized answer to a request of this stream is replaced as soon as it crosses the ceiling: the caller
   * learns now, not when the upstream has finished sending it (a 1 GiB event takes seconds), and the rest
   * of the event is skipped unread. Its size is then a lower bound. Anything else waits for the event's end.
   */
  #answerEarly(heldBytes: number, eventId: string | undefined, out: RelayVerdict): boolean {
    if (this.#scanner === undefined || heldBytes <= this.#holdBytes || !this.#answersNow(this.#scanner))
      return false;
    const head = this.#scanner.snapshot();
    const verdict = judgeOversized(this.ctx, head, heldBytes, true, eventId);
    // The event's id stays with its replacement, so a resuming client does not have the answer replayed.
    if (eventId !== undefined) this.#sawEventId = true;
    this.#apply(verdict, undefined, eventId, out);
    return true;
  }

  /**
   * Whether an event past holdBytes, whose head the scanner read, answers a request this stream waits for (its
   * id, or the only one waiting when no id came yet), which is then answered now, whatever the event holds:
   * even bytes that are not JSON. A request or notification is judged at its end (it is dropped, not
   * answered); so is an answer to anything else (a decoy `id` first, say), held to its own ceiling.
   */
  #answersNow(scanner: EnvelopeHeadScanner): boolean {
    if (this.ctx.mode !== 'enforce') return false;
    const head = scanner.snapshot();
    if (head.method !== undefined || !(head.hasResult || head.hasError || scanner.unreadable)) return false;
    const waiting = this.ctx.answered;
    if (head.id === undefined) return waiting?.size === 1;
    return waiting?.peek(head.id) !== undefined;
  }

  #handleEvent(
    raw: readonly Uint8Array[],
    data: Uint8Array,
    eventId: string | undefined,
    out: RelayVerdict,
  ): void {
    // The common case, one message that is valid JSON, is read from its bytes; the rest is decoded and parsed.
    const scanned = scanSingleMessage(data);
    if (scanned !== undefined) {
      this.#apply(judgeScannedMessage(this.ctx, scanned, eventId), raw, eventId, out);
      return;
    }
    const parsed = parseLossily(data);
    if (parsed === undefined) {
      this.ctx.observer.unparsable(this.ctx.direction, data.length, 'SSE data is not JSON');
      this.#forward(out, raw);
      return;
    }
    if (!Array.isArray(parsed.value)) {
      this.#apply(judgeMessage(this.ctx, data, parsed.value, undefined, eventId), raw, eventId, out);
      return;
    }
    this.#handleBatchEvent(raw, data, parsed.value, eventId, out);
  }

  /** A batch inside one event (2025-03-26): oversized elements are replaced or dropped, the others kept as sent. */
  #handleBatchEvent(
    raw: readonly Uint8Array[],
    data: Uint8Array,
    values: unknown[],
    eventId: string | undefined,
    out: RelayVerdict,
  ): void {
    const split = splitTopLevel(data);
    if (!split.ok || split.spans.length !== values.length) {
      this.#forward(out, raw);
      return;
    }
    const kept: string[] = [];
    let changed = false;
    split.spans.forEach(([start, end], i) => {
      const verdict = judgeMessage(this.ctx, data.subarray(start, end), values[i], undefined, eventId);
      if (verdict.action === 'forward') {
        kept.push(decodeUtf8(data.subarray(start, end)));
        return;
      }
      changed = true;
      if (verdict.action === 'replace') {
        kept.push(JSON.stringify(verdict.replacement));
      } else {
        this.#emitOwn(out, sseErrorEvent(verdict.notice));
        if (verdict.answerToSender !== undefined) out.toUpstream.push(verdict.answerToSender);
      }
    });
    if (!changed) {
      this.#forward(out, raw);
    } else if (kept.length > 0) {
      const idLine = eventId !== undefined ? `id: ${eventId}\n` : '';
      this.#emitOwn(out, `${idLine}event: message\ndata: [${kept.join(',')}]\n\n`);
    }
  }

  #apply(
    verdict: Verdict,
    raw: readonly Uint8Array[] | undefined,
    eventId: string | undefined,
    out: RelayVerdict,
  ): void {
    switch (verdict.action) {
      case 'forward':
        if (raw !== undefined) this.#forward(out, raw);
        return;
      case 'replace':
        this.#emitOwn(out, sseErrorEvent(verdict.replacement, eventId));
        if (eventId !== undefined) {
          // Kept with its id, so a resumption skips it; remembered, so a replay of it is replaced too.
          const endedItsStream = this.endsWithItsAnswers && (this.ctx.answered?.size ?? 0) === 0;
          this.ctx.answeredBefore?.replaced(eventId, verdict.subject, endedItsStream);
        }
        return;
      case 'drop':
        this.#emitOwn(out, sseErrorEvent(verdict.notice, eventId));
        if (verdict.answerToSender !== undefined) out.toUpstream.push(verdict.answerToSender);
        return;
    }
  }
}
