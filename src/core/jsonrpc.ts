// Classification of JSON-RPC 2.0 messages, and parsing of complete JSON bodies (single or batch).
import { isJsonWhitespace, isRecord, startsWithBom } from './bytes.js';
import { boundedName } from './client-names.js';

import { type ByteSpan, splitTopLevel } from './json-scan.js';
import type { JsonRpcId, MessageKind } from './types.js';

export interface Classified {
  kind: MessageKind;
  /** The message's id when it carries one of a valid type (string, number or null), even if the message is invalid. */
  id: JsonRpcId | undefined;
  /** The message's own method, when it is a string: its bounded form (client-names.ts). */
  method: string | undefined;
  /** `params.name` of a tools/call, when it is a string: its bounded form (client-names.ts). */
  tool: string | undefined;
}

function has(obj: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(obj, key);
}

function asId(value: unknown): JsonRpcId | undefined {
  return typeof value === 'string' || typeof value === 'number' || value === null ? value : undefined;
}

function toolNameOf(method: string | undefined, params: unknown): string | undefined {
  if (method !== 'tools/call' || !isRecord(params)) return undefined;
  return typeof params.name === 'string' ? boundedName(params.name) : undefined;
}

function kindOf(obj: Record<string, unknown>, id: JsonRpcId | undefined): MessageKind {
  if (obj.jsonrpc !== '2.0') return 'invalid';
  const hasId = has(obj, 'id');
  const hasResult = has(obj, 'result');
  const hasError = has(obj, 'error');
  if (has(obj, 'method')) {
    if (typeof obj.method !== 'string' || hasResult || hasError) return 'invalid';
    if (!hasId) return 'notification';
    // A request needs an id it can be answered by: null is not one (MCP requires a string or an integer).
    return typeof id === 'string' || typeof id === 'number' ? 'request' : 'invalid';
  }
  if (hasResult === hasError) return 'invalid';
  if (hasResult) return typeof id === 'string' || typeof id === 'number' ? 'result' : 'invalid';
  // An error may carry a null id: that is how a peer answers a request whose id it could not read.
  if (!isRecord(obj.error)) return 'invalid';
  return hasId && id !== undefined ? 'error' : 'invalid';
}

/**
 * Classifies one parsed JSON-RPC message. request: method + id; notification: method, no id; result: id +
 * result; error: id + error (object); invalid otherwise, including a missing or wrong `jsonrpc: "2.0"`.
 */
export function classifyMessage(value: unknown): Classified {
  if (!isRecord(value)) return { kind: 'invalid', id: undefined, method: undefined, tool: undefined };
  const id = asId(value.id);
  const method = typeof value.method === 'string' ? boundedName(value.method) : undefined;
  return { kind: kindOf(value, id), id, method, tool: toolNameOf(method, value.params) };
}

export interface BodyMessage extends Classified {
  /** Subarray of the body: exactly this message's bytes, without surrounding whitespace. */
  bytes: Uint8Array;
  value: unknown;
}

export type ParsedBody = { ok: true; batch: boolean; messages: BodyMessage[] } | { ok: false; error: string };

/** What decodes a message's bytes (the lib types of this project declare TextDecoder as a value only). */
type Utf8Decoder = { decode(bytes: Uint8Array): string };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** How clients decode what they read (fetch, EventSource): every invalid sequence a U+FFFD, never an error. */
const lossyUtf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** The body without surrounding JSON whitespace, as a span. */
function trimmedSpan(bytes: Uint8Array): ByteSpan {
  let start = 0;
  let end = bytes.length;
  while (start < end && isJsonWhitespace(bytes[start])) start++;
  while (end > start && isJsonWhitespace(bytes[end - 1])) end--;
  return [start, end];
}

/** Decodes and parses one message's bytes; a string is an error sentence. */
function parseMessage(bytes: Uint8Array, where: string, decoder: Utf8Decoder): { value: unknown } | string {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return `${where} is not valid UTF-8`;
  }
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    // JSON.parse may run out of stack on extreme nesting: that is a refusal to parse, not a crash.
    if (err instanceof RangeError) return `${where} is nested too deeply to parse`;
    return `${where} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`;
  }
}

function toBodyMessage(bytes: Uint8Array, value: unknown): BodyMessage {
  // Fields named, not spread: spreading the classification took V8's slow clone path (~0.9 us vs 30 ns).
  const { kind, id, method, tool } = classifyMessage(value);
  return { kind, id, method, tool, bytes, value };
}

/**
 * Parses a complete JSON body: a single message or a batch array. Each message keeps its exact bytes
 * (a subarray of the body). Invalid UTF-8, invalid JSON or a leading UTF-8 BOM give ok:false with a readable
 * error. An empty batch is ok:true with no messages: the caller decides what that means.
 */
export function parseJsonRpcBody(bytes: Uint8Array): ParsedBody {
  if (startsWithBom(bytes)) return { ok: false, error: 'body starts with a UTF-8 byte order mark' };
  return parseBody(bytes, strictUtf8);
}

/**
 * A JSON body of the upstream's, read as a client reads it (fetch's json(): one leading byte order mark dropped,
 * every invalid UTF-8 sequence decoded as U+FFFD, then JSON.parse): for the bodies the validating scan refuses
 * and a client still accepts, so that what a client can read is judged and measured whatever bytes it holds.
 * Each message keeps its exact bytes, as parseJsonRpcBody's do.
 */
export function parseAnswerBody(bytes: Uint8Array): ParsedBody {
  return parseBody(startsWithBom(bytes) ? bytes.subarray(3) : bytes, lossyUtf8);
}

/** JSON.parse of bytes decoded as a client decodes them (see parseAnswerBody); undefined when that throws. */
export function parseLossily(bytes: Uint8Array): { value: unknown } | undefined {
  const parsed = parseMessage(bytes, 'message', lossyUtf8);
  return typeof parsed === 'string' ? undefined : parsed;
}

function parseBody(bytes: Uint8Array, decoder: Utf8Decoder): ParsedBody {
  const [start, end] = trimmedSpan(bytes);
  if (start === end) return { ok: false, error: 'body is empty' };

  // A single message needs no structural pass: JSON.parse validates it whole, trailing data included.
  if (bytes[start] !== 0x5b) {
    const own = bytes.subarray(start, end);
    const parsed = parseMessage(own, 'body', decoder);
    if (typeof parsed === 'string') return { ok: false, error: parsed };
    return { ok: true, batch: false, messages: [toBodyMessage(own, parsed.value)] };
  }

  const split = splitTopLevel(bytes);
  if (!split.ok) return { ok: false, error: `body is not valid JSON: ${split.error}` };
  const messages: BodyMessage[] = [];
  for (const [index, [from, to]] of split.spans.entries()) {
    const own = bytes.subarray(from, to);
    const parsed = parseMessage(own, `batch element ${index}`, decoder);
    if (typeof parsed === 'string') return { ok: false, error: parsed };
    messages.push(toBodyMessage(own, parsed.value));
  }
  return { ok: true, batch: true, messages };
}
