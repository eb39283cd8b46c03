// The stdio line framer (src/core/stdio-lines.ts): lines come out byte for byte whatever the chunking, a
// line never costs more than holdBytes + 1 held bytes, and an overflowing line's envelope (its id, even when
// it comes last) is read from all of it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitTopLevel } from '../../src/core/json-scan.js';
import { bodyAsLines, type LineEvent, LineFramer } from '../../src/core/stdio-lines.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Cuts `bytes` at the given points (any order, any repeats). */
function chunked(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const point of points) {
    chunks.push(bytes.subarray(from, point));
    from = point;
  }
  chunks.push(bytes.subarray(from));
  return chunks;
}

interface Seen {
  lines: string[];
  overflows: { head: string; rest: string; total: number }[];
  maxHeld: number;
}

function run(framer: LineFramer, chunks: Uint8Array[]): Seen {
  const seen: Seen = { lines: [], overflows: [], maxHeld: 0 };
  const take = (events: LineEvent[]) => {
    for (const event of events) {
      if (event.kind === 'line') seen.lines.push(decoder.decode(event.bytes));
      else if (event.kind === 'overflow')
        seen.overflows.push({ head: Buffer.from(event.head).toString('latin1'), rest: '', total: -1 });
      else if (event.kind === 'overflow-data')
        seen.overflows.at(-1)!.rest += Buffer.from(event.bytes).toString('latin1');
      else seen.overflows.at(-1)!.total = event.totalBytes;
    }
  };
  for (const chunk of chunks) {
    take(framer.push(chunk));
    seen.maxHeld = Math.max(seen.maxHeld, framer.heldLength);
  }
  take(framer.end());
  return seen;
}

describe('LineFramer', () => {
  it('gives every line byte for byte, and an over-long one as head + the rest, whatever the chunking', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.string({ unit: fc.constantFrom('a', 'b', '{', '"', 'é', ' '), minLength: 1, maxLength: 40 }),
          {
            minLength: 1,
            maxLength: 12,
          },
        ),
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (lines, hold, cuts) => {
          const nonBlank = lines.map((line) => `x${line}`);
          const bytes = encoder.encode(`${nonBlank.join('\n')}\n`);
          const seen = run(new LineFramer(hold), chunked(bytes, cuts));
          const expectedShort = nonBlank.filter((line) => encoder.encode(line).length <= hold);
          expect(seen.lines).toEqual(expectedShort);
          const expectedLong = nonBlank.filter((line) => encoder.encode(line).length > hold);
          expect(seen.overflows.map((o) => o.total)).toEqual(
            expectedLong.map((l) => encoder.encode(l).length),
          );
          // Head and rest are byte slices of the line (compared as latin1: one character per byte).
          expect(seen.overflows.map((o) => o.head + o.rest)).toEqual(
            expectedLong.map((l) => Buffer.from(l).toString('latin1')),
          );
          expect(seen.overflows.every((o) => Buffer.from(o.head, 'latin1').length === hold + 1)).toBe(true);
          expect(seen.maxHeld).toBeLessThanOrEqual(hold + 1);
        },
      ),
    );
  });

  it('holds holdBytes + 1 of a line at most, and hands over exactly those bytes as the head', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 0, max: 500 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        (hold, extra, cuts) => {
          const line = 'y'.repeat(hold + 1 + extra);
          const seen = run(new LineFramer(hold), chunked(encoder.encode(`${line}\nn\n`), cuts));
          expect(seen.overflows).toHaveLength(1);
          expect(seen.overflows[0]!.head).toBe(line.slice(0, hold + 1));
          expect(seen.overflows[0]!.rest).toBe(line.slice(hold + 1));
          expect(seen.overflows[0]!.total).toBe(line.length);
          expect(seen.maxHeld).toBeLessThanOrEqual(hold + 1);
          expect(seen.lines).toEqual(['n']);
        },
      ),
    );
  });

  it('reads the id of an overflowing answer that comes last (as the TypeScript SDK writes it)', () => {
    const framer = new LineFramer(16);
    const line = `{"result":{"content":[{"type":"text","text":"${'z'.repeat(1000)}"}]},"jsonrpc":"2.0","id":"call-7"}\n`;
    const events = chunked(encoder.encode(line), [5, 17, 300, 1001]).flatMap((chunk) => framer.push(chunk));
    const overflow = events.find((e) => e.kind === 'overflow');
    expect(overflow?.kind === 'overflow' && overflow.envelope).toMatchObject({
      id: undefined,
      hasResult: true,
    });
    const end = events.find((e) => e.kind === 'overflow-end');
    expect(end?.kind === 'overflow-end' && end.envelope).toMatchObject({ id: 'call-7', hasResult: true });
  });

  it('drops a CR before the LF, skips blank lines, and ends a last line without its LF', () => {
    const framer = new LineFramer(100);
    const seen = run(framer, [encoder.encode('{"a":1}\r\n\n  \n{"b":2}')]);
    expect(seen.lines).toEqual(['{"a":1}', '{"b":2}']);
  });
});

describe('bodyAsLines', () => {
  it('writes each message of a batch on its own line, CR and LF between tokens as spaces', () => {
    const body = encoder.encode(
      '[{"jsonrpc":"2.0",\n"id":1,"method":"a"},\r\n {"jsonrpc":"2.0","method":"b"}]',
    );
    const split = splitTopLevel(body);
    if (!split.ok) throw new Error(split.error);
    const lines = bodyAsLines(body, split.spans).map((l) => decoder.decode(l));
    expect(lines).toEqual(['{"jsonrpc":"2.0", "id":1,"method":"a"}', '{"jsonrpc":"2.0","method":"b"}']);
    expect(lines.every((line) => JSON.parse(line) !== undefined && !/[\r\n]/.test(line))).toBe(true);
  });
});
