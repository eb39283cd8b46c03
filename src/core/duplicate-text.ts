// Duplicated text: a tool result's text block that copies its structuredContent (the MCP spec asks tools to
// send the serialized JSON as text too; hosts that forward both channels make the model read it twice).
// Decided on the raw bytes of structuredContent as sent (text-layout.ts); decoding and serializing only
// where the raw JSON is not in JSON.stringify's own form.

import { BACKSLASH } from './bytes.js';
import { literalText } from './json-literals.js';
import type { ByteSpan } from './json-scan.js';
import { compareLayout, layoutIndentOf, literalCopyOfLayout } from './text-layout.js';

const utf8 = new TextDecoder('utf-8');

/**
 * Decides whether a text block's text equals the serialized structuredContent, and returns its UTF-8 byte
 * length if so (0 if not). Cheap first: the text is compared, token by token, with the raw bytes of
 * structuredContent as sent, in JSON.stringify's compact or pretty layout (the indent read off the text's
 * second line). Only when the raw JSON was not in JSON.stringify's own form (whitespace, escapes like `\u00e9`,
 * numbers like `1.0`) could an exact serialization still match: then, when sizes make it plausible, the raw
 * text and JSON.stringify(structuredContent[, null, indent]) are compared. Each is computed at most once.
 */
export class DuplicateDetector {
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
export function literalTextDuplicate(
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
