// Which requests still wait for an answer has one record per exchange (Exchange.pending) and one per session
// side: each is remembered when its request is judged and let go when its answer is judged, so a long-lived
// session that has had many calls answered holds nothing of them.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import {
  acceptedBySession,
  type Exchange,
  judgeContext,
  onlyRequestWaiting,
  runtimeOf,
  startExchange,
  upstreamView,
} from '../../src/exchange/exchange.js';
import { JsonResponseInspector } from '../../src/inspect/json-response.js';
import { judgeRequestBody } from '../../src/inspect/request-body.js';
import { SessionStore } from '../../src/inspect/session-store.js';
import { SseResponseInspector } from '../../src/inspect/sse-response.js';
import { filterChainOf } from '../../src/proxy/filters/chosen.js';
import { createLogger } from '../../src/run.js';

const { config } = parseConfigText(
  'upstream: { url: http://127.0.0.1:3000/mcp }\nlimits: { request: { maxBatchMessages: 200 } }',
  'edge.yaml',
  {},
);
const runtime = runtimeOf(config);
const filters = filterChainOf({ config, metrics: undefined, log: createLogger('silent') });
const encode = (text: string) => new TextEncoder().encode(text);
const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo' } });
const answer = (id: number) => ({ jsonrpc: '2.0', id, result: { content: [] } });

/** Every request id the exchange holds, wherever it holds one: its pending record or any list of its own. */
function idsHeld(exchange: Exchange): unknown[] {
  const lists = Object.values(exchange).filter((value) => Array.isArray(value));
  return [...exchange.pending.ids(), ...lists.flat()];
}

/** An exchange of session `sessionId` whose body (`messages`) was judged and accepted by the upstream. */
function sentExchange(sessions: SessionStore, sessionId: string, messages: object[] | object): Exchange {
  const exchange = startExchange(runtime, 'default', sessionId, filters);
  const verdict = judgeRequestBody(
    judgeContext(exchange, 'request', sessions),
    encode(JSON.stringify(messages)),
  );
  expect(verdict.ok).toBe(true);
  acceptedBySession(exchange, sessions);
  return exchange;
}

describe('which requests wait for an answer', () => {
  it('a long stream answering a batch of calls one by one leaves nothing of them behind', () => {
    const sessions = new SessionStore();
    const ids = Array.from({ length: 150 }, (_, i) => i + 1);
    const exchange = sentExchange(sessions, 's-1', ids.map(call));
    // The upstream is told the body's ids once (the view is built when it first asks).
    expect(upstreamView(exchange).requestIds).toEqual(ids);
    expect(upstreamView(exchange)).toBe(upstreamView(exchange));
    expect(idsHeld(exchange)).toEqual(ids);
    expect(sessions.known('s-1')?.toServer.size).toBe(ids.length);

    const inspector = new SseResponseInspector(
      judgeContext(exchange, 'response', sessions),
      null,
      undefined,
      true,
    );
    for (const id of ids) {
      const out = inspector.push(encode(`data: ${JSON.stringify(answer(id))}\n\n`));
      expect(out.action).toBe('forward');
      // Answered requests are let go as their answers pass, not when the stream ends.
      expect(idsHeld(exchange)).not.toContain(id);
    }
    expect(idsHeld(exchange)).toEqual([]);
    expect(onlyRequestWaiting(exchange)).toBeNull();
    expect(sessions.known('s-1')?.toServer.size).toBe(0);
  });

  it('many calls answered on one session leave the session holding none of them', () => {
    const sessions = new SessionStore();
    for (let id = 1; id <= 300; id++) {
      const exchange = sentExchange(sessions, 's-2', call(id));
      expect(onlyRequestWaiting(exchange)).toBe(id);
      const inspector = new JsonResponseInspector(
        judgeContext(exchange, 'response', sessions),
        null,
        exchange.pending.ids(),
      );
      expect(inspector.push(encode(JSON.stringify(answer(id)))).action).toBe('hold');
      expect(inspector.end().action).toBe('forward');
      expect(idsHeld(exchange)).toEqual([]);
    }
    const session = sessions.known('s-2');
    expect(session?.toServer.size).toBe(0);
    expect(session?.toClient.size).toBe(0);
  });
});
