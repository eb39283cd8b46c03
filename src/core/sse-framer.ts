// Incremental Server-Sent Events framer over bytes (WHATWG "event stream interpretation").
//
// What it reports (its items, and which bytes each holds) is described in sse-item.ts; how held pieces
// are joined and kept, in sse-pieces.ts; closing an event cut off half-sent, in sse-cut.ts.
//
// Memory: between pushes, `heldBytes` <= the block's raw bound + 4096 (the held raw bytes of the current
// block, plus the capped value of an `event`/`id`/`retry` field in progress); the block's bounds are
// maxDataBytes and maxRawBytes, or what `holdPast` raised them to for it. A bound is detected at the exact
// byte that crosses it, whatever the chunking: 'oversized-start' carries at most the block's data bound + 1
// data bytes. Held chunk pieces are kept by reference until their block completes (the caller must not
// mutate a pushed chunk; Node stream chunks are never reused); a piece that is less than half of its
// underlying buffer is copied so a small piece never pins a large buffer. `raw`, `data` and
// 'oversized-data' pieces may be views into pushed chunks. The `data` of an event that came in several
// chunks is a view into the core's shared scratch buffer (contiguousView): read it before the next push.
// Forwarding the pieces and reading one reused buffer costs no new buffer per large event (measured: 10
// against 24 ms CPU per 8 MiB event, most of the difference garbage collection).

import type { Buffer } from 'node:buffer';
import { asBuffer, BOM, COLON, CR, contiguousView, LF, SPACE } from './bytes.js';
import { DATA, EVENT, FieldValue, fieldOfName, ID, NAME_CAP, OTHER, RETRY } from './sse-field.js';
import { assertBound, defaultMaxRawBytes, type SseFramerOptions, type SseItem } from './sse-item.js';
import { concatBytes, joinDataRanges, NO_BYTES, retainable } from './sse-pieces.js';

export { CUT_EVENT_TYPE, closingOfCutEvent, endsBetweenEvents } from './sse-cut.js';
export { SSE_FIELD_VALUE_CAP } from './sse-field.js';
export type { SseFramerOptions, SseItem } from './sse-item.js';

// Where the parser is within the current line.
const BOM_CHECK = 0; // at the very start of the stream, matching an optional UTF-8 BOM
const LINE_START = 1; // nothing of the line consumed yet
const NAME = 2; // inside the field name
const AFTER_COLON = 3; // right after the colon: one leading space is still to be skipped
const VALUE = 4; // inside the field value
const COMMENT = 5; // inside a comment line

/** A field name shorter than this is matched byte by byte; longer ones are searched natively. */
const SHORT_NAME_SCAN = 16;

export class SseFramer {
  private readonly maxDataBytes: number;
  private readonly maxRawBytes: number;
  private readonly holdPast: SseFramerOptions['holdPast'];
  private ended = false;

  // Line state; survives chunk boundaries.
  private state = BOM_CHECK;
  private bomMatched = 0;
  /** The previous byte was a CR line ending: an LF right after it is part of the same line ending. */
  private pendingLF = false;
  private readonly nameBytes = new Uint8Array(NAME_CAP);
  private nameLength = 0;
  private field = OTHER;
  private readonly fieldValue = new FieldValue();

  // Block state.
  /** Raw bytes of the current block consumed so far; also the block offset of the next byte. */
  private rawLength = 0;
  /** Pieces of the current block from earlier chunks (held blocks only). */
  private held: Uint8Array[] = [];
  private heldRawBytes = 0;
  /** Flat [start, end] pairs, block offsets of each completed data value (held blocks only). */
  private dataRanges: number[] = [];
  private dataLength = 0;
  private dataLines = 0;
  private dataValueStart = 0;
  private dataValueLength = 0;
  private event: string | undefined = undefined;
  private id: string | undefined = undefined;
  private retry: string | undefined = undefined;
  private oversizedBound: 'data' | 'raw' | null = null;
  /** The current block's bounds: the stream's, or what holdPast raised them to (asked once per block). */
  private blockMaxData: number;
  private blockMaxRaw: number;
  private askedHoldPast = false;

  // Per-push state.
  private chunk: Uint8Array = NO_BYTES;
  /** The chunk as a Buffer view, for its native (memchr) indexOf. */
  private searchable: Buffer = NO_BYTES;
  /** Where the current block starts in this chunk. */
  private blockStart = 0;
  private nextLF = -1;
  private nextCR = -1;
  private out: SseItem[] = [];
  /** 'oversized-data' pieces not yet emitted; merged into one item per run. */
  private pieces: Uint8Array[] = [];

  constructor(options: SseFramerOptions) {
    assertBound('maxDataBytes', options.maxDataBytes);
    const maxRawBytes = options.maxRawBytes ?? defaultMaxRawBytes(options.maxDataBytes);
    assertBound('maxRawBytes', maxRawBytes);
    this.maxDataBytes = options.maxDataBytes;
    this.maxRawBytes = maxRawBytes;
    this.holdPast = options.holdPast;
    this.blockMaxData = options.maxDataBytes;
    this.blockMaxRaw = maxRawBytes;
  }

  /** Bytes currently held: raw bytes of the current block kept from earlier chunks, plus a field value in progress. */
  get heldBytes(): number {
    return this.heldRawBytes + this.fieldValue.length;
  }

  /** Feed the next chunk; returns the items completed by it, in stream order. */
  push(chunk: Uint8Array): SseItem[] {
    if (this.ended) throw new Error('SseFramer: push() after end()');
    this.chunk = chunk;
    this.searchable = asBuffer(chunk);
    this.blockStart = 0;
    this.nextLF = -1;
    this.nextCR = -1;
    this.out = [];
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      i = this.step(i);
      if (this.oversizedBound === null) this.checkBounds(i);
    }
    if (this.oversizedBound === null && this.blockStart < n) {
      const piece = retainable(chunk.subarray(this.blockStart, n));
      this.held.push(piece);
      this.heldRawBytes += piece.length;
    }
    this.flushPieces();
    const out = this.out;
    this.out = [];
    this.chunk = NO_BYTES;
    this.searchable = NO_BYTES;
    return out;
  }

  /** End of stream: returns a 'tail' or 'oversized-end' (terminated: false) for an unterminated block, else []. */
  end(): SseItem[] {
    if (this.ended) return [];
    this.ended = true;
    this.out = [];
    if (this.oversizedBound !== null) {
      this.out.push(this.oversizedEnd(false));
    } else if (this.rawLength > 0) {
      this.out.push({ type: 'tail', raw: this.held });
    }
    this.resetBlock();
    const out = this.out;
    this.out = [];
    return out;
  }

  /** Consumes at least one byte at `i` (or changes state) and returns the next index. */
  private step(i: number): number {
    const b = this.chunk[i]!;
    if (this.state === BOM_CHECK) return this.stepBom(i, b);
    if (this.pendingLF) {
      this.pendingLF = false;
      if (b === LF) {
        this.rawLength++;
        return i + 1;
      }
    }
    if (b === LF || b === CR) {
      if (this.state === LINE_START) {
        this.rawLength++;
        this.pendingLF = b === CR;
        this.dispatch(i + 1);
        return i + 1;
      }
      this.endLine();
      this.rawLength++;
      this.pendingLF = b === CR;
      this.state = LINE_START;
      return i + 1;
    }
    switch (this.state) {
      case LINE_START:
        this.state = b === COLON ? COMMENT : NAME;
        this.nameLength = 0;
        return i;
      case NAME:
        return this.stepName(i);
      case AFTER_COLON:
        if (b === SPACE) {
          this.rawLength++;
          i++;
        }
        this.beginValue();
        this.state = VALUE;
        return i;
      case VALUE:
        return this.stepValue(i);
      default:
        return this.stepComment(i);
    }
  }

  private stepBom(i: number, b: number): number {
    if (b === BOM[this.bomMatched]) {
      this.bomMatched++;
      this.rawLength++;
      if (this.bomMatched === BOM.length) this.state = LINE_START;
      return i + 1;
    }
    // Not a BOM after all: the bytes matched so far start a field name that is no known field.
    this.state = this.bomMatched > 0 ? NAME : LINE_START;
    this.nameLength = this.bomMatched > 0 ? NAME_CAP + 1 : 0;
    return i;
  }

  private stepName(i: number): number {
    const end = this.limitToRawBound(i, this.lineEnd(i));
    const colon = this.indexOfColon(i, end);
    const nameEnd = colon >= 0 ? colon : end;
    // Keep the first NAME_CAP bytes of the name; count all of them (a longer name is no known field).
    const kept = Math.min(nameEnd - i, Math.max(0, NAME_CAP - this.nameLength));
    for (let k = 0; k < kept; k++) this.nameBytes[this.nameLength + k] = this.chunk[i + k]!;
    this.nameLength += nameEnd - i;
    if (colon < 0) {
      this.rawLength += end - i;
      return end;
    }
    this.rawLength += colon + 1 - i;
    this.completeName();
    this.state = AFTER_COLON;
    return colon + 1;
  }

  private stepValue(i: number): number {
    let end = this.limitToRawBound(i, this.lineEnd(i));
    if (this.field === DATA && this.oversizedBound === null) {
      end = Math.min(end, i + (this.blockMaxData - this.dataLength) + 1);
    }
    const length = end - i;
    if (this.field === DATA) {
      this.dataLength += length;
      if (this.oversizedBound === null) this.dataValueLength += length;
      else this.pieces.push(this.chunk.subarray(i, end));
    } else if (this.field !== OTHER) {
      this.fieldValue.append(this.chunk.subarray(i, end));
    }
    this.rawLength += length;
    return end;
  }

  private stepComment(i: number): number {
    const end = this.limitToRawBound(i, this.lineEnd(i));
    this.rawLength += end - i;
    return end;
  }

  /** Index of the next CR or LF at or after i in this chunk, or the chunk length. Amortized O(1) per line. */
  private lineEnd(i: number): number {
    if (this.nextLF < i) {
      const found = this.searchable.indexOf(LF, i);
      this.nextLF = found < 0 ? this.chunk.length : found;
    }
    if (this.nextCR < i) {
      const found = this.searchable.indexOf(CR, i);
      this.nextCR = found < 0 ? this.chunk.length : found;
    }
    return Math.min(this.nextLF, this.nextCR);
  }

  /** Stops a held block's step at the byte that crosses maxRawBytes, so the crossing is exact whatever the chunking. */
  private limitToRawBound(i: number, end: number): number {
    if (this.oversizedBound !== null) return end;
    return Math.min(end, i + (this.blockMaxRaw - this.rawLength) + 1);
  }

  private indexOfColon(i: number, end: number): number {
    if (end - i <= SHORT_NAME_SCAN) {
      for (let k = i; k < end; k++) if (this.chunk[k] === COLON) return k;
      return -1;
    }
    const found = this.searchable.subarray(i, end).indexOf(COLON);
    return found < 0 ? -1 : i + found;
  }

  /** The field name is complete (colon or line end reached). */
  private completeName(): void {
    this.field = fieldOfName(this.nameBytes, this.nameLength);
    this.nameLength = 0;
    if (this.field !== DATA) return;
    if (this.dataLines > 0) {
      this.dataLength++;
      if (this.oversizedBound !== null) this.pieces.push(Uint8Array.of(LF));
    }
    this.dataLines++;
  }

  private beginValue(): void {
    this.dataValueStart = this.rawLength;
    this.dataValueLength = 0;
    this.fieldValue.clear();
  }

  /** A non-blank line ended (its line ending not yet consumed). */
  private endLine(): void {
    if (this.state === NAME) this.completeName();
    if (this.state === NAME || this.state === AFTER_COLON) this.beginValue();
    if (this.state === COMMENT) return;
    switch (this.field) {
      case DATA:
        if (this.oversizedBound === null) {
          this.dataRanges.push(this.dataValueStart, this.dataValueStart + this.dataValueLength);
        }
        break;
      case EVENT:
        this.event = this.fieldValue.text();
        break;
      case ID: {
        // WHATWG: an id containing U+0000 is ignored.
        const id = this.fieldValue.text();
        if (!id.includes('\0')) this.id = id;
        break;
      }
      case RETRY:
        this.retry = this.fieldValue.text();
        break;
    }
    this.field = OTHER;
    this.fieldValue.clear();
  }

  private checkBounds(i: number): void {
    if (this.dataLength > this.blockMaxData) {
      if (!this.holdLonger(i)) this.becomeOversized('data', i);
    } else if (this.rawLength > this.blockMaxRaw) this.becomeOversized('raw', i);
  }

  /** The block's data crossed maxDataBytes at byte i-1: whether holdPast raised its bounds (asked once per block). */
  private holdLonger(i: number): boolean {
    if (this.holdPast === undefined || this.askedHoldPast) return false;
    this.askedHoldPast = true;
    const bound = this.holdPast(this.dataHeldAt(i), this.id);
    if (!(bound > this.blockMaxData)) return false;
    this.blockMaxData = bound;
    this.blockMaxRaw = Math.max(this.blockMaxRaw, defaultMaxRawBytes(bound));
    return true;
  }

  /** The data bytes of the current block joined so far, through byte i-1 (a copy). */
  private dataHeldAt(i: number): Uint8Array {
    const raw = concatBytes([...this.held, this.chunk.subarray(this.blockStart, i)]);
    const ranges = [...this.dataRanges];
    if (this.field === DATA) {
      // The data line in progress: its partial value (or, right after the colon, an empty one).
      const start = this.state === VALUE ? this.dataValueStart : this.rawLength;
      ranges.push(start, start + (this.state === VALUE ? this.dataValueLength : 0));
    }
    return ranges.length === 0 ? new Uint8Array(0) : joinDataRanges(raw, ranges, this.dataLength);
  }

  /** The block crossed a bound at byte i-1: report what is held and stop holding it. */
  private becomeOversized(bound: 'data' | 'raw', i: number): void {
    this.out.push({ type: 'oversized-start', heldData: this.dataHeldAt(i), id: this.id });
    this.oversizedBound = bound;
    this.held = [];
    this.heldRawBytes = 0;
    this.dataRanges = [];
  }

  /** A blank line ended the block; `end` is the chunk index just past its line ending. */
  private dispatch(end: number): void {
    if (this.oversizedBound !== null) {
      this.out.push(this.oversizedEnd(true));
    } else {
      const piece = this.chunk.subarray(this.blockStart, end);
      const whole = this.held.length === 0;
      const raw = this.held;
      raw.push(piece);
      let data: Uint8Array | null = null;
      if (this.dataLines > 0) {
        const bytes = whole ? piece : contiguousView(raw, this.heldRawBytes + piece.length);
        data = joinDataRanges(bytes, this.dataRanges, this.dataLength);
      }
      this.out.push({ type: 'event', raw, data, event: this.event, id: this.id, retry: this.retry });
    }
    this.resetBlock();
    this.blockStart = end;
  }

  private oversizedEnd(terminated: boolean): SseItem {
    this.flushPieces();
    return {
      type: 'oversized-end',
      rawBytes: this.rawLength,
      dataBytes: this.dataLength,
      hadData: this.dataLines > 0,
      event: this.event,
      id: this.id,
      bound: this.oversizedBound ?? 'data',
      terminated,
    };
  }

  private flushPieces(): void {
    if (this.pieces.length === 0) return;
    this.out.push({ type: 'oversized-data', data: concatBytes(this.pieces) });
    this.pieces = [];
  }

  private resetBlock(): void {
    this.rawLength = 0;
    this.held = [];
    this.heldRawBytes = 0;
    this.dataRanges = [];
    this.dataLength = 0;
    this.dataLines = 0;
    this.event = undefined;
    this.id = undefined;
    this.retry = undefined;
    this.oversizedBound = null;
    this.blockMaxData = this.maxDataBytes;
    this.blockMaxRaw = this.maxRawBytes;
    this.askedHoldPast = false;
  }
}
