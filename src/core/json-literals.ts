// What a JSON literal or value stands for, read from its bytes (already validated by the scan): the string of
// a string literal, the name a key spells, a small value parsed from its range. Decoding is avoided where
// a short ASCII range can be read byte by byte.

import { BACKSLASH, decodeUtf8, OPEN_BRACE, OPEN_BRACKET, QUOTE } from './bytes.js';

/** Ranges up to this long that are all ASCII are read byte by byte: no Buffer view, no native call. */
const SHORT_ASCII = 64;

function decodeRange(buf: Uint8Array, start: number, end: number): string {
  if (end - start <= SHORT_ASCII) {
    let text = '';
    let k = start;
    for (; k < end; k++) {
      const c = buf[k]!;
      if (c >= 0x80) break;
      text += String.fromCharCode(c);
    }
    if (k === end) return text;
  }
  return decodeUtf8(buf, start, end);
}

/** JSON.parse of a valid JSON text `buf[start, end)`. */
export function parseRange(buf: Uint8Array, start: number, end: number): unknown {
  return JSON.parse(decodeRange(buf, start, end));
}

/** The string a valid literal `buf[start, end)` (quotes included) stands for. */
export function literalText(buf: Uint8Array, start: number, end: number): string {
  for (let k = start + 1; k < end - 1; k++) {
    if (buf[k] === BACKSLASH) return parseRange(buf, start, end) as string;
  }
  return decodeRange(buf, start + 1, end - 1);
}

/** Whether the valid key literal `buf[start, end)` stands for the ASCII `name`. */
export function keyIs(buf: Uint8Array, start: number, end: number, name: string): boolean {
  const inner = end - start - 2;
  if (inner === name.length) {
    for (let k = 0; k < inner; k++) if (buf[start + 1 + k] !== name.charCodeAt(k)) return false;
    return true;
  }
  // A longer literal can only stand for `name` through escapes (at most 6 bytes per character).
  if (inner < name.length || inner > name.length * 6) return false;
  return literalText(buf, start, end) === name;
}

/**
 * A stand-in for a member's value in the skeleton classifyMessage judges: the value itself when it is a
 * scalar (small: an id, a method, "2.0"), an empty object or array of the same type otherwise.
 */
export function standIn(buf: Uint8Array, start: number, end: number): unknown {
  const c = buf[start];
  if (c === OPEN_BRACE) return {};
  if (c === OPEN_BRACKET) return [];
  if (c === QUOTE) return literalText(buf, start, end);
  if (c === 0x74) return true;
  if (c === 0x66) return false;
  if (c === 0x6e) return null;
  // A number the scan found valid: JSON's grammar is a subset of what Number() reads, to the same double.
  return Number(decodeRange(buf, start, end));
}
