// What the SSE framer (sse-framer.ts) reports of a stream: its items, which bytes each one holds, and
// the bounds it is built with.
//
// The proxy forwards an upstream SSE stream event by event: each complete block is reported with its
// exact bytes (`raw`, the pieces of the chunks it came in) so it can be forwarded byte for byte, and with
// its joined `data` so the JSON-RPC message can be measured. A block whose data or raw size crosses a
// bound is no longer held: it is reported as 'oversized-start' / 'oversized-data'* / 'oversized-end' and
// never kept whole in memory.
//
// Where bytes between blocks go (no byte is ever lost or duplicated):
// - A block ends at the line ending of its terminating blank line. When that line ending is CR, the
//   block ends at the CR and is reported at once (a proxy must not wait for a byte that may never
//   come); an LF that follows such a CR completes the CRLF but is counted as the first byte of the
//   NEXT block. So with CRLF endings, `raw` ends with "\r\n\r" and the next block starts with "\n".
//   This keeps the items independent of how the stream is chunked.
// - A blank line that follows a blank line is a block of its own: an 'event' with `data: null` whose
//   `raw` holds only line-ending bytes (a client dispatches nothing for it).
// - An unterminated block at end of stream is a 'tail' (or an 'oversized-end' with terminated: false).
//
// Fields: `event`, `id`, `retry` are this block's own (last one wins; an id containing U+0000 is ignored,
// as WHATWG says; `retry` is passed on as written). A block is oversized when its joined data exceeds
// maxDataBytes (or the larger bound holdPast gave it), or its raw bytes before the final byte that dispatches
// it exceed maxRawBytes (or, likewise, the raw bound that goes with it); `bound` names the one crossed first
// ('data' when both cross at the same byte).

export interface SseFramerOptions {
  /** Data bytes (joined message) beyond which an event is no longer held in memory. */
  maxDataBytes: number; // may be Infinity
  /** Raw bytes of one block beyond which it is no longer held (guards comment floods). Default: 2 * maxDataBytes + 65536 (Infinity if maxDataBytes is Infinity). */
  maxRawBytes?: number;
  /**
   * Asked once per block, when its data first crosses maxDataBytes, with the data held so far and the block's
   * `id:` if it came before: a larger data bound for this block holds it on to there (its raw bound grows to
   * match), anything else lets it go as oversized now. A caller that holds an event only to the ceiling of the
   * answers it waits for holds one that turns out to be something else to that message's own ceiling.
   */
  holdPast?: (heldData: Uint8Array, id: string | undefined) => number;
}

export type SseItem =
  /** A complete block within the bounds. raw = its exact bytes in order, from its first byte through the end of the terminating blank line's line ending. data = joined data values (null if no data line). */
  | {
      type: 'event';
      raw: readonly Uint8Array[];
      data: Uint8Array | null;
      event: string | undefined;
      id: string | undefined;
      retry: string | undefined;
    }
  /** The current block just crossed a bound. heldData = the data bytes joined so far (what would be the start of the message). From now on the block is not held. */
  | {
      type: 'oversized-start';
      heldData: Uint8Array /** The block's `id:` if it came before the crossing. */;
      id: string | undefined;
    }
  /** Further data bytes of the oversized block, in order. heldData + all these pieces concatenated == exactly the joined message (LF separators between data lines included, no trailing LF). */
  | { type: 'oversized-data'; data: Uint8Array }
  /** The oversized block ended (blank line seen, or end of stream). */
  | {
      type: 'oversized-end';
      rawBytes: number;
      dataBytes: number;
      hadData: boolean;
      event: string | undefined;
      id: string | undefined;
      bound: 'data' | 'raw';
      terminated: boolean;
    }
  /** At end of stream: bytes of an unterminated block that was held (forward them as-is; a client discards an unterminated event). */
  | { type: 'tail'; raw: readonly Uint8Array[] };

export function defaultMaxRawBytes(maxDataBytes: number): number {
  return maxDataBytes === Number.POSITIVE_INFINITY ? maxDataBytes : 2 * maxDataBytes + 65536;
}

export function assertBound(name: string, value: number): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RangeError(`SseFramer: ${name} must be a number >= 0 (Infinity allowed), got ${String(value)}`);
  }
}
