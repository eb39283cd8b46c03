// What a client reads from bytes the edge sent it, the reference the properties through the whole proxy judge the
// edge by (issue 42): a JSON body as fetch's `json()` reads it (WHATWG UTF-8 decode: a leading byte order mark
// dropped, every invalid sequence read as U+FFFD, then JSON.parse), an SSE stream as eventsource-parser reads it
// (what both MCP SDKs use) over the same lossy decode. And what the edge reports it measured, from its metrics.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { expect } from 'vitest';
import { samples } from './exposition.js';

const utf8 = new TextDecoder();

/** JSON.parse of the bytes as a client decodes them; undefined when a client cannot read them either. */
export function readJsonAsClient(bytes: Uint8Array): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(utf8.decode(bytes)) };
  } catch {
    return undefined;
  }
}

/** The events with data a client reads from an SSE stream's bytes (a priming event, with empty data, is no message). */
export function readSseAsClient(bytes: Uint8Array): EventSourceMessage[] {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => event.data !== '' && events.push(event) });
  const text = utf8.decode(bytes);
  // A CR at the very end ends its line (WHATWG); a streaming parser waits for a possible LF, which never comes.
  parser.feed(text.endsWith('\r') ? `${text}\n` : text);
  return events;
}

/** The edge's replacement for an answer over its ceiling, as a client reads it. */
export function expectLimitError(value: unknown, id: string | number, tool: string): void {
  expect(value).toMatchObject({
    jsonrpc: '2.0',
    id,
    error: { code: -32603, data: { limit: 'response.maxMessageBytes', tool } },
  });
}

/** The edge's replacement for an answer with a key written twice, which a client may read either way. */
export function expectAmbiguousError(value: unknown, id: string | number): void {
  expect(value).toMatchObject({
    jsonrpc: '2.0',
    id,
    error: { code: -32603, data: { reason: 'ambiguous_message', in: 'message', repeated: true } },
  });
}

/**
 * An answer over its ceiling with a key written twice: replaced whole for its own id, for either reason. Which
 * one depends on where the id falls in the bytes: an answer to a waiting request is replaced as soon as it
 * crosses its ceiling, unread past it; an event that may be something else is read whole, then judged ambiguous.
 */
export function expectLimitOrAmbiguousError(value: unknown, id: string | number, tool: string): void {
  const reason = (value as { error?: { data?: { reason?: unknown } } } | undefined)?.error?.data?.reason;
  if (reason === 'ambiguous_message') expectAmbiguousError(value, id);
  else expectLimitError(value, id, tool);
}

/** What the edge's metrics say it saw of the messages in one direction, summed over every series. */
export interface Measured {
  messages: number;
  bytes: number;
  unparsable: number;
}

function total(text: string, name: string, direction: string): number {
  return samples(text, name)
    .filter((s) => s.labels.direction === direction)
    .reduce((sum, s) => sum + s.value, 0);
}

/** Scrapes the edge's metrics: messages and their bytes (mcp_edge_message_bytes), unparsable messages. */
export async function measured(metricsUrl: string, direction: 'request' | 'response'): Promise<Measured> {
  const text = await (await fetch(metricsUrl)).text();
  return {
    messages: total(text, 'mcp_edge_message_bytes_count', direction),
    bytes: total(text, 'mcp_edge_message_bytes_sum', direction),
    unparsable: total(text, 'mcp_edge_unparsable_messages_total', direction),
  };
}

/** What a case expects the metrics to have grown by: exact counts, bytes within bounds (lower bounds of messages too large to hold). */
export interface ExpectedMeasure {
  messages: number;
  minBytes: number;
  maxBytes: number;
  unparsable: number;
}

export function expectMeasured(before: Measured, after: Measured, expected: ExpectedMeasure): void {
  const grown = {
    messages: after.messages - before.messages,
    bytes: after.bytes - before.bytes,
    unparsable: after.unparsable - before.unparsable,
  };
  expect(grown.messages, 'messages measured (mcp_edge_message_bytes_count)').toBe(expected.messages);
  expect(grown.unparsable, 'messages counted unparsable').toBe(expected.unparsable);
  expect(grown.bytes, 'bytes measured (mcp_edge_message_bytes_sum)').toBeGreaterThanOrEqual(
    expected.minBytes,
  );
  expect(grown.bytes, 'bytes measured (mcp_edge_message_bytes_sum)').toBeLessThanOrEqual(expected.maxBytes);
}
