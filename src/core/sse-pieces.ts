// How the SSE framer joins and keeps the pieces of a block: one buffer only where one is read, a view
// where a single piece will do, and a copy of a small piece so it never pins a large buffer.
import { Buffer } from 'node:buffer';
import { LF } from './bytes.js';

/** What the framer points at between pushes (shared: never written to). */
export const NO_BYTES = Buffer.alloc(0);

/** One buffer holding all pieces in order; a single piece is returned as is (no copy). */
export function concatBytes(pieces: readonly Uint8Array[]): Uint8Array {
  if (pieces.length === 1) return pieces[0]!;
  let total = 0;
  for (const piece of pieces) total += piece.length;
  // Not zero-filled: every byte is written below (a 1 MiB event saves its memset).
  const joined = Buffer.allocUnsafe(total);
  let offset = 0;
  for (const piece of pieces) {
    joined.set(piece, offset);
    offset += piece.length;
  }
  return joined;
}

/** The data values at `ranges` (flat [start, end] pairs into `raw`) joined with LF; one value is a subarray of raw. */
export function joinDataRanges(raw: Uint8Array, ranges: readonly number[], joinedLength: number): Uint8Array {
  if (ranges.length === 2) return raw.subarray(ranges[0]!, ranges[1]!);
  const joined = Buffer.allocUnsafe(joinedLength);
  let offset = 0;
  for (let k = 0; k < ranges.length; k += 2) {
    if (k > 0) joined[offset++] = LF;
    const value = raw.subarray(ranges[k]!, ranges[k + 1]!);
    joined.set(value, offset);
    offset += value.length;
  }
  return joined;
}

/** A piece to keep past this push: copied when it is a small part of a larger buffer, so it pins no more than it counts. */
export function retainable(piece: Uint8Array): Uint8Array {
  return piece.byteLength * 2 < piece.buffer.byteLength ? new Uint8Array(piece) : piece;
}
