// Measurement of one complete message: its size as sent, and for tool results the bytes of each result
// channel and the text that duplicates structuredContent (duplicate-text.ts). Measuring reads the bytes; it
// never changes them. A message is measured from its scan (measureScannedMessage); one the scan does not read
// (an SSE event with invalid UTF-8, read lossily) from its parsed value and the same walk's spans.

import { isRecord } from './bytes.js';
import { DuplicateDetector, literalTextDuplicate } from './duplicate-text.js';
import { parseRange } from './json-literals.js';
import { type Classified, classifyMessage } from './jsonrpc.js';
import { type ScannedMessage, type ScannedResult, scanMessage } from './message-scan.js';
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

function measureToolResult(
  bytes: Uint8Array,
  result: Record<string, unknown>,
): { channels: ResultChannels; duplicatedBytes: number } {
  const channels = emptyChannels();
  const blocks = Array.isArray(result.content) ? result.content : [];
  // The spans come from the same walk as a scanned message's; the bytes are JSON (their value parsed).
  const spans = scanMessage(bytes)?.result;
  const blockSpans = spans?.blocks ?? [];
  // Spans and parsed blocks come from the same bytes, so they pair up in order.
  const count = Math.min(blocks.length, blockSpans.length);
  for (let i = 0; i < count; i++) {
    const block: unknown = blocks[i];
    const span = blockSpans[i]!.span;
    const channel =
      isRecord(block) && typeof block.type === 'string' ? CHANNEL_OF_BLOCK_TYPE.get(block.type) : undefined;
    if (channel !== undefined) channels[channel] += span[1] - span[0];
  }

  let duplicatedBytes = 0;
  const structured = spans?.structured;
  if (structured !== undefined && Object.hasOwn(result, 'structuredContent')) {
    channels.structured = structured[1] - structured[0];
    const detector = new DuplicateDetector(bytes, structured, () => result.structuredContent);
    for (let i = 0; i < count; i++) {
      const block: unknown = blocks[i];
      if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string') continue;
      duplicatedBytes += detector.duplicatedBytes(block.text);
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
      duplicatedBytes += literalTextDuplicate(bytes, block.text, structured, detector);
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
