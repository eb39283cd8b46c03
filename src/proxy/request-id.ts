// The request id a client can see: decided once per request (Fastify's genReqId), on every log line of the
// request (`reqId`) and echoed in X-Request-Id on every answer, the edge's own refusals and streams included.
// A client's own X-Request-Id is kept when it is one plain token of bounded length, so it cannot forge log
// fields or grow the log line; otherwise the edge makes one.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const REQUEST_ID_HEADER = 'x-request-id';

/** The longest client-chosen request id kept (a UUID is 36, a W3C trace id 32, a ULID 26). */
export const MAX_CLIENT_REQUEST_ID = 128;

/** Letters, digits and the punctuation request ids use in practice; nothing that ends a log field or a header. */
const PLAIN_TOKEN = /^[A-Za-z0-9._~:@+=/-]+$/;

/** The client's X-Request-Id when it is a plain token of at most MAX_CLIENT_REQUEST_ID characters, else a new UUID. */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const sent = headers[REQUEST_ID_HEADER];
  if (typeof sent === 'string' && sent.length <= MAX_CLIENT_REQUEST_ID && PLAIN_TOKEN.test(sent)) return sent;
  return randomUUID();
}
