// Structural scanning of JSON over raw UTF-8 bytes, without JSON.parse.
//
// Everything here runs on every message (up to 16 MiB), so two rules hold throughout:
// - no recursion: documents can nest 100,000 levels deep, so depth lives in counters and explicit stacks;
// - string contents are skipped, not walked: a short JS loop handles short or escape-dense strings, and
//   a native `Buffer#indexOf` (memchr) jumps over long runs, after which the backslash parity before the
//   quote tells whether it closes the string.

import {
  asBuffer,
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isJsonWhitespace,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from './bytes.js';
import type { JsonRpcId } from './types.js';

/** A byte range `[start, end)` inside a buffer. */
export type ByteSpan = readonly [start: number, end: number];

/** Top-level structure of a complete JSON text: one value, or an array (batch) of elements. Spans exclude surrounding whitespace. */
export type TopLevelSplit = { ok: true; batch: boolean; spans: ByteSpan[] } | { ok: false; error: string };

/**
 * Past this many bytes without a quote, a native search is cheaper than the JS loop. Measured: 16-24 suits
 * both prose (quotes far apart) and JSON-in-text (escaped quotes every few bytes).
 */
const SHORT_STRING_SCAN = 24;

/** Byte classes for the structural loop: 0 means "nothing to do here". */
const STRUCTURAL = new Uint8Array(256);
STRUCTURAL[QUOTE] = 1;
STRUCTURAL[OPEN_BRACE] = 2;
STRUCTURAL[OPEN_BRACKET] = 2;
STRUCTURAL[CLOSE_BRACE] = 3;
STRUCTURAL[CLOSE_BRACKET] = 3;

/** Bytes that may appear in a bare JSON token (number, true, false, null). */
const PRIMITIVE_CHAR = new Uint8Array(256);
for (const ch of '0123456789+-.eEtrufalsn') PRIMITIVE_CHAR[ch.charCodeAt(0)] = 1;

function skipWhitespace(buf: Buffer, pos: number): number {
  let i = pos;
  while (i < buf.length && isJsonWhitespace(buf[i])) i++;
  return i;
}

/** Index just past the closing quote of the string whose opening quote is at `open`; -1 if unterminated. */
function skipString(buf: Buffer, open: number): number {
  const len = buf.length;
  let i = open + 1;
  for (;;) {
    const shortEnd = Math.min(len, i + SHORT_STRING_SCAN);
    while (i < shortEnd) {
      const c = buf[i]!;
      if (c === QUOTE) return i + 1;
      i += c === BACKSLASH ? 2 : 1;
    }
    if (i >= len) return -1;
    // `i` is not escaped here, so a quote preceded by an even run of backslashes (counted back to `i`) closes.
    const q = buf.indexOf(QUOTE, i);
    if (q < 0) return -1;
    let b = q - 1;
    while (b >= i && buf[b] === BACKSLASH) b--;
    if (((q - 1 - b) & 1) === 0) return q + 1;
    i = q + 1;
  }
}

/** Index just past the object or array opening at `open`; -1 if unterminated or its brackets do not match. */
function skipContainer(buf: Buffer, open: number): number {
  const len = buf.length;
  const closers: number[] = [];
  let i = open;
  while (i < len) {
    const c = buf[i]!;
    const cls = STRUCTURAL[c];
    if (cls === 0) {
      i++;
    } else if (cls === 1) {
      i = skipString(buf, i);
      if (i < 0) return -1;
    } else if (cls === 2) {
      closers.push(c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET);
      i++;
    } else {
      if (closers.pop() !== c) return -1;
      i++;
      if (closers.length === 0) return i;
    }
  }
  return -1;
}

/** Index just past the value starting at `pos` (no leading whitespace); -1 if it is not structurally a value. */
function skipValue(buf: Buffer, pos: number): number {
  const c = buf[pos];
  if (c === QUOTE) return skipString(buf, pos);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) return skipContainer(buf, pos);
  let i = pos;
  while (i < buf.length && PRIMITIVE_CHAR[buf[i]!] === 1) i++;
  return i === pos ? -1 : i;
}

/** The deepest nesting of objects and arrays in a JSON text (strings skipped); stops counting past `limit`. */
export function nestingDepth(bytes: Uint8Array, limit: number): number {
  const buf = asBuffer(bytes);
  let depth = 0;
  let deepest = 0;
  let i = 0;
  while (i < buf.length) {
    const cls = STRUCTURAL[buf[i]!];
    if (cls === 1) {
      i = skipString(buf, i);
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

/**
 * Splits a complete JSON text into its top-level value, or into the elements of a top-level array (a batch).
 * Structural only: strings, brackets and separators are checked, but bare tokens and object members are
 * left for JSON.parse to validate.
 */
export function splitTopLevel(bytes: Uint8Array): TopLevelSplit {
  const buf = asBuffer(bytes);
  const len = buf.length;
  let pos = skipWhitespace(buf, 0);
  if (pos === len) return { ok: false, error: 'empty JSON text' };

  if (buf[pos] !== OPEN_BRACKET) {
    const end = skipValue(buf, pos);
    if (end < 0) return { ok: false, error: `malformed JSON value at byte ${pos}` };
    const after = skipWhitespace(buf, end);
    if (after !== len) return { ok: false, error: `unexpected data after the JSON value at byte ${after}` };
    return { ok: true, batch: false, spans: [[pos, end]] };
  }

  const spans: ByteSpan[] = [];
  pos = skipWhitespace(buf, pos + 1);
  if (buf[pos] === CLOSE_BRACKET) {
    pos++;
  } else {
    for (;;) {
      if (pos >= len) return { ok: false, error: 'unterminated top-level array' };
      const end = skipValue(buf, pos);
      if (end < 0) return { ok: false, error: `malformed array element at byte ${pos}` };
      spans.push([pos, end]);
      pos = skipWhitespace(buf, end);
      const sep = buf[pos];
      if (sep === CLOSE_BRACKET) {
        pos++;
        break;
      }
      if (sep !== COMMA) return { ok: false, error: `expected ',' or ']' at byte ${pos}` };
      pos = skipWhitespace(buf, pos + 1);
    }
  }
  const after = skipWhitespace(buf, pos);
  if (after !== len)
    return { ok: false, error: `unexpected data after the top-level array at byte ${after}` };
  return { ok: true, batch: true, spans };
}

/** Whether the string literal `buf[start, end)` (quotes included) decodes to the ASCII `name`. */
function keyEquals(buf: Buffer, start: number, end: number, name: string): boolean {
  const inner = end - start - 2;
  if (inner === name.length) {
    for (let k = 0; k < inner; k++) if (buf[start + 1 + k] !== name.charCodeAt(k)) return false;
    return true;
  }
  // A longer literal can only decode to `name` through escapes (at most 6 bytes per character).
  if (inner < name.length || inner > name.length * 6) return false;
  if (buf.subarray(start, end).indexOf(BACKSLASH) < 0) return false;
  try {
    return JSON.parse(buf.toString('utf8', start, end)) === name;
  } catch {
    return false;
  }
}

/**
 * Walks the members of the object opening at `open`, calling `visit(keyStart, keyEnd, valueStart)` for each;
 * `visit` returns the end of the value. Returns the index past the closing brace, or -1 when malformed.
 */
function walkMembers(
  buf: Buffer,
  open: number,
  visit: (keyStart: number, keyEnd: number, valueStart: number) => number,
): number {
  let pos = skipWhitespace(buf, open + 1);
  if (buf[pos] === CLOSE_BRACE) return pos + 1;
  for (;;) {
    if (buf[pos] !== QUOTE) return -1;
    const keyEnd = skipString(buf, pos);
    if (keyEnd < 0) return -1;
    const colon = skipWhitespace(buf, keyEnd);
    if (buf[colon] !== COLON) return -1;
    const valueStart = skipWhitespace(buf, colon + 1);
    const valueEnd = visit(pos, keyEnd, valueStart);
    if (valueEnd < 0) return -1;
    pos = skipWhitespace(buf, valueEnd);
    if (buf[pos] === CLOSE_BRACE) return pos + 1;
    if (buf[pos] !== COMMA) return -1;
    pos = skipWhitespace(buf, pos + 1);
  }
}

/**
 * Spans of the elements of the array opening at `open`, and the index past it (-1 when malformed).
 * `visitMember`, when given, skips an element that is an object member by member (see walkMembers).
 */
function arrayElementSpans(
  buf: Buffer,
  open: number,
  visitMember?: (element: number, keyStart: number, keyEnd: number, valueStart: number) => number,
): { spans: ByteSpan[]; end: number } {
  const spans: ByteSpan[] = [];
  let pos = skipWhitespace(buf, open + 1);
  if (buf[pos] === CLOSE_BRACKET) return { spans, end: pos + 1 };
  for (;;) {
    const element = spans.length;
    const end =
      visitMember !== undefined && buf[pos] === OPEN_BRACE
        ? walkMembers(buf, pos, (keyStart, keyEnd, valueStart) =>
            visitMember(element, keyStart, keyEnd, valueStart),
          )
        : skipValue(buf, pos);
    if (end < 0) return { spans, end: -1 };
    spans.push([pos, end]);
    pos = skipWhitespace(buf, end);
    if (buf[pos] === CLOSE_BRACKET) return { spans, end: pos + 1 };
    if (buf[pos] !== COMMA) return { spans, end: -1 };
    pos = skipWhitespace(buf, pos + 1);
  }
}

/** Shortcuts a caller that already knows parts of a tool result can offer to {@link toolResultSpans}. */
export interface ToolResultShortcuts {
  /**
   * Called at the opening quote of the string value of a `text` member of content block `block`. Returns the
   * index just past that string when the caller can prove where it ends without it being scanned, else -1.
   */
  textValueEnd?: (block: number, literalStart: number) => number;
  /** A span the caller already found by skipping a value from its start: trusted if structuredContent starts there. */
  structured?: ByteSpan;
}

/**
 * Spans, inside the bytes of ONE JSON-RPC message, of each element of `result.content` and of
 * `result.structuredContent` (only at exactly those paths). A repeated key wins last, as in JSON.parse.
 * Malformed input yields no spans.
 */
export function toolResultSpans(
  bytes: Uint8Array,
  shortcuts: ToolResultShortcuts = {},
): { content: ByteSpan[]; structured: ByteSpan | undefined } {
  const buf = asBuffer(bytes);
  let content: ByteSpan[] = [];
  let structured: ByteSpan | undefined;
  const { textValueEnd, structured: knownStructured } = shortcuts;

  const visitBlockMember =
    textValueEnd === undefined
      ? undefined
      : (block: number, keyStart: number, keyEnd: number, valueStart: number): number => {
          if (buf[valueStart] === QUOTE && keyEquals(buf, keyStart, keyEnd, 'text')) {
            const end = textValueEnd(block, valueStart);
            if (end >= 0) return end;
          }
          return skipValue(buf, valueStart);
        };

  const visitResultMember = (keyStart: number, keyEnd: number, valueStart: number): number => {
    if (keyEquals(buf, keyStart, keyEnd, 'content')) {
      if (buf[valueStart] !== OPEN_BRACKET) {
        content = [];
        return skipValue(buf, valueStart);
      }
      const elements = arrayElementSpans(buf, valueStart, visitBlockMember);
      content = elements.spans;
      return elements.end;
    }
    if (!keyEquals(buf, keyStart, keyEnd, 'structuredContent')) return skipValue(buf, valueStart);
    const end = knownStructured?.[0] === valueStart ? knownStructured[1] : skipValue(buf, valueStart);
    if (end >= 0) structured = [valueStart, end];
    return end;
  };

  const visitTopMember = (keyStart: number, keyEnd: number, valueStart: number): number => {
    if (!keyEquals(buf, keyStart, keyEnd, 'result')) return skipValue(buf, valueStart);
    content = [];
    structured = undefined;
    if (buf[valueStart] !== OPEN_BRACE) return skipValue(buf, valueStart);
    return walkMembers(buf, valueStart, visitResultMember);
  };

  const start = skipWhitespace(buf, 0);
  if (buf[start] !== OPEN_BRACE || walkMembers(buf, start, visitTopMember) < 0) {
    return { content: [], structured: undefined };
  }
  return { content, structured };
}

/**
 * The value span of the LAST member named `key` (a plain name: letters, digits, `_`) anywhere in the JSON
 * text, found with a native backward search instead of a walk. Which object that member belongs to is not known: callers must confirm the span
 * (toolResultSpans does, when given it as a shortcut). A match cannot lie inside a string: its closing quote
 * follows a letter, so it is unescaped, and an opening quote preceded by an odd run of backslashes is skipped.
 */
export function lastMemberValueSpan(bytes: Uint8Array, key: string): ByteSpan | undefined {
  const buf = asBuffer(bytes);
  const needle = Buffer.from(JSON.stringify(key), 'utf8');
  let at = buf.lastIndexOf(needle);
  while (at >= 0) {
    let b = at - 1;
    while (b >= 0 && buf[b] === BACKSLASH) b--;
    if (((at - 1 - b) & 1) === 0) {
      // A string that is a value, not a key, is followed by something else than a colon.
      const colon = skipWhitespace(buf, at + needle.length);
      if (buf[colon] === COLON) {
        const valueStart = skipWhitespace(buf, colon + 1);
        const valueEnd = skipValue(buf, valueStart);
        return valueEnd < 0 ? undefined : [valueStart, valueEnd];
      }
    }
    at = at > 0 ? buf.lastIndexOf(needle, at - 1) : -1;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Incremental envelope scanner

const KEY_CAP = 256;
const VALUE_CAP = 1024;

// Scanner states (top level of one object).
const S_START = 0;
const S_KEY_OR_END = 1;
const S_KEY = 2;
const S_COLON = 3;
const S_VALUE = 4;
const S_STRING_VALUE = 5;
const S_NESTED_VALUE = 6;
const S_PRIMITIVE_VALUE = 7;
const S_AFTER_VALUE = 8;
const S_EXPECT_KEY = 9;
const S_DONE = 10;
const S_DEAD = 11;

// What the current top-level member is to us.
const ROLE_OTHER = 0;
const ROLE_ID = 1;
const ROLE_METHOD = 2;

const utf8 = new TextDecoder('utf-8');

function parseCaptured(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch {
    return undefined;
  }
}

/**
 * Incremental, constant-memory scanner of the TOP-LEVEL members of one JSON object fed in chunks, used to
 * recover the id of an oversized message without holding it. The id may come last (the MCP TypeScript SDK
 * writes `{"result":{...},"jsonrpc":"2.0","id":5}`), so the whole object is walked. Only top-level key names
 * (up to 256 bytes) and the `id` / `method` literals (up to 1024 bytes) are copied, into fixed buffers.
 * A repeated key wins last, as in JSON.parse. Input that is not an object stops the scan.
 */
export class EnvelopeHeadScanner {
  private state = S_START;
  /** The next byte inside the current string is escaped (a backslash ended the previous chunk). */
  private escaped = false;
  /** Depth inside a nested top-level value (1 = just inside its opening bracket). */
  private nestedDepth = 0;
  private nestedInString = false;
  private role = ROLE_OTHER;

  private readonly keyBuf = new Uint8Array(KEY_CAP);
  private keyLen = 0;
  private keyOverflow = false;
  private readonly valueBuf = new Uint8Array(VALUE_CAP);
  private valueLen = 0;
  private valueOverflow = false;

  private id: JsonRpcId | undefined = undefined;
  private method: string | undefined = undefined;
  private hasResult = false;
  private hasError = false;

  push(chunk: Uint8Array): void {
    const buf = asBuffer(chunk);
    const len = buf.length;
    let i = 0;
    while (i < len) {
      switch (this.state) {
        case S_DONE:
        case S_DEAD:
          return;
        case S_START: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) i++;
          else if (c === OPEN_BRACE) {
            this.state = S_KEY_OR_END;
            i++;
          } else this.state = S_DEAD;
          break;
        }
        case S_KEY_OR_END:
        case S_EXPECT_KEY: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) i++;
          else if (c === QUOTE) {
            this.keyBuf[0] = QUOTE;
            this.keyLen = 1;
            this.keyOverflow = false;
            this.state = S_KEY;
            i++;
          } else if (c === CLOSE_BRACE && this.state === S_KEY_OR_END) this.state = S_DONE;
          else this.state = S_DEAD;
          break;
        }
        case S_KEY: {
          const q = this.findStringEnd(buf, i);
          const end = q < 0 ? len : q + 1;
          this.captureKey(buf, i, end);
          i = end;
          if (q >= 0) {
            this.finishKey();
            this.state = S_COLON;
          }
          break;
        }
        case S_COLON: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) i++;
          else if (c === COLON) {
            this.state = S_VALUE;
            i++;
          } else this.state = S_DEAD;
          break;
        }
        case S_VALUE: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) {
            i++;
            break;
          }
          this.valueLen = 0;
          this.valueOverflow = false;
          if (c === QUOTE) {
            this.captureValue(buf, i, i + 1);
            this.state = S_STRING_VALUE;
            i++;
          } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
            this.nestedDepth = 1;
            this.nestedInString = false;
            this.state = S_NESTED_VALUE;
            i++;
          } else {
            this.state = S_PRIMITIVE_VALUE;
          }
          break;
        }
        case S_STRING_VALUE: {
          const q = this.findStringEnd(buf, i);
          const end = q < 0 ? len : q + 1;
          this.captureValue(buf, i, end);
          i = end;
          if (q >= 0) this.finishValue(false);
          break;
        }
        case S_PRIMITIVE_VALUE: {
          const start = i;
          while (i < len && PRIMITIVE_CHAR[buf[i]!] === 1) i++;
          this.captureValue(buf, start, i);
          // The delimiter (if in this chunk) is left for S_AFTER_VALUE.
          if (i < len) this.finishValue(false);
          break;
        }
        case S_NESTED_VALUE:
          i = this.skipNested(buf, i);
          break;
        case S_AFTER_VALUE: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) i++;
          else if (c === COMMA) {
            this.state = S_EXPECT_KEY;
            i++;
          } else if (c === CLOSE_BRACE) this.state = S_DONE;
          else this.state = S_DEAD;
          break;
        }
      }
    }
  }

  /** The bytes so far are not the start of a JSON object: no member of an envelope will ever be found. */
  get unreadable(): boolean {
    return this.state === S_DEAD;
  }

  snapshot(): {
    id: JsonRpcId | undefined;
    method: string | undefined;
    hasResult: boolean;
    hasError: boolean;
  } {
    return { id: this.id, method: this.method, hasResult: this.hasResult, hasError: this.hasError };
  }

  /**
   * Index of the closing quote of the string being read, or -1 if it does not close in this chunk (then
   * `escaped` records whether the chunk ended on an unpaired backslash).
   */
  private findStringEnd(buf: Buffer, from: number): number {
    const len = buf.length;
    let i = from;
    if (this.escaped) {
      if (i >= len) return -1;
      this.escaped = false;
      i++;
    }
    for (;;) {
      const shortEnd = Math.min(len, i + SHORT_STRING_SCAN);
      while (i < shortEnd) {
        const c = buf[i]!;
        if (c === QUOTE) return i;
        i += c === BACKSLASH ? 2 : 1;
      }
      if (i > len) {
        this.escaped = true;
        return -1;
      }
      if (i === len) return -1;
      const q = buf.indexOf(QUOTE, i);
      const stop = q < 0 ? len : q;
      let b = stop - 1;
      while (b >= i && buf[b] === BACKSLASH) b--;
      const oddRun = ((stop - 1 - b) & 1) === 1;
      if (q < 0) {
        this.escaped = oddRun;
        return -1;
      }
      if (!oddRun) return q;
      i = q + 1;
    }
  }

  /** Skips through a nested top-level value; returns where this chunk's scan continues. */
  private skipNested(buf: Buffer, from: number): number {
    const len = buf.length;
    let i = from;
    while (i < len) {
      if (this.nestedInString) {
        const q = this.findStringEnd(buf, i);
        if (q < 0) return len;
        this.nestedInString = false;
        i = q + 1;
        continue;
      }
      const cls = STRUCTURAL[buf[i]!];
      i++;
      if (cls === 1) this.nestedInString = true;
      else if (cls === 2) this.nestedDepth++;
      else if (cls === 3 && --this.nestedDepth === 0) {
        this.finishValue(true);
        return i;
      }
    }
    return i;
  }

  private captureKey(buf: Buffer, start: number, end: number): void {
    if (this.keyOverflow) return;
    const n = end - start;
    if (this.keyLen + n > KEY_CAP) {
      this.keyOverflow = true;
      return;
    }
    this.keyBuf.set(buf.subarray(start, end), this.keyLen);
    this.keyLen += n;
  }

  private captureValue(buf: Buffer, start: number, end: number): void {
    if (this.role === ROLE_OTHER || this.valueOverflow) return;
    const n = end - start;
    if (this.valueLen + n > VALUE_CAP) {
      this.valueOverflow = true;
      return;
    }
    this.valueBuf.set(buf.subarray(start, end), this.valueLen);
    this.valueLen += n;
  }

  private finishKey(): void {
    this.role = ROLE_OTHER;
    if (this.keyOverflow) return;
    const key = parseCaptured(this.keyBuf.subarray(0, this.keyLen));
    if (key === 'id') this.role = ROLE_ID;
    else if (key === 'method') this.role = ROLE_METHOD;
    else if (key === 'result') this.hasResult = true;
    else if (key === 'error') this.hasError = true;
  }

  private finishValue(nested: boolean): void {
    this.state = S_AFTER_VALUE;
    if (this.role === ROLE_OTHER) return;
    const value =
      nested || this.valueOverflow ? undefined : parseCaptured(this.valueBuf.subarray(0, this.valueLen));
    if (this.role === ROLE_ID) {
      this.id = typeof value === 'string' || typeof value === 'number' || value === null ? value : undefined;
    } else {
      this.method = typeof value === 'string' ? value : undefined;
    }
    this.role = ROLE_OTHER;
  }
}
