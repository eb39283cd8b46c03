// A Streamable HTTP server through the SDK's own client transport, with a fetch that tees every response
// body: each SSE event's data (framed by the edge's SSE framer) and each message of a JSON body reach the
// tap as the exact bytes the server sent, before the SDK parses them. Memory is bounded by
// --max-message-bytes: a message past it is not held, and the SDK gets an error for its request instead.
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { splitTopLevel } from '../core/json-scan.js';
import { SseFramer } from '../core/sse-framer.js';
import { oversizedAnswerText, type RawTap, StreamedId } from './raw-tap.js';

const encoder = new TextEncoder();

function copyOf(bytes: Uint8Array): Uint8Array {
  return Uint8Array.prototype.slice.call(bytes) as Uint8Array;
}

/** An SSE body passed on event by event; each event's data recorded; an oversized one replaced by an error. */
function tappedEventStream(tap: RawTap): TransformStream<Uint8Array, Uint8Array> {
  const framer = new SseFramer({ maxDataBytes: tap.maxMessageBytes });
  let oversized: StreamedId | undefined;
  const pass = (items: ReturnType<SseFramer['push']>, out: TransformStreamDefaultController<Uint8Array>) => {
    for (const item of items) {
      if (item.type === 'event') {
        if (item.data !== null) tap.record(copyOf(item.data));
        for (const piece of item.raw) out.enqueue(copyOf(piece));
      } else if (item.type === 'oversized-start') {
        oversized = new StreamedId();
        oversized.push(item.heldData);
      } else if (item.type === 'oversized-data') {
        oversized?.push(item.data);
      } else if (item.type === 'oversized-end') {
        const id = oversized?.id;
        tap.recordOversized(id, item.dataBytes);
        out.enqueue(
          encoder.encode(`data: ${oversizedAnswerText(id, item.dataBytes, tap.maxMessageBytes)}\n\n`),
        );
        oversized = undefined;
      } else {
        for (const piece of item.raw) out.enqueue(copyOf(piece));
      }
    }
  };
  return new TransformStream({
    transform: (chunk, out) => pass(framer.push(chunk), out),
    flush: (out) => pass(framer.end(), out),
  });
}

/** A JSON body held to the bound, each of its messages recorded, then passed on whole (or replaced). */
function tappedJsonBody(tap: RawTap): TransformStream<Uint8Array, Uint8Array> {
  const pieces: Uint8Array[] = [];
  let held = 0;
  const streamed = new StreamedId();
  return new TransformStream({
    transform(chunk) {
      streamed.push(chunk);
      if (held + chunk.length > tap.maxMessageBytes) {
        pieces.length = 0;
        held = Number.POSITIVE_INFINITY;
        return;
      }
      pieces.push(copyOf(chunk));
      held += chunk.length;
    },
    flush(out) {
      if (held === Number.POSITIVE_INFINITY) {
        tap.recordOversized(streamed.id, streamed.total);
        out.enqueue(encoder.encode(oversizedAnswerText(streamed.id, streamed.total, tap.maxMessageBytes)));
        return;
      }
      const body = Buffer.concat(pieces);
      const split = splitTopLevel(body);
      if (split.ok) for (const [start, end] of split.spans) tap.record(body.subarray(start, end));
      out.enqueue(body);
    },
  });
}

/**
 * A connection per request, never a kept-alive one: audit measures between requests (tokenizing can hold
 * the event loop for seconds on a loaded machine), and a POST sent on a socket the server closed while idle
 * fails ("other side closed") where resending it could run a tool twice. Audit's requests are few.
 */
const ONE_REQUEST_PER_CONNECTION = new Agent({ pipelining: 0 });

/** fetch, with each request's id noted and each answer's bytes recorded on the way to the SDK. */
export function tappedFetch(tap: RawTap): FetchLike {
  return async (url, init) => {
    if (typeof init?.body === 'string') {
      try {
        tap.noteSent(JSON.parse(init.body));
      } catch {
        // Not ours to judge: the SDK wrote it.
      }
    }
    // undici's own fetch, to give it the dispatcher; its Response is the web Response the SDK reads.
    const response = (await undiciFetch(url, {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher: ONE_REQUEST_PER_CONNECTION,
    })) as unknown as Response;
    if (response.body === null || !response.ok) return response;
    const type = (response.headers.get('content-type') ?? '').toLowerCase();
    const tee = type.startsWith('text/event-stream')
      ? tappedEventStream(tap)
      : type.startsWith('application/json')
        ? tappedJsonBody(tap)
        : undefined;
    if (tee === undefined) return response;
    return new Response(response.body.pipeThrough(tee), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

export function httpTransport(
  url: URL,
  headers: Record<string, string>,
  tap: RawTap,
): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(url, { fetch: tappedFetch(tap), requestInit: { headers } });
}
