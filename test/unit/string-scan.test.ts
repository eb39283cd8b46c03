// The string scan (src/core/string-scan.ts): the SIMD scanner assembled from string-scan.wat is the one the
// repository ships, it loads on this Node, and it finds the same end of a string as the JavaScript scan
// and as JSON.parse, for long strings with escapes, multi-byte characters and control characters at every
// place a window can cut them.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { MODULE_FILE, stringScanModuleText } from '../../scripts/wasm-module.js';
import { scanMessage } from '../../src/core/message-scan.js';
import { scanString, useSimdStringScan } from '../../src/core/string-scan.js';

/** scanString over the whole buffer, with the SIMD scanner on or off. */
function scanned(text: Buffer, simd: boolean): number {
  useSimdStringScan(simd);
  return scanString(text, 0, text.length);
}

/** The JSON.parse answer for a text that is a string then `tail`: the end index when the string is valid. */
function endByJsonParse(text: Buffer, tail: number): number {
  try {
    JSON.parse(text.subarray(0, text.length - tail).toString('utf8'));
    return text.length - tail;
  } catch {
    return -1;
  }
}

afterAll(() => {
  useSimdStringScan(true);
});

describe('string scan', () => {
  it('ships the bytes string-scan.wat assembles to (run `npm run build:wasm` after editing it)', async () => {
    expect(readFileSync(MODULE_FILE, 'utf8')).toBe(await stringScanModuleText());
  });

  it('loads the SIMD scanner on this Node', () => {
    expect(useSimdStringScan(true)).toBe(true);
  });

  // Pieces of a string's body: long plain runs move the next piece across window edges.
  const piece = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 5000 }).map((n) => 'a'.repeat(n)) },
    { weight: 2, arbitrary: fc.constantFrom('\\"', '\\\\', '\\/', '\\b', '\\f', '\\n', '\\r', '\\t') },
    { weight: 2, arbitrary: fc.constantFrom('\\u00e9', '\\uD83D\\uDE00', '\\uABCD', '\\uabcd') },
    { weight: 2, arbitrary: fc.constantFrom('é', '数据', '😀', ' ', '~', '\u007f') },
    {
      weight: 1,
      arbitrary: fc.constantFrom('\\x', '\\u12', '\\u12G4', '\\', '\t', '\n', '\u0000', '\u001f'),
    },
    { weight: 1, arbitrary: fc.constant('"') },
  );

  it('ends every long string where the JavaScript scan and JSON.parse end it', () => {
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 40 }),
        fc.constantFrom('"', '"}', '', '\\'),
        (pieces, closing) => {
          const body = pieces.join('');
          const text = Buffer.from(`"${body}${closing}`, 'utf8');
          const simd = scanned(text, true);
          expect(simd).toBe(scanned(text, false));
          // Where the body holds no quote of its own, the string is the text up to its `closing`.
          if (!body.includes('"') && closing.startsWith('"'))
            expect(simd).toBe(endByJsonParse(text, closing.length - 1));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('reads an escape wherever a window edge cuts it', () => {
    // From byte 1: 128 bytes read in JavaScript, then windows of 1, 2, 4, 8 and 16 KiB.
    const edges = [129, 1153, 3201, 7297, 15489, 31873];
    for (const edge of edges) {
      for (let shift = -7; shift <= 1; shift++) {
        for (const piece of ['\\n', '\\u00e9', '\\uD83D\\uDE00', '数', '\\q', '\\u00G9', '\u0001']) {
          const text = Buffer.from(`"${'b'.repeat(edge + shift - 1)}${piece}${'c'.repeat(40_000)}"`, 'utf8');
          const expected = endByJsonParse(text, 0);
          expect({ edge, shift, escape, end: scanned(text, true) }).toEqual({
            edge,
            shift,
            escape,
            end: expected,
          });
          expect(scanned(text, false)).toBe(expected);
        }
      }
    }
  });

  it('reads a message with a string far longer than the window (4 MiB) as the JavaScript scan reads it', () => {
    const sentence = JSON.stringify('The quick "brown" fox jumps over the lazy dog.\n').slice(1, -1);
    const text = sentence.repeat(Math.ceil((4 * 1024 * 1024) / sentence.length));
    const body = Buffer.from(
      `{"result":{"content":[{"type":"text","text":"${text}"}]},"jsonrpc":"2.0","id":7}`,
    );
    useSimdStringScan(true);
    const simd = scanMessage(body);
    useSimdStringScan(false);
    const js = scanMessage(body);
    expect(simd?.result?.blocks[0]?.text).toEqual(js?.result?.blocks[0]?.text);
    expect(simd?.classified).toEqual(js?.classified);
    expect(simd?.result?.blocks[0]?.text).toEqual([44, 44 + text.length + 2]);
    // A raw newline deep in the text makes it invalid for both.
    body[3 * 1024 * 1024] = 0x0a;
    expect(scanMessage(body)).toBeUndefined();
    useSimdStringScan(true);
    expect(scanMessage(body)).toBeUndefined();
  });
});
