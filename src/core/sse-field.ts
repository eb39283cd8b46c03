// Which field an SSE line is, told from the first bytes of its name: data, event, id or retry (WHATWG);
// any other name is a field the framer ignores. And the value of an `event`, `id` or `retry` line, capped.
import { Buffer } from 'node:buffer';

// The fields, as the framer numbers them.
export const OTHER = 0;
export const DATA = 1;
export const EVENT = 2;
export const ID = 3;
export const RETRY = 4;

/** Longest field name we need to tell apart ("event", "retry"); longer names are unknown fields. */
export const NAME_CAP = 5;

/** The field whose name is the first `nameLength` bytes of `b` (at most NAME_CAP of them are kept). */
export function fieldOfName(b: Uint8Array, nameLength: number): number {
  switch (nameLength) {
    case 2:
      return b[0] === 0x69 && b[1] === 0x64 ? ID : OTHER; // id
    case 4:
      return b[0] === 0x64 && b[1] === 0x61 && b[2] === 0x74 && b[3] === 0x61 ? DATA : OTHER; // data
    case 5:
      if (b[0] === 0x65 && b[1] === 0x76 && b[2] === 0x65 && b[3] === 0x6e && b[4] === 0x74) return EVENT;
      if (b[0] === 0x72 && b[1] === 0x65 && b[2] === 0x74 && b[3] === 0x72 && b[4] === 0x79) return RETRY;
      return OTHER;
    default:
      return OTHER;
  }
}

/** Bytes kept of one `event`, `id` or `retry` value; the rest is dropped (the string may then end in U+FFFD). */
export const SSE_FIELD_VALUE_CAP = 4096;

/**
 * The value of an `event`, `id` or `retry` line in progress: its first SSE_FIELD_VALUE_CAP bytes, in a buffer
 * grown on demand (an idle stream, a GET that waits, costs no 4 KiB of it).
 */
export class FieldValue {
  #bytes: Buffer = Buffer.alloc(0);
  length = 0;

  /** Adds the next bytes of the value (what passes the cap is dropped). */
  append(bytes: Uint8Array): void {
    const kept = Math.min(bytes.length, SSE_FIELD_VALUE_CAP - this.length);
    if (kept <= 0) return;
    const needed = this.length + kept;
    if (needed > this.#bytes.length) {
      const grown = Buffer.alloc(Math.min(SSE_FIELD_VALUE_CAP, Math.max(64, 2 * needed)));
      grown.set(this.#bytes.subarray(0, this.length));
      this.#bytes = grown;
    }
    this.#bytes.set(bytes.subarray(0, kept), this.length);
    this.length += kept;
  }

  clear(): void {
    this.length = 0;
  }

  text(): string {
    // Buffer's native UTF-8 decoding: like TextDecoder (invalid bytes become U+FFFD, a BOM is kept), but far
    // cheaper for the short values of every small event.
    return this.#bytes.toString('utf8', 0, this.length);
  }
}
