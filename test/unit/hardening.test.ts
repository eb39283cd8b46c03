// The pure pieces behind issue 12's fixes, without sockets: cut SSE events, byte-bounded request memory,
// the session store, what may be resent, and how an exchange's outcome is decided.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { edgeError } from '../../src/core/refusals/answers.js';
import { CUT_EVENT_TYPE, closingOfCutEvent, endsBetweenEvents } from '../../src/core/sse-framer.js';
import type { LimitPolicy } from '../../src/core/types.js';
import { ExchangeSummary } from '../../src/inspect/observer.js';
import { PendingRequests } from '../../src/inspect/pending-requests.js';
import { SessionStore } from '../../src/inspect/session-store.js';
import { SseResponseInspector } from '../../src/inspect/sse-response.js';
import { outcomeOf } from '../../src/proxy/exchange-end.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';
import { SilenceWatch } from '../../src/proxy/silence-watch.js';
import { resendDelay } from '../../src/upstream/http-upstream.js';

/** The events a client dispatches from `text`, parsed by eventsource-parser (what both MCP SDKs use). */
function dispatched(text: string): EventSourceMessage[] {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e) });
  parser.feed(text);
  return events;
}

function lastBytes(text: string): [number, number, number] {
  const at = (k: number) => (k >= 0 ? text.charCodeAt(k) : -1);
  const n = text.length;
  return [at(n - 3), at(n - 2), at(n - 1)];
}

const STREAM =
  'id: 1\nevent: message\ndata: {"jsonrpc":"2.0","method":"a"}\r\n\r\n: ping\rdata: {"b":\n\ndata: x\r\ndata: y\r\n\r\n';

describe('closing an event the upstream cut off', () => {
  it('cut anywhere, the next event the client dispatches as a message is the edge\u2019s own, whole', () => {
    const error = `event: message\ndata: ${JSON.stringify(edgeError('answer_lost', { detail: 'cut' }, 7))}\n\n`;
    const isMessage = (e: EventSourceMessage) => e.event === undefined || e.event === 'message';
    const whole = dispatched(STREAM)
      .filter(isMessage)
      .map((e) => e.data);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: STREAM.length }), (cut) => {
        const sent = STREAM.slice(0, cut);
        const messages = dispatched(sent + closingOfCutEvent(...lastBytes(sent)) + error)
          .filter(isMessage)
          .map((e) => e.data);
        // The last message is the edge's error, whole; every one before it is an event of the stream, whole.
        expect(messages.at(-1)).toBe(JSON.stringify(edgeError('answer_lost', { detail: 'cut' }, 7)));
        expect(messages.slice(0, -1)).toEqual(whole.slice(0, messages.length - 1));
      }),
      { numRuns: 500 },
    );
  });

  it('knows where an event ends, for LF, CR and CRLF', () => {
    expect(endsBetweenEvents(-1, -1, -1)).toBe(true);
    expect(endsBetweenEvents(...lastBytes('data: x\n\n'))).toBe(true);
    expect(endsBetweenEvents(...lastBytes('data: x\r\r'))).toBe(true);
    expect(endsBetweenEvents(...lastBytes('data: x\r\n\r\n'))).toBe(true);
    expect(endsBetweenEvents(...lastBytes('data: x\r\n\r'))).toBe(true);
    expect(endsBetweenEvents(...lastBytes('data: x\n'))).toBe(false);
    expect(endsBetweenEvents(...lastBytes('data: x\r\n'))).toBe(false);
    expect(endsBetweenEvents(...lastBytes('data: x'))).toBe(false);
  });

  it('the SSE inspector closes an unterminated tail before the errors for waiting ids', () => {
    const policy: LimitPolicy = { defaults: { response: { maxMessageBytes: 1 << 20 } }, tenants: {} };
    const pending = new PendingRequests({ maxEntries: 10, maxBytes: 1 << 20, ttlMs: 60_000 });
    pending.remember(7, { method: 'tools/call', tool: 't' });
    const summary = new ExchangeSummary();
    const inspector = new SseResponseInspector(
      {
        direction: 'response',
        tenant: 'default',
        policy,
        mode: 'enforce',
        observer: summary,
        answered: pending,
        answeredInSession: undefined,
        remember: undefined,
        checks: CEILING_CHECKS,
      },
      1 << 20,
    );
    const pieces = [
      ...inspector.push(Buffer.from('data: {"jsonrpc":"2.0","id":7,"result":{"con')).toClient,
      ...inspector.end().toClient,
      ...inspector.answerLost((id) => edgeError('answer_lost', { detail: 'the stream broke off' }, id), true)
        .toClient,
    ];
    const text = pieces.map((p) => (typeof p === 'string' ? p : Buffer.from(p).toString())).join('');
    const events = dispatched(text);
    expect(events.map((e) => e.event)).toEqual([CUT_EVENT_TYPE, 'message']);
    expect(JSON.parse(events[1]?.data ?? '')).toMatchObject({
      id: 7,
      error: { data: { reason: 'upstream_failed' } },
    });
  });
});

describe('request memory is bounded in bytes', () => {
  it('PendingRequests keeps its bytes under maxBytes, oldest first, and drops an entry larger than all of it', () => {
    const pending = new PendingRequests({ maxEntries: 1_000, maxBytes: 64 * 1024, ttlMs: 60_000 });
    for (let i = 0; i < 100; i++)
      pending.remember(`${'i'.repeat(2_000)}${i}`, { method: 'm', tool: undefined });
    expect(pending.bytes).toBeLessThanOrEqual(64 * 1024);
    expect(pending.size).toBeGreaterThan(0);
    expect(pending.peek(`${'i'.repeat(2_000)}99`)?.method).toBe('m');
    expect(pending.peek(`${'i'.repeat(2_000)}0`)).toBeUndefined();
    pending.remember('x'.repeat(100_000), { method: 'm', tool: undefined });
    expect(pending.peek('x'.repeat(100_000))).toBeUndefined();
    expect(pending.bytes).toBeLessThanOrEqual(64 * 1024);
  });

  it('the session store holds nothing for a session it was never told the upstream accepted', () => {
    const store = new SessionStore();
    expect(store.known('made-up')).toBeUndefined();
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
  });

  it('the session store keeps its total under maxBytes however many sessions fill it', () => {
    const limits = {
      maxSessions: 10_000,
      maxBytes: 1024 * 1024,
      pending: { maxEntries: 1_000, maxBytes: 256 * 1024, ttlMs: 60_000 },
      ttlMs: 60_000,
    };
    const store = new SessionStore(limits);
    for (let s = 0; s < 200; s++) {
      const session = store.accept(`session-${s}`);
      for (let i = 0; i < 50; i++)
        session.toServer.remember(`${'k'.repeat(1_000)}${i}`, { method: 'm', tool: 't' });
      store.trim();
      expect(store.bytes).toBeLessThanOrEqual(limits.maxBytes);
    }
    expect(store.known('session-199')).toBeDefined();
    expect(store.known('session-0')).toBeUndefined();
    store.forget('session-199');
    expect(store.known('session-199')).toBeUndefined();
  });
});

describe('what the edge may send twice', () => {
  const reset = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
  it('never a POST, whatever the error', () => {
    expect(resendDelay('POST', reset, 0)).toBeNull();
    expect(resendDelay('POST', Object.assign(new Error('x'), { code: 'ECONNRESET' }), 0)).toBeNull();
  });
  it('an idempotent GET or DELETE once, after a reset', () => {
    expect(resendDelay('GET', reset, 0)).toBe(1);
    expect(resendDelay('DELETE', reset, 0)).toBe(1);
    expect(resendDelay('GET', reset, 1)).toBeNull();
    expect(
      resendDelay('GET', Object.assign(new Error('x'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 0),
    ).toBeNull();
  });
});

describe('how an exchange ended', () => {
  const exchange = (outcome?: 'refused') => ({ outcome, summary: new ExchangeSummary() }) as never;
  it('what the edge decided stands; else the client leaving, a replacement, or forwarded', () => {
    expect(outcomeOf(exchange('refused'), false)).toBe('refused');
    expect(outcomeOf(exchange(), false)).toBe('client_closed');
    expect(outcomeOf(exchange(), true)).toBe('forwarded');
    const replaced = { outcome: undefined, summary: new ExchangeSummary() };
    replaced.summary.rejectedResponses = 1;
    expect(outcomeOf(replaced as never, true)).toBe('response_replaced');
  });
});

describe('one timer watches the silence of every stream', () => {
  it('calls a silent stream once, not one that keeps talking or was let go', async () => {
    // The clock is the test's: on a loaded machine a real 25 ms sleep can last past the 80 ms window.
    vi.useFakeTimers();
    try {
      const watch = new SilenceWatch(80);
      const fired: string[] = [];
      const talking = watch.watch(() => fired.push('talking'));
      watch.watch(() => fired.push('silent'));
      const gone = watch.watch(() => fired.push('gone'));
      gone.stop();
      for (let i = 0; i < 8; i++) {
        talking.touch();
        await vi.advanceTimersByTimeAsync(25);
      }
      expect(fired).toEqual(['silent']);
      talking.stop();
    } finally {
      vi.useRealTimers();
    }
    const fired: string[] = [];
    expect(new SilenceWatch(0).watch(() => fired.push('never'))).toBeDefined();
  });
});
