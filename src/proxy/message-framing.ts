// How an answer made of messages (a stdio child's lines) goes to the client, as an HTTP server would have
// framed it: SSE events, or a JSON body when the answer is a single message the exchange may take as JSON
// (one request, and the kind prefers JSON or the client does not accept SSE). The messages go to the relays
// as they are: the SSE relay frames each one as it judges it (src/core/message-events.ts), the JSON relay
// judges the one message's bytes as a body.
import type { IncomingHttpHeaders } from 'node:http';
import { acceptsEventStream, headerValue } from '../core/headers.js';
import type { UpstreamBody } from '../upstream/upstream.js';
import type { RelayedAnswer } from './relayed-answer.js';

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
const JSON_HEADERS = { 'content-type': 'application/json' };

type MessagesBody = Extract<UpstreamBody, { kind: 'messages' }>;

/** Whether the answer goes as a JSON body: one message answering the exchange's one request. */
export function answersAsJson(
  body: MessagesBody,
  requests: number,
  clientHeaders: IncomingHttpHeaders,
): boolean {
  const mayAnswerJson =
    requests === 1 && (body.preferJson || !acceptsEventStream(headerValue(clientHeaders, 'accept')));
  return mayAnswerJson && body.firstIsAnswer;
}

/** The answer with the content type of its framing; its messages stay messages for the relay. */
export function messagesAnswer(
  statusCode: number,
  headers: RelayedAnswer['headers'],
  body: MessagesBody,
  json: boolean,
): RelayedAnswer {
  return {
    statusCode,
    headers: { ...headers, ...(json ? JSON_HEADERS : SSE_HEADERS) },
    body: { kind: 'messages', events: body.events },
  };
}
