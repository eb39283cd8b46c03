// Reading one JSON-RPC message from its bytes without decoding or JSON.parse: a validating scan that accepts
// exactly the texts JSON.parse accepts (the caller has checked the bytes are valid UTF-8) and records what
// measuring and judging need: the envelope members, and for a result the spans of `result.content[*]`
// (with each block's `type` and `text`) and of `result.structuredContent`. Big messages are mostly one long
// string, so the hot loop is the string scan (string-scan.ts); everything else runs per member, not per byte.
//
// The same two rules as json-scan.ts: no recursion over the document (depth lives in a growable stack),
// and a repeated key wins last, as in JSON.parse. A value the measurement does need in full (tools/list
// names) is parsed lazily from the bytes.

import { isUtf8 } from 'node:buffer';
import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  decodeUtf8,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
  startsWithBom,
} from './bytes.js';
import { type ByteSpan, splitTopLevel } from './json-scan.js';
import { type Classified, classifyMessage } from './jsonrpc.js';
import { scanString } from './string-scan.js';

/** One element of `result.content`, as far as measuring needs it. */
export interface ScannedBlock {
  span: ByteSpan;
  isObject: boolean;
  /** The block's last `type` member, when that is a string. */
  type: string | undefined;
  /** The literal (quotes included) of the block's last `text` member, when that is a string. */
  text: ByteSpan | undefined;
}

/** `result` of a message, when it is an object. */
export interface ScannedResult {
  contentIsArray: boolean;
  /** The elements of `result.content` when it is an array (else empty). */
  blocks: ScannedBlock[];
  /** The span of the last `result.structuredContent` member, when there is one. */
  structured: ByteSpan | undefined;
  /** The last `result.isError` member is `true` (a tool that failed). */
  isError: boolean;
}

/** One message read from its bytes: classified as classifyMessage classifies its JSON.parse value. */
export interface ScannedMessage {
  bytes: Uint8Array;
  classified: Classified;
  result: ScannedResult | undefined;
  /** The JSON.parse value, computed on first use (only rare paths need it). */
  value(): unknown;
}

const DIGIT = new Uint8Array(256);
for (let c = 0x30; c <= 0x39; c++) DIGIT[c] = 1;
const WHITESPACE = new Uint8Array(256);
for (const c of [0x20, 0x0a, 0x0d, 0x09]) WHITESPACE[c] = 1;

const INVALID = -1;

function skipWs(buf: Uint8Array, pos: number, len: number): number {
  let i = pos;
  while (i < len && WHITESPACE[buf[i]!] === 1) i++;
  return i;
}

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
  if (c === QUOTE) return scanString(buf, pos, len);
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
function scanKeyColon(buf: Uint8Array, pos: number, len: number): number {
  const at = skipWs(buf, pos, len);
  if (buf[at] !== QUOTE) return INVALID;
  const keyEnd = scanString(buf, at, len);
  if (keyEnd < 0) return INVALID;
  const colon = skipWs(buf, keyEnd, len);
  return buf[colon] === COLON ? colon + 1 : INVALID;
}

/** Index past the JSON value starting at `pos` (after optional whitespace), fully validated; INVALID if it is not one. */
export function scanValue(buf: Uint8Array, pos: number, len: number): number {
  let depth = 0;
  let i = pos;
  for (;;) {
    // A value starts here.
    i = skipWs(buf, i, len);
    if (i >= len) return INVALID;
    const c = buf[i]!;
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const inner = skipWs(buf, i + 1, len);
      if (buf[inner] === c + 2) {
        // '{' + 2 = '}', '[' + 2 = ']': an empty container is one value.
        i = inner + 1;
      } else {
        if (depth === containerStack.length) {
          const grown = new Uint8Array(depth * 2);
          grown.set(containerStack);
          containerStack = grown;
        }
        if (c === OPEN_BRACE) {
          containerStack[depth++] = IN_OBJECT;
          i = scanKeyColon(buf, inner, len);
          if (i < 0) return INVALID;
        } else {
          containerStack[depth++] = IN_ARRAY;
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
      if (depth === 0) return i;
      i = skipWs(buf, i, len);
      const sep = buf[i];
      const open = containerStack[depth - 1];
      if (sep === COMMA) {
        i = open === IN_OBJECT ? scanKeyColon(buf, i + 1, len) : i + 1;
        if (i < 0) return INVALID;
        break;
      }
      if (sep !== (open === IN_OBJECT ? CLOSE_BRACE : CLOSE_BRACKET)) return INVALID;
      i++;
      depth--;
    }
  }
}

/**
 * Walks the members of the object opening at `open`, validating keys and separators; `visit(keyStart, keyEnd,
 * valueStart)` scans each value and returns its end (INVALID if it is not valid). Returns the index past the
 * closing brace, or INVALID.
 */
function walkObject(
  buf: Uint8Array,
  open: number,
  len: number,
  visit: (keyStart: number, keyEnd: number, valueStart: number) => number,
): number {
  let pos = skipWs(buf, open + 1, len);
  if (buf[pos] === CLOSE_BRACE) return pos + 1;
  for (;;) {
    if (buf[pos] !== QUOTE) return INVALID;
    const keyEnd = scanString(buf, pos, len);
    if (keyEnd < 0) return INVALID;
    const colon = skipWs(buf, keyEnd, len);
    if (buf[colon] !== COLON) return INVALID;
    const valueStart = skipWs(buf, colon + 1, len);
    if (valueStart >= len) return INVALID;
    const valueEnd = visit(pos, keyEnd, valueStart);
    if (valueEnd < 0) return INVALID;
    pos = skipWs(buf, valueEnd, len);
    if (buf[pos] === CLOSE_BRACE) return pos + 1;
    if (buf[pos] !== COMMA) return INVALID;
    pos = skipWs(buf, pos + 1, len);
  }
}

/** Walks the elements of the array opening at `open`; `visit(valueStart)` scans each and returns its end. */
function walkArray(
  buf: Uint8Array,
  open: number,
  len: number,
  visit: (valueStart: number) => number,
): number {
  let pos = skipWs(buf, open + 1, len);
  if (buf[pos] === CLOSE_BRACKET) return pos + 1;
  for (;;) {
    if (pos >= len) return INVALID;
    const end = visit(pos);
    if (end < 0) return INVALID;
    pos = skipWs(buf, end, len);
    if (buf[pos] === CLOSE_BRACKET) return pos + 1;
    if (buf[pos] !== COMMA) return INVALID;
    pos = skipWs(buf, pos + 1, len);
  }
}

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
function keyIs(buf: Uint8Array, start: number, end: number, name: string): boolean {
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
function standIn(buf: Uint8Array, start: number, end: number): unknown {
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

function scanBlock(buf: Uint8Array, start: number, len: number, blocks: ScannedBlock[]): number {
  if (buf[start] !== OPEN_BRACE) {
    const end = scanValue(buf, start, len);
    if (end >= 0) blocks.push({ span: [start, end], isObject: false, type: undefined, text: undefined });
    return end;
  }
  let type: ByteSpan | undefined;
  let typeIsString = false;
  let text: ByteSpan | undefined;
  const end = walkObject(buf, start, len, (keyStart, keyEnd, valueStart) => {
    const valueEnd = scanValue(buf, valueStart, len);
    if (valueEnd < 0) return INVALID;
    if (keyIs(buf, keyStart, keyEnd, 'type')) {
      type = [valueStart, valueEnd];
      typeIsString = buf[valueStart] === QUOTE;
    } else if (keyIs(buf, keyStart, keyEnd, 'text')) {
      text = buf[valueStart] === QUOTE ? [valueStart, valueEnd] : undefined;
    }
    return valueEnd;
  });
  if (end < 0) return INVALID;
  blocks.push({
    span: [start, end],
    isObject: true,
    type: type !== undefined && typeIsString ? literalText(buf, type[0], type[1]) : undefined,
    text,
  });
  return end;
}

function scanResult(buf: Uint8Array, start: number, len: number, result: ScannedResult): number {
  return walkObject(buf, start, len, (keyStart, keyEnd, valueStart) => {
    if (keyIs(buf, keyStart, keyEnd, 'content')) {
      result.blocks = [];
      result.contentIsArray = buf[valueStart] === OPEN_BRACKET;
      if (!result.contentIsArray) return scanValue(buf, valueStart, len);
      const blocks = result.blocks;
      return walkArray(buf, valueStart, len, (element) => scanBlock(buf, element, len, blocks));
    }
    const end = scanValue(buf, valueStart, len);
    if (end < 0) return end;
    if (keyIs(buf, keyStart, keyEnd, 'structuredContent')) result.structured = [valueStart, end];
    // JSON.parse keeps the last of repeated keys; only the literal true counts, as `isError === true` does.
    else if (keyIs(buf, keyStart, keyEnd, 'isError')) result.isError = buf[valueStart] === 0x74;
    return end;
  });
}

/** The last `name` member of the params object at `start`: its stand-in, or undefined when absent. */
function scanParams(buf: Uint8Array, start: number, len: number, params: Record<string, unknown>): number {
  return walkObject(buf, start, len, (keyStart, keyEnd, valueStart) => {
    const end = scanValue(buf, valueStart, len);
    if (end >= 0 && keyIs(buf, keyStart, keyEnd, 'name')) params.name = standIn(buf, valueStart, end);
    return end;
  });
}

const ENVELOPE_KEYS = ['jsonrpc', 'id', 'method', 'error'] as const;

/**
 * Reads one message: `bytes` must be valid UTF-8 (see isUtf8), optionally surrounded by JSON whitespace.
 * Returns undefined when they are not one JSON text (JSON.parse would throw); the caller then takes the
 * ordinary path, which words the error.
 */
export function scanMessage(bytes: Uint8Array): ScannedMessage | undefined {
  const len = bytes.length;
  const start = skipWs(bytes, 0, len);
  if (start >= len) return undefined;
  // The members classifyMessage looks at, with stand-ins for their values (own keys only when present).
  const skeleton: Record<string, unknown> = {};
  let result: ScannedResult | undefined;
  let end: number;
  if (bytes[start] !== OPEN_BRACE) {
    end = scanValue(bytes, start, len);
  } else {
    end = walkObject(bytes, start, len, (keyStart, keyEnd, valueStart) => {
      if (keyIs(bytes, keyStart, keyEnd, 'result')) {
        if (bytes[valueStart] !== OPEN_BRACE) {
          result = undefined;
          skeleton.result = false;
          return scanValue(bytes, valueStart, len);
        }
        const scanned: ScannedResult = {
          contentIsArray: false,
          blocks: [],
          structured: undefined,
          isError: false,
        };
        result = scanned;
        skeleton.result = {};
        return scanResult(bytes, valueStart, len, scanned);
      }
      if (keyIs(bytes, keyStart, keyEnd, 'params')) {
        if (bytes[valueStart] !== OPEN_BRACE) {
          skeleton.params = false;
          return scanValue(bytes, valueStart, len);
        }
        const params: Record<string, unknown> = {};
        skeleton.params = params;
        return scanParams(bytes, valueStart, len, params);
      }
      const valueEnd = scanValue(bytes, valueStart, len);
      if (valueEnd < 0) return INVALID;
      for (const key of ENVELOPE_KEYS) {
        if (keyIs(bytes, keyStart, keyEnd, key)) {
          skeleton[key] = standIn(bytes, valueStart, valueEnd);
          break;
        }
      }
      return valueEnd;
    });
  }
  if (end < 0 || skipWs(bytes, end, len) !== len) return undefined;
  const classified = classifyMessage(bytes[start] === OPEN_BRACE ? skeleton : null);
  let parsed: { value: unknown } | undefined;
  return {
    bytes,
    classified,
    result,
    value: () => {
      parsed ??= { value: parseRange(bytes, 0, len) };
      return parsed.value;
    },
  };
}

/**
 * Reads a single message (not a batch) that is valid UTF-8 and one JSON text; undefined otherwise. Valid
 * UTF-8 is what a fatal decoder accepts, and what makes a lossy decode exact: for such bytes, "JSON.parse
 * would throw" is the only way this and the decoding path can differ, and both then take the decoding path.
 */
export function scanSingleMessage(bytes: Uint8Array): ScannedMessage | undefined {
  const start = skipWs(bytes, 0, bytes.length);
  if (bytes[start] === OPEN_BRACKET || !isUtf8(bytes)) return undefined;
  return scanMessage(bytes);
}

/**
 * parseJsonRpcBody, read by scanning: the same messages (each its exact bytes, without surrounding
 * whitespace), or undefined for any body parseJsonRpcBody would refuse (a BOM, invalid UTF-8 or JSON, an
 * empty body): the caller then asks parseJsonRpcBody, which words the refusal.
 */
export function scanJsonRpcBody(
  bytes: Uint8Array,
): { batch: boolean; messages: ScannedMessage[] } | undefined {
  if (startsWithBom(bytes) || !isUtf8(bytes)) return undefined;
  const len = bytes.length;
  const start = skipWs(bytes, 0, len);
  let end = len;
  while (end > start && WHITESPACE[bytes[end - 1]!] === 1) end--;
  if (start === end) return undefined;
  if (bytes[start] !== OPEN_BRACKET) {
    const message = scanMessage(bytes.subarray(start, end));
    return message === undefined ? undefined : { batch: false, messages: [message] };
  }
  const split = splitTopLevel(bytes);
  if (!split.ok) return undefined;
  const messages: ScannedMessage[] = [];
  for (const [from, to] of split.spans) {
    const message = scanMessage(bytes.subarray(from, to));
    if (message === undefined) return undefined;
    messages.push(message);
  }
  return { batch: true, messages };
}
