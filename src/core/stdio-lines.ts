// Newline-delimited JSON-RPC, as the MCP stdio transport frames it: one message per line. The framer never
// holds more of a line than `holdBytes` + 1: past that the line is "overflowing", its head is handed over
// once and the rest passes by in the chunks it came in, while a constant-memory scanner reads the envelope
// (id, method) from the whole line, so an answer can be matched to its request even when the id comes last.
import { CR, LF } from './bytes.js';
import { EnvelopeHeadScanner } from './envelope-head.js';
import type { JsonRpcId } from './types.js';

export interface LineEnvelope {
  id: JsonRpcId | undefined;
  method: string | undefined;
  hasResult: boolean;
  hasError: boolean;
}

export type LineEvent =
  /** A whole line of at most holdBytes bytes, without its LF (and a CR before it). */
  | { kind: 'line'; bytes: Uint8Array; envelope: LineEnvelope }
  /** The line passed holdBytes: its first holdBytes + 1 bytes, and what the envelope shows so far. */
  | { kind: 'overflow'; head: Uint8Array; envelope: LineEnvelope }
  /** More bytes of an overflowing line (a view of the pushed chunk: keep it only to forward it). */
  | { kind: 'overflow-data'; bytes: Uint8Array }
  /** The overflowing line ended: its size (with the head) and its envelope, read from all of it. */
  | { kind: 'overflow-end'; totalBytes: number; envelope: LineEnvelope };

function isBlank(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== CR) return false;
  return true;
}

export class LineFramer {
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  private overflowing = false;
  private totalBytes = 0;
  private scanner = new EnvelopeHeadScanner();

  constructor(private holdBytes: number) {}

  /** Applies from the next line on. */
  setHoldBytes(holdBytes: number): void {
    this.holdBytes = holdBytes;
  }

  /** Bytes held for the current line (at most holdBytes + 1). */
  get heldLength(): number {
    return this.heldBytes;
  }

  push(chunk: Uint8Array): LineEvent[] {
    const events: LineEvent[] = [];
    let from = 0;
    while (from < chunk.length) {
      const lf = chunk.indexOf(LF, from);
      const end = lf < 0 ? chunk.length : lf;
      if (end > from) this.take(chunk.subarray(from, end), events);
      if (lf < 0) break;
      this.endLine(events);
      from = lf + 1;
    }
    return events;
  }

  /** The input ended: a last line without its LF still counts as a line. */
  end(): LineEvent[] {
    const events: LineEvent[] = [];
    if (this.heldBytes > 0 || this.overflowing) this.endLine(events);
    return events;
  }

  private take(piece: Uint8Array, events: LineEvent[]): void {
    this.scanner.push(piece);
    this.totalBytes += piece.length;
    if (this.overflowing) {
      events.push({ kind: 'overflow-data', bytes: piece });
      return;
    }
    const room = this.holdBytes + 1 - this.heldBytes;
    if (piece.length < room) {
      // Copied: the caller may reuse the chunk, and a held view would pin the whole chunk.
      this.held.push(Uint8Array.prototype.slice.call(piece));
      this.heldBytes += piece.length;
      return;
    }
    this.held.push(piece.subarray(0, room));
    this.heldBytes += room;
    const head = concat(this.held, this.heldBytes);
    this.held = [];
    this.heldBytes = 0;
    this.overflowing = true;
    events.push({ kind: 'overflow', head, envelope: this.scanner.snapshot() });
    if (piece.length > room) events.push({ kind: 'overflow-data', bytes: piece.subarray(room) });
  }

  private endLine(events: LineEvent[]): void {
    const envelope = this.scanner.snapshot();
    if (this.overflowing) {
      events.push({ kind: 'overflow-end', totalBytes: this.totalBytes, envelope });
    } else if (this.heldBytes > 0) {
      let bytes = concat(this.held, this.heldBytes);
      if (bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1);
      if (!isBlank(bytes)) events.push({ kind: 'line', bytes, envelope });
    }
    this.held = [];
    this.heldBytes = 0;
    this.overflowing = false;
    this.totalBytes = 0;
    this.scanner = new EnvelopeHeadScanner();
  }
}

function concat(pieces: Uint8Array[], length: number): Uint8Array {
  if (pieces.length === 1) return pieces[0]!;
  const out = new Uint8Array(length);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

/**
 * A request body as lines for a stdio child: each message of a batch on its own line (the bytes the client
 * sent), CR and LF between tokens (JSON allows them only as whitespace, never inside a string) as spaces.
 */
export function bodyAsLines(body: Uint8Array, spans: readonly (readonly [number, number])[]): Uint8Array[] {
  return spans.map(([start, end]) => {
    const line = Uint8Array.prototype.slice.call(body.subarray(start, end)) as Uint8Array;
    for (let i = 0; i < line.length; i++) if (line[i] === LF || line[i] === CR) line[i] = 0x20;
    return line;
  });
}
