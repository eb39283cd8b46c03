// Measurement of one complete JSON-RPC message: its size as sent, and for tool results the bytes of each
// result channel. Measuring reads the bytes and the parsed value; it never changes either.

import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isRecord,
  LF,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from './bytes.js';
import {
  type ByteSpan,
  lastMemberValueSpan,
  type ToolResultShortcuts,
  toolResultSpans,
} from './json-scan.js';
import { type Classified, classifyMessage } from './jsonrpc.js';
import { literalText, parseRange, type ScannedMessage, type ScannedResult } from './message-scan.js';
import type {
  MessageKind,
  MessageMeasurement,
  MessageSubject,
  ResultChannelName,
  ResultChannels,
} from './types.js';

/** Which channel each known content block type is counted in. Unknown types are not counted anywhere. */
const CHANNEL_OF_BLOCK_TYPE: ReadonlyMap<string, ResultChannelName> = new Map<string, ResultChannelName>([
  ['text', 'content_text'],
  ['image', 'content_image'],
  ['audio', 'content_audio'],
  ['resource_link', 'content_resource_link'],
  ['resource', 'content_resource'],
]);

/**
 * A rough token estimate: one token per 4 bytes of UTF-8, rounded up. It is observational only (it never
 * drives a limit): real tokenizers differ per model, and non-Latin text usually costs more tokens per byte.
 */
export function estimateTokens(utf8Bytes: number): number {
  return utf8Bytes > 0 ? Math.ceil(utf8Bytes / 4) : 0;
}

/** Zero bytes in every channel. */
export function emptyChannels(): ResultChannels {
  return {
    content_text: 0,
    content_image: 0,
    content_audio: 0,
    content_resource_link: 0,
    content_resource: 0,
    structured: 0,
  };
}

/** Whether a result (an object) is a tool result. */
function isToolResult(
  kind: MessageKind,
  contentIsArray: boolean,
  answers: MessageSubject | undefined,
): boolean {
  if (kind !== 'result') return false;
  // When the request is known, it decides; otherwise a `content` array is what marks a tool result.
  if (answers?.method !== undefined) return answers.method === 'tools/call';
  return contentIsArray;
}

/** The result object of a tool result, or undefined when the message is not one. */
function toolResultOf(
  kind: MessageKind,
  value: unknown,
  answers: MessageSubject | undefined,
): Record<string, unknown> | undefined {
  if (!isRecord(value) || !isRecord(value.result)) return undefined;
  const result = value.result;
  return isToolResult(kind, Array.isArray(result.content), answers) ? result : undefined;
}

interface LayoutComparison {
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
function compareLayout(
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
function layoutIndentOf(text: string): string {
  if (text.charCodeAt(1) !== LF) return '';
  const indentChar = text.charCodeAt(2);
  if (indentChar !== 0x20 && indentChar !== 0x09) return '';
  let k = 3;
  while (k < text.length && text.charCodeAt(k) === indentChar) k++;
  return text.slice(2, k);
}

const utf8 = new TextDecoder('utf-8');

/**
 * Decides whether a text block's text equals the serialized structuredContent, and returns its UTF-8 byte
 * length if so (0 if not). Cheap first: the text is compared, token by token, with the raw bytes of
 * structuredContent as sent, in JSON.stringify's compact or pretty layout (the indent read off the text's
 * second line). Only when the raw JSON was not in JSON.stringify's own form (whitespace, escapes like `\u00e9`,
 * numbers like `1.0`) could an exact serialization still match: then, when sizes make it plausible, the raw
 * text and JSON.stringify(structuredContent[, null, indent]) are compared. Each is computed at most once.
 */
class DuplicateDetector {
  private raw: string | undefined;
  private readonly serialized = new Map<string, string | null>();
  private readonly spanBytes: number;

  /** structured: the parsed structuredContent, asked for only when the raw JSON is not in JSON.stringify's form. */
  constructor(
    private readonly bytes: Uint8Array,
    private readonly span: ByteSpan,
    private readonly structured: () => unknown,
  ) {
    this.spanBytes = span[1] - span[0];
  }

  duplicatedBytes(text: string): number {
    const length = text.length;
    // No size ratio rules a copy out: the raw JSON may carry any amount of whitespace. A text that is no copy
    // differs within its first tokens, where compareLayout stops.
    if (length === 0) return 0;
    const indent = layoutIndentOf(text);
    if (indent === '') {
      const sameBytes = this.sameBytesAsRaw(text);
      if (sameBytes > 0) return sameBytes;
    }
    const layout = compareLayout(text, this.bytes, this.span[0], this.span[1], indent);
    if (layout.equal) return layout.textBytes;
    if (layout.rawTokensCanonical && !layout.rawHasWhitespace) return 0;
    // N bytes of UTF-8 decode to between N/3 and N UTF-16 units.
    if (layout.rawHasWhitespace && length <= this.spanBytes && length * 3 >= this.spanBytes) {
      this.raw ??= utf8.decode(this.bytes.subarray(this.span[0], this.span[1]));
      if (text === this.raw) return Buffer.byteLength(text, 'utf8');
    }
    if (!layout.rawTokensCanonical && text === this.serializedWith(indent))
      return Buffer.byteLength(text, 'utf8');
    return 0;
  }

  /**
   * The common case, a compact copy of the raw bytes (a server that serializes both with JSON.stringify):
   * compared natively, which beats the token walk by far. Returns the byte length when equal, else 0.
   */
  private sameBytesAsRaw(text: string): number {
    const spanBytes = this.spanBytes;
    // N bytes of UTF-8 decode to between N/3 and N UTF-16 units.
    if (text.length > spanBytes || text.length * 3 < spanBytes) return 0;
    if (text.charCodeAt(0) !== this.bytes[this.span[0]]) return 0;
    // Encoding once serves both the length check and the comparison (no separate Buffer.byteLength pass).
    const encoded = Buffer.from(text, 'utf8');
    if (encoded.length !== spanBytes) return 0;
    return encoded.equals(this.bytes.subarray(this.span[0], this.span[1])) ? spanBytes : 0;
  }

  private serializedWith(indent: string): string | null {
    let serialized = this.serialized.get(indent);
    if (serialized === undefined) {
      serialized = stringifyOrNull(this.structured(), indent);
      this.serialized.set(indent, serialized);
    }
    return serialized;
  }
}

/** JSON.stringify, or null when it cannot (a value nested deeper than the stack allows). */
function stringifyOrNull(value: unknown, indent: string): string | null {
  try {
    return JSON.stringify(value, null, indent) ?? null;
  } catch {
    return null;
  }
}

/**
 * Whether the JSON string literal opening at `literalStart` is, escaped exactly as JSON.stringify escapes,
 * the raw JSON `bytes[start, end)` laid out with `indent` (the layout of compareLayout). Bytes against bytes:
 * no decoding, and multi-byte characters compare as they are. A match also proves where the literal ends:
 * every backslash in it was consumed as the start of an escape pair and every quote as part of `\"`, so the
 * first unescaped quote is the one after them. Returns the index past the literal and the UTF-8 length of
 * its text, or undefined at the first difference.
 */
function literalCopyOfLayout(
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

/** Below this many characters a text block is scanned and compared the ordinary way: too small to matter. */
const LONG_TEXT = 1024;

interface LiteralCopy {
  literalStart: number;
  literalEnd: number;
  textBytes: number;
}

/**
 * Shortcuts for the common big case, a text block that copies structuredContent (the MCP spec asks tools to
 * send the serialized JSON as text too): structuredContent is found from the end of the message, and each long
 * text literal is compared with it as bytes, which both detects the copy and proves where the literal ends, so
 * the literal (often the largest and most escape-dense string of the message) is never scanned. Each copy is
 * recorded with its position, to be confirmed once the real spans are known.
 */
function copyShortcuts(
  bytes: Uint8Array,
  blocks: readonly unknown[],
  copies: Map<number, LiteralCopy>,
): ToolResultShortcuts | undefined {
  const hasLongText = blocks.some(
    (block) => isRecord(block) && typeof block.text === 'string' && block.text.length >= LONG_TEXT,
  );
  if (!hasLongText) return undefined;
  const structured = lastMemberValueSpan(bytes, 'structuredContent');
  if (structured === undefined) return undefined;
  const structuredBytes = structured[1] - structured[0];
  return {
    structured,
    textValueEnd: (index, literalStart) => {
      copies.delete(index);
      const block = blocks[index];
      if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string') return -1;
      const text = block.text;
      if (text.length < LONG_TEXT || text.length * 6 < structuredBytes) return -1;
      const copy = literalCopyOfLayout(
        bytes,
        literalStart,
        structured[0],
        structured[1],
        layoutIndentOf(text),
      );
      if (copy === undefined) return -1;
      copies.set(index, { literalStart, ...copy });
      return copy.literalEnd;
    },
  };
}

function measureToolResult(
  bytes: Uint8Array,
  result: Record<string, unknown>,
): { channels: ResultChannels; duplicatedBytes: number } {
  const channels = emptyChannels();
  const blocks = Array.isArray(result.content) ? result.content : [];
  const hasStructured = Object.hasOwn(result, 'structuredContent');
  const copies = new Map<number, LiteralCopy>();
  const shortcuts = hasStructured ? copyShortcuts(bytes, blocks, copies) : undefined;
  const spans = toolResultSpans(bytes, shortcuts);
  // Spans and parsed blocks come from the same bytes, so they pair up in order.
  const count = Math.min(blocks.length, spans.content.length);
  for (let i = 0; i < count; i++) {
    const block: unknown = blocks[i];
    const span = spans.content[i]!;
    const channel =
      isRecord(block) && typeof block.type === 'string' ? CHANNEL_OF_BLOCK_TYPE.get(block.type) : undefined;
    if (channel !== undefined) channels[channel] += span[1] - span[0];
  }

  let duplicatedBytes = 0;
  if (spans.structured !== undefined && hasStructured) {
    channels.structured = spans.structured[1] - spans.structured[0];
    // The copies were compared with the last structuredContent member found by search: valid if it is the real one.
    const confirmed =
      shortcuts?.structured?.[0] === spans.structured[0] && shortcuts.structured[1] === spans.structured[1];
    const detector = new DuplicateDetector(bytes, spans.structured, () => result.structuredContent);
    for (let i = 0; i < count; i++) {
      const block: unknown = blocks[i];
      if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string') continue;
      const copy = confirmed ? copies.get(i) : undefined;
      const span = spans.content[i]!;
      if (copy !== undefined && span[0] < copy.literalStart && copy.literalEnd < span[1]) {
        duplicatedBytes += copy.textBytes;
      } else {
        duplicatedBytes += detector.duplicatedBytes(block.text);
      }
    }
  }
  return { channels, duplicatedBytes };
}

/**
 * Measures one complete message. `bytes` are its exact bytes as sent, `value` their JSON.parse result, and
 * `answers` (for a result or error) the method and tool of the request it answers, when known.
 * Channels are reported for tool results only: a result answering tools/call, or, when the request is
 * unknown, a result whose `content` is an array. Channel bytes are raw bytes as sent (escapes included).
 */
export function measureMessage(
  bytes: Uint8Array,
  value: unknown,
  answers?: MessageSubject,
  classified: Classified = classifyMessage(value),
): MessageMeasurement {
  const toolResult = toolResultOf(classified.kind, value, answers);
  const measured = toolResult === undefined ? undefined : measureToolResult(bytes, toolResult);
  return measurementOf(classified, bytes.length, measured);
}

/** A message's measurement from its classification, its size and, for a tool result, its channels. */
function measurementOf(
  { kind, id, method, tool }: Classified,
  envelopeBytes: number,
  measured: { channels: ResultChannels; duplicatedBytes: number } | undefined,
): MessageMeasurement {
  return {
    envelopeBytes,
    kind,
    id,
    method,
    tool,
    channels: measured?.channels,
    duplicatedBytes: measured?.duplicatedBytes ?? 0,
    estimatedTokens: estimateTokens(envelopeBytes),
  };
}

/**
 * The indent layoutIndentOf would read off the text of the valid string literal `bytes[start, end)`, read
 * from the literal's bytes; undefined when escapes make that uncertain (then the text is decoded).
 */
function literalLayoutIndent(bytes: Uint8Array, start: number, end: number): string | undefined {
  const last = end - 1; // the closing quote
  let k = start + 1;
  if (k >= last) return '';
  const first = bytes[k]!;
  if (first === BACKSLASH || first >= 0x80) return undefined;
  k++;
  if (k >= last || bytes[k] !== BACKSLASH) return '';
  if (bytes[k + 1] === 0x75) return undefined;
  if (bytes[k + 1] !== 0x6e) return '';
  k += 2;
  let indent: string;
  if (bytes[k] === 0x20) {
    const from = k;
    while (k < last && bytes[k] === 0x20) k++;
    indent = ' '.repeat(k - from);
  } else if (bytes[k] === BACKSLASH && bytes[k + 1] === 0x74) {
    let n = 0;
    while (k < last && bytes[k] === BACKSLASH && bytes[k + 1] === 0x74) {
      k += 2;
      n++;
    }
    indent = '\t'.repeat(n);
  } else {
    return bytes[k] === BACKSLASH && bytes[k + 1] === 0x75 ? undefined : '';
  }
  // An escaped indent character would continue the run in the text.
  return bytes[k] === BACKSLASH && bytes[k + 1] === 0x75 ? undefined : indent;
}

/**
 * duplicatedBytes of a text block read from its literal: a copy of structuredContent is recognized on the
 * literal's bytes, without decoding it (the same comparison as the long-copy shortcut); anything else is
 * decoded and given to the detector.
 */
function scannedTextDuplicate(
  bytes: Uint8Array,
  literal: ByteSpan,
  structured: ByteSpan,
  detector: DuplicateDetector,
): number {
  const indent = literalLayoutIndent(bytes, literal[0], literal[1]);
  if (indent !== undefined) {
    const copy = literalCopyOfLayout(bytes, literal[0], structured[0], structured[1], indent);
    if (copy !== undefined && copy.literalEnd === literal[1]) return copy.textBytes;
  }
  return detector.duplicatedBytes(literalText(bytes, literal[0], literal[1]));
}

function measureScannedToolResult(
  bytes: Uint8Array,
  result: ScannedResult,
): { channels: ResultChannels; duplicatedBytes: number } {
  const channels = emptyChannels();
  for (const block of result.blocks) {
    const channel = block.type !== undefined ? CHANNEL_OF_BLOCK_TYPE.get(block.type) : undefined;
    if (channel !== undefined) channels[channel] += block.span[1] - block.span[0];
  }
  let duplicatedBytes = 0;
  const structured = result.structured;
  if (structured !== undefined) {
    channels.structured = structured[1] - structured[0];
    const detector = new DuplicateDetector(bytes, structured, () =>
      parseRange(bytes, structured[0], structured[1]),
    );
    for (const block of result.blocks) {
      if (block.type !== 'text' || block.text === undefined) continue;
      duplicatedBytes += scannedTextDuplicate(bytes, block.text, structured, detector);
    }
  }
  return { channels, duplicatedBytes };
}

/**
 * measureMessage for a message read by scanMessage: the same measurement, from the bytes alone (no decoding,
 * no JSON.parse of the message).
 */
export function measureScannedMessage(scan: ScannedMessage, answers?: MessageSubject): MessageMeasurement {
  const result = scan.result;
  const measured =
    result !== undefined && isToolResult(scan.classified.kind, result.contentIsArray, answers)
      ? measureScannedToolResult(scan.bytes, result)
      : undefined;
  return measurementOf(scan.classified, scan.bytes.length, measured);
}
