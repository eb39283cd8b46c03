// Shared generators for the byte-level JSON tests: JSON texts with arbitrary whitespace and escapes, arbitrary
// chunkings, and MCP-shaped messages.

import fc from 'fast-check';
import type { ByteSpan } from '../../src/core/json-scan.js';
import { scanMessage } from '../../src/core/message-scan.js';

export const utf8 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'utf8'));
export const decode = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');

/** A small deterministic PRNG (mulberry32), so one fast-check integer drives all layout choices of a text. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WHITESPACE = [' ', '\t', '\n', '\r'];

/** A string literal in which some characters are written as `\uXXXX` and `/` sometimes as `\/`: valid, but not JSON.stringify's form. */
function oddlyEscapedLiteral(text: string, random: () => number): string {
  let out = '"';
  // Code points (the `u` flag), so a surrogate pair is escaped whole or not at all.
  const pieces =
    JSON.stringify(text)
      .slice(1, -1)
      .match(/\\u[0-9a-f]{4}|\\.|[\s\S]/gu) ?? [];
  for (const piece of pieces) {
    const roll = random();
    if (!piece.startsWith('\\') && roll < 0.2) {
      for (let i = 0; i < piece.length; i++) out += `\\u${piece.charCodeAt(i).toString(16).padStart(4, '0')}`;
    } else if (piece === '/' && roll < 0.5) {
      out += '\\/';
    } else {
      out += piece;
    }
  }
  return `${out}"`;
}

export interface LayoutOptions {
  /** Put random JSON whitespace between tokens. */
  whitespace?: boolean;
  /** Write some characters of strings (keys included) as `\uXXXX` / `\/`. */
  oddEscapes?: boolean;
}

/** JSON text of `value`, laid out randomly but parsing back to the same value. Recursive: test-sized values only. */
export function layoutJson(value: unknown, seed: number, options: LayoutOptions = {}): string {
  const random = prng(seed);
  const ws = (): string => {
    if (!options.whitespace) return '';
    let out = '';
    while (random() < 0.35) out += WHITESPACE[Math.floor(random() * WHITESPACE.length)];
    return out;
  };
  const literal = (text: string): string =>
    options.oddEscapes && random() < 0.5 ? oddlyEscapedLiteral(text, random) : JSON.stringify(text);
  const write = (v: unknown): string => {
    if (typeof v === 'string') return literal(v);
    if (Array.isArray(v)) return `[${ws()}${v.map((x) => write(x)).join(`${ws()},${ws()}`)}${ws()}]`;
    if (typeof v === 'object' && v !== null) {
      const members = Object.entries(v).map(([k, x]) => `${literal(k)}${ws()}:${ws()}${write(x)}`);
      return `{${ws()}${members.join(`${ws()},${ws()}`)}${ws()}}`;
    }
    return JSON.stringify(v) ?? 'null';
  };
  return `${ws()}${write(value)}${ws()}`;
}

/** Arbitrary JSON values with full-Unicode strings (keys too), as they come back from JSON (-0 becomes 0). */
export const jsonValue = (maxDepth = 4): fc.Arbitrary<unknown> =>
  fc.jsonValue({ maxDepth, stringUnit: 'binary' }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);

/**
 * Long strings dense in what a scanner must get right (quotes and backslashes, which JSON escapes, and
 * multi-byte characters), with runs long enough to take the native-search path of the string skipper.
 */
export const trickyString: fc.Arbitrary<string> = fc
  .array(fc.oneof(fc.constantFrom('\\', '"', '\\"', 'é', '😀', '/', '\n'), fc.constant('a'.repeat(30))), {
    maxLength: 30,
  })
  .map((parts) => parts.join(''));

/** Splits `bytes` at the given cut points (any byte offsets, duplicates allowed). */
export function chunksAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => Math.min(bytes.length, Math.max(0, c))))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    if (point > start) chunks.push(bytes.subarray(start, point));
    start = point;
  }
  return chunks;
}

/** Arbitrary cut points for a text of up to `maxLength` bytes. */
export const cutPoints = (maxLength: number): fc.Arbitrary<number[]> =>
  fc.array(fc.integer({ min: 0, max: maxLength }), { maxLength: 40 });

/** A JSON-RPC id as peers send them, including strings that need escaping. */
export const rpcId: fc.Arbitrary<string | number | null> = fc.oneof(
  fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('a"b\\c', '\u2028\u2029', 'é😀中', '\\"}]', ''),
  fc.constant(null),
);

/** A tools/call request as SDK clients send it. */
export function toolsCallRequest(id: string | number, tool: string, args: unknown = {}): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: tool, arguments: args },
  });
}

/** A text that is hard to scan: brackets, quotes, backslashes and escapes, multi-byte characters. */
export const trickyText = '"}]{[\\\\" \\u0022 \\ \n\t\r é 中文 😀 e\u0301 \u2028 ]}';

/** Items for a large structured result. */
export function items(count: number): Array<{ id: number; name: string; score: number; tags: string[] }> {
  return Array.from({ length: count }, (_, n) => ({
    id: n,
    name: `item ${n} ${n % 7 === 0 ? 'é中😀' : 'plain'}`,
    score: n / 4,
    tags: n % 3 === 0 ? [] : ['a', `t${n % 5}`],
  }));
}

/**
 * The spans, inside one message's bytes, of each element of `result.content` and of `result.structuredContent`,
 * as the scan reads them (nothing for a text that is not one JSON value).
 */
export function toolResultSpans(bytes: Uint8Array): {
  content: ByteSpan[];
  structured: ByteSpan | undefined;
} {
  const result = scanMessage(bytes)?.result;
  return { content: result?.blocks.map((block) => block.span) ?? [], structured: result?.structured };
}

/** Bytes no valid UTF-8 holds: a lone continuation, a truncated sequence, an encoded surrogate, an overlong form. */
const badUtf8 = fc.constantFrom(
  [0x80],
  [0xc3],
  [0xe2, 0x82],
  [0xed, 0xa0, 0x80],
  [0xc0, 0xaf],
  [0xff],
  [0xf4, 0x90, 0x80, 0x80],
);

/**
 * A message or a batch of up to `maxBatch`, laid out with any whitespace and escapes, then often damaged: a
 * byte replaced by one that breaks the JSON, bytes no valid UTF-8 holds, a byte order mark.
 */
export function damagedJson(message: fc.Arbitrary<unknown>, maxBatch: number): fc.Arbitrary<Buffer> {
  return fc
    .tuple(
      fc.oneof(message, fc.array(message, { maxLength: maxBatch })),
      fc.integer(),
      fc.option(fc.tuple(fc.nat(), badUtf8)),
      fc.option(fc.tuple(fc.nat(), fc.constantFrom('', '"', '\\', ',', '}', ']', '\u0001', 'x'))),
      fc.boolean(),
    )
    .map(([value, seed, bad, edit, bom]) => {
      let bytes = Buffer.from(layoutJson(value, seed, { whitespace: true, oddEscapes: seed % 3 === 0 }));
      if (edit !== null) {
        const at = edit[0] % (bytes.length + 1);
        bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(edit[1]), bytes.subarray(at + 1)]);
      }
      if (bad !== null) {
        const at = bad[0] % (bytes.length + 1);
        bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(bad[1]), bytes.subarray(at)]);
      }
      return bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]) : bytes;
    });
}

/** A tools/call request whose body nests exactly `depth` levels (its object 1, params 2, arguments 3, then arrays). */
export function nestedCall(id: number, depth: number): string {
  const arrays = depth - 3;
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"deep","arguments":{"v":${'['.repeat(arrays)}${']'.repeat(arrays)}}}}`;
}
