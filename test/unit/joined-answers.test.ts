// The edge's own answers to the messages of a batch it refused, joined to the upstream's JSON answer to the
// others: whether the body is held and judged whole, refused over its ceiling, or streamed on past every
// ceiling in observe mode (cut anywhere, with any whitespace), the client gets one batch holding both.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LimitMode, LimitPolicy } from '../../src/core/types.js';
import { JsonResponseInspector } from '../../src/inspect/json-response.js';
import type { JudgeContext } from '../../src/inspect/message-verdict.js';
import { PendingRequests } from '../../src/inspect/pending-requests.js';
import type { RelayVerdict } from '../../src/inspect/relay-verdict.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';

const enc = new TextEncoder();
const LOCAL = [
  '{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"refused"}}',
  '{"jsonrpc":"2.0","id":"eight","error":{"code":-32020,"message":"refused"}}',
];

function inspectorFor(mode: LimitMode, ceiling: number, ids: number[]): JsonResponseInspector {
  const policy: LimitPolicy = {
    defaults: {
      request: { maxBodyBytes: 1 << 20, maxMessageBytes: 1 << 20 },
      response: { maxMessageBytes: ceiling },
    },
    tenants: {},
  };
  const pending = new PendingRequests({ maxEntries: 100, maxBytes: 1 << 20, ttlMs: 60_000 });
  for (const id of ids) pending.remember(id, { method: 'ping', tool: undefined });
  const ctx: JudgeContext = {
    direction: 'response',
    tenant: 'default',
    policy,
    mode,
    observer: { message: () => {}, limitExceeded: () => {}, unparsable: () => {} },
    answered: pending,
    answeredInSession: undefined,
    remember: undefined,
    checks: CEILING_CHECKS,
  };
  return new JsonResponseInspector(ctx, ceiling * Math.max(ids.length, 1), ids, LOCAL);
}

function text(out: RelayVerdict[]): string {
  return Buffer.concat(out.flatMap((o) => o.toClient.map((c) => Buffer.from(c)))).toString();
}

function cutAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Uint8Array[] = [];
  let last = 0;
  for (const p of points) {
    parts.push(bytes.subarray(last, p));
    last = p;
  }
  parts.push(bytes.subarray(last));
  return parts;
}

const answer = (id: number, size: number) =>
  JSON.stringify({ jsonrpc: '2.0', id, result: { text: 'x'.repeat(size) } });
const space = fc.constantFrom('', ' ', '\n', '\r\n\t ');

describe("the edge's answers joined to the upstream's JSON answer", () => {
  it('a body held whole: one batch, the edge answers first, the upstream messages as they came', () => {
    const inspector = inspectorFor('enforce', 1 << 20, [1, 2]);
    expect(inspector.push(enc.encode(` [${answer(1, 3)},\n${answer(2, 3)}] `)).action).toBe('hold');
    const out = inspector.end();
    expect(out.action).toBe('replace');
    expect(JSON.parse(text([out]))).toEqual([...LOCAL, answer(1, 3), answer(2, 3)].map((m) => JSON.parse(m)));
  });

  it('a lone message the upstream sent for the one request left joins the batch too', () => {
    const inspector = inspectorFor('enforce', 1 << 20, [1]);
    inspector.push(enc.encode(answer(1, 3)));
    expect(JSON.parse(text([inspector.end()]))).toEqual([...LOCAL, answer(1, 3)].map((m) => JSON.parse(m)));
  });

  it('an empty body (the upstream took the rest without an answer): the edge answers alone', () => {
    const inspector = inspectorFor('enforce', 1 << 20, []);
    const out = inspector.end();
    expect(out.action).toBe('replace');
    expect(JSON.parse(text([out]))).toEqual(LOCAL.map((m) => JSON.parse(m)));
  });

  it('a body over its ceiling (enforce): the limit errors for the requests that wait, with the edge answers', () => {
    const inspector = inspectorFor('enforce', 100, [1]);
    const out = inspector.push(enc.encode(`[${answer(1, 500)}]`));
    expect(out.action).toBe('drop');
    const messages = JSON.parse(text([out])) as { id: unknown }[];
    expect(messages.map((m) => m.id)).toEqual([7, 'eight', 1]);
  });

  it('a body streamed on past every ceiling (observe), cut anywhere: one well-formed batch', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 0, maxLength: 4 }),
        fc.array(space, { minLength: 6, maxLength: 6 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 6 }),
        (sizes, [s0, s1, s2, s3, s4, s5], lone, cuts) => {
          const ids = sizes.map((_, i) => i + 1);
          const upstream =
            lone && sizes.length === 1
              ? `${s0}${answer(1, sizes[0]!)}${s1}`
              : `${s0}[${s1}${ids.map((id, i) => answer(id, sizes[i]!)).join(`${s2},${s3}`)}${s4}]${s5}`;
          const inspector = inspectorFor('observe', 10, ids);
          const out = cutAt(enc.encode(upstream), cuts).map((piece) => inspector.push(piece));
          out.push(inspector.end());
          const expected = [...LOCAL, ...ids.map((id, i) => answer(id, sizes[i]!))].map((m) => JSON.parse(m));
          expect(JSON.parse(text(out))).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });
});
