// JSON-RPC messages as bytes on the wire, for the properties through the whole proxy (issue 42): strings that put
// escapes, multi-byte characters and bytes no valid UTF-8 holds at the string scanner's window edges, duplicate
// keys, deep nesting and any whitespace; answers framed as a JSON body or as SSE events, and any bytes cut into
// the pieces a peer writes them in.
import fc from 'fast-check';
import { layoutJson, prng } from './json-samples.js';

/** Where the string scanner's windows start, counted from a string's first byte after its quote (string-scan.ts). */
export const WINDOW_EDGES = [128, 1152, 3200] as const;

const bytes = (...values: number[]): Buffer => Buffer.from(values);

/** What a string may hold that a scanner must get right: escapes, multi-byte characters, invalid UTF-8. */
const SPECIAL_PIECES: readonly Buffer[] = [
  ...['\\"', '\\\\', '\\/', '\\n', '\\t', '\\u00e9', '\\uD83D\\uDE00', '\\uD800', '\\u0000'].map((s) =>
    Buffer.from(s),
  ),
  ...['é', '数据', '😀', '\u2028'].map((s) => Buffer.from(s, 'utf8')),
  // Bytes no valid UTF-8 holds: a lone continuation, truncated sequences, an encoded surrogate, an overlong
  // form, bytes never used, a code point past U+10FFFF. Clients decode them as U+FFFD and read on.
  bytes(0x80),
  bytes(0xc3),
  bytes(0xe2, 0x82),
  bytes(0xed, 0xa0, 0x80),
  bytes(0xc0, 0xaf),
  bytes(0xff),
  bytes(0xf4, 0x90, 0x80, 0x80),
];

/** A string's body (the bytes between its quotes) with special pieces at window edges and anywhere. */
export const stringBody = (maxLength: number): fc.Arbitrary<Buffer> =>
  fc
    .tuple(
      fc.integer({ min: 0, max: maxLength }),
      fc.array(
        fc.tuple(
          fc.oneof(
            fc
              .tuple(fc.constantFrom(...WINDOW_EDGES), fc.integer({ min: -7, max: 2 }))
              .map(([edge, shift]) => edge + shift),
            fc.nat(maxLength),
          ),
          fc.constantFrom(...SPECIAL_PIECES),
        ),
        { maxLength: 6 },
      ),
    )
    .map(([length, inserts]) => {
      const parts: Buffer[] = [];
      let at = 0;
      for (const [offset, piece] of [...inserts].sort((a, b) => a[0] - b[0])) {
        if (offset > at) parts.push(Buffer.from('a'.repeat(offset - at)));
        parts.push(piece);
        at = Math.max(at, offset) + piece.length;
      }
      if (length > at) parts.push(Buffer.from('a'.repeat(length - at)));
      return shownShort(Buffer.concat(parts));
    });

/** Shows bytes in a counterexample as runs: `bytes("a"*1150, "\\n", 0xc3, "a"*40)`. */
export function shownShort(data: Buffer): Buffer {
  const shown = (): string => {
    const runs: string[] = [];
    let i = 0;
    while (i < data.length) {
      let j = i;
      while (j < data.length && data[j] === data[i]) j++;
      const byte = data[i]!;
      const one =
        byte >= 0x20 && byte < 0x7f ? JSON.stringify(String.fromCharCode(byte)) : `0x${byte.toString(16)}`;
      runs.push(
        j - i > 3
          ? `${one}*${j - i}`
          : Array(j - i)
              .fill(one)
              .join(', '),
      );
      i = j;
    }
    return `bytes(${runs.join(', ')})`;
  };
  return Object.assign(data, { [fc.toStringMethod]: shown });
}

/** What turns a message into one no JSON reader accepts: a cut end, a control character, a bad escape. */
export type Damage = 'truncated' | 'control' | 'bad-escape';

/** How one answer is written: its string, its shape, decoy duplicate keys before the real ones, its layout. */
export interface AnswerShape {
  body: Buffer;
  kind: 'result' | 'error';
  /** Nesting of arrays in `result.structuredContent` (0: none). */
  depth: number;
  /** Members written twice, a decoy first: JSON.parse (and every JavaScript client) keeps the last. */
  decoys: ('id' | 'result' | 'jsonrpc')[];
  /** Drives member order, whitespace and how the id is escaped. */
  seed: number;
  damage: Damage | null;
}

export const answerShape = (maxBody: number): fc.Arbitrary<AnswerShape> =>
  fc.record({
    body: stringBody(maxBody),
    kind: fc.constantFrom('result', 'result', 'result', 'error'),
    depth: fc.oneof(
      { weight: 4, arbitrary: fc.constant(0) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 1500 }) },
    ),
    decoys: fc.subarray<'id' | 'result' | 'jsonrpc'>(['id', 'result', 'jsonrpc']),
    seed: fc.integer(),
    damage: fc.oneof(
      { weight: 6, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.constantFrom<Damage>('truncated', 'control', 'bad-escape') },
    ),
  });

/** JSON whitespace for a JSON body; an SSE event's data carries no CR (its lines are split at LF only). */
export const JSON_WHITESPACE = [' ', '\t', '\n', '\r'] as const;
export const SSE_DATA_WHITESPACE = [' ', '\t', '\n'] as const;

/** Writes JSON tokens with random whitespace between them, from one seed. */
export class Layout {
  readonly random: () => number;

  constructor(
    seed: number,
    private readonly whitespace: readonly string[],
  ) {
    this.random = prng(seed);
  }

  ws(): Buffer {
    let out = '';
    while (this.random() < 0.25) out += this.whitespace[Math.floor(this.random() * this.whitespace.length)];
    return Buffer.from(out);
  }

  object(members: [string, Buffer][]): Buffer {
    const parts: Buffer[] = [Buffer.from('{')];
    members.forEach(([key, value], i) => {
      if (i > 0) parts.push(Buffer.from(','));
      parts.push(
        this.ws(),
        Buffer.from(JSON.stringify(key)),
        this.ws(),
        Buffer.from(':'),
        this.ws(),
        value,
        this.ws(),
      );
    });
    parts.push(Buffer.from('}'));
    return Buffer.concat(parts);
  }

  array(elements: Buffer[]): Buffer {
    const parts: Buffer[] = [Buffer.from('['), this.ws()];
    elements.forEach((element, i) => {
      if (i > 0) parts.push(this.ws(), Buffer.from(','), this.ws());
      parts.push(element);
    });
    parts.push(this.ws(), Buffer.from(']'));
    return Buffer.concat(parts);
  }

  /** The members in an order of this layout's choosing. */
  shuffled<T>(items: T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }
}

function damaged(body: Buffer, damage: Damage | null): Buffer {
  if (damage === 'control') return Buffer.concat([body, bytes(0x01)]);
  if (damage === 'bad-escape') return Buffer.concat([body, Buffer.from('\\x')]);
  return body;
}

/** The bytes of an answer to the request with id `id`, written as `shape` says with `whitespace`. */
export function answerBytes(shape: AnswerShape, id: string | number, whitespace: readonly string[]): Buffer {
  const layout = new Layout(shape.seed, whitespace);
  const text = Buffer.concat([Buffer.from('"'), damaged(shape.body, shape.damage), Buffer.from('"')]);
  let payload: Buffer;
  if (shape.kind === 'error') {
    payload = layout.object([
      ['code', Buffer.from('-32000')],
      ['message', text],
    ]);
  } else {
    const block = layout.object([
      ['type', Buffer.from('"text"')],
      ['text', text],
    ]);
    const members: [string, Buffer][] = [['content', layout.array([block])]];
    if (shape.depth > 0)
      members.push([
        'structuredContent',
        Buffer.from(`{"v":${'['.repeat(shape.depth)}${']'.repeat(shape.depth)}}`),
      ]);
    payload = layout.object(members);
  }
  // The id as the answer writes it: maybe escaped otherwise than the request wrote it (the same value).
  const idLiteral = Buffer.from(layoutJson(id, shape.seed, { oddEscapes: true }));
  const real: [string, Buffer][] = layout.shuffled([
    ['jsonrpc', Buffer.from('"2.0"')],
    ['id', idLiteral],
    [shape.kind, payload],
  ]);
  const decoys: [string, Buffer][] = shape.decoys.map((key) => {
    if (key === 'id') return ['id', Buffer.from('"decoy"')];
    if (key === 'jsonrpc') return ['jsonrpc', Buffer.from('"1.0"')];
    return [shape.kind, Buffer.from('{"decoy":true}')];
  });
  const message = layout.object([...decoys, ...real]);
  return shape.damage === 'truncated' ? message.subarray(0, message.length - 1) : message;
}

/** How a peer cuts what it writes: whole, byte by byte, at random points, around every backslash. */
export type Cutting =
  | { kind: 'whole' }
  | { kind: 'bytes'; from: number }
  | { kind: 'random'; cuts: number[] }
  | { kind: 'backslashes' };

/** Bytes written one by one in a 'bytes' cutting (from its offset on; the rest goes whole). */
export const SINGLE_BYTES = 256;

export const cutting: fc.Arbitrary<Cutting> = fc.oneof(
  { weight: 2, arbitrary: fc.constant<Cutting>({ kind: 'whole' }) },
  { weight: 1, arbitrary: fc.nat().map((from): Cutting => ({ kind: 'bytes', from })) },
  {
    weight: 3,
    arbitrary: fc.array(fc.nat(), { maxLength: 30 }).map((cuts): Cutting => ({ kind: 'random', cuts })),
  },
  { weight: 2, arbitrary: fc.constant<Cutting>({ kind: 'backslashes' }) },
);

/** `data` cut as `how` says (offsets taken modulo the length). */
export function cut(data: Buffer, how: Cutting): Buffer[] {
  const at = (points: number[]): Buffer[] => {
    const sorted = [...new Set(points.filter((p) => p > 0 && p < data.length))].sort((a, b) => a - b);
    const pieces: Buffer[] = [];
    let start = 0;
    for (const point of [...sorted, data.length]) {
      pieces.push(data.subarray(start, point));
      start = point;
    }
    return pieces.filter((piece) => piece.length > 0);
  };
  switch (how.kind) {
    case 'whole':
      return [data];
    case 'bytes': {
      const from = data.length === 0 ? 0 : how.from % data.length;
      return at(Array.from({ length: SINGLE_BYTES + 1 }, (_, i) => from + i));
    }
    case 'random':
      return at(how.cuts.map((c) => (data.length === 0 ? 0 : c % data.length)));
    case 'backslashes': {
      const points: number[] = [];
      data.forEach((byte, i) => {
        if (byte === 0x5c) points.push(i, i + 1);
      });
      return at(points);
    }
  }
}

/** A notifications/message carrying `body` as its data, written as `seed` says with `whitespace`. */
export function notificationBytes(body: Buffer, seed: number, whitespace: readonly string[]): Buffer {
  const layout = new Layout(seed, whitespace);
  const text = Buffer.concat([Buffer.from('"'), body, Buffer.from('"')]);
  return layout.object(
    layout.shuffled<[string, Buffer]>([
      ['jsonrpc', Buffer.from('"2.0"')],
      ['method', Buffer.from('"notifications/message"')],
      [
        'params',
        layout.object([
          ['level', Buffer.from('"info"')],
          ['data', text],
        ]),
      ],
    ]),
  );
}

/** One SSE event: its id line (if any), `event: message` (if typed), one `data: ` line per LF-separated line of `data`. */
export function sseEventBytes(data: Buffer, eol: string, id: string | undefined, typed: boolean): Buffer {
  const parts: Buffer[] = [];
  if (id !== undefined) parts.push(Buffer.from(`id: ${id}${eol}`));
  if (typed) parts.push(Buffer.from(`event: message${eol}`));
  let start = 0;
  for (let i = 0; i <= data.length; i++) {
    if (i < data.length && data[i] !== 0x0a) continue;
    parts.push(Buffer.from('data: '), data.subarray(start, i), Buffer.from(eol));
    start = i + 1;
  }
  parts.push(Buffer.from(eol));
  return Buffer.concat(parts);
}
