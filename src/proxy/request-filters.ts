// The filters' request hooks as a stage: once an admitted exchange's body is read and judged (a GET or DELETE
// has none), before anything of it goes upstream, the filters judge each of its messages (a message refused in
// a batch is answered by the edge, the others go on: src/exchange/refused-messages.ts), then the exchange whole
// (the pagination bound), then spend what it costs (a quota): the first refusal answers it. They may also set
// headers on its upstream request (a traceparent).
import type { IncomingHttpHeaders } from 'node:http';
import type { Exchange } from '../exchange/exchange.js';
import { refuseMessages } from '../exchange/refused-messages.js';
import type { EdgeContext } from './edge-context.js';
import { EdgeError } from './edge-error.js';
import type { ExchangeRequest } from './filters/exchange-filter.js';

const NO_MESSAGES = { messages: [], batch: false } as const;

/** The exchange's request as the filters see it: the messages that go on, and the bytes that go upstream. */
function requestOf(
  ctx: Pick<EdgeContext, 'sessions'>,
  exchange: Exchange,
  headers: IncomingHttpHeaders,
): ExchangeRequest {
  const judged = exchange.request ?? NO_MESSAGES;
  const sessionId = exchange.sessionId;
  return {
    headers,
    messages: judged.messages,
    batch: judged.batch,
    bytes: exchange.forwardedBody?.length ?? exchange.requestBytes,
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
}

/** Asks the filters about the exchange's request; `done` gets their refusal, or undefined. No promise unless a filter waits. */
export function filterRequest(
  ctx: Pick<EdgeContext, 'filters' | 'sessions'>,
  exchange: Exchange,
  headers: IncomingHttpHeaders,
  done: (refusal: EdgeError | undefined) => void,
): void {
  let request = requestOf(ctx, exchange, headers);
  const verdicts = ctx.filters.requestMessages(exchange, request);
  if (verdicts !== undefined) {
    const whole = refuseMessages(exchange, verdicts);
    if (whole !== undefined) {
      done(new EdgeError(whole));
      return;
    }
    // Refused in part: the hooks after see what goes upstream.
    request = requestOf(ctx, exchange, headers);
  }
  const decision = ctx.filters.request(exchange, request);
  if (!(decision instanceof Promise)) {
    done(decision !== undefined ? new EdgeError(decision) : undefined);
    return;
  }
  // The chain catches what a filter throws or rejects with: a decision always settles.
  void decision.then((answer) => done(answer !== undefined ? new EdgeError(answer) : undefined));
}
