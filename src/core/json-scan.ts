// The one walker over JSON bytes, without JSON.parse: whitespace, values, object members and array elements.
// Two ways to pass a value: scanValue validates it as JSON.parse would (the caller has checked the bytes are
// valid UTF-8), skipValue only finds where it ends (its strings validated, bare tokens and members left to
// whoever parses it). Where a string ends is decided in one place, string-scan.ts.
//
// Everything here runs on every message (up to 16 MiB), so two rules hold throughout:
// - no recursion: documents can nest 100,000 levels deep, so depth lives in counters and explicit stacks;
// - a repeated key wins last, as in JSON.parse (for the callers that read members).
//
// A scan records what a content ceiling needs (`scanStats`): the deepest nesting and the longest string.

import {
  asBuffer,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from './bytes.js';
import { INVALID, scanString } from './string-scan.js';

/** A byte range `[start, end)` inside a buffer. */
export type ByteSpan = readonly [start: number, end: number];

/** Top-level structure of a complete JSON text: one value, or an array (batch) of elements. Spans exclude surrounding whitespace. */
export type TopLevelSplit = { ok: true; batch: boolean; spans: ByteSpan[] } | { ok: false; error: string };

/** An index, or this when the bytes are not what was expected. */
export { INVALID };

/**
 * What the scans since the last resetScanStats() saw: the deepest nesting of objects and arrays (a top-level
 * object is 1) and the longest string (its bytes as sent, quotes included). Scanning is synchronous, so
 * one record serves every scan.
 */
export const scanStats = { depth: 0, longestString: 0 };

export function resetScanStats(): void {
  scanStats.depth = 0;
  scanStats.longestString = 0;
}

function reachedDepth(depth: number): void {
  if (depth > scanStats.depth) scanStats.depth = depth;
}

const WHITESPACE = new Uint8Array(256);
for (const c of [0x20, 0x0a, 0x0d, 0x09]) WHITESPACE[c] = 1;
const DIGIT = new Uint8Array(256);
for (let c = 0x30; c <= 0x39; c++) DIGIT[c] = 1;
/** Bytes that may appear in a bare JSON token (number, true, false, null), for skipping one. */
export const PRIMITIVE_CHAR = new Uint8Array(256);
for (const ch of '0123456789+-.eEtrufalsn') PRIMITIVE_CHAR[ch.charCodeAt(0)] = 1;
/** Byte classes for the bracket loops: 1 a quote, 2 an opening bracket, 3 a closing one, 0 nothing to do. */
export const STRUCTURAL = new Uint8Array(256);
STRUCTURAL[QUOTE] = 1;
STRUCTURAL[OPEN_BRACE] = 2;
STRUCTURAL[OPEN_BRACKET] = 2;
STRUCTURAL[CLOSE_BRACE] = 3;
STRUCTURAL[CLOSE_BRACKET] = 3;

/** The index of the first byte at or after `pos` that is not JSON whitespace. */
export function skipWhitespace(buf: Uint8Array, pos: number): number {
  const len = buf.length;
  let i = pos;
  while (i < len && WHITESPACE[buf[i]!] === 1) i++;
  return i;
}

/** Index past the string whose opening quote is at `open`, or INVALID; counted in scanStats. */
function stringAt(buf: Uint8Array, open: number): number {
  const end = scanString(buf, open, buf.length);
  if (end - open > scanStats.longestString) scanStats.longestString = end - open;
  return end;
}

// ---- finding where a value ends -------------------------------------------------------------------------

/** Index just past the object or array opening at `open`; INVALID if unterminated or its brackets do not match. */
function skipContainer(buf: Uint8Array, open: number): number {
  const len = buf.length;
  const closers: number[] = [];
  let i = open;
  while (i < len) {
    const c = buf[i]!;
    const cls = STRUCTURAL[c];
    if (cls === 0) {
      i++;
    } else if (cls === 1) {
      i = stringAt(buf, i);
      if (i < 0) return INVALID;
    } else if (cls === 2) {
      closers.push(c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET);
      i++;
    } else {
      if (closers.pop() !== c) return INVALID;
      i++;
      if (closers.length === 0) return i;
    }
  }
  return INVALID;
}

/** Index just past the value starting at `pos` (no leading whitespace); INVALID if it is not structurally a value. */
function skipValue(buf: Uint8Array, pos: number): number {
  const c = buf[pos];
  if (c === QUOTE) return stringAt(buf, pos);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) return skipContainer(buf, pos);
  let i = pos;
  while (i < buf.length && PRIMITIVE_CHAR[buf[i]!] === 1) i++;
  return i === pos ? INVALID : i;
}

/** The deepest nesting of objects and arrays in a JSON text (strings skipped); stops counting past `limit`. */
export function nestingDepth(bytes: Uint8Array, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let i = 0;
  while (i < bytes.length) {
    const cls = STRUCTURAL[bytes[i]!];
    if (cls === 1) {
      i = scanString(bytes, i, bytes.length);
      if (i < 0) break;
      continue;
    }
    if (cls === 2) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (cls === 3) {
      depth--;
    }
    i++;
  }
  return deepest;
}

// ---- validating a value ---------------------------------------------------------------------------------

function scanDigits(buf: Uint8Array, pos: number, len: number): number {
  let i = pos;
  while (i < len && DIGIT[buf[i]!] === 1) i++;
  return i;
}

/** Index past the number at `pos` (JSON's grammar: no leading zeros, no bare dot, no `+`), or INVALID. */
function scanNumber(buf: Uint8Array, pos: number, len: number): number {
  let i = pos;
  if (buf[i] === 0x2d) i++;
  if (i >= len) return INVALID;
  if (buf[i] === 0x30) i++;
  else if (DIGIT[buf[i]!] === 1) i = scanDigits(buf, i + 1, len);
  else return INVALID;
  if (i < len && buf[i] === 0x2e) {
    if (i + 1 >= len || DIGIT[buf[i + 1]!] === 0) return INVALID;
    i = scanDigits(buf, i + 1, len);
  }
  if (i < len && (buf[i] === 0x65 || buf[i] === 0x45)) {
    i++;
    if (i < len && (buf[i] === 0x2b || buf[i] === 0x2d)) i++;
    if (i >= len || DIGIT[buf[i]!] === 0) return INVALID;
    i = scanDigits(buf, i + 1, len);
  }
  return i;
}

function scanWord(buf: Uint8Array, pos: number, len: number, word: string): number {
  if (pos + word.length > len) return INVALID;
  for (let k = 0; k < word.length; k++) if (buf[pos + k] !== word.charCodeAt(k)) return INVALID;
  return pos + word.length;
}

/** Index past the string, number or literal at `pos`, or INVALID. */
function scanScalar(buf: Uint8Array, pos: number, len: number): number {
  const c = buf[pos];
  if (c === QUOTE) return stringAt(buf, pos);
  if (c === 0x74) return scanWord(buf, pos, len, 'true');
  if (c === 0x66) return scanWord(buf, pos, len, 'false');
  if (c === 0x6e) return scanWord(buf, pos, len, 'null');
  return scanNumber(buf, pos, len);
}

// Open containers of scanValue: 1 object, 2 array. Grown on demand; shared, as scanning is synchronous.
const IN_OBJECT = 1;
const IN_ARRAY = 2;
let containerStack = new Uint8Array(256);

/** Expects a key and its colon at `pos` (whitespace allowed before each); the index after the colon, or INVALID. */
function scanKeyColon(buf: Uint8Array, pos: number): number {
  const at = skipWhitespace(buf, pos);
  if (buf[at] !== QUOTE) return INVALID;
  const keyEnd = stringAt(buf, at);
  if (keyEnd < 0) return INVALID;
  const colon = skipWhitespace(buf, keyEnd);
  return buf[colon] === COLON ? colon + 1 : INVALID;
}

/**
 * Index past the JSON value starting at `pos` (after optional whitespace), fully validated; INVALID if it is
 * not one. `depth`: how deep the value sits (0 at the top level; inside a top-level object, 1).
 */
export function scanValue(buf: Uint8Array, pos: number, depth = 0): number {
  const len = buf.length;
  let open = 0;
  let i = pos;
  for (;;) {
    // A value starts here.
    i = skipWhitespace(buf, i);
    if (i >= len) return INVALID;
    const c = buf[i]!;
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const inner = skipWhitespace(buf, i + 1);
      if (buf[inner] === c + 2) {
        // '{' + 2 = '}', '[' + 2 = ']': an empty container is one value.
        reachedDepth(depth + open + 1);
        i = inner + 1;
      } else {
        if (open === containerStack.length) {
          const grown = new Uint8Array(open * 2);
          grown.set(containerStack);
          containerStack = grown;
        }
        reachedDepth(depth + open + 1);
        if (c === OPEN_BRACE) {
          containerStack[open++] = IN_OBJECT;
          i = scanKeyColon(buf, inner);
          if (i < 0) return INVALID;
        } else {
          containerStack[open++] = IN_ARRAY;
          i = inner;
        }
        continue;
      }
    } else {
      i = scanScalar(buf, i, len);
      if (i < 0) return INVALID;
    }
    // A value ended: close what it ends, or move to the next element or member.
    for (;;) {
      if (open === 0) return i;
      i = skipWhitespace(buf, i);
      const sep = buf[i];
      const container = containerStack[open - 1];
      if (sep === COMMA) {
        i = container === IN_OBJECT ? scanKeyColon(buf, i + 1) : i + 1;
        if (i < 0) return INVALID;
        break;
      }
      if (sep !== (container === IN_OBJECT ? CLOSE_BRACE : CLOSE_BRACKET)) return INVALID;
      i++;
      open--;
    }
  }
}

/**
 * Walks the members of the object opening at `open` (at nesting `depth`), validating keys and separators;
 * `visit(keyStart, keyEnd, valueStart)` passes each value and returns its end (INVALID if it is not one).
 * Returns the index past the closing brace, or INVALID.
 */
export function walkObject(
  buf: Uint8Array,
  open: number,
  depth: number,
  visit: (keyStart: number, keyEnd: number, valueStart: number) => number,
): number {
  const len = buf.length;
  reachedDepth(depth);
  let pos = skipWhitespace(buf, open + 1);
  if (buf[pos] === CLOSE_BRACE) return pos + 1;
  for (;;) {
    if (buf[pos] !== QUOTE) return INVALID;
    const keyEnd = stringAt(buf, pos);
    if (keyEnd < 0) return INVALID;
    const colon = skipWhitespace(buf, keyEnd);
    if (buf[colon] !== COLON) return INVALID;
    const valueStart = skipWhitespace(buf, colon + 1);
    if (valueStart >= len) return INVALID;
    const valueEnd = visit(pos, keyEnd, valueStart);
    if (valueEnd < 0) return INVALID;
    pos = skipWhitespace(buf, valueEnd);
    if (buf[pos] === CLOSE_BRACE) return pos + 1;
    if (buf[pos] !== COMMA) return INVALID;
    pos = skipWhitespace(buf, pos + 1);
  }
}

/** Why walkArray stopped: the array never closed, an element was not a value, or a separator was missing. */
export type ArrayFault = 'unterminated' | 'element' | 'separator';

/**
 * Walks the elements of the array opening at `open` (at nesting `depth`); `visit(valueStart)` passes each and
 * returns its end. Returns the index past the closing bracket, or INVALID (after telling `fault` why, if given).
 */
export function walkArray(
  buf: Uint8Array,
  open: number,
  depth: number,
  visit: (valueStart: number) => number,
  fault?: (why: ArrayFault, at: number) => void,
): number {
  const len = buf.length;
  reachedDepth(depth);
  let pos = skipWhitespace(buf, open + 1);
  if (buf[pos] === CLOSE_BRACKET) return pos + 1;
  for (;;) {
    if (pos >= len) {
      fault?.('unterminated', pos);
      return INVALID;
    }
    const end = visit(pos);
    if (end < 0) {
      fault?.('element', pos);
      return INVALID;
    }
    pos = skipWhitespace(buf, end);
    if (buf[pos] === CLOSE_BRACKET) return pos + 1;
    if (buf[pos] !== COMMA) {
      fault?.('separator', pos);
      return INVALID;
    }
    pos = skipWhitespace(buf, pos + 1);
  }
}

// ---- a whole text ---------------------------------------------------------------------------------------

const FAULT_WORDS: Record<ArrayFault, string> = {
  unterminated: 'unterminated top-level array',
  element: 'malformed array element at byte',
  separator: "expected ',' or ']' at byte",
};

/**
 * Splits a complete JSON text into its top-level value, or into the elements of a top-level array (a batch).
 * Structural only: strings, brackets and separators are checked, but bare tokens and object members are
 * left for whoever reads the elements to validate.
 */
export function splitTopLevel(bytes: Uint8Array): TopLevelSplit {
  const buf = asBuffer(bytes);
  const len = buf.length;
  const pos = skipWhitespace(buf, 0);
  if (pos === len) return { ok: false, error: 'empty JSON text' };

  if (buf[pos] !== OPEN_BRACKET) {
    const end = skipValue(buf, pos);
    if (end < 0) return { ok: false, error: `malformed JSON value at byte ${pos}` };
    const after = skipWhitespace(buf, end);
    if (after !== len) return { ok: false, error: `unexpected data after the JSON value at byte ${after}` };
    return { ok: true, batch: false, spans: [[pos, end]] };
  }

  const spans: ByteSpan[] = [];
  let error = '';
  const end = walkArray(
    buf,
    pos,
    1,
    (at) => {
      const elementEnd = skipValue(buf, at);
      if (elementEnd >= 0) spans.push([at, elementEnd]);
      return elementEnd;
    },
    (why, at) => {
      error = why === 'unterminated' ? FAULT_WORDS[why] : `${FAULT_WORDS[why]} ${at}`;
    },
  );
  if (end < 0) return { ok: false, error };
  const after = skipWhitespace(buf, end);
  if (after !== len)
    return { ok: false, error: `unexpected data after the top-level array at byte ${after}` };
  return { ok: true, batch: true, spans };
}
