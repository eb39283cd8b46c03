// The per-exchange inspectors, without sockets: SSE and JSON responses, request bodies, pending ids.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LimitMode, LimitPolicy, LimitViolation } from '../../src/core/types.js';
import { JsonResponseInspector } from '../../src/inspect/json-response.js';
import type { JudgeContext } from '../../src/inspect/message-verdict.js';
import type { InspectionObserver, LimitAction } from '../../src/inspect/observer.js';
import { PendingRequests } from '../../src/inspect/pending-requests.js';
import type { RelayVerdict } from '../../src/inspect/relay-verdict.js';
import { judgeRequestBody } from '../../src/inspect/request-body.js';
import { SessionStore } from '../../src/inspect/session-store.js';
import { SseResponseInspector } from '../../src/inspect/sse-response.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';

const enc = new TextEncoder();

function policy(responseMax: number, extra: Partial<LimitPolicy['defaults']> = {}): LimitPolicy {
  return {
    defaults: {
      request: { maxBodyBytes: 1 << 20, maxMessageBytes: 1 << 20 },
      response: { maxMessageBytes: responseMax },
      ...extra,
    },
    tenants: {},
  };
}

function recorder() {
  const violations: { v: LimitViolation; action: LimitAction }[] = [];
  const messages: number[] = [];
  const observer: InspectionObserver = {
    message: (_d, m) => messages.push(m.envelopeBytes),
    limitExceeded: (v, action) => violations.push({ v, action }),
    unparsable: () => {},
  };
  return { observer, violations, messages };
}

function responseContext(
  p: LimitPolicy,
  mode: LimitMode,
  observer: InspectionObserver,
  pending = new PendingRequests({ maxEntries: 100, maxBytes: 1024 * 1024, ttlMs: 60_000 }),
): JudgeContext {
  return {
    direction: 'response',
    tenant: 'default',
    policy: p,
    mode,
    observer,
    answered: pending,
    answeredInSession: undefined,
    remember: undefined,
    checks: CEILING_CHECKS,
  };
}

function toBytes(out: RelayVerdict[]): Buffer {
  return Buffer.concat(
    out.flatMap((o) => o.toClient.map((c) => (typeof c === 'string' ? Buffer.from(c) : Buffer.from(c)))),
  );
}

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Uint8Array[] = [];
  let last = 0;
  for (const p of points) {
    parts.push(bytes.subarray(last, p));
    last = p;
  }
  parts.push(bytes.subarray(last));
  return parts.filter((p) => p.length > 0);
}

const message = fc.oneof(
  fc
    .record({ text: fc.string({ maxLength: 200 }) })
    .map(({ text }) =>
      JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text }] } }),
    ),
  fc
    .string({ maxLength: 100 })
    .map((data) =>
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data } }),
    ),
);
const eol = fc.constantFrom('\n', '\r\n', '\r');
const block = fc
  .tuple(
    message,
    eol,
    fc.option(
      fc.string({ maxLength: 10 }).map((s) => s.replace(/[\r\n]/g, '')),
      { nil: undefined },
    ),
  )
  .map(([m, e, id]) => `${id !== undefined ? `id: ${id}${e}` : ''}data: ${m}${e}${e}`);
const comment = eol.map((e) => `: keepalive${e}${e}`);

describe('SseResponseInspector', () => {
  it('forwards any stream under the ceiling byte for byte, whatever the chunking', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(block, comment), { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (blocks, cuts) => {
          const input = enc.encode(blocks.join(''));
          const { observer, violations } = recorder();
          const inspector = new SseResponseInspector(
            responseContext(policy(1 << 20), 'enforce', observer),
            1 << 20,
          );
          const out = splitAt(input, cuts).map((c) => inspector.push(c));
          out.push(inspector.end());
          expect(toBytes(out).equals(Buffer.from(input))).toBe(true);
          expect(violations).toHaveLength(0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('replaces only the oversized answer, as soon as it crosses the ceiling, whatever the chunking', () => {
    const before =
      'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a"}}\r\n\r\n';
    const big = `id: 77\r\ndata: {"result":{"content":[{"type":"text","text":"${'x'.repeat(5000)}"}]},"jsonrpc":"2.0","id":9}\r\n\r\n`;
    const after = ': ping\r\n\r\n';
    const input = enc.encode(before + big + after);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 30 }), (cuts) => {
        const pending = new PendingRequests({ maxEntries: 10, maxBytes: 1024 * 1024, ttlMs: 60_000 });
        pending.remember(9, { method: 'tools/call', tool: 'dump' });
        const { observer, violations } = recorder();
        const inspector = new SseResponseInspector(
          responseContext(policy(1024), 'enforce', observer, pending),
          1024,
        );
        const out = splitAt(input, cuts).map((c) => inspector.push(c));
        out.push(inspector.end());
        const text = toBytes(out).toString();
        expect(text.startsWith(before)).toBe(true);
        expect(text.endsWith(after)).toBe(true);
        expect(text).toContain(
          'id: 77\nevent: message\ndata: {"jsonrpc":"2.0","id":9,"error":{"code":-32603',
        );
        expect(text).not.toContain('xxxx');
        expect(violations).toHaveLength(1);
        expect(violations[0]?.v).toMatchObject({
          tool: 'dump',
          method: 'tools/call',
          observedIsLowerBound: true,
          id: 9,
        });
        expect(violations[0]?.v.observedValue).toBeGreaterThan(1024);
        expect(inspector.heldBytes).toBe(0);
      }),
      { numRuns: 200 },
    );
  });

  it('an event with an id and empty data (the 2025-11-25 priming event) is forwarded as it came, not counted as unparsable', () => {
    const unparsable: string[] = [];
    const observer: InspectionObserver = {
      message: () => {},
      limitExceeded: () => {},
      unparsable: (_d, _b, reason) => unparsable.push(reason),
    };
    let events = 0;
    const inspector = new SseResponseInspector(
      responseContext(policy(1024), 'enforce', observer),
      1024,
      () => events++,
    );
    const priming = 'id: 8b1f0c3e\ndata: \n\nid: 8b1f0c3f\nretry: 1000\ndata:\n\n';
    expect(toBytes([inspector.push(enc.encode(priming))]).toString()).toBe(priming);
    expect(unparsable).toEqual([]);
    expect(events).toBe(2);
    // Data that is there but not JSON still is counted.
    inspector.push(enc.encode('data: {oops\n\n'));
    expect(unparsable).toEqual(['SSE data is not JSON']);
  });

  it('observe mode passes every chunk through as it came and records the violation', () => {
    const big = `data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"${'y'.repeat(3000)}"}]}}\n\n`;
    const { observer, violations } = recorder();
    const pending = new PendingRequests({ maxEntries: 10, maxBytes: 1024 * 1024, ttlMs: 60_000 });
    pending.remember(1, { method: 'tools/call', tool: 't' });
    const inspector = new SseResponseInspector(
      responseContext(policy(1024), 'observe', observer, pending),
      1024,
    );
    const chunks = splitAt(enc.encode(big), [100, 2000]);
    const out = chunks.map((c) => inspector.push(c));
    out.push(inspector.end());
    expect(toBytes(out).toString()).toBe(big);
    expect(violations.map((v) => v.action)).toEqual(['observed']);
  });
});

describe('JsonResponseInspector', () => {
  it('forwards a body under the ceiling unchanged, replaces one over it for the same id', () => {
    const { observer } = recorder();
    const pending = new PendingRequests({ maxEntries: 10, maxBytes: 1024 * 1024, ttlMs: 60_000 });
    pending.remember('a', { method: 'tools/call', tool: 't' });
    const ok = new JsonResponseInspector(responseContext(policy(100), 'enforce', observer, pending), 100, [
      'a',
    ]);
    const small = enc.encode('{"jsonrpc":"2.0","id":"a","result":{}}');
    expect(ok.push(small).action).toBe('hold');
    expect(ok.finish()).toEqual({ action: 'forward', toClient: [Buffer.from(small)], toUpstream: [] });

    pending.remember('a', { method: 'tools/call', tool: 't' });
    const over = new JsonResponseInspector(responseContext(policy(10), 'enforce', observer, pending), 10, [
      'a',
    ]);
    // Over the bound in enforce mode: the limit error, and the rest of the body is not read.
    const outcome = over.push(small);
    expect(outcome.action).toBe('drop');
    const body = JSON.parse(String(outcome.toClient[0] ?? '{}')) as {
      id: string;
      error: { data: { observedBytesIsLowerBound: boolean } };
    };
    expect(body.id).toBe('a');
    expect(body.error.data.observedBytesIsLowerBound).toBe(true);
  });
});

describe('JsonResponseInspector after an answer over its hold bound', () => {
  it("judges nothing more when the upstream's body ends after the answer was replaced early", () => {
    // A 'data' event that crosses the bound and the stream's 'end' can both be queued: the relay stops
    // reading at the first, yet the second may still come. The body is gone by then (its chunks let go);
    // reading it again judged whatever another exchange had left in the shared scratch buffer.
    const pending = new PendingRequests({ maxEntries: 10, maxBytes: 1024 * 1024, ttlMs: 60_000 });
    pending.remember('other', { method: 'tools/call', tool: 't' });
    const { observer, messages } = recorder();
    // Another exchange's body, read through the scratch buffer (in two pieces, so it is copied there).
    const other = new JsonResponseInspector(
      responseContext(policy(1000), 'enforce', observer, pending),
      1000,
      ['other'],
    );
    const otherBody = enc.encode(`{"jsonrpc":"2.0","id":"other","result":{"text":"${'s'.repeat(300)}"}}`);
    other.push(otherBody.subarray(0, 100));
    other.push(otherBody.subarray(100));
    expect(other.finish().action).toBe('forward');
    expect(messages).toEqual([otherBody.length]);

    pending.remember('a', { method: 'tools/call', tool: 't' });
    const over = new JsonResponseInspector(responseContext(policy(50), 'enforce', observer, pending), 50, [
      'a',
    ]);
    // As long as the other body: what was left in the scratch buffer is that whole message.
    const big = enc.encode(
      `{"jsonrpc":"2.0","id":"a","result":{"text":"${'b'.repeat(otherBody.length - 47)}"}}`,
    );
    expect(big.length).toBe(otherBody.length);
    expect(over.push(big.subarray(0, 40)).action).toBe('hold');
    expect(over.push(big.subarray(40)).action).toBe('drop');
    const after = messages.length;
    const ended = over.end();
    expect(messages).toHaveLength(after);
    expect(ended.toUpstream).toEqual([]);
    expect(ended.toClient.map((c) => Buffer.from(c).toString())).toEqual([]);
  });
});

describe('JsonResponseInspector reads a body as a client does (issue 42)', () => {
  const answer = (id: number, text: Uint8Array) =>
    Buffer.concat([enc.encode(`{"jsonrpc":"2.0","id":${id},"result":{"text":"`), text, enc.encode('"}}')]);

  it('judges and measures a body holding a byte no valid UTF-8 holds or a byte order mark, as its SSE event would be', () => {
    for (const [over, within] of [
      [answer(1, Uint8Array.of(...enc.encode('x'.repeat(200)), 0xff)), answer(2, Uint8Array.of(0xc3))],
      [answer(1, enc.encode('x'.repeat(200))), answer(2, enc.encode('y'))],
    ] as const) {
      for (const bom of [[], [0xef, 0xbb, 0xbf]]) {
        const pending = new PendingRequests({ maxEntries: 10, maxBytes: 1024 * 1024, ttlMs: 60_000 });
        pending.remember(1, { method: 'tools/call', tool: 'big' });
        pending.remember(2, { method: 'tools/call', tool: 'small' });
        const { observer, violations, messages } = recorder();
        const inspector = new JsonResponseInspector(
          responseContext(policy(100), 'enforce', observer, pending),
          1000,
          [1, 2],
        );
        const body = Buffer.concat([
          Uint8Array.of(...bom),
          enc.encode('['),
          over,
          enc.encode(','),
          within,
          enc.encode(']'),
        ]);
        inspector.push(body);
        const outcome = inspector.finish();
        // Both measured with their bytes as sent; the one over its 100-byte ceiling replaced, the other kept.
        expect(messages).toEqual([over.length, within.length]);
        expect(violations.map(({ v }) => v.id)).toEqual([1]);
        expect(outcome.action).toBe('replace');
        const [first, second] = JSON.parse(String(outcome.toClient[0])) as unknown[];
        expect(first).toMatchObject({ id: 1, error: { data: { limit: 'response.maxMessageBytes' } } });
        expect(second).toEqual(JSON.parse(new TextDecoder().decode(within)));
      }
    }
  });
});

describe('tools the upstream lists', () => {
  function listingRecorder() {
    const listed: string[][] = [];
    const observer: InspectionObserver = {
      message: () => {},
      limitExceeded: () => {},
      unparsable: () => {},
      toolsListed: (names) => listed.push([...names]),
    };
    return { observer, listed };
  }

  it('a tools/list result from the upstream reports its tool names to the observer', () => {
    const { observer, listed } = listingRecorder();
    const pending = new PendingRequests({ maxEntries: 10, maxBytes: 1024 * 1024, ttlMs: 60_000 });
    pending.remember(1, { method: 'tools/list', tool: undefined });
    const inspector = new JsonResponseInspector(
      responseContext(policy(1 << 20), 'enforce', observer, pending),
      1 << 20,
      [1],
    );
    const body = {
      jsonrpc: '2.0',
      id: 1,
      result: {
        tools: [{ name: 'search', inputSchema: {} }, { name: 'export' }, { title: 'no name' }, { name: 7 }],
      },
    };
    inspector.push(enc.encode(JSON.stringify(body)));
    inspector.finish();
    expect(listed).toEqual([['search', 'export']]);
  });

  it('the same shape as the answer to any other request, or from the client, reports nothing', () => {
    const { observer, listed } = listingRecorder();
    const pending = new PendingRequests({ maxEntries: 10, maxBytes: 1024 * 1024, ttlMs: 60_000 });
    pending.remember(1, { method: 'resources/list', tool: undefined });
    const inspector = new JsonResponseInspector(
      responseContext(policy(1 << 20), 'enforce', observer, pending),
      1 << 20,
      [1],
    );
    inspector.push(enc.encode('{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"fake"}]}}'));
    inspector.finish();
    const session = new SessionStore().accept('s');
    session.toClient.remember(9, { method: 'tools/list', tool: undefined });
    judgeRequestBody(
      {
        ...responseContext(policy(1 << 20), 'enforce', observer),
        direction: 'request',
        answered: undefined,
        answeredInSession: session.toClient,
      },
      enc.encode('{"jsonrpc":"2.0","id":9,"result":{"tools":[{"name":"fake"}]}}'),
    );
    expect(listed).toEqual([]);
  });
});

describe('judgeRequestBody', () => {
  function requestContext(p: LimitPolicy): JudgeContext {
    return {
      direction: 'request',
      tenant: 'default',
      policy: p,
      mode: 'enforce',
      observer: recorder().observer,
      answered: undefined,
      answeredInSession: undefined,
      remember: () => {},
      checks: CEILING_CHECKS,
    };
  }

  it('refuses invalid JSON, an empty batch and non-JSON-RPC messages with 400', () => {
    for (const body of ['{not json', '[]', '{"id":1,"method":"x"}']) {
      const verdict = judgeRequestBody(requestContext(policy(1000)), enc.encode(body));
      expect(verdict.ok).toBe(false);
      if (!verdict.ok) expect(verdict.refusal.status).toBe(400);
    }
  });

  it('refuses a batch whole with 413 when one message is over its ceiling, naming that message', () => {
    const p = policy(1000, { request: { maxBodyBytes: 10_000, maxMessageBytes: 100 } });
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'up', arguments: { x: 'z'.repeat(200) } },
    });
    const verdict = judgeRequestBody(
      requestContext(p),
      enc.encode(`[{"jsonrpc":"2.0","id":1,"method":"ping"},${big}]`),
    );
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) {
      expect(verdict.refusal.status).toBe(413);
      expect(JSON.parse(verdict.refusal.body)).toMatchObject({
        id: 2,
        error: { code: -32600, data: { tool: 'up', limit: 'request.maxMessageBytes' } },
      });
    }
  });
});

describe('PendingRequests and SessionRegistry', () => {
  it('answers each id once, expires entries, and caps their number', () => {
    let now = 0;
    const pending = new PendingRequests({ maxEntries: 2, maxBytes: 1024 * 1024, ttlMs: 1000 }, () => now);
    pending.remember(1, { method: 'a', tool: undefined });
    pending.remember('1', { method: 'b', tool: undefined });
    expect(pending.take(1)?.method).toBe('a');
    expect(pending.take(1)).toBeUndefined();
    pending.remember(2, { method: 'c', tool: undefined });
    pending.remember(3, { method: 'd', tool: undefined });
    expect(pending.size).toBe(2);
    expect(pending.peek('1')).toBeUndefined();
    now = 5000;
    expect(pending.take(3)).toBeUndefined();
  });

  it('keeps at most maxSessions sessions', () => {
    const store = new SessionStore({
      maxSessions: 3,
      maxBytes: 1024 * 1024,
      pending: { maxEntries: 10, maxBytes: 64 * 1024, ttlMs: 60_000 },
      ttlMs: 60_000,
    });
    for (let i = 0; i < 10; i++) store.accept(`s${i}`).toServer.remember(i, { method: 'm', tool: undefined });
    expect(store.size).toBe(3);
    expect(store.known('s9')?.toServer.peek(9)?.method).toBe('m');
    expect(store.known('s0')).toBeUndefined();
  });
});
