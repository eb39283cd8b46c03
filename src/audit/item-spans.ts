// Where each item of a listing page (`result.tools[i]`, `result.prompts[i]`, ...) lies in the bytes the
// server sent, so a descriptor weighs what was sent, escapes and whitespace included. Built on the core's
// validating value scan; a page it cannot read yields no spans (the caller says so).
import {
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isJsonWhitespace,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from '../core/bytes.js';
import type { ByteSpan } from '../core/json-scan.js';
import { scanValue } from '../core/message-scan.js';
import { scanString } from '../core/string-scan.js';

function skipWs(buf: Uint8Array, pos: number): number {
  let i = pos;
  while (i < buf.length && isJsonWhitespace(buf[i])) i++;
  return i;
}

const utf8 = new TextDecoder('utf-8');

/** The value span of the last member `key` of the object starting at `start` (as JSON.parse keeps it). */
function memberSpan(buf: Uint8Array, start: number, key: string): ByteSpan | undefined {
  if (buf[start] !== OPEN_BRACE) return undefined;
  let found: ByteSpan | undefined;
  let i = skipWs(buf, start + 1);
  if (buf[i] === CLOSE_BRACE) return undefined;
  for (;;) {
    if (buf[i] !== QUOTE) return undefined;
    const keyEnd = scanString(buf, i, buf.length);
    if (keyEnd < 0) return undefined;
    const name = JSON.parse(utf8.decode(buf.subarray(i, keyEnd))) as string;
    const colon = skipWs(buf, keyEnd);
    if (buf[colon] !== COLON) return undefined;
    const valueStart = skipWs(buf, colon + 1);
    const valueEnd = scanValue(buf, valueStart, buf.length);
    if (valueEnd < 0) return undefined;
    if (name === key) found = [valueStart, valueEnd];
    i = skipWs(buf, valueEnd);
    if (buf[i] === CLOSE_BRACE) return found;
    if (buf[i] !== COMMA) return undefined;
    i = skipWs(buf, i + 1);
  }
}

function elementSpans(buf: Uint8Array, start: number): ByteSpan[] | undefined {
  if (buf[start] !== OPEN_BRACKET) return undefined;
  const spans: ByteSpan[] = [];
  let i = skipWs(buf, start + 1);
  if (buf[i] === CLOSE_BRACKET) return spans;
  for (;;) {
    const valueStart = skipWs(buf, i);
    const valueEnd = scanValue(buf, valueStart, buf.length);
    if (valueEnd < 0) return undefined;
    spans.push([valueStart, valueEnd]);
    i = skipWs(buf, valueEnd);
    if (buf[i] === CLOSE_BRACKET) return spans;
    if (buf[i] !== COMMA) return undefined;
    i++;
  }
}

/** The spans of `result[key][*]` in one answer's bytes, or undefined when that is not there or not readable. */
export function listedItemSpans(bytes: Uint8Array, key: string): ByteSpan[] | undefined {
  const result = memberSpan(bytes, skipWs(bytes, 0), 'result');
  if (result === undefined) return undefined;
  const items = memberSpan(bytes, result[0], key);
  return items === undefined ? undefined : elementSpans(bytes, items[0]);
}
