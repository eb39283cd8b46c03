// An answer made of messages judged as messages (message-events.ts through the SSE inspector's pushMessage):
// the client gets exactly what the same inspector gives for the SSE bytes the messages frame to, whatever
// the pieces, cuts, ceilings and mode; an oversized message is held no further than its bound and replaced
// as soon as it crosses its ceiling.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type MessageEvent, MessageSseItems, sseFraming } from '../../src/core/message-events.js';
import { edgeError } from '../../src/core/refusals/answers.js';
import type { LimitMode } from '../../src/core/types.js';
import type { JudgeContext } from '../../src/inspect/message-verdict.js';
import { PendingRequests } from '../../src/inspect/pending-requests.js';
import type { RelayVerdict } from '../../src/inspect/relay-verdict.js';
import { SseResponseInspector } from '../../src/inspect/sse-response.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';

function context(mode: LimitMode, ceiling: number, ids: readonly number[]) {
  const answered = new PendingRequests({ maxEntries: 100, maxBytes: 1 << 20, ttlMs: 60_000 });
  for (const id of ids) answered.remember(id, { method: 'tools/call', tool: 't' });
  const unparsable: string[] = [];
  const ctx: JudgeContext = {
    direction: 'response',
    tenant: 'default',
    policy: { defaults: { response: { maxMessageBytes: ceiling } }, tenants: {} },
    mode,
    observer: {
      message: () => {},
      limitExceeded: () => {},
      unparsable: (_d, _b, why) => unparsable.push(why),
    },
    answered,
    answeredInSession: undefined,
    remember: undefined,
    checks: CEILING_CHECKS,
  };
  return { ctx, answered, unparsable };
}

function clientBytes(out: readonly RelayVerdict[]): string {
  return out.flatMap((v) => v.toClient.map((c) => Buffer.from(c).toString('latin1'))).join('');
}

/** The SSE bytes the shell frames `events` to (what the SSE framer used to parse again). */
function framedBytes(events: readonly MessageEvent[]): Buffer {
  const items = new MessageSseItems(Number.POSITIVE_INFINITY);
  const pieces: Uint8Array[] = [];
  for (const event of events) {
    const framed = sseFraming(event, items.inMessage);
    items.push(event, framed);
    pieces.push(...framed);
  }
  return Buffer.concat(pieces);
}

const answerOf = (id: number, text: string) =>
  JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
const noteOf = (text: string) =>
  JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: text } });

/** A message as the pieces it comes in (split at `cuts`), optionally cut short before its end. */
const messageEvents = fc
  .record({
    text: fc.oneof(
      fc.nat(3).chain((id) => fc.string({ maxLength: 300 }).map((t) => answerOf(id, t))),
      fc.string({ maxLength: 200 }).map(noteOf),
      fc.string({ minLength: 1, maxLength: 40 }).map((t) => t.replace(/[\r\n]/g, ' ')),
    ),
    cuts: fc.array(fc.nat(), { maxLength: 4 }),
    cutShort: fc.boolean(),
    emptyLast: fc.boolean(),
  })
  .map(({ text, cuts, cutShort, emptyLast }): MessageEvent[] => {
    const bytes = Buffer.from(text);
    const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
    const parts: Buffer[] = [];
    let from = 0;
    for (const p of points) {
      if (p > from) parts.push(bytes.subarray(from, p));
      from = p;
    }
    parts.push(bytes.subarray(from));
    if (cutShort) {
      const kept = parts.slice(0, Math.max(1, parts.length - 1));
      return [
        ...kept.map((b): MessageEvent => ({ kind: 'piece', bytes: b, last: false })),
        { kind: 'cut', detail: 'exited' },
      ];
    }
    const events = parts.map(
      (b, i): MessageEvent => ({
        kind: 'piece',
        bytes: b,
        last: !emptyLast && i === parts.length - 1,
      }),
    );
    if (emptyLast) events.push({ kind: 'piece', bytes: Buffer.alloc(0), last: true });
    return events;
  });

describe('messages judged as messages', () => {
  it('give the client what their SSE framing would, in every mode, ceiling and piece layout', () => {
    fc.assert(
      fc.property(
        fc.array(messageEvents, { minLength: 1, maxLength: 6 }),
        fc.constantFrom<LimitMode>('enforce', 'observe'),
        fc.integer({ min: 20, max: 400 }),
        fc.boolean(),
        fc.boolean(),
        (messages, mode, ceiling, unfinished, stray) => {
          const events = messages.flat();
          // A stream that ends inside a message, and a cut outside any message (nothing to close).
          if (unfinished)
            events.push({ kind: 'piece', bytes: Buffer.from('{"jsonrpc":"2.0","id":9'), last: false });
          if (stray) events.unshift({ kind: 'cut', detail: 'exited' });
          const asBytes = context(mode, ceiling, [0, 1, 2, 3]);
          const bytesInspector = new SseResponseInspector(asBytes.ctx, ceiling);
          const fromBytes = [
            bytesInspector.push(framedBytes(events)),
            bytesInspector.end(),
            bytesInspector.answerLost((id) => edgeError('answer_lost', { detail: 'gone' }, id), true),
          ];
          const asMessages = context(mode, ceiling, [0, 1, 2, 3]);
          const messageInspector = new SseResponseInspector(asMessages.ctx, ceiling);
          const fromMessages = [
            ...events.map((event) => {
              const out = messageInspector.pushMessage(event);
              expect(messageInspector.heldBytes).toBeLessThanOrEqual(ceiling);
              return out;
            }),
            messageInspector.end(),
            messageInspector.answerLost((id) => edgeError('answer_lost', { detail: 'gone' }, id), true),
          ];
          expect(clientBytes(fromMessages)).toBe(clientBytes(fromBytes));
          expect(asMessages.answered.ids()).toEqual(asBytes.answered.ids());
          expect(asMessages.unparsable).toEqual(asBytes.unparsable);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("a notification longer than its call's ceiling is held to its own and delivered; the call's answer past it is still replaced at once", () => {
    const { ctx, unparsable } = context('enforce', 10_000, [7]);
    const capped = {
      ...ctx,
      policy: {
        defaults: {
          response: { maxMessageBytes: 10_000 },
          tools: { t: { response: { maxMessageBytes: 100 } } },
        },
        tenants: {},
      },
    };
    // As the relay builds it: held to the call's 100 bytes, any other message to the largest ceiling.
    const inspector = new SseResponseInspector(capped, 100, undefined, true, 10_000);
    const note = Buffer.from(noteOf('n'.repeat(500)));
    const delivered = [
      inspector.pushMessage({ kind: 'piece', bytes: note.subarray(0, 60), last: false }),
      inspector.pushMessage({ kind: 'piece', bytes: note.subarray(60), last: true }),
    ];
    // Was: dropped, counted unparsable ("SSE event framing larger than the edge holds").
    expect(clientBytes(delivered)).toBe(`data: ${note.toString('latin1')}\n\n`);
    expect(unparsable).toEqual([]);
    inspector.pushMessage({
      kind: 'piece',
      bytes: Buffer.from('{"jsonrpc":"2.0","id":7,"result":{"text":"'),
      last: false,
    });
    const crossing = inspector.pushMessage({ kind: 'piece', bytes: Buffer.alloc(200, 0x61), last: false });
    expect(clientBytes([crossing])).toMatch(/^event: message\ndata: \{"jsonrpc":"2\.0","id":7,"error":/);
  });

  it('an answer past its ceiling is replaced at the piece that crosses it, holding no more than its bound', () => {
    const { ctx, answered } = context('enforce', 100, [7]);
    const inspector = new SseResponseInspector(ctx, 100, undefined, true);
    const head = Buffer.from(`{"jsonrpc":"2.0","id":7,"result":{"text":"`);
    const first = inspector.pushMessage({ kind: 'piece', bytes: head, last: false });
    expect(first.toClient).toEqual([]);
    expect(inspector.heldBytes).toBe(head.length);
    const crossing = inspector.pushMessage({ kind: 'piece', bytes: Buffer.alloc(4096, 0x61), last: false });
    // Replaced now, not when the line ends: the caller learns at once and the relay stops reading.
    expect(clientBytes([crossing])).toMatch(/^event: message\ndata: \{"jsonrpc":"2\.0","id":7,"error":/);
    expect(crossing.action).toBe('drop');
    expect(inspector.heldBytes).toBe(0);
    expect(answered.size).toBe(0);
    const rest = inspector.pushMessage({ kind: 'piece', bytes: Buffer.from('"}}'), last: true });
    expect(clientBytes([rest, inspector.end()])).toBe('');
  });
});
