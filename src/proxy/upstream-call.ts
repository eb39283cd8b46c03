// The MCP endpoint's routes, for every kind of upstream: an admitted exchange, its body read and judged, is
// checked against the session rules (session-rules.ts) and handed to the Upstream as an UpstreamCall. What
// the upstream answers comes back here: its status and client-facing headers set (message-framing.ts chooses
// the content type of an answer made of messages), its body to the response relay, a failure or a refusal
// answered through respondLocally. Everything an upstream hands the shell runs in its callbacks, outside Fastify's
// try/catch: guarded.
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { guardWith } from '../core/guard.js';
import { clientResponseHeaders, contentCoding, isEventStream, isJson } from '../core/headers.js';
import { type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';
import { upstreamView } from '../exchange/exchange.js';
import {
  FORWARDED_METHODS,
  type ForwardedMethod,
  type UpstreamCall,
  type UpstreamExchange,
  type UpstreamRefusal,
} from '../upstream/upstream.js';
import { ClientResponse } from './client-response.js';
import { type EdgeContext, exchangeOf } from './edge-context.js';
import { endedByEdge, respondLocally } from './local-reply.js';
import { answersAsJson, messagesAnswer } from './message-framing.js';
import { type RelayedAnswer, sourceOf } from './relayed-answer.js';
import { relayResponse, upstreamFailed } from './response-relay.js';
import { sessionRuleAnswer } from './session-rules.js';

export interface McpRouteOptions {
  respond(reply: FastifyReply, answer: EdgeHttpError): void;
  /** What the onSend hooks would add to an answer (CORS, OAuth), for a response a relay writes itself. */
  decorate(request: FastifyRequest, reply: FastifyReply): void;
  /** The exchange goes to the upstream now (shutdown.ts follows it); false: shutdown refused it instead. */
  sending(reply: FastifyReply): boolean;
}

/** The upstream's response headers as the client gets them (length and coding go when the edge may rewrite). */
export function clientHeadersOf(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const inspect = isEventStream(headers['content-type']) || isJson(headers['content-type']);
  const coding = contentCoding(headers);
  const decoded = inspect && coding !== 'identity' && coding !== 'unsupported';
  return clientResponseHeaders(headers, inspect, decoded) as IncomingHttpHeaders;
}

/** A refusal of the upstream's, worded by the refusals table. */
function refusalAnswer(refusal: UpstreamRefusal, exchange: UpstreamExchange): EdgeHttpError {
  if (refusal.kind === 'stream_capacity')
    return edgeAnswer('stream_connections_full', { max: refusal.limit });
  if (refusal.kind === 'malformed') return edgeAnswer('upstream_malformed', { detail: refusal.detail });
  const ids = exchange.requestIds;
  return edgeAnswer('id_in_use', { detail: refusal.detail }, ids.length === 1 ? (ids[0] ?? null) : null);
}

/** What goes upstream: the body as the client sent it, or what the filters let on of a batch (forwardedBody). */
function bodyOf(request: FastifyRequest): Buffer {
  const forwarded = request.exchange?.forwardedBody;
  if (forwarded !== undefined) return forwarded;
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

export function registerMcpRoutes(app: FastifyInstance, ctx: EdgeContext, options: McpRouteOptions): void {
  const { upstream } = ctx;
  const { respond } = options;

  /**
   * The relays write the client's response themselves: before its status line, the reply's status and
   * headers (the upstream's, rewritten) and what the onSend hooks would add go onto the raw response, and
   * Fastify lets go of it.
   */
  const clientOf = (request: FastifyRequest, reply: FastifyReply, release?: () => void) =>
    new ClientResponse(reply.raw, request.method, request.log, {
      beforeStart: () => {
        options.decorate(request, reply);
        reply.hijack();
        const raw = reply.raw;
        raw.statusCode = reply.statusCode;
        const headers = reply.getHeaders();
        for (const name of Object.keys(headers)) {
          const value = headers[name];
          if (value !== undefined) raw.setHeader(name, value);
        }
      },
      answeredElsewhere: () => reply.sent,
      onFailure: (client) => {
        // The edge answers on the raw response from here; Fastify must not send too.
        reply.hijack();
        release?.();
        if (client !== undefined) respondLocally(request.exchange, client, edgeAnswer('edge_failure', {}));
        else if (request.exchange !== undefined) endedByEdge(request.exchange, 'edge_failure');
      },
    });

  const callOf = (request: FastifyRequest, reply: FastifyReply, view: UpstreamExchange): UpstreamCall => {
    const url = request.raw.url ?? '';
    const query = url.indexOf('?');
    const fail: UpstreamCall['fail'] = (kind, detail) => {
      const client = clientOf(request, reply);
      client.guard(() => upstreamFailed(ctx, request.exchange, client, kind, detail))();
    };
    return {
      request: {
        method: request.method as ForwardedMethod,
        query: query === -1 ? '' : url.slice(query),
        headers: request.headers,
        peer: request.socket.remoteAddress,
        body: bodyOf(request),
      },
      exchange: view,
      deliver(response) {
        const { statusCode, headers, body } = response;
        const answer: RelayedAnswer =
          body.kind === 'bytes'
            ? { statusCode, headers, body }
            : messagesAnswer(
                statusCode,
                headers,
                body,
                answersAsJson(body, view.requestIds.length, request.headers),
              );
        try {
          reply.code(statusCode);
        } catch {
          // A status Fastify cannot send.
          sourceOf(answer.body).destroy();
          fail('unreachable', `the upstream answered with status ${statusCode}`);
          return;
        }
        reply.headers(clientHeadersOf(answer.headers as IncomingHttpHeaders));
        const client = clientOf(request, reply, () => sourceOf(answer.body).destroy());
        client.guard(() => relayResponse(ctx, exchangeOf(request), client, answer))();
      },
      fail,
      refuse: (refusal) => respond(reply, refusalAnswer(refusal, view)),
      guard: (release) => guardWith((err) => clientOf(request, reply, release).fail(err)),
      onClose: (listener) => reply.raw.once('close', listener),
      // A method, not a getter: see answerWriter (local-reply.ts) for why no object made per exchange has one.
      isOpen: () => !reply.sent && !reply.raw.destroyed,
    };
  };

  app.route({
    method: [...FORWARDED_METHODS],
    url: ctx.config.listen.path,
    handler: (request, reply) => {
      const view = upstreamView(exchangeOf(request));
      const sessions = upstream.sessions;
      const answer =
        sessions === undefined
          ? undefined
          : sessionRuleAnswer(sessions, request.method as ForwardedMethod, view, request.log, upstream.label);
      if (answer !== undefined) respond(reply, answer);
      else if (options.sending(reply)) upstream.handle(callOf(request, reply, view));
    },
  });
}
