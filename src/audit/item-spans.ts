// Where each item of a listing page (`result.tools[i]`, `result.prompts[i]`, ...) lies in the bytes the
// server sent, so a descriptor weighs what was sent, escapes and whitespace included. Built on the core's
// validating walker (json-scan.ts); a page it cannot read yields no spans (the caller says so).
import { OPEN_BRACE, OPEN_BRACKET } from '../core/bytes.js';
import { type ByteSpan, scanValue, skipWhitespace, walkArray, walkObject } from '../core/json-scan.js';

const utf8 = new TextDecoder('utf-8');

/** The value span of the last member `key` of the object starting at `start` (as JSON.parse keeps it). */
function memberSpan(buf: Uint8Array, start: number, key: string): ByteSpan | undefined {
  if (buf[start] !== OPEN_BRACE) return undefined;
  let found: ByteSpan | undefined;
  const end = walkObject(buf, start, 1, (keyStart, keyEnd, valueStart) => {
    const valueEnd = scanValue(buf, valueStart, 1);
    if (valueEnd >= 0 && JSON.parse(utf8.decode(buf.subarray(keyStart, keyEnd))) === key)
      found = [valueStart, valueEnd];
    return valueEnd;
  });
  return end < 0 ? undefined : found;
}

function elementSpans(buf: Uint8Array, start: number): ByteSpan[] | undefined {
  if (buf[start] !== OPEN_BRACKET) return undefined;
  const spans: ByteSpan[] = [];
  const end = walkArray(buf, start, 1, (valueStart) => {
    const valueEnd = scanValue(buf, valueStart, 1);
    if (valueEnd >= 0) spans.push([valueStart, valueEnd]);
    return valueEnd;
  });
  return end < 0 ? undefined : spans;
}

/** The spans of `result[key][*]` in one answer's bytes, or undefined when that is not there or not readable. */
export function listedItemSpans(bytes: Uint8Array, key: string): ByteSpan[] | undefined {
  const result = memberSpan(bytes, skipWhitespace(bytes, 0), 'result');
  if (result === undefined) return undefined;
  const items = memberSpan(bytes, result[0], key);
  return items === undefined ? undefined : elementSpans(bytes, items[0]);
}
