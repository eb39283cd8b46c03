// Whether a text is a JSON value laid out as JSON.stringify lays it out (compact, or pretty with an indent),
// compared with the value's raw bytes as sent, token by token, without decoding: once for a decoded text
// (compareLayout), once for a string literal's own bytes (literalCopyOfLayout). duplicate-text.ts asks.

import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  LF,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from './bytes.js';

export interface LayoutComparison {
  /** The text is the raw JSON laid out exactly as described. */
  equal: boolean;
  /** UTF-8 byte length of the text, when equal. */
  textBytes: number;
  /** Every raw token compared was in the form JSON.stringify writes (no `\u`/`\/` escapes, no fractions or exponents). */
  rawTokensCanonical: boolean;
  /** The raw JSON had whitespace between tokens before the point where comparison stopped. */
  rawHasWhitespace: boolean;
}

// Classes of raw bytes outside strings, for the layout comparison.
const C_TOKEN = 0;
const C_SPACE = 1;
const C_QUOTE = 2;
const C_OPEN = 3;
const C_CLOSE = 4;
const C_COMMA = 5;
const C_COLON = 6;
const RAW_CLASS = new Uint8Array(256);
for (const c of [0x20, 0x0a, 0x0d, 0x09]) RAW_CLASS[c] = C_SPACE;
RAW_CLASS[QUOTE] = C_QUOTE;
RAW_CLASS[OPEN_BRACE] = C_OPEN;
RAW_CLASS[OPEN_BRACKET] = C_OPEN;
RAW_CLASS[CLOSE_BRACE] = C_CLOSE;
RAW_CLASS[CLOSE_BRACKET] = C_CLOSE;
RAW_CLASS[COMMA] = C_COMMA;
RAW_CLASS[COLON] = C_COLON;

/**
 * Expects, at `t` in the text, a newline and `depth` indents of `width` copies of `indentChar` (pretty layout).
 * Returns the index after them, or -1.
 */
function expectLineBreak(text: string, t: number, depth: number, indentChar: number, width: number): number {
  if (text.charCodeAt(t) !== LF) return -1;
  const end = t + 1 + depth * width;
  if (end > text.length) return -1;
  for (let k = t + 1; k < end; k++) if (text.charCodeAt(k) !== indentChar) return -1;
  return end;
}

function differ(canonical: boolean, rawWhitespace: number): LayoutComparison {
  return { equal: false, textBytes: 0, rawTokensCanonical: canonical, rawHasWhitespace: rawWhitespace > 0 };
}

/**
 * Whether `text` is the JSON text `raw[start, end)` laid out as JSON.stringify(value, null, indent) lays out
 * its output: tokens compared verbatim (UTF-8 against UTF-16, no decoding), whitespace between raw tokens
 * ignored, and in the text exactly JSON.stringify's whitespace: none when `indent` is '', else a newline and
 * one `indent` per level, and a space after each colon. Stops at the first difference, so a text that is not a
 * copy costs almost nothing. A single loop with a depth counter: no recursion. No closure captures its
 * locals, so the hot loop keeps them in registers.
 */
export function compareLayout(
  text: string,
  raw: Uint8Array,
  start: number,
  end: number,
  indent: string,
): LayoutComparison {
  const pretty = indent.length > 0;
  const indentChar = indent.charCodeAt(0);
  const width = indent.length;
  let canonical = true;
  let rawWhitespace = 0;
  let t = 0;
  let r = start;
  let depth = 0;
  let inserted = 0;

  while (r < end) {
    const c = raw[r]!;
    switch (RAW_CLASS[c]) {
      case C_QUOTE: {
        if (text.charCodeAt(t) !== QUOTE) return differ(canonical, rawWhitespace);
        t++;
        r++;
        for (;;) {
          if (r >= end) return differ(canonical, rawWhitespace);
          const b = raw[r]!;
          if (b === QUOTE) break;
          if (b === BACKSLASH) {
            const escaped = raw[r + 1]!;
            // Noted before comparing, so that a difference right here is not taken as conclusive.
            if (escaped === 0x75 || escaped === 0x2f) canonical = false; // \u or \/
            if (text.charCodeAt(t) !== b || text.charCodeAt(t + 1) !== escaped) {
              return differ(canonical, rawWhitespace);
            }
            t += 2;
            r += 2;
            continue;
          }
          if (b < 0x80) {
            if (text.charCodeAt(t) !== b) return differ(canonical, rawWhitespace);
            t++;
            r++;
            continue;
          }
          // A multi-byte UTF-8 sequence against one UTF-16 unit, or a surrogate pair.
          let codePoint: number;
          let size: number;
          if (b < 0xe0) {
            codePoint = ((b & 0x1f) << 6) | (raw[r + 1]! & 0x3f);
            size = 2;
          } else if (b < 0xf0) {
            codePoint = ((b & 0x0f) << 12) | ((raw[r + 1]! & 0x3f) << 6) | (raw[r + 2]! & 0x3f);
            size = 3;
          } else {
            codePoint =
              ((b & 0x07) << 18) |
              ((raw[r + 1]! & 0x3f) << 12) |
              ((raw[r + 2]! & 0x3f) << 6) |
              (raw[r + 3]! & 0x3f);
            size = 4;
          }
          if (codePoint >= 0x10000) {
            const offset = codePoint - 0x10000;
            if (text.charCodeAt(t) !== 0xd800 + (offset >> 10)) return differ(canonical, rawWhitespace);
            if (text.charCodeAt(t + 1) !== 0xdc00 + (offset & 0x3ff)) return differ(canonical, rawWhitespace);
            t += 2;
          } else {
            if (text.charCodeAt(t) !== codePoint) return differ(canonical, rawWhitespace);
            t++;
          }
          r += size;
        }
        if (text.charCodeAt(t) !== QUOTE) return differ(canonical, rawWhitespace);
        t++;
        r++;
        break;
      }
      case C_TOKEN:
        // JSON.stringify writes numbers in their shortest form: a fraction, an exponent or -0 may differ there.
        if (c === 0x2e || c === 0x65 || c === 0x45 || (c === 0x2d && raw[r + 1] === 0x30)) canonical = false;
        if (text.charCodeAt(t) !== c) return differ(canonical, rawWhitespace);
        t++;
        r++;
        break;
      case C_SPACE:
        rawWhitespace++;
        r++;
        break;
      case C_OPEN: {
        if (text.charCodeAt(t) !== c) return differ(canonical, rawWhitespace);
        t++;
        r++;
        let next = r;
        while (next < end && RAW_CLASS[raw[next]!] === C_SPACE) next++;
        const closer = c + 2; // '{' + 2 = '}', '[' + 2 = ']'
        if (raw[next] === closer) {
          // JSON.stringify writes an empty container on one line, whatever the indent.
          if (text.charCodeAt(t) !== closer) return differ(canonical, rawWhitespace);
          rawWhitespace += next - r;
          t++;
          r = next + 1;
        } else {
          depth++;
          if (pretty) {
            t = expectLineBreak(text, t, depth, indentChar, width);
            if (t < 0) return differ(canonical, rawWhitespace);
            inserted += 1 + depth * width;
          }
        }
        break;
      }
      case C_CLOSE:
        depth--;
        if (pretty) {
          t = expectLineBreak(text, t, depth, indentChar, width);
          if (t < 0) return differ(canonical, rawWhitespace);
          inserted += 1 + depth * width;
        }
        if (text.charCodeAt(t) !== c) return differ(canonical, rawWhitespace);
        t++;
        r++;
        break;
      case C_COMMA:
        if (text.charCodeAt(t) !== COMMA) return differ(canonical, rawWhitespace);
        t++;
        r++;
        if (pretty) {
          t = expectLineBreak(text, t, depth, indentChar, width);
          if (t < 0) return differ(canonical, rawWhitespace);
          inserted += 1 + depth * width;
        }
        break;
      default: // C_COLON
        if (text.charCodeAt(t) !== COLON) return differ(canonical, rawWhitespace);
        t++;
        r++;
        if (pretty) {
          if (text.charCodeAt(t) !== 0x20) return differ(canonical, rawWhitespace);
          t++;
          inserted++;
        }
    }
  }
  if (t !== text.length || depth !== 0) return differ(canonical, rawWhitespace);
  return {
    equal: true,
    textBytes: end - start - rawWhitespace + inserted,
    rawTokensCanonical: canonical,
    rawHasWhitespace: rawWhitespace > 0,
  };
}

/**
 * The indent of a pretty-printed JSON text (the run of spaces, or of tabs, opening its second line), or ''
 * for compact. JSON.stringify indents with one repeated character in practice (a number of spaces, or '\t').
 */
export function layoutIndentOf(text: string): string {
  if (text.charCodeAt(1) !== LF) return '';
  const indentChar = text.charCodeAt(2);
  if (indentChar !== 0x20 && indentChar !== 0x09) return '';
  let k = 3;
  while (k < text.length && text.charCodeAt(k) === indentChar) k++;
  return text.slice(2, k);
}

/**
 * Whether the JSON string literal opening at `literalStart` is, escaped exactly as JSON.stringify escapes,
 * the raw JSON `bytes[start, end)` laid out with `indent` (the layout of compareLayout). Bytes against bytes:
 * no decoding, and multi-byte characters compare as they are. A match also proves where the literal ends:
 * every backslash in it was consumed as the start of an escape pair and every quote as part of `\"`, so the
 * first unescaped quote is the one after them. Returns the index past the literal and the UTF-8 length of
 * its text, or undefined at the first difference.
 */
export function literalCopyOfLayout(
  bytes: Uint8Array,
  literalStart: number,
  start: number,
  end: number,
  indent: string,
): { literalEnd: number; textBytes: number } | undefined {
  if (indent.length === 0) return literalCopyOfRaw(bytes, literalStart, start, end);
  const width = indent.length;
  // In the literal a tab indent is written `\t` (2 bytes), a space as itself.
  const tabs = indent.charCodeAt(0) === 0x09;
  let j = literalStart + 1;
  let r = start;
  let depth = 0;
  let inserted = 0;
  let rawWhitespace = 0;

  while (r < end) {
    const c = bytes[r]!;
    const cls = RAW_CLASS[c];
    if (cls === C_QUOTE) {
      if (bytes[j] !== BACKSLASH || bytes[j + 1] !== QUOTE) return undefined;
      j += 2;
      r++;
      for (;;) {
        if (r >= end) return undefined;
        const b = bytes[r]!;
        if (b === QUOTE) break;
        if (b === BACKSLASH) {
          // The raw escape \X is written \\ then X, itself escaped when it is a quote or a backslash.
          const x = bytes[r + 1];
          if (bytes[j] !== BACKSLASH || bytes[j + 1] !== BACKSLASH) return undefined;
          if (x === QUOTE || x === BACKSLASH) {
            if (bytes[j + 2] !== BACKSLASH || bytes[j + 3] !== x) return undefined;
            j += 4;
          } else {
            if (bytes[j + 2] !== x) return undefined;
            j += 3;
          }
          r += 2;
          continue;
        }
        if (bytes[j] !== b) return undefined;
        j++;
        r++;
      }
      if (bytes[j] !== BACKSLASH || bytes[j + 1] !== QUOTE) return undefined;
      j += 2;
      r++;
      continue;
    }
    if (cls === C_SPACE) {
      rawWhitespace++;
      r++;
      continue;
    }
    let lineBreakDepth = -1;
    if (cls === C_OPEN) {
      let next = r + 1;
      while (next < end && RAW_CLASS[bytes[next]!] === C_SPACE) next++;
      if (bytes[next] === c + 2) {
        // An empty container, on one line whatever the indent.
        if (bytes[j] !== c || bytes[j + 1] !== c + 2) return undefined;
        rawWhitespace += next - r - 1;
        j += 2;
        r = next + 1;
        continue;
      }
      depth++;
      lineBreakDepth = depth;
    } else if (cls === C_CLOSE) {
      depth--;
      j = literalLineBreak(bytes, j, depth * width, tabs);
      if (j < 0) return undefined;
      inserted += 1 + depth * width;
    } else if (cls === C_COMMA) {
      lineBreakDepth = depth;
    }
    // The byte itself, then what the layout puts after it.
    if (bytes[j] !== c) return undefined;
    j++;
    r++;
    if (lineBreakDepth >= 0) {
      j = literalLineBreak(bytes, j, lineBreakDepth * width, tabs);
      if (j < 0) return undefined;
      inserted += 1 + lineBreakDepth * width;
    } else if (cls === C_COLON) {
      if (bytes[j] !== 0x20) return undefined;
      j++;
      inserted++;
    }
  }
  if (depth !== 0 || bytes[j] !== QUOTE) return undefined;
  return { literalEnd: j + 1, textBytes: end - start - rawWhitespace + inserted };
}

/**
 * The compact case of literalCopyOfLayout, a tight loop: the literal must be the raw bytes exactly as sent,
 * with each quote and backslash escaped. Raw whitespace is compared as it is (a text that is the raw span
 * verbatim is a copy too).
 */
function literalCopyOfRaw(
  bytes: Uint8Array,
  literalStart: number,
  start: number,
  end: number,
): { literalEnd: number; textBytes: number } | undefined {
  let j = literalStart + 1;
  for (let r = start; r < end; r++) {
    const c = bytes[r]!;
    if (c === QUOTE || c === BACKSLASH) {
      if (bytes[j] !== BACKSLASH || bytes[j + 1] !== c) return undefined;
      j += 2;
    } else if (c < 0x20) {
      // Whitespace between raw tokens: a newline, tab or carriage return is escaped in the literal.
      const escaped = c === 0x0a ? 0x6e : c === 0x09 ? 0x74 : c === 0x0d ? 0x72 : -1;
      if (bytes[j] !== BACKSLASH || bytes[j + 1] !== escaped) return undefined;
      j += 2;
    } else {
      if (bytes[j] !== c) return undefined;
      j++;
    }
  }
  if (bytes[j] !== QUOTE) return undefined;
  return { literalEnd: j + 1, textBytes: end - start };
}

/** Expects `\n` then `count` indent characters (spaces, or `\t` escapes) in the literal at `j`; the index after, or -1. */
function literalLineBreak(bytes: Uint8Array, j: number, count: number, tabs: boolean): number {
  if (bytes[j] !== BACKSLASH || bytes[j + 1] !== 0x6e) return -1;
  let k = j + 2;
  if (tabs) {
    for (let n = 0; n < count; n++, k += 2) if (bytes[k] !== BACKSLASH || bytes[k + 1] !== 0x74) return -1;
  } else {
    for (let n = 0; n < count; n++, k++) if (bytes[k] !== 0x20) return -1;
  }
  return k;
}
