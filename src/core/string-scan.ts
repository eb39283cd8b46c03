// Finding the end of a JSON string in a message's bytes, validating it as JSON.parse would (the caller has
// checked the bytes are valid UTF-8): the one place that decides it, for a whole message (scanString) and for
// one that passes in chunks (scanStringPiece). Big messages are mostly one long string, so this is the scan's hot
// loop: a short string is read here in JavaScript, a long one 16 bytes per step by the WebAssembly SIMD
// loop of string-scan.wat, over windows of the message copied to its memory (copying runs several times
// faster than any byte loop, and the windows keep the module's memory fixed whatever a message's size).

import { BACKSLASH, QUOTE } from './bytes.js';
import { STRING_SCAN_WASM } from './string-scan-wasm.js';

// Byte classes inside a string: 1 for what ends the fast run (a quote, a backslash, a control character).
const STRING_STOP = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) STRING_STOP[c] = 1;
STRING_STOP[QUOTE] = 1;
STRING_STOP[BACKSLASH] = 1;
// After a backslash: 1 for a one-character escape, 2 for \u.
const ESCAPE = new Uint8Array(256);
for (const ch of '"\\/bfnrt') ESCAPE[ch.charCodeAt(0)] = 1;
ESCAPE[0x75] = 2;
const HEX = new Uint8Array(256);
for (const ch of '0123456789abcdefABCDEF') HEX[ch.charCodeAt(0)] = 1;

/** What a scan answers for bytes that are not a JSON string. */
export const INVALID = -1;

/** A body scan's answer when `end` came first: where to go on (encoded below -1). */
function resumeAt(i: number): number {
  return -2 - i;
}

/**
 * Scans a string's body from `from` (past its opening quote) up to `end`: the index past the closing quote,
 * INVALID, or resumeAt(i) when `end` comes first (i: `end`, or an escape that `end` cuts).
 */
function scanStringBody(buf: Uint8Array, from: number, end: number): number {
  let i = from;
  const lastQuad = end - 4;
  for (;;) {
    // Four bytes per step while none of them stops the run (measured: about a quarter faster on prose).
    while (
      i <= lastQuad &&
      (STRING_STOP[buf[i]!]! |
        STRING_STOP[buf[i + 1]!]! |
        STRING_STOP[buf[i + 2]!]! |
        STRING_STOP[buf[i + 3]!]!) ===
        0
    )
      i += 4;
    while (i < end && STRING_STOP[buf[i]!] === 0) i++;
    if (i >= end) return resumeAt(i);
    const c = buf[i]!;
    if (c === QUOTE) return i + 1;
    if (c !== BACKSLASH) return INVALID;
    if (i + 1 >= end) return resumeAt(i);
    const escapeClass = ESCAPE[buf[i + 1]!];
    if (escapeClass === 1) {
      i += 2;
    } else if (escapeClass === 2) {
      // As JSON.parse: \uXXXX, and a byte after it (the string cannot end there).
      if (i + 5 >= end) return resumeAt(i);
      if ((HEX[buf[i + 2]!]! & HEX[buf[i + 3]!]! & HEX[buf[i + 4]!]! & HEX[buf[i + 5]!]!) === 0)
        return INVALID;
      i += 6;
    } else {
      return INVALID;
    }
  }
}

interface SimdScanner {
  window: Uint8Array;
  scanStringBody(from: number, end: number): number;
}

/** The module's window: 4 pages (the .wat keeps its tables on page 4). */
const WINDOW_BYTES = 4 * 65536;

// The part of the WebAssembly API used here (this project's TypeScript libs do not declare it).
declare const WebAssembly:
  | {
      Module: new (bytes: Uint8Array) => object;
      Instance: new (module: object) => { exports: Record<string, unknown> };
    }
  | undefined;

/** The SIMD scanner, or undefined where WebAssembly is off (`--jitless`): the JavaScript scan serves alone. */
function loadSimdScanner(): SimdScanner | undefined {
  if (typeof WebAssembly !== 'object') return undefined;
  try {
    const module = new WebAssembly.Module(Buffer.from(STRING_SCAN_WASM, 'base64'));
    const { exports } = new WebAssembly.Instance(module);
    const memory = exports.memory as { buffer: ArrayBuffer };
    return {
      window: new Uint8Array(memory.buffer, 0, WINDOW_BYTES),
      scanStringBody: exports.scanStringBody as (from: number, end: number) => number,
    };
  } catch {
    return undefined;
  }
}

let simd = loadSimdScanner();

/** Turns the SIMD scanner off or back on (for tests, which compare the two scans); whether it is on. */
export function useSimdStringScan(on: boolean): boolean {
  simd = on ? loadSimdScanner() : undefined;
  return simd !== undefined;
}

/** Bytes read in JavaScript before a string counts as long: keys, types and ids end well before. */
const SHORT_STRING_BYTES = 128;
/** The first window for a long string; each next one doubles, so a string of n bytes copies under 4n. */
const FIRST_WINDOW_BYTES = 1024;

/** Scans a long string's body from `from` with the SIMD scanner: the same answers as scanStringBody to `len`. */
function scanLongStringBody(scanner: SimdScanner, buf: Uint8Array, from: number, len: number): number {
  let at = from;
  let size = FIRST_WINDOW_BYTES;
  while (len - at >= FIRST_WINDOW_BYTES) {
    const n = Math.min(size, len - at);
    scanner.window.set(buf.subarray(at, at + n));
    const found = scanner.scanStringBody(0, n);
    if (found >= 0) return at + found;
    if (found === INVALID) return INVALID;
    const next = -2 - found;
    // An escape cut at the window's end is read again at the start of the next; the last bytes go to JavaScript.
    if (next === 0) break;
    at += next;
    if (size < WINDOW_BYTES) size *= 2;
  }
  return scanStringBody(buf, at, len);
}

/**
 * Scans a string that may arrive in pieces, from `from` (inside it, not inside an escape) up to `end`: the
 * index past its closing quote, INVALID (a bad escape, a control character), or, when `end` comes first,
 * `-2 - i` where `i` is where the next piece goes on (`end`, or the start of an escape that `end` cuts).
 */
export function scanStringPiece(buf: Uint8Array, from: number, end: number): number {
  const scanner = simd;
  if (scanner !== undefined && end - from > SHORT_STRING_BYTES + FIRST_WINDOW_BYTES) {
    const head = scanStringBody(buf, from, from + SHORT_STRING_BYTES);
    if (head >= INVALID) return head;
    return scanLongStringBody(scanner, buf, -2 - head, end);
  }
  return scanStringBody(buf, from, end);
}

/** Index past the string whose opening quote is at `open`, or INVALID (unterminated, bad escape, control character). */
export function scanString(buf: Uint8Array, open: number, len: number): number {
  const found = scanStringPiece(buf, open + 1, len);
  return found >= 0 ? found : INVALID;
}
