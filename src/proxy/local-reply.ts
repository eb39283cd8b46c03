// The edge's own answers, and how an exchange ended. respondLocally is the one way the edge answers a request
// itself (a refusal, a failure of the upstream or of the edge, a preflight, a resumption with nothing left);
// this file is the only one that sets an exchange's outcome, always the one the refusals table gives the
// answer or the ending (src/core/refusals/table.ts). What is not set here is decided when the response closes
// (exchange-end.ts): forwarded, response_replaced or client_closed.
import type { FastifyReply } from 'fastify';
import { type EdgeHttpError, endingOutcome } from '../core/refusals/answers.js';
import type { EndingName } from '../core/refusals/table.js';
import type { Exchange } from '../exchange/exchange.js';
import type { Upstream } from '../upstream/upstream.js';

/**
 * Whoever owns the response now: Fastify's reply until a relay takes the raw response (then a ClientResponse,
 * which copies the reply's headers and what the onSend hooks add).
 */
export interface AnswerWriter {
  /** Answered already, or the client is gone. */
  readonly closed: boolean;
  sendAnswer(answer: EdgeHttpError): void;
}

/**
 * An AnswerWriter made of its parts. A class, because a getter written in an object literal costs V8 an
 * AccessorPair allocated in the old generation for each object: that dead pair keeps the getter's closure,
 * and with it the whole request and response, through every minor GC until a full one, so each exchange's
 * objects were promoted. No object made per exchange defines a getter in a literal
 * (test/unit/per-exchange-objects.test.ts).
 */
class PartsWriter implements AnswerWriter {
  constructor(private readonly parts: WriterParts) {}

  get closed(): boolean {
    return this.parts.isClosed();
  }

  sendAnswer(answer: EdgeHttpError): void {
    this.parts.sendAnswer(answer);
  }
}

/** What an AnswerWriter is made of: whether it is closed, and how it answers. */
export interface WriterParts {
  isClosed(): boolean;
  sendAnswer(answer: EdgeHttpError): void;
}

/** The writer a caller that is not Fastify's reply hands respondLocally (a failed exchange's raw response). */
export function answerWriter(parts: WriterParts): AnswerWriter {
  return new PartsWriter(parts);
}

/** Fastify's reply as an AnswerWriter: its onSend hooks (CORS, the WWW-Authenticate rewrite) see the answer. */
export function replyWriter(reply: FastifyReply): AnswerWriter {
  return answerWriter({
    isClosed: () => reply.sent || reply.raw.headersSent || reply.raw.destroyed,
    sendAnswer: (answer) => {
      reply.code(answer.status).headers(answer.headers).send(answer.body);
    },
  });
}

/**
 * Answers with an answer of the edge's own, in place of anything the upstream sent; the exchange (none for a
 * path that is not the MCP endpoint) ends with the answer's outcome. A client that is gone, or a request
 * answered already (shutdown's 503 for a waiting GET), gets nothing more.
 */
export function respondLocally(
  exchange: Exchange | undefined,
  client: AnswerWriter,
  answer: EdgeHttpError,
): void {
  if (client.closed) return;
  if (exchange !== undefined) exchange.outcome = answer.outcome;
  client.sendAnswer(answer);
}

/**
 * The edge ends an exchange whose answer had begun: a stream cut by shutdown, an upstream gone silent or
 * broken off, an exception in the edge's own code; the outcome is the table's for `ending`. The first
 * reason stands, except that the edge's own failure says more than anything set before it.
 */
export function endedByEdge(exchange: Exchange, ending: EndingName): void {
  if (exchange.outcome === undefined || ending === 'edge_failure') exchange.outcome = endingOutcome(ending);
}

/** respondLocally for a Fastify reply, as the shell hands it to the OAuth and CORS routes and the upstream. */
export type Respond = (reply: FastifyReply, answer: EdgeHttpError) => void;

/** What the routes beside the MCP endpoint need of the shell: its upstream, and the way to answer. */
export interface ShellAnswers {
  upstream: Pick<Upstream, 'publicName' | 'httpEndpoint'>;
  respond: Respond;
}
