// Reading one JSON-RPC message from its bytes without decoding or JSON.parse: a validating scan that accepts
// exactly the texts JSON.parse accepts (the caller has checked the bytes are valid UTF-8) and records what
// measuring, judging and routing need: the envelope members, a few `params` members, and for a result the
// spans of `result.content[*]` (with each block's `type` and `text`) and of `result.structuredContent`. It
// walks with json-scan.ts's walker; everything here runs per member, not per byte. A value the measurement
// does need in full (tools/list names) is parsed lazily from the bytes. It also tells which keys the edge
// reads another reader may read otherwise (repeated, or in another letter case: key-names.ts), so that such
// a message is refused rather than judged as one thing and run as another.

import { isUtf8 } from 'node:buffer';
import { decodeUtf8, isJsonWhitespace, OPEN_BRACE, OPEN_BRACKET, QUOTE, startsWithBom } from './bytes.js';
import { keyIs, literalText, parseRange, standIn } from './json-literals.js';
import {
  type ByteSpan,
  INVALID,
  resetScanStats,
  scanStats,
  scanValue,
  skipWhitespace,
  splitTopLevel,
  walkArray,
  walkObject,
} from './json-scan.js';
import { type Classified, classifyMessage } from './jsonrpc.js';
import {
  type AmbiguousKey,
  ambiguousKeyFound,
  isExact,
  keyNames,
  matchKey,
  NO_NAME,
  nameIndex,
  noteKey,
  startKeys,
} from './key-names.js';

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

/**
 * `params` of a message, when it is an object: the members judging and routing read, each the last of its
 * name, as the value JSON.parse gives for a scalar and an empty object or array for a container (undefined:
 * absent).
 */
export interface ScannedParams {
  /** `name` (a tools/call's tool, a prompts/get's prompt). */
  name: unknown;
  /** `uri` (the resource of resources/read, subscribe, unsubscribe). */
  uri: unknown;
  /** `_meta.progressToken`. */
  progressToken: unknown;
  /** `requestId` (what a notifications/cancelled cancels). */
  requestId: unknown;
  /** A `cursor` member is present (a request for a page after the first). */
  hasCursor: boolean;
  /** Where `_meta["io.modelcontextprotocol/clientInfo"]` (the client naming itself) lies in the bytes. */
  clientInfo: [start: number, end: number] | undefined;
}

/** One message read from its bytes: classified as classifyMessage classifies its JSON.parse value. */
export interface ScannedMessage {
  bytes: Uint8Array;
  classified: Classified;
  result: ScannedResult | undefined;
  params: ScannedParams | undefined;
  /**
   * The first key of the envelope, `params` or `params._meta` that the edge reads and another reader may read
   * otherwise (repeated, or in another letter case); undefined when there is none.
   */
  ambiguous: AmbiguousKey | undefined;
  /** The JSON.parse value, computed on first use (only rare paths need it). */
  value(): unknown;
  /**
   * What names the client: for a request whose `_meta` carries clientInfo, the message reduced to that entry
   * (only its bytes are parsed); an initialize's whole value; otherwise undefined.
   */
  namingValue(): unknown;
}

function scanBlock(buf: Uint8Array, start: number, blocks: ScannedBlock[]): number {
  // A block is an element of `result.content`: nesting 3 inside its message.
  if (buf[start] !== OPEN_BRACE) {
    const end = scanValue(buf, start, 3);
    if (end >= 0) blocks.push({ span: [start, end], isObject: false, type: undefined, text: undefined });
    return end;
  }
  let type: ByteSpan | undefined;
  let typeIsString = false;
  let text: ByteSpan | undefined;
  const end = walkObject(buf, start, 4, (keyStart, keyEnd, valueStart) => {
    const valueEnd = scanValue(buf, valueStart, 4);
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

function scanResult(buf: Uint8Array, start: number, result: ScannedResult): number {
  return walkObject(buf, start, 2, (keyStart, keyEnd, valueStart) => {
    if (keyIs(buf, keyStart, keyEnd, 'content')) {
      result.blocks = [];
      result.contentIsArray = buf[valueStart] === OPEN_BRACKET;
      if (!result.contentIsArray) return scanValue(buf, valueStart, 2);
      const blocks = result.blocks;
      return walkArray(buf, valueStart, 3, (element) => scanBlock(buf, element, blocks));
    }
    const end = scanValue(buf, valueStart, 2);
    if (end < 0) return end;
    if (keyIs(buf, keyStart, keyEnd, 'structuredContent')) result.structured = [valueStart, end];
    // JSON.parse keeps the last of repeated keys; only the literal true counts, as `isError === true` does.
    else if (keyIs(buf, keyStart, keyEnd, 'isError')) result.isError = buf[valueStart] === 0x74;
    return end;
  });
}

const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';

// The keys each level is read by: what routing, ceilings, quotas and ownership read.
const ENVELOPE = keyNames(['jsonrpc', 'id', 'method', 'error', 'params', 'result']);
const E_PARAMS = 4;
const E_RESULT = 5;
const PARAMS = keyNames(['_meta', 'name', 'uri', 'requestId', 'cursor']);
const P_META = 0;
const P_NAME = 1;
const P_URI = 2;
const P_REQUEST_ID = 3;
const META = keyNames(['progressToken', CLIENT_INFO_KEY]);
const M_PROGRESS_TOKEN = 0;

/** `_meta` of params (nesting 3): its last `progressToken`, and whether it names the client. */
function scanMeta(buf: Uint8Array, start: number, params: ScannedParams): number {
  let seen = 0;
  return walkObject(buf, start, 3, (keyStart, keyEnd, valueStart) => {
    const end = scanValue(buf, valueStart, 3);
    if (end < 0) return end;
    const match = matchKey(buf, keyStart, keyEnd, META);
    if (match === NO_NAME) return end;
    seen = noteKey(buf, keyStart, keyEnd, META, 'params._meta', match, seen);
    if (!isExact(match)) return end;
    if (nameIndex(match) === M_PROGRESS_TOKEN) params.progressToken = standIn(buf, valueStart, end);
    else params.clientInfo = [valueStart, end];
    return end;
  });
}

function scanParams(buf: Uint8Array, start: number, params: ScannedParams): number {
  let seen = 0;
  return walkObject(buf, start, 2, (keyStart, keyEnd, valueStart) => {
    const match = matchKey(buf, keyStart, keyEnd, PARAMS);
    if (match !== NO_NAME) seen = noteKey(buf, keyStart, keyEnd, PARAMS, 'params', match, seen);
    const which = isExact(match) ? nameIndex(match) : NO_NAME;
    if (which === P_META) {
      // The last `_meta` is the one JSON.parse keeps: what an earlier one held is forgotten.
      params.progressToken = undefined;
      params.clientInfo = undefined;
      if (buf[valueStart] === OPEN_BRACE) return scanMeta(buf, valueStart, params);
      return scanValue(buf, valueStart, 2);
    }
    const end = scanValue(buf, valueStart, 2);
    if (end < 0 || which === NO_NAME) return end;
    if (which === P_NAME) params.name = standIn(buf, valueStart, end);
    else if (which === P_URI) params.uri = standIn(buf, valueStart, end);
    else if (which === P_REQUEST_ID) params.requestId = standIn(buf, valueStart, end);
    else params.hasCursor = true;
    return end;
  });
}

/** What a message's envelope holds, as scanMessage gathers it member by member. */
interface Envelope {
  /** The members classifyMessage looks at, with stand-ins for their values (own keys only when present). */
  skeleton: Record<string, unknown>;
  result: ScannedResult | undefined;
  params: ScannedParams | undefined;
  /** The names of ENVELOPE met so far, a bit each. */
  seen: number;
}

function scanResultMember(bytes: Uint8Array, valueStart: number, envelope: Envelope): number {
  if (bytes[valueStart] !== OPEN_BRACE) {
    envelope.result = undefined;
    envelope.skeleton.result = false;
    return scanValue(bytes, valueStart, 1);
  }
  const scanned: ScannedResult = { contentIsArray: false, blocks: [], structured: undefined, isError: false };
  envelope.result = scanned;
  envelope.skeleton.result = {};
  return scanResult(bytes, valueStart, scanned);
}

function scanParamsMember(bytes: Uint8Array, valueStart: number, envelope: Envelope): number {
  if (bytes[valueStart] !== OPEN_BRACE) {
    envelope.params = undefined;
    envelope.skeleton.params = false;
    return scanValue(bytes, valueStart, 1);
  }
  const scanned: ScannedParams = {
    name: undefined,
    uri: undefined,
    progressToken: undefined,
    requestId: undefined,
    hasCursor: false,
    clientInfo: undefined,
  };
  envelope.params = scanned;
  envelope.skeleton.params = scanned;
  return scanParams(bytes, valueStart, scanned);
}

/** One member of the envelope: read when its key is one of ENVELOPE (the last of each wins), else passed. */
function scanEnvelopeMember(
  bytes: Uint8Array,
  keyStart: number,
  keyEnd: number,
  valueStart: number,
  envelope: Envelope,
): number {
  const match = matchKey(bytes, keyStart, keyEnd, ENVELOPE);
  if (match === NO_NAME) return scanValue(bytes, valueStart, 1);
  envelope.seen = noteKey(bytes, keyStart, keyEnd, ENVELOPE, 'message', match, envelope.seen);
  if (!isExact(match)) return scanValue(bytes, valueStart, 1);
  const index = nameIndex(match);
  if (index === E_RESULT) return scanResultMember(bytes, valueStart, envelope);
  if (index === E_PARAMS) return scanParamsMember(bytes, valueStart, envelope);
  const valueEnd = scanValue(bytes, valueStart, 1);
  if (valueEnd >= 0) envelope.skeleton[ENVELOPE.names[index]!] = standIn(bytes, valueStart, valueEnd);
  return valueEnd;
}

/**
 * Reads one message: `bytes` must be valid UTF-8 (see isUtf8), optionally surrounded by JSON whitespace.
 * Returns undefined when they are not one JSON text (JSON.parse would throw); the caller then takes the
 * ordinary path, which words the error. What it saw is added to scanStats.
 */
export function scanMessage(bytes: Uint8Array): ScannedMessage | undefined {
  const len = bytes.length;
  const start = skipWhitespace(bytes, 0);
  if (start >= len) return undefined;
  startKeys();
  const envelope: Envelope = { skeleton: {}, result: undefined, params: undefined, seen: 0 };
  const isObject = bytes[start] === OPEN_BRACE;
  const end = isObject
    ? walkObject(bytes, start, 1, (keyStart, keyEnd, valueStart) =>
        scanEnvelopeMember(bytes, keyStart, keyEnd, valueStart, envelope),
      )
    : scanValue(bytes, start);
  if (end < 0 || skipWhitespace(bytes, end) !== len) return undefined;
  const classified = classifyMessage(isObject ? envelope.skeleton : null);
  const { result, params } = envelope;
  let parsed: { value: unknown } | undefined;
  const value = (): unknown => {
    parsed ??= { value: parseRange(bytes, 0, len) };
    return parsed.value;
  };
  return {
    bytes,
    classified,
    result,
    params,
    ambiguous: ambiguousKeyFound(),
    value,
    namingValue: () => {
      if (classified.method === 'initialize') return value();
      const info = params?.clientInfo;
      if (info === undefined) return undefined;
      return { params: { _meta: { [CLIENT_INFO_KEY]: parseRange(bytes, info[0], info[1]) } } };
    },
  };
}

/**
 * The ambiguous key of one message, read as a client's lossy decoder reads its bytes (invalid UTF-8 as
 * U+FFFD); undefined when it has none or is not one JSON text. For the paths that parse rather than scan.
 */
export function ambiguousKeyOf(bytes: Uint8Array): AmbiguousKey | undefined {
  return scanMessage(isUtf8(bytes) ? bytes : Buffer.from(decodeUtf8(bytes)))?.ambiguous;
}

/**
 * Reads a single message (not a batch) that is valid UTF-8 and one JSON text; undefined otherwise. Valid
 * UTF-8 is what a fatal decoder accepts, and what makes a lossy decode exact: for such bytes, "JSON.parse
 * would throw" is the only way this and the decoding path can differ, and both then take the decoding path.
 */
export function scanSingleMessage(bytes: Uint8Array): ScannedMessage | undefined {
  const start = skipWhitespace(bytes, 0);
  if (bytes[start] === OPEN_BRACKET || !isUtf8(bytes)) return undefined;
  return scanMessage(bytes);
}

/** A body read by scanning: its messages, and what the scan saw (a batch's array is one level of nesting). */
export interface ScannedBody {
  batch: boolean;
  messages: ScannedMessage[];
  /** The deepest nesting of objects and arrays in the body (a single message's object is 1). */
  depth: number;
  /** The longest string in the body, in bytes as sent, quotes included. */
  longestString: number;
}

/** Over `maxBatchMessages`: the batch's size, counted from its structure before any message is read. */
export interface OversizedBatch {
  batchMessages: number;
}

/**
 * parseJsonRpcBody, read by scanning: the same messages (each its exact bytes, without surrounding
 * whitespace), or undefined for any body parseJsonRpcBody would refuse (a BOM, invalid UTF-8 or JSON, an
 * empty body): the caller then asks parseJsonRpcBody, which words the refusal. A batch with more messages
 * than `maxBatchMessages` (when given) is not read.
 */
export function scanJsonRpcBody(bytes: Uint8Array): ScannedBody | undefined;
export function scanJsonRpcBody(
  bytes: Uint8Array,
  maxBatchMessages: number | null,
): ScannedBody | OversizedBatch | undefined;
export function scanJsonRpcBody(
  bytes: Uint8Array,
  maxBatchMessages: number | null = null,
): ScannedBody | OversizedBatch | undefined {
  if (startsWithBom(bytes)) return undefined;
  const len = bytes.length;
  const start = skipWhitespace(bytes, 0);
  let end = len;
  while (end > start && isJsonWhitespace(bytes[end - 1])) end--;
  if (start === end) return undefined;
  if (bytes[start] !== OPEN_BRACKET) {
    if (!isUtf8(bytes)) return undefined;
    resetScanStats();
    const message = scanMessage(bytes.subarray(start, end));
    return message === undefined ? undefined : bodyOf(false, [message], 0);
  }
  // A batch is counted from its structure first, as parseJsonRpcBody counts it, before its bytes are checked.
  const split = splitTopLevel(bytes);
  if (!split.ok) return undefined;
  if (maxBatchMessages !== null && split.spans.length > maxBatchMessages)
    return { batchMessages: split.spans.length };
  if (!isUtf8(bytes)) return undefined;
  resetScanStats();
  const messages: ScannedMessage[] = [];
  for (const [from, to] of split.spans) {
    const message = scanMessage(bytes.subarray(from, to));
    if (message === undefined) return undefined;
    messages.push(message);
  }
  return bodyOf(true, messages, 1);
}

function bodyOf(batch: boolean, messages: ScannedMessage[], outer: number): ScannedBody {
  return { batch, messages, depth: scanStats.depth + outer, longestString: scanStats.longestString };
}
