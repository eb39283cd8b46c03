// The filters' request hook as a stage: once an admitted exchange's body is read and judged (a GET or DELETE
// has none), before anything of it goes upstream, the filters may refuse it whole (a quota, the pagination
// bound) or set headers on its upstream request (a traceparent).
import type { IncomingHttpHeaders } from 'node:http';
import type { Exchange } from '../exchange/exchange.js';
import type { EdgeContext } from './edge-context.js';
import { EdgeError } from './edge-error.js';
import type { ExchangeRequest } from './filters/exchange-filter.js';

const NO_MESSAGES = { messages: [], batch: false } as const;

/** Asks the filters about the exchange's request; `done` gets their refusal, or undefined. No promise unless a filter waits. */
export function filterRequest(
  ctx: Pick<EdgeContext, 'filters' | 'sessions'>,
  exchange: Exchange,
  headers: IncomingHttpHeaders,
  done: (refusal: EdgeError | undefined) => void,
): void {
  const judged = exchange.request ?? NO_MESSAGES;
  const sessionId = exchange.sessionId;
  const request: ExchangeRequest = {
    headers,
    messages: judged.messages,
    batch: judged.batch,
    bytes: exchange.requestBytes,
    session: sessionId !== undefined ? ctx.sessions.known(sessionId) : undefined,
    setUpstreamHeader(name, value) {
      exchange.upstreamHeaders ??= {};
      exchange.upstreamHeaders[name.toLowerCase()] = value;
    },
    setUpstreamMeta(name, value) {
      exchange.upstreamMeta ??= {};
      exchange.upstreamMeta[name] = value;
    },
  };
  const decision = ctx.filters.request(exchange, request);
  if (!(decision instanceof Promise)) {
    done(decision !== undefined ? new EdgeError(decision) : undefined);
    return;
  }
  // The chain catches what a filter throws or rejects with: a decision always settles.
  void decision.then((answer) => done(answer !== undefined ? new EdgeError(answer) : undefined));
}
