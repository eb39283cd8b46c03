import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  SSE_FIELD_VALUE_CAP,
  SseFramer,
  type SseFramerOptions,
  type SseItem,
} from '../../src/core/sse-framer.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

function bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

function concat(pieces: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((sum, piece) => sum + piece.length, 0));
  let offset = 0;
  for (const piece of pieces) {
    out.set(piece, offset);
    offset += piece.length;
  }
  return out;
}

function hex(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('hex');
}

/** An item as kept past the next push: an event's data may be a view into a buffer that push reuses. */
function kept(item: SseItem): SseItem {
  return item.type === 'event' && item.data !== null ? { ...item, data: new Uint8Array(item.data) } : item;
}

/** Pushes every chunk, then ends; returns all items and the largest heldBytes seen after a push. */
function frameChunks(chunks: readonly Uint8Array[], options: SseFramerOptions = { maxDataBytes: Infinity }) {
  const framer = new SseFramer(options);
  const items: SseItem[] = [];
  let maxHeld = 0;
  for (const chunk of chunks) {
    items.push(...framer.push(chunk).map(kept));
    maxHeld = Math.max(maxHeld, framer.heldBytes);
  }
  items.push(...framer.end().map(kept));
  return { items, maxHeld, heldAtEnd: framer.heldBytes };
}

function frameText(chunks: readonly string[], options?: SseFramerOptions): SseItem[] {
  return frameChunks(chunks.map(bytes), options).items;
}

/** Items with bytes shown as text, for readable expectations. */
type ShownItem = Record<string, unknown>;
function show(items: readonly SseItem[]): ShownItem[] {
  return items.map((item) => {
    switch (item.type) {
      case 'event':
        return {
          ...item,
          raw: decoder.decode(concat(item.raw)),
          data: item.data === null ? null : decoder.decode(item.data),
        };
      case 'oversized-start':
        return { type: item.type, heldData: decoder.decode(item.heldData) };
      case 'oversized-data':
        return { type: item.type, data: decoder.decode(item.data) };
      case 'tail':
        return { type: item.type, raw: decoder.decode(concat(item.raw)) };
      default:
        return { ...item };
    }
  });
}

/** Items with bytes as hex and runs of 'oversized-data' merged: equal for equal streams whatever the chunking. */
function canonical(items: readonly SseItem[]): ShownItem[] {
  const out: ShownItem[] = [];
  let run: Uint8Array[] = [];
  const flushRun = () => {
    if (run.length > 0) out.push({ type: 'oversized-data', data: hex(concat(run)) });
    run = [];
  };
  for (const item of items) {
    if (item.type === 'oversized-data') {
      run.push(item.data);
      continue;
    }
    flushRun();
    switch (item.type) {
      case 'event':
        out.push({ ...item, raw: hex(concat(item.raw)), data: item.data === null ? null : hex(item.data) });
        break;
      case 'oversized-start':
        out.push({ type: item.type, heldData: hex(item.heldData) });
        break;
      case 'tail':
        out.push({ type: item.type, raw: hex(concat(item.raw)) });
        break;
      default:
        out.push({ ...item });
    }
  }
  flushRun();
  return out;
}

function event(
  raw: string,
  data: string | null,
  fields: { event?: string; id?: string; retry?: string } = {},
) {
  return { type: 'event', raw, data, event: fields.event, id: fields.id, retry: fields.retry };
}

/** The 'oversized-end' of a terminated data block without fields. */
function oversizedEnd(dataBytes: number, rawBytes: number) {
  return {
    type: 'oversized-end',
    rawBytes,
    dataBytes,
    hadData: true,
    event: undefined,
    id: undefined,
    bound: 'data',
    terminated: true,
  };
}

function splitAt(input: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const positions = [...new Set(cuts.map((cut) => cut % (input.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let previous = 0;
  for (const position of [...positions, input.length]) {
    chunks.push(input.subarray(previous, position));
    previous = position;
  }
  return chunks;
}

function oneByteChunks(input: Uint8Array): Uint8Array[] {
  return Array.from(input, (_byte, k) => input.subarray(k, k + 1));
}

describe('SseFramer: line endings', () => {
  it('frames LF-terminated events', () => {
    expect(show(frameText(['data: hello\n\ndata: world\n\n']))).toEqual([
      event('data: hello\n\n', 'hello'),
      event('data: world\n\n', 'world'),
    ]);
  });

  it('frames CRLF events; the LF of the dispatching CRLF starts the next block', () => {
    expect(show(frameText(['data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n']))).toEqual([
      event('data: a\r\ndata: b\r\n\r', 'a\nb'),
      event('\ndata: c\r\n\r', 'c'),
      { type: 'tail', raw: '\n' },
    ]);
  });

  it('frames CR-only events', () => {
    expect(show(frameText(['data: a\rdata: b\r\rid: 1\r\r']))).toEqual([
      event('data: a\rdata: b\r\r', 'a\nb'),
      event('id: 1\r\r', null, { id: '1' }),
    ]);
  });

  it('treats a CR at the end of a chunk and an LF at the start of the next as one line ending', () => {
    const framer = new SseFramer({ maxDataBytes: Infinity });
    expect(framer.push(bytes('data: a\r'))).toEqual([]);
    // The LF completes the CRLF: no blank line, so the event is not dispatched yet.
    expect(framer.push(bytes('\ndata: b\r'))).toEqual([]);
    // A blank line ending in CR dispatches at once, without waiting for a possible LF.
    expect(show(framer.push(bytes('\n\r')))).toEqual([event('data: a\r\ndata: b\r\n\r', 'a\nb')]);
    expect(framer.push(bytes('\ndata: c\n'))).toEqual([]);
    expect(show(framer.push(bytes('\n')))).toEqual([event('\ndata: c\n\n', 'c')]);
    expect(framer.end()).toEqual([]);
  });

  it('parses a mix of endings in one stream', () => {
    expect(show(frameText(['data: 1\ndata: 2\r\ndata: 3\r\n\ndata: 4\r\r\n']))).toEqual([
      event('data: 1\ndata: 2\r\ndata: 3\r\n\n', '1\n2\n3'),
      event('data: 4\r\r', '4'),
      { type: 'tail', raw: '\n' },
    ]);
  });

  it('dispatches the same items when a CRLF stream is fed one byte at a time', () => {
    const input = bytes('data: a\r\n\r\n: ping\r\n\r\ndata: b\r\n\r\n');
    expect(canonical(frameChunks(oneByteChunks(input)).items)).toEqual(canonical(frameChunks([input]).items));
  });
});

describe('SseFramer: fields', () => {
  it('joins multi-line data with LF, without a trailing LF', () => {
    expect(show(frameText(['data: a\ndata\ndata: c\n\n']))).toEqual([
      event('data: a\ndata\ndata: c\n\n', 'a\n\nc'),
    ]);
  });

  it('keeps comments in the raw bytes and ignores them for data', () => {
    expect(show(frameText([': keepalive\n\ndata: a\n: between\ndata: b\n\n']))).toEqual([
      event(': keepalive\n\n', null),
      event('data: a\n: between\ndata: b\n\n', 'a\nb'),
    ]);
  });

  it('records event, id and retry (last one wins) and ignores unknown fields', () => {
    const items = frameText(['event: first\nevent: ping\nid: 1\nid: 42\nretry: 1000\nfoo: bar\ndata: x\n\n']);
    expect(show(items)).toEqual([
      event('event: first\nevent: ping\nid: 1\nid: 42\nretry: 1000\nfoo: bar\ndata: x\n\n', 'x', {
        event: 'ping',
        id: '42',
        retry: '1000',
      }),
    ]);
  });

  it('reports field values of one block only', () => {
    expect(show(frameText(['event: a\nid: 1\n\ndata: x\n\n']))).toEqual([
      event('event: a\nid: 1\n\n', null, { event: 'a', id: '1' }),
      event('data: x\n\n', 'x'),
    ]);
  });

  it('ignores an id that contains U+0000, as WHATWG says', () => {
    expect(show(frameText(['id: 7\nid: a\0b\n\n']))).toEqual([
      event('id: 7\nid: a\0b\n\n', null, { id: '7' }),
    ]);
  });

  it('reads a line without a colon as a field with an empty value', () => {
    expect(show(frameText(['data\n\nevent\nid\n\n']))).toEqual([
      event('data\n\n', ''),
      event('event\nid\n\n', null, { event: '', id: '' }),
    ]);
  });

  it('removes exactly one leading space from a value', () => {
    expect(show(frameText(['data:x\n\ndata: x\n\ndata:  x\n\nevent:  e\n\n']))).toEqual([
      event('data:x\n\n', 'x'),
      event('data: x\n\n', 'x'),
      event('data:  x\n\n', ' x'),
      event('event:  e\n\n', null, { event: ' e' }),
    ]);
  });

  it('keeps colons inside values (JSON) and splits the name at the first colon only', () => {
    expect(show(frameText(['data: {"a":{"b":":"}}\ndata::x\n\n']))).toEqual([
      event('data: {"a":{"b":":"}}\ndata::x\n\n', '{"a":{"b":":"}}\n:x'),
    ]);
  });

  it('remembers "skip one space" and the field name across chunk boundaries', () => {
    expect(show(frameText(['da', 'ta', ':', ' ', ' v', '\n', '\n']))).toEqual([event('data:  v\n\n', ' v')]);
  });

  it('does not treat names that only start like known fields as those fields', () => {
    expect(
      show(frameText(['datas: x\nData: y\nids: 1\nevents: e\ndataaaaaaaaaaaaaaaaaaaaaaaaaa: z\n\n'])),
    ).toEqual([event('datas: x\nData: y\nids: 1\nevents: e\ndataaaaaaaaaaaaaaaaaaaaaaaaaa: z\n\n', null)]);
  });

  it('decodes field values as UTF-8 and keeps at most 4096 bytes of each', () => {
    const long = 'é'.repeat(3000); // 6000 bytes
    const items = frameText([`event: ${long}\nid: ü€😀\n\n`]);
    const first = items[0];
    if (first?.type !== 'event') throw new Error('expected an event');
    expect(first.id).toBe('ü€😀');
    expect(first.event).toBe('é'.repeat(SSE_FIELD_VALUE_CAP / 2));
  });

  it('reports a block with no data line with data null, so its bytes can be forwarded', () => {
    expect(show(frameText(['id: 5\nretry: 10\n\n']))).toEqual([
      event('id: 5\nretry: 10\n\n', null, { id: '5', retry: '10' }),
    ]);
  });
});

describe('SseFramer: BOM, empty blocks, tail', () => {
  it('ignores a UTF-8 BOM at the start of the stream but keeps its bytes in the first block', () => {
    expect(show(frameText(['\uFEFFdata: x\n\n']))).toEqual([event('\uFEFFdata: x\n\n', 'x')]);
  });

  it('recognises a BOM split across chunks', () => {
    const input = bytes('\uFEFFdata: x\n\n');
    expect(show(frameChunks(oneByteChunks(input)).items)).toEqual([event('\uFEFFdata: x\n\n', 'x')]);
  });

  it('ignores only one BOM, only at the very start', () => {
    expect(show(frameText(['\uFEFF\uFEFFdata: x\n\n\uFEFFdata: y\n\n']))).toEqual([
      event('\uFEFF\uFEFFdata: x\n\n', null),
      event('\uFEFFdata: y\n\n', null),
    ]);
  });

  it('reads a partial BOM as the start of an unknown field name', () => {
    const input = concat([Uint8Array.of(0xef, 0xbb), bytes('data: x\n\n')]);
    const items = frameChunks([input.subarray(0, 1), input.subarray(1)]).items;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ type: 'event', data: null });
  });

  it('makes each blank line after a dispatch an empty block of its own', () => {
    expect(show(frameText(['data: a\n\n\n\r\ndata: b\n\n']))).toEqual([
      event('data: a\n\n', 'a'),
      event('\n', null),
      event('\r', null),
      event('\ndata: b\n\n', 'b'),
    ]);
  });

  it('returns an unterminated block as a tail at end of stream', () => {
    const framer = new SseFramer({ maxDataBytes: Infinity });
    expect(show(framer.push(bytes('data: a\n\ndata: b\nid: 1')))).toEqual([event('data: a\n\n', 'a')]);
    expect(show(framer.end())).toEqual([{ type: 'tail', raw: 'data: b\nid: 1' }]);
    expect(framer.end()).toEqual([]);
    expect(() => framer.push(bytes('x'))).toThrow(/after end/);
  });

  it('returns nothing at end when the stream ended on a block boundary', () => {
    expect(show(frameText(['data: a\n\n']))).toEqual([event('data: a\n\n', 'a')]);
    expect(frameText([])).toEqual([]);
  });
});

describe('SseFramer: memory and copies', () => {
  it('returns a single-line event within one chunk as subarrays of that chunk (no copy)', () => {
    const chunk = bytes('data: hello\n\n');
    const [item] = new SseFramer({ maxDataBytes: Infinity }).push(chunk);
    if (item?.type !== 'event' || item.data === null) throw new Error('expected an event with data');
    expect(item.raw.map((piece) => piece.buffer)).toEqual([chunk.buffer]);
    expect(item.data.buffer).toBe(chunk.buffer);
    expect(item.data.byteOffset).toBe(chunk.byteOffset + 6);
  });

  it('returns an event spanning chunks as those chunks (no copy), its data read from one reused buffer', () => {
    const chunks = [bytes('data: hel'), bytes('lo\n'), bytes('\n')];
    const read = () => {
      const framer = new SseFramer({ maxDataBytes: Infinity });
      const [item] = chunks.flatMap((chunk) => framer.push(chunk));
      if (item?.type !== 'event' || item.data === null) throw new Error('expected an event with data');
      return item;
    };
    const first = read();
    expect(first.raw.map((piece) => piece.buffer)).toEqual(chunks.map((chunk) => chunk.buffer));
    expect(decoder.decode(first.data!)).toBe('hello');
    // The next event read this way reuses the buffer: no new one per large event.
    expect(read().data!.buffer).toBe(first.data!.buffer);
  });

  it('counts the bytes held of an incomplete block and releases them on dispatch', () => {
    const framer = new SseFramer({ maxDataBytes: Infinity });
    framer.push(bytes('data: 12345'));
    expect(framer.heldBytes).toBe(11);
    framer.push(bytes('67890\n'));
    expect(framer.heldBytes).toBe(17);
    framer.push(bytes('\n'));
    expect(framer.heldBytes).toBe(0);
  });

  it('rejects invalid bounds and defaults maxRawBytes to 2 * maxDataBytes + 65536', () => {
    expect(() => new SseFramer({ maxDataBytes: -1 })).toThrow(RangeError);
    expect(() => new SseFramer({ maxDataBytes: Number.NaN })).toThrow(RangeError);
    expect(() => new SseFramer({ maxDataBytes: 10, maxRawBytes: -5 })).toThrow(RangeError);
    // A comment-only block of 65556 raw bytes (before its final byte) crosses 2 * 10 + 65536.
    const flood = `:${'x'.repeat(65555)}\n\n`;
    const items = frameText([flood], { maxDataBytes: 10 });
    expect(items.at(-1)).toMatchObject({ type: 'oversized-end', bound: 'raw', rawBytes: flood.length });
    const fits = `:${'x'.repeat(65554)}\n\n`;
    expect(frameText([fits], { maxDataBytes: 10 })[0]).toMatchObject({ type: 'event', data: null });
  });
});

describe('SseFramer: oversized blocks', () => {
  it('streams an event over maxDataBytes and reports it whole at the blank line', () => {
    const items = frameText(
      ['data: ok\n\nevent: message\nid: 9\ndata: 123', '456\ndata: 78\n\ndata: next\n\n'],
      {
        maxDataBytes: 4,
      },
    );
    expect(show(items)).toEqual([
      event('data: ok\n\n', 'ok'),
      { type: 'oversized-start', heldData: '12345' },
      { type: 'oversized-data', data: '6\n78' },
      {
        type: 'oversized-end',
        rawBytes: 'event: message\nid: 9\ndata: 123456\ndata: 78\n\n'.length,
        dataBytes: 9,
        hadData: true,
        event: 'message',
        id: '9',
        bound: 'data',
        terminated: true,
      },
      event('data: next\n\n', 'next'),
    ]);
  });

  it('counts the LF between data lines towards maxDataBytes', () => {
    // "ab" + LF = 3 bytes: the separator itself crosses maxDataBytes 2.
    expect(show(frameText(['data: ab\ndata: c\n\n'], { maxDataBytes: 2 }))).toEqual([
      { type: 'oversized-start', heldData: 'ab\n' },
      { type: 'oversized-data', data: 'c' },
      {
        type: 'oversized-end',
        rawBytes: 18,
        dataBytes: 4,
        hadData: true,
        event: undefined,
        id: undefined,
        bound: 'data',
        terminated: true,
      },
    ]);
  });

  it('holds an event of exactly maxDataBytes', () => {
    expect(show(frameText(['data: 1234\n\n'], { maxDataBytes: 4 }))).toEqual([
      event('data: 1234\n\n', '1234'),
    ]);
  });

  it('bounds comment floods by maxRawBytes', () => {
    const items = frameText([': aaaa\n: bbbb\n: cccc\n\ndata: after\n\n'], {
      maxDataBytes: 100,
      maxRawBytes: 12,
    });
    expect(show(items)).toEqual([
      { type: 'oversized-start', heldData: '' },
      {
        type: 'oversized-end',
        rawBytes: 22,
        dataBytes: 0,
        hadData: false,
        event: undefined,
        id: undefined,
        bound: 'raw',
        terminated: true,
      },
      event('data: after\n\n', 'after'),
    ]);
  });

  it('crosses maxRawBytes at the exact byte, whatever the chunking', () => {
    // Raw byte 11 (the 5th data byte) crosses maxRawBytes 10: 'data: ' + 5 data bytes are held.
    const input = bytes(`data: ${'x'.repeat(100)}\n\n`);
    const options = { maxDataBytes: Infinity, maxRawBytes: 10 };
    const whole = show(frameChunks([input], options).items);
    expect(whole.slice(0, 2)).toEqual([
      { type: 'oversized-start', heldData: 'xxxxx' },
      { type: 'oversized-data', data: 'x'.repeat(95) },
    ]);
    expect(whole[2]).toMatchObject({ type: 'oversized-end', bound: 'raw', rawBytes: 108, dataBytes: 100 });
    expect(canonical(frameChunks(oneByteChunks(input), options).items)).toEqual(
      canonical(frameChunks([input], options).items),
    );
  });

  it('ends an unterminated oversized block at end of stream', () => {
    const framer = new SseFramer({ maxDataBytes: 3 });
    expect(show(framer.push(bytes('data: abcdef')))).toEqual([
      { type: 'oversized-start', heldData: 'abcd' },
      { type: 'oversized-data', data: 'ef' },
    ]);
    expect(framer.heldBytes).toBe(0);
    expect(show(framer.end())).toEqual([
      {
        type: 'oversized-end',
        rawBytes: 12,
        dataBytes: 6,
        hadData: true,
        event: undefined,
        id: undefined,
        bound: 'data',
        terminated: false,
      },
    ]);
  });

  it('crosses the bound at the same byte whatever the chunking', () => {
    const input = bytes('id: 1\ndata: abcdefgh\ndata: ij\n\n');
    const whole = canonical(frameChunks([input], { maxDataBytes: 5 }).items);
    expect(canonical(frameChunks(oneByteChunks(input), { maxDataBytes: 5 }).items)).toEqual(whole);
    expect(whole[0]).toEqual({ type: 'oversized-start', heldData: hex(bytes('abcdef')) });
  });

  it('holds a block past maxDataBytes on to the bound holdPast gives it, asked once with the data so far, whatever the chunking', () => {
    // A caller that holds events to its answers' ceiling: an `n` (a notification, say) is held on to 40 bytes.
    const asked: string[] = [];
    const options = (): SseFramerOptions => ({
      maxDataBytes: 5,
      holdPast: (held, id) => {
        asked.push(`${id ?? ''}:${decoder.decode(held)}`);
        return held[0] === 0x6e ? 40 : 5;
      },
    });
    const input = bytes(
      'id: 1\ndata: nnnnnnnnnnnn\n\ndata: aaaaaaaa\n\ndata: n\ndata: nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn\n\n',
    );
    const whole = frameChunks([input], options());
    expect(asked).toEqual(['1:nnnnnn', ':aaaaaa', ':n\nnnnn']);
    expect(show(whole.items.filter((item) => item.type !== 'oversized-data'))).toEqual([
      event('id: 1\ndata: nnnnnnnnnnnn\n\n', 'nnnnnnnnnnnn', { id: '1' }),
      { type: 'oversized-start', heldData: 'aaaaaa' },
      { ...oversizedEnd(8, 'data: aaaaaaaa\n\n'.length) },
      { type: 'oversized-start', heldData: `n\n${'n'.repeat(39)}` },
      { ...oversizedEnd(44, 'data: n\ndata: \n\n'.length + 42) },
    ]);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 12 }), (cuts) => {
        expect(canonical(frameChunks(splitAt(input, cuts), options()).items)).toEqual(canonical(whole.items));
      }),
      { numRuns: 300 },
    );
  });

  it('frames a 64 MiB event with maxDataBytes 1 MiB in 64 KiB chunks with bounded memory', () => {
    const MiB = 1024 * 1024;
    const chunkSize = 64 * 1024;
    const totalData = 64 * MiB;
    const maxDataBytes = MiB;
    const maxRawBytes = 2 * maxDataBytes + 65536;
    const framer = new SseFramer({ maxDataBytes });
    const items: SseItem[] = [...framer.push(bytes('data: before\n\nevent: message\ndata: '))];
    const body = new Uint8Array(chunkSize).fill(0x78); // never mutated, so pushing it again is safe
    let maxHeld = framer.heldBytes;
    let heldData = -1;
    let streamed = 0;
    const collect = (out: readonly SseItem[]) => {
      for (const item of out) {
        if (item.type === 'oversized-start') heldData = item.heldData.length;
        else if (item.type === 'oversized-data') streamed += item.data.length;
        else items.push(item);
      }
    };
    for (let sent = 0; sent < totalData; sent += chunkSize) {
      collect(framer.push(body));
      maxHeld = Math.max(maxHeld, framer.heldBytes);
    }
    collect(framer.push(bytes('\n\ndata: after\n\n')));
    collect(framer.end());

    expect(maxHeld).toBeLessThanOrEqual(maxRawBytes + SSE_FIELD_VALUE_CAP);
    expect(maxHeld).toBeLessThanOrEqual(maxDataBytes + 64); // the held raw bytes never exceed the data bound
    expect(heldData).toBe(maxDataBytes + 1);
    expect(heldData + streamed).toBe(totalData);
    expect(show(items)).toEqual([
      event('data: before\n\n', 'before'),
      {
        type: 'oversized-end',
        rawBytes: 'event: message\ndata: '.length + totalData + 2,
        dataBytes: totalData,
        hadData: true,
        event: 'message',
        id: undefined,
        bound: 'data',
        terminated: true,
      },
      event('data: after\n\n', 'after'),
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Property tests. A stream is generated from a spec, and the expected items are derived from the
// spec (not from the framer): which bytes form each block, and each block's fields.

type Ending = '\n' | '\r\n' | '\r';
interface LineSpec {
  /** The line without its ending (never empty, never CR/LF). */
  text: string;
  ending: Ending;
}
interface BlockSpec {
  lines: LineSpec[];
  /** The ending of the terminating blank line. */
  end: Ending;
}
interface StreamSpec {
  bom: boolean;
  blocks: BlockSpec[];
  /** Lines of an unterminated block at the end of the stream. */
  tail: LineSpec[];
  /** Whether the last tail line has its line ending. */
  tailEnds: boolean;
}

const endingArb = fc.constantFrom<Ending>('\n', '\r\n', '\r');
const valueArb = fc
  .oneof(
    fc.string({ unit: 'binary', maxLength: 12 }),
    fc.string({ unit: 'grapheme-ascii', maxLength: 12 }),
    fc.constantFrom(' ', '  x', ':', ' :a: ', '{"jsonrpc":"2.0","id":1}', '\uFEFFx', 'a\0b', 'é€😀'),
  )
  .map((value) => value.replace(/[\r\n]/g, ''));
const fieldLineArb = fc
  .record({
    name: fc.constantFrom(
      'data',
      'data',
      'data',
      'event',
      'id',
      'retry',
      'foo',
      'dat',
      'Data',
      'datadata',
      'ids',
    ),
    separator: fc.constantFrom('', ':', ': '),
    value: valueArb,
  })
  .map(({ name, separator, value }) => (separator === '' ? name : `${name}${separator}${value}`));
const commentLineArb = valueArb.map((value) => `:${value}`);
const lineArb: fc.Arbitrary<LineSpec> = fc.record({
  text: fc.oneof({ weight: 4, arbitrary: fieldLineArb }, { weight: 1, arbitrary: commentLineArb }),
  ending: endingArb,
});
const blockArb: fc.Arbitrary<BlockSpec> = fc.record({
  // An empty block is a lone blank line.
  lines: fc.oneof(
    { weight: 6, arbitrary: fc.array(lineArb, { minLength: 1, maxLength: 5 }) },
    { weight: 1, arbitrary: fc.constant<LineSpec[]>([]) },
  ),
  end: endingArb,
});
const streamArb: fc.Arbitrary<StreamSpec> = fc.record({
  bom: fc.boolean(),
  blocks: fc.array(blockArb, { maxLength: 6 }),
  tail: fc.array(lineArb, { maxLength: 3 }),
  tailEnds: fc.boolean(),
});
const cutsArb = fc.array(fc.nat(), { maxLength: 40 });

interface ExpectedBlock {
  raw: Uint8Array;
  data: Uint8Array | null;
  event: string | undefined;
  id: string | undefined;
  retry: string | undefined;
}

/** The fields of a block, by the WHATWG rules applied to whole lines. */
function fieldsOf(lines: readonly LineSpec[]): Omit<ExpectedBlock, 'raw'> {
  const data: Uint8Array[] = [];
  const fields: { event?: string; id?: string; retry?: string } = {};
  for (const { text } of lines) {
    if (text.startsWith(':')) continue;
    const colon = text.indexOf(':');
    const name = colon < 0 ? text : text.slice(0, colon);
    const afterColon = colon < 0 ? '' : text.slice(colon + 1);
    const valueBytes = bytes(afterColon.startsWith(' ') ? afterColon.slice(1) : afterColon);
    const value = decoder.decode(valueBytes);
    if (name === 'data') data.push(valueBytes);
    else if (name === 'event') fields.event = value;
    else if (name === 'retry') fields.retry = value;
    else if (name === 'id' && !value.includes('\0')) fields.id = value;
  }
  const joined =
    data.length === 0 ? null : concat(data.flatMap((value, k) => (k === 0 ? [value] : [bytes('\n'), value])));
  return { data: joined, event: fields.event, id: fields.id, retry: fields.retry };
}

/** Avoids a CR ending followed by a blank line ending in LF: the two would read as one CRLF. */
function endingAfter(previous: Ending | undefined, ending: Ending): Ending {
  return previous === '\r' && ending.startsWith('\n') ? '\r' : ending;
}

/** The stream bytes, the expected held blocks, and the expected tail bytes (empty when none). */
function buildStream(spec: StreamSpec): { input: Uint8Array; blocks: ExpectedBlock[]; tail: Uint8Array } {
  const blocks: ExpectedBlock[] = [];
  let current: string[] = spec.bom ? ['\uFEFF'] : [];
  const all: string[] = [];
  let previous: Ending | undefined;
  for (const block of spec.blocks) {
    for (const line of block.lines) {
      current.push(line.text, line.ending);
      previous = line.ending;
    }
    const end = endingAfter(previous, block.end);
    previous = end;
    // A block ends right after the line ending of its blank line; with CRLF, right after the CR.
    current.push(end === '\r\n' ? '\r' : end);
    blocks.push({ raw: bytes(current.join('')), ...fieldsOf(block.lines) });
    all.push(...current);
    current = end === '\r\n' ? ['\n'] : [];
  }
  spec.tail.forEach((line, k) => {
    current.push(line.text);
    if (k < spec.tail.length - 1 || spec.tailEnds) current.push(line.ending);
  });
  all.push(...current);
  return { input: bytes(all.join('')), blocks, tail: bytes(current.join('')) };
}

function expectedItems(blocks: readonly ExpectedBlock[], tail: Uint8Array): SseItem[] {
  const items: SseItem[] = blocks.map((block) => ({ type: 'event', ...block, raw: [block.raw] }));
  if (tail.length > 0) items.push({ type: 'tail', raw: [tail] });
  return items;
}

function rawOfItems(items: readonly SseItem[]): Uint8Array {
  return concat(items.flatMap((item) => (item.type === 'event' || item.type === 'tail' ? item.raw : [])));
}

describe('SseFramer: properties', () => {
  it('reports the same items for any chunking, and their raw bytes are exactly the input', () => {
    fc.assert(
      fc.property(streamArb, cutsArb, (spec, cuts) => {
        const { input, blocks, tail } = buildStream(spec);
        const expected = canonical(expectedItems(blocks, tail));
        const whole = frameChunks([input]).items;
        expect(canonical(whole)).toEqual(expected);
        expect(hex(rawOfItems(whole))).toBe(hex(input));
        expect(canonical(frameChunks(splitAt(input, cuts)).items)).toEqual(expected);
        expect(canonical(frameChunks(oneByteChunks(input)).items)).toEqual(expected);
      }),
      { numRuns: 400 },
    );
  });

  it('streams an event over maxDataBytes exactly and reports its neighbours unchanged', () => {
    const bigBlockArb: fc.Arbitrary<BlockSpec> = fc.record({
      lines: fc.array(
        fc.oneof(
          {
            weight: 3,
            arbitrary: fc.record({
              text: fc
                .string({ unit: 'binary', minLength: 10, maxLength: 60 })
                .map((v) => `data: ${v.replace(/[\r\n]/g, '')}`),
              ending: endingArb,
            }),
          },
          { weight: 1, arbitrary: lineArb },
        ),
        { minLength: 1, maxLength: 8 },
      ),
      end: endingArb,
    });
    const arb = fc.record({
      before: fc.array(blockArb, { maxLength: 3 }),
      big: bigBlockArb,
      after: fc.array(blockArb, { maxLength: 3 }),
      where: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      cuts: cutsArb,
    });
    fc.assert(
      fc.property(arb, ({ before, big, after, where, cuts }) => {
        const { input, blocks, tail } = buildStream({
          bom: false,
          blocks: [...before, big, ...after],
          tail: [],
          tailEnds: false,
        });
        const bigIndex = before.length;
        const bigBlock = blocks[bigIndex]!;
        const bigData = bigBlock.data ?? new Uint8Array(0);
        const neighbourData = blocks.filter((_b, k) => k !== bigIndex).map((b) => b.data?.length ?? 0);
        const smallest = Math.max(0, ...neighbourData);
        fc.pre(bigData.length > smallest);
        // Any bound the neighbours fit in and the big block does not.
        const maxDataBytes = smallest + Math.floor(where * (bigData.length - smallest));
        const options = { maxDataBytes };
        const maxRawBytes = 2 * maxDataBytes + 65536;

        const framer = new SseFramer(options);
        const items: SseItem[] = [];
        for (const chunk of splitAt(input, cuts)) {
          items.push(...framer.push(chunk).map(kept));
          expect(framer.heldBytes).toBeLessThanOrEqual(maxRawBytes + SSE_FIELD_VALUE_CAP);
          const inOversized =
            items.some((i) => i.type === 'oversized-start') && !items.some((i) => i.type === 'oversized-end');
          if (inOversized) expect(framer.heldBytes).toBeLessThanOrEqual(SSE_FIELD_VALUE_CAP);
        }
        items.push(...framer.end().map(kept));

        const start = items.findIndex((item) => item.type === 'oversized-start');
        const endIndex = items.findIndex((item) => item.type === 'oversized-end');
        expect(start).toBe(bigIndex);
        const startItem = items[start]!;
        const endItem = items[endIndex]!;
        if (startItem.type !== 'oversized-start' || endItem.type !== 'oversized-end')
          throw new Error('unreachable');
        const pieces = items.slice(start + 1, endIndex);
        expect(pieces.every((item) => item.type === 'oversized-data')).toBe(true);
        const streamed = pieces.flatMap((item) => (item.type === 'oversized-data' ? [item.data] : []));
        expect(hex(concat([startItem.heldData, ...streamed]))).toBe(hex(bigData));
        expect(hex(startItem.heldData)).toBe(hex(bigData.subarray(0, maxDataBytes + 1)));
        expect(endItem).toEqual({
          type: 'oversized-end',
          rawBytes: bigBlock.raw.length,
          dataBytes: bigData.length,
          hadData: true,
          event: bigBlock.event,
          id: bigBlock.id,
          bound: 'data',
          terminated: true,
        });
        const neighbours = [...items.slice(0, start), ...items.slice(endIndex + 1)];
        const expectedNeighbours = expectedItems(
          blocks.filter((_b, k) => k !== bigIndex),
          tail,
        );
        expect(canonical(neighbours)).toEqual(canonical(expectedNeighbours));
      }),
      { numRuns: 300 },
    );
  });

  it('stops holding a block whose raw bytes cross maxRawBytes, with bounded heldBytes', () => {
    const floodArb: fc.Arbitrary<BlockSpec> = fc.record({
      lines: fc.array(lineArb, { minLength: 3, maxLength: 30 }),
      end: endingArb,
    });
    const arb = fc.record({
      before: fc.array(blockArb, { maxLength: 3 }),
      flood: floodArb,
      after: fc.array(blockArb, { maxLength: 3 }),
      where: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      cuts: cutsArb,
    });
    fc.assert(
      fc.property(arb, ({ before, flood, after, where, cuts }) => {
        const { input, blocks, tail } = buildStream({
          bom: false,
          blocks: [...before, flood, ...after],
          tail: [],
          tailEnds: false,
        });
        const floodIndex = before.length;
        const floodBlock = blocks[floodIndex]!;
        // A block is held while its raw bytes before the final (dispatching) byte fit in maxRawBytes;
        // an unterminated tail has no dispatching byte, so all of it must fit.
        const largestNeighbour = Math.max(
          tail.length,
          ...blocks.filter((_b, k) => k !== floodIndex).map((b) => b.raw.length - 1),
        );
        fc.pre(floodBlock.raw.length - 1 > largestNeighbour);
        const maxRawBytes =
          largestNeighbour + Math.floor(where * (floodBlock.raw.length - 1 - largestNeighbour));

        const framer = new SseFramer({ maxDataBytes: Infinity, maxRawBytes });
        const items: SseItem[] = [];
        for (const chunk of splitAt(input, cuts)) {
          items.push(...framer.push(chunk).map(kept));
          expect(framer.heldBytes).toBeLessThanOrEqual(maxRawBytes + SSE_FIELD_VALUE_CAP);
        }
        items.push(...framer.end().map(kept));

        const shown = canonical(items);
        const options = { maxDataBytes: Infinity, maxRawBytes };
        expect(canonical(frameChunks(oneByteChunks(input), options).items)).toEqual(shown);
        const start = shown.findIndex((item) => item.type === 'oversized-start');
        const endIndex = shown.findIndex((item) => item.type === 'oversized-end');
        expect(start).toBe(floodIndex);
        const streamedHex = shown.slice(start + 1, endIndex).map((item) => String(item.data));
        expect(String(shown[start]!.heldData) + streamedHex.join('')).toBe(
          hex(floodBlock.data ?? new Uint8Array(0)),
        );
        expect(shown[endIndex]).toEqual({
          type: 'oversized-end',
          rawBytes: floodBlock.raw.length,
          dataBytes: floodBlock.data?.length ?? 0,
          hadData: floodBlock.data !== null,
          event: floodBlock.event,
          id: floodBlock.id,
          bound: 'raw',
          terminated: true,
        });
        const neighbours = [...shown.slice(0, start), ...shown.slice(endIndex + 1)];
        expect(neighbours).toEqual(
          canonical(
            expectedItems(
              blocks.filter((_b, k) => k !== floodIndex),
              tail,
            ),
          ),
        );
      }),
      { numRuns: 300 },
    );
  });
});
