// Answers delivered again on a resumed or GET stream (issue 23, item 1), and the SSE priming event, at the
// level of the SSE inspector and the session state: no sockets.
import { describe, expect, it } from 'vitest';
import type { LimitPolicy, LimitViolation } from '../../src/core/types.js';
import type { JudgeContext } from '../../src/inspect/message-verdict.js';
import type { InspectionObserver } from '../../src/inspect/observer.js';
import { PendingRequests } from '../../src/inspect/pending-requests.js';
import type { RelayVerdict } from '../../src/inspect/relay-verdict.js';
import { openGetStream, type SessionState, SessionStore } from '../../src/inspect/session-store.js';
import { SseResponseInspector } from '../../src/inspect/sse-response.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';

const enc = new TextEncoder();
const KiB = 1024;
const PENDING = { maxEntries: 100, maxBytes: 1024 * 1024, ttlMs: 60_000 };

function policy(tenantBytes: number, tools: Record<string, number>): LimitPolicy {
  return {
    defaults: {
      request: { maxBodyBytes: 1 << 20, maxMessageBytes: 1 << 20 },
      response: { maxMessageBytes: tenantBytes },
      tools: Object.fromEntries(
        Object.entries(tools).map(([name, bytes]) => [name, { response: { maxMessageBytes: bytes } }]),
      ),
    },
    tenants: {},
  };
}

function recorder() {
  const violations: LimitViolation[] = [];
  const unparsable: string[] = [];
  const observer: InspectionObserver = {
    message: () => {},
    limitExceeded: (v) => violations.push(v),
    unparsable: (_d, _b, reason) => unparsable.push(reason),
  };
  return { observer, violations, unparsable };
}

/** The context the shell gives a stream of this session: a call's stream waits on `exchange`, a GET's on nothing. */
function streamContext(
  p: LimitPolicy,
  observer: InspectionObserver,
  session: SessionState,
  exchange: PendingRequests,
): JudgeContext {
  return {
    direction: 'response',
    tenant: 'default',
    policy: p,
    mode: 'enforce',
    observer,
    answered: exchange,
    answeredInSession: session.toServer,
    answeredBefore: session.answered,
    remember: undefined,
    checks: CEILING_CHECKS,
  };
}

/** A call of `tool` with this id, as the shell remembers it: in its exchange and in its session. */
function call(session: SessionState, id: number, tool: string): PendingRequests {
  const exchange = new PendingRequests(PENDING);
  exchange.remember(id, { method: 'tools/call', tool });
  session.toServer.remember(id, { method: 'tools/call', tool });
  return exchange;
}

function text(out: RelayVerdict[]): string {
  return out
    .flatMap((o) => o.toClient.map((c) => (typeof c === 'string' ? c : Buffer.from(c).toString())))
    .join('');
}

function answerEvent(eventId: string, id: number, textBytes: number): string {
  const result = { content: [{ type: 'text', text: 'x'.repeat(textBytes) }] };
  return `event: message\nid: ${eventId}\ndata: ${JSON.stringify({ result, jsonrpc: '2.0', id })}\n\n`;
}

describe('a replayed answer meets the ceiling of its request', () => {
  it('an answer replaced on its call stream is replaced again when a GET stream replays it (the tool ceiling, not the tenant one)', () => {
    const p = policy(512 * KiB, { echo: 64 * KiB });
    const session = new SessionStore().accept('s');
    const { observer, violations } = recorder();
    const post = new SseResponseInspector(
      streamContext(p, observer, session, call(session, 1, 'echo')),
      64 * KiB,
      undefined,
      true,
    );
    const first = text([
      post.push(enc.encode(`id: p1\ndata: \n\n${answerEvent('e1', 1, 70_000)}`)),
      post.end(),
    ]);
    // Replaced with its event id kept: a resuming client's Last-Event-ID is past it.
    expect(first).toContain('id: e1\nevent: message\ndata: {"jsonrpc":"2.0","id":1,"error":{"code":-32603');
    expect(first).not.toContain('xxxx');

    // The server replays it on a GET stream (Last-Event-ID p1), where no request waits: held to the tenant's largest.
    const get = new SseResponseInspector(
      streamContext(p, observer, session, new PendingRequests(PENDING)),
      512 * KiB,
    );
    const replay = text([get.push(enc.encode(answerEvent('e1', 1, 70_000))), get.end()]);
    expect(replay).not.toContain('xxxx');
    expect(replay).toContain('id: e1\nevent: message\ndata: {"jsonrpc":"2.0","id":1,"error":{"code":-32603');
    expect(violations.map((v) => [v.tool, v.limitValue])).toEqual([
      ['echo', 64 * KiB],
      ['echo', 64 * KiB],
    ]);
    // The replaced event ended its call's stream: a resumption from it has nothing left to receive.
    expect(session.answered.replacedEvent('e1')).toEqual({
      subject: { method: 'tools/call', tool: 'echo' },
      endedItsStream: true,
    });
  });

  it('an answer forwarded under a tool ceiling larger than the tenant one is forwarded again on its replay', () => {
    const p = policy(64 * KiB, { export: 1024 * KiB });
    const session = new SessionStore().accept('s');
    const { observer, violations } = recorder();
    const event = answerEvent('e7', 7, 100_000);
    const post = new SseResponseInspector(
      streamContext(p, observer, session, call(session, 7, 'export')),
      1024 * KiB,
      undefined,
      true,
    );
    expect(text([post.push(enc.encode(event)), post.end()])).toBe(event);
    const get = new SseResponseInspector(
      streamContext(p, observer, session, new PendingRequests(PENDING)),
      1024 * KiB,
    );
    expect(text([get.push(enc.encode(event)), get.end()])).toBe(event);
    expect(violations).toEqual([]);
    // Not replaced, so no resumption is cut short for it.
    expect(session.answered.replacedEvent('e7')).toBeUndefined();
  });

  it('an answer without an event id cannot be replayed and is not kept', () => {
    const session = new SessionStore().accept('s');
    const { observer } = recorder();
    const post = new SseResponseInspector(
      streamContext(policy(64 * KiB, {}), observer, session, call(session, 3, 'echo')),
      64 * KiB,
      undefined,
      true,
    );
    post.push(enc.encode(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 3, result: {} })}\n\n`));
    expect(session.answered.replayOf(3, undefined)).toBeUndefined();
    expect(session.answered.bytes).toBe(0);
  });
});

describe('the session state behind resumed streams is bounded', () => {
  it('one session holds at most max GET streams; a release frees its slot once', () => {
    const session = new SessionStore().accept('s');
    const releases = [openGetStream(session, 2), openGetStream(session, 2)];
    expect(releases.every((r) => r !== undefined)).toBe(true);
    expect(openGetStream(session, 2)).toBeUndefined();
    releases[0]?.();
    releases[0]?.();
    expect(session.getStreams).toBe(1);
    expect(openGetStream(session, 2)).toBeDefined();
    expect(openGetStream(session, 2)).toBeUndefined();
  });

  it('answers kept for replays are capped per session and shed before the store drops any session', () => {
    const store = new SessionStore({
      maxSessions: 100,
      maxBytes: 256 * KiB,
      pending: { maxEntries: 1_000, maxBytes: 256 * KiB, ttlMs: 60_000 },
      answered: { maxEntries: 1_000, maxBytes: 64 * KiB, ttlMs: 60_000 },
      ttlMs: 60_000,
    });
    const subject = { method: 'tools/call', tool: 'echo' };
    for (let s = 0; s < 8; s++) {
      const session = store.accept(`s${s}`);
      for (let i = 0; i < 1_000; i++) session.answered.answered(`${'k'.repeat(100)}${i}`, subject);
      expect(session.answered.bytes).toBeLessThanOrEqual(64 * KiB);
      store.trim();
      expect(store.bytes).toBeLessThanOrEqual(256 * KiB);
    }
    // Every session is still known; the oldest ones lost their replay history instead.
    for (let s = 0; s < 8; s++) expect(store.known(`s${s}`)).toBeDefined();
    expect(store.known('s0')?.answered.bytes).toBe(0);
    expect(store.known('s7')?.answered.replayOf(`${'k'.repeat(100)}999`, undefined)).toEqual(subject);
  });
});
