// An upstream's answer as the relays take it: an HTTP server's bytes, or the messages of a kind without HTTP
// framing of its own, which the relays judge as they are (no bytes framed only to be parsed again).
import type { Readable } from 'node:stream';

/**
 * What a relay reads: an HTTP server's bytes, or the object-mode MessageEvents of a kind without HTTP framing
 * (message-framing.ts chose their content type).
 */
export type RelayedBody = { kind: 'bytes'; stream: Readable } | { kind: 'messages'; events: Readable };

/** An upstream's answer as the relays take it. */
export interface RelayedAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: RelayedBody;
}

/** The stream a relay reads: destroying it lets go of the upstream's answer. */
export function sourceOf(body: RelayedBody): Readable {
  return body.kind === 'bytes' ? body.stream : body.events;
}
