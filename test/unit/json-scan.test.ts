import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EnvelopeHeadScanner } from '../../src/core/envelope-head.js';
import { type ByteSpan, splitTopLevel } from '../../src/core/json-scan.js';
import {
  chunksAt,
  cutPoints,
  decode,
  jsonValue,
  layoutJson,
  rpcId,
  toolResultSpans,
  trickyString,
  trickyText,
  utf8,
} from '../support/json-samples.js';

const slice = (bytes: Uint8Array, [start, end]: ByteSpan): string => decode(bytes.subarray(start, end));

function spansOf(text: string): { batch: boolean; texts: string[] } {
  const bytes = utf8(text);
  const split = splitTopLevel(bytes);
  if (!split.ok) throw new Error(split.error);
  return { batch: split.batch, texts: split.spans.map((span) => slice(bytes, span)) };
}

function splitError(text: string): string {
  const split = splitTopLevel(utf8(text));
  if (split.ok) throw new Error(`expected an error for ${JSON.stringify(text)}`);
  return split.error;
}

describe('splitTopLevel', () => {
  it('returns one span without surrounding whitespace for a single value', () => {
    const text = ' \r\n\t{"jsonrpc":"2.0","id":1,"method":"ping"} \n';
    const split = splitTopLevel(utf8(text));
    expect(split).toEqual({ ok: true, batch: false, spans: [[4, 44]] });
    expect(spansOf(text).texts).toEqual(['{"jsonrpc":"2.0","id":1,"method":"ping"}']);
  });

  it('splits a batch into its elements', () => {
    expect(spansOf('[{"id":1} , {"id":2},\n{"id":3}]')).toEqual({
      batch: true,
      texts: ['{"id":1}', '{"id":2}', '{"id":3}'],
    });
  });

  it('keeps nested arrays and objects inside one element', () => {
    expect(spansOf('[[1,[2,[3]]],{"a":[{"b":[]}]}, [] ,{}]').texts).toEqual([
      '[1,[2,[3]]]',
      '{"a":[{"b":[]}]}',
      '[]',
      '{}',
    ]);
  });

  it('is not fooled by brackets, quotes and backslashes inside strings', () => {
    const elements = ['"]"', '"\\\\"', '"\\"]"', '"[{"', '{"k":"}\\\\\\""}', JSON.stringify(trickyText)];
    expect(spansOf(`[${elements.join(',')}]`).texts).toEqual(elements);
  });

  it('reports byte offsets, not UTF-16 offsets, for multi-byte text', () => {
    const bytes = utf8('["é😀", {"k":"中文"}]');
    const split = splitTopLevel(bytes);
    expect(split).toEqual({
      ok: true,
      batch: true,
      spans: [
        [1, 9],
        [11, 25],
      ],
    });
  });

  it('accepts bare tokens as single values and elements', () => {
    expect(spansOf(' 42 ')).toEqual({ batch: false, texts: ['42'] });
    expect(spansOf('[true,null,-1.5e3,"s"]').texts).toEqual(['true', 'null', '-1.5e3', '"s"']);
  });

  it('returns an empty batch for an empty array', () => {
    expect(splitTopLevel(utf8('[]'))).toEqual({ ok: true, batch: true, spans: [] });
    expect(splitTopLevel(utf8(' [ \n ] '))).toEqual({ ok: true, batch: true, spans: [] });
  });

  it.each([
    ['', 'empty'],
    [' \n\t', 'empty'],
    ['[1,]', 'malformed array element'],
    ['[1 2]', "expected ',' or ']'"],
    ['[1,,2]', 'malformed array element'],
    ['[', 'unterminated'],
    ['[{"a":1}', "expected ',' or ']'"],
    ['{"a":1} {"b":2}', 'unexpected data after the JSON value'],
    ['[1]]', 'unexpected data after the top-level array'],
    ['[{]}', 'malformed array element'],
    ['{"a":"unterminated}', 'malformed JSON value'],
    ['["a\\"]', 'malformed array element'],
    [']', 'malformed JSON value'],
  ])('rejects %j (%s)', (text, message) => {
    expect(splitError(text)).toContain(message);
  });

  it('handles 100,000 levels of nesting without recursion', () => {
    const depth = 100_000;
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const batch = splitTopLevel(utf8(`[${deep}, 1]`));
    expect(batch.ok && batch.spans).toEqual([
      [1, 1 + 2 * depth],
      [3 + 2 * depth, 4 + 2 * depth],
    ]);
    const objects = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const single = splitTopLevel(utf8(objects));
    expect(single.ok && single.spans).toEqual([[0, objects.length]]);
    expect(splitTopLevel(utf8(`[${'['.repeat(depth)}]`)).ok).toBe(false);
  });

  it('property: batch spans parse to exactly the elements, whatever the whitespace and escapes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(jsonValue(), trickyString), { maxLength: 8 }),
        fc.integer(),
        (elements, seed) => {
          const text = layoutJson(elements, seed, { whitespace: true, oddEscapes: true });
          const bytes = utf8(text);
          const split = splitTopLevel(bytes);
          expect(split.ok).toBe(true);
          if (!split.ok) return;
          expect(split.batch).toBe(true);
          expect(split.spans.map((span) => JSON.parse(slice(bytes, span)))).toEqual(JSON.parse(text));
          for (const [start, end] of split.spans) {
            expect(/\s/.test(String.fromCharCode(bytes[start]!))).toBe(false);
            expect(/\s/.test(String.fromCharCode(bytes[end - 1]!))).toBe(false);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: a non-array value is one span that parses to the value', () => {
    const nonArray = jsonValue().filter((v) => !Array.isArray(v));
    fc.assert(
      fc.property(nonArray, fc.integer(), (value, seed) => {
        const text = layoutJson(value, seed, { whitespace: true, oddEscapes: true });
        const bytes = utf8(text);
        const split = splitTopLevel(bytes);
        expect(split.ok && !split.batch && split.spans.length === 1).toBe(true);
        if (!split.ok) return;
        const span = split.spans[0]!;
        expect(JSON.parse(slice(bytes, span))).toEqual(value);
        expect(slice(bytes, span)).toBe(text.trim());
      }),
      { numRuns: 300 },
    );
  });
});

describe('tool result spans, as the scan reads them', () => {
  const result = {
    content: [
      { type: 'text', text: trickyText },
      { type: 'image', data: 'aGVsbG8=', mimeType: 'image/png' },
    ],
    structuredContent: { rows: [{ a: '[{"content":[1]}]' }], content: ['not', 'a', 'block'] },
  };

  it('finds each content block and structuredContent when the id comes last (TypeScript SDK order)', () => {
    const bytes = utf8(JSON.stringify({ result, jsonrpc: '2.0', id: 5 }));
    const spans = toolResultSpans(bytes);
    expect(spans.content.map((span) => slice(bytes, span))).toEqual(
      result.content.map((b) => JSON.stringify(b)),
    );
    expect(spans.structured && slice(bytes, spans.structured)).toBe(JSON.stringify(result.structuredContent));
  });

  it('finds them in any member order and with whitespace', () => {
    const text = `{ "id" : 1 ,"jsonrpc":"2.0", "result" : { "structuredContent" : {"x": [1, 2]} ,
      "isError": false, "content" : [ {"type":"text","text":"a"} , {"type":"audio","data":"AA=="} ] } }`;
    const bytes = utf8(text);
    const spans = toolResultSpans(bytes);
    expect(spans.content.map((span) => slice(bytes, span))).toEqual([
      '{"type":"text","text":"a"}',
      '{"type":"audio","data":"AA=="}',
    ]);
    expect(spans.structured && slice(bytes, spans.structured)).toBe('{"x": [1, 2]}');
  });

  it('looks only at result.content and result.structuredContent', () => {
    const text = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      content: [{ type: 'text', text: 'top-level, not a result' }],
      params: { content: [{ type: 'text', text: 'params' }], structuredContent: {} },
      result: {
        _meta: { content: [1, 2], structuredContent: { no: true } },
        data: { result: { content: [3] } },
      },
    });
    expect(toolResultSpans(utf8(text))).toEqual({ content: [], structured: undefined });
  });

  it('recognizes escaped key names, as JSON.parse does', () => {
    const text = '{"jsonrpc":"2.0","id":1,"\\u0072esult":{"cont\\u0065nt":[{"type":"text","text":"x"}]}}';
    const bytes = utf8(text);
    expect(toolResultSpans(bytes).content.map((span) => slice(bytes, span))).toEqual([
      '{"type":"text","text":"x"}',
    ]);
  });

  it('lets a repeated key win last, as JSON.parse does', () => {
    const text =
      '{"result":{"content":[{"type":"text","text":"old"}],"content":[],"structuredContent":1,"structuredContent":{"b":2}},"id":1}';
    const bytes = utf8(text);
    const spans = toolResultSpans(bytes);
    expect(spans.content).toEqual([]);
    expect(spans.structured && slice(bytes, spans.structured)).toBe('{"b":2}');
    const later = utf8('{"result":{"content":[{"type":"text","text":"a"}]},"result":"replaced","id":1}');
    expect(toolResultSpans(later)).toEqual({ content: [], structured: undefined });
  });

  it('returns nothing for non-objects and malformed input', () => {
    for (const text of [
      '[1,2]',
      '"result"',
      '',
      '{"result":{"content":[{"type":"text"',
      '{"result":{"content":[1,]}}',
    ]) {
      expect(toolResultSpans(utf8(text))).toEqual({ content: [], structured: undefined });
    }
  });

  it('handles a content value that is not an array and a deep structuredContent', () => {
    const depth = 100_000;
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const bytes = utf8(`{"result":{"content":"text","structuredContent":${deep}},"id":1}`);
    const spans = toolResultSpans(bytes);
    expect(spans.content).toEqual([]);
    expect(spans.structured).toEqual([48, 48 + 2 * depth]);
  });

  it('property: spans parse to the blocks and the structured value, whatever the layout', () => {
    const block = fc.oneof(
      fc.record({ type: fc.constant('text'), text: fc.oneof(fc.string({ unit: 'binary' }), trickyString) }),
      fc.record({ type: fc.constant('image'), data: fc.base64String(), mimeType: fc.constant('image/png') }),
      jsonValue(3),
    );
    const message = fc.record({
      jsonrpc: fc.constant('2.0'),
      id: rpcId,
      result: fc.record(
        {
          content: fc.array(block, { maxLength: 5 }),
          structuredContent: jsonValue(3),
          isError: fc.boolean(),
        },
        { requiredKeys: ['content'] },
      ),
    });
    fc.assert(
      fc.property(message, fc.integer(), fc.boolean(), (msg, seed, whitespace) => {
        const text = layoutJson(msg, seed, { whitespace, oddEscapes: true });
        const bytes = utf8(text);
        const spans = toolResultSpans(bytes);
        expect(spans.content.map((span) => JSON.parse(slice(bytes, span)))).toEqual(msg.result.content);
        if ('structuredContent' in msg.result) {
          expect(spans.structured).toBeDefined();
          expect(JSON.parse(slice(bytes, spans.structured!))).toEqual(msg.result.structuredContent);
        } else {
          expect(spans.structured).toBeUndefined();
        }
      }),
      { numRuns: 300 },
    );
  });
});

function scan(chunks: Uint8Array[]): ReturnType<EnvelopeHeadScanner['snapshot']> {
  const scanner = new EnvelopeHeadScanner();
  for (const chunk of chunks) scanner.push(chunk);
  return scanner.snapshot();
}

function scanInChunksOf(text: string, size: number): ReturnType<EnvelopeHeadScanner['snapshot']> {
  const bytes = utf8(text);
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  return scan(chunks);
}

describe('EnvelopeHeadScanner', () => {
  it('recovers an id that comes last, after a large result, in one chunk or byte by byte', () => {
    const text = JSON.stringify({
      result: { content: [{ type: 'text', text: trickyText.repeat(50) }] },
      jsonrpc: '2.0',
      id: 5,
    });
    const expected = { id: 5, method: undefined, hasResult: true, hasError: false };
    expect(scanInChunksOf(text, text.length)).toEqual(expected);
    expect(scanInChunksOf(text, 1)).toEqual(expected);
    expect(scanInChunksOf(text, 7)).toEqual(expected);
  });

  it('recovers a request id and method, and an error', () => {
    expect(
      scanInChunksOf('{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"id":9}}', 3),
    ).toEqual({
      id: 'req-1',
      method: 'tools/call',
      hasResult: false,
      hasError: false,
    });
    expect(scanInChunksOf('{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}', 5)).toEqual({
      id: null,
      method: undefined,
      hasResult: false,
      hasError: true,
    });
  });

  it('decodes string ids with escapes and multi-byte characters split at any byte', () => {
    const id = 'a"b\\c/é中😀\u2028';
    const text = `{"jsonrpc":"2.0","method":"工具/调用","id":"a\\"b\\\\c\\/\\u00e9中😀\\u2028"}`;
    expect(JSON.parse(text).id).toBe(id);
    for (let size = 1; size <= 8; size++) {
      expect(scanInChunksOf(text, size)).toMatchObject({ id, method: '工具/调用' });
    }
  });

  it('keeps its place when a chunk ends inside an escape or a backslash run of a long string', () => {
    const long = `${'a'.repeat(40)}\\\\${'b'.repeat(40)}\\"${'c'.repeat(40)}\\\\\\"é😀`;
    const text = JSON.stringify({
      result: { text: long.repeat(5), id: 'inner' },
      jsonrpc: '2.0',
      id: 'outer',
    });
    for (let size = 1; size <= 120; size++) {
      expect(scanInChunksOf(text, size).id, `chunks of ${size}`).toBe('outer');
    }
  });

  it('recovers numeric ids in any notation', () => {
    expect(scanInChunksOf('{"id":-12.5e2}', 1).id).toBe(-1250);
    expect(scanInChunksOf('{"id" : 0 }', 1).id).toBe(0);
    expect(scanInChunksOf('{"id":123456789012}', 4).id).toBe(123456789012);
  });

  it('ignores ids that are not strings, numbers or null, and ids over 1024 bytes', () => {
    expect(scanInChunksOf('{"id":{"a":1},"result":1}', 2)).toMatchObject({ id: undefined, hasResult: true });
    expect(scanInChunksOf('{"id":[1],"method":"m"}', 2)).toMatchObject({ id: undefined, method: 'm' });
    expect(scanInChunksOf('{"id":true}', 2).id).toBeUndefined();
    const atCap = 'x'.repeat(1022); // 1024 bytes with its quotes
    expect(scanInChunksOf(`{"id":"${atCap}"}`, 100).id).toBe(atCap);
    expect(scanInChunksOf(`{"id":"${atCap}x"}`, 100).id).toBeUndefined();
    expect(scanInChunksOf(`{"id":"${'é'.repeat(600)}"}`, 100).id).toBeUndefined();
  });

  it('recognizes escaped key names and lets a repeated key win last', () => {
    expect(scanInChunksOf('{"\\u0069d":7,"m\\u0065thod":"x"}', 1)).toMatchObject({ id: 7, method: 'x' });
    expect(scanInChunksOf('{"id":1,"id":"two"}', 1).id).toBe('two');
    expect(scanInChunksOf('{"id":1,"id":{}}', 1).id).toBeUndefined();
  });

  it('skips keys longer than 256 bytes without losing its place', () => {
    const text = `{"${'k'.repeat(5000)}":{"id":1},"id":2}`;
    expect(scanInChunksOf(text, 333).id).toBe(2);
  });

  it('only reads top-level members', () => {
    const text = '{"result":{"id":1,"method":"inner","error":{}},"params":["id","method"],"jsonrpc":"2.0"}';
    expect(scanInChunksOf(text, 4)).toEqual({
      id: undefined,
      method: undefined,
      hasResult: true,
      hasError: false,
    });
  });

  it('reports what it saw so far while the message is still arriving', () => {
    const scanner = new EnvelopeHeadScanner();
    scanner.push(utf8('{"jsonrpc":"2.0","id":4'));
    expect(scanner.snapshot().id).toBeUndefined(); // the number may continue
    scanner.push(utf8('2,"result":{"content":['));
    expect(scanner.snapshot()).toEqual({ id: 42, method: undefined, hasResult: true, hasError: false });
  });

  it('stops at input that is not an object', () => {
    expect(scanInChunksOf('[{"id":1}]', 1)).toEqual({
      id: undefined,
      method: undefined,
      hasResult: false,
      hasError: false,
    });
    expect(scanInChunksOf('"id"', 1).id).toBeUndefined();
  });

  it('ends strings where the whole-message scan ends them, and stops at one JSON.parse refuses, in any chunking', () => {
    const long = 'x'.repeat(5000);
    const text = `{"result":{"t":"${long}\\u0022\\\\${long}\\ud83d\\ude00"},"a":"\\u00e9\\"","id":"i\\u0064"}`;
    expect(JSON.parse(text).id).toBe('id');
    for (const size of [1, 2, 3, 5, 7, 1024, 4099, text.length])
      expect(scanInChunksOf(text, size).id).toBe('id');
    for (const bad of ['\u0001', '\\x', '\\u12G4']) {
      const refused = `{"result":{"t":"a${bad}b"},"id":5}`;
      expect(() => JSON.parse(refused)).toThrow();
      for (const size of [1, 3, refused.length]) {
        const scanner = new EnvelopeHeadScanner();
        const bytes = utf8(refused);
        for (let i = 0; i < bytes.length; i += size) scanner.push(bytes.subarray(i, i + size));
        expect(scanner.unreadable).toBe(true);
        expect(scanner.snapshot()).toEqual({
          id: undefined,
          method: undefined,
          hasResult: true,
          hasError: false,
        });
      }
    }
  });

  it('keeps constant memory: no field grows with the input', () => {
    const scanner = new EnvelopeHeadScanner();
    const fields = (): Array<[string, unknown]> =>
      Object.entries(scanner as unknown as Record<string, unknown>);
    const buffersBefore = fields().filter(([, v]) => v instanceof Uint8Array);
    const huge = utf8(
      JSON.stringify({
        result: {
          content: [{ type: 'text', text: `${trickyText}${'x'.repeat(1 << 20)}` }],
          items: Array(5000).fill({ a: [1] }),
        },
        jsonrpc: '2.0',
        id: 'last',
      }),
    );
    for (let i = 0; i < huge.length; i += 65_536) scanner.push(huge.subarray(i, i + 65_536));
    expect(scanner.snapshot().id).toBe('last');
    for (const [name, value] of fields()) {
      if (value instanceof Uint8Array) {
        expect(value.length, name).toBeLessThanOrEqual(1024);
        expect(
          buffersBefore.some(([n, v]) => n === name && v === value),
          name,
        ).toBe(true);
      } else if (typeof value === 'string') {
        expect(value.length, name).toBeLessThanOrEqual(1024);
      } else {
        expect(['number', 'boolean', 'undefined'].includes(typeof value) || value === null, name).toBe(true);
      }
    }
  });

  it('walks 100,000 levels of nesting', () => {
    const depth = 100_000;
    const text = `{"result":${'['.repeat(depth)}"]"${']'.repeat(depth)},"id":"deep"}`;
    expect(scanInChunksOf(text, 4096).id).toBe('deep');
  });

  it('property: id and method equal the parsed ones for any key order, layout and chunking', () => {
    const member = fc.oneof(
      fc.tuple(fc.constant('result'), jsonValue(4)),
      fc.tuple(
        fc.constant('result'),
        fc.record({ content: fc.array(fc.record({ type: fc.constant('text'), text: trickyString })) }),
      ),
      fc.tuple(
        fc.constant('error'),
        fc.record({ code: fc.integer(), message: fc.string({ unit: 'binary' }) }),
      ),
      fc.tuple(fc.constant('params'), fc.record({ name: fc.string(), arguments: jsonValue(3) })),
      fc.tuple(fc.constant('jsonrpc'), fc.constant('2.0')),
      fc.tuple(fc.string({ unit: 'binary', maxLength: 12 }), jsonValue(2)),
    );
    const envelope = fc
      .record({
        members: fc.array(member, { maxLength: 5 }),
        id: fc.option(rpcId, { nil: undefined }),
        method: fc.option(fc.string({ unit: 'binary', maxLength: 30 }), { nil: undefined }),
        idLast: fc.boolean(),
      })
      .map(({ members, id, method, idLast }) => {
        const entries: Array<[string, unknown]> = members.filter(([k]) => k !== 'id' && k !== 'method');
        if (method !== undefined) entries.unshift(['method', method]);
        if (id !== undefined) idLast ? entries.push(['id', id]) : entries.unshift(['id', id]);
        return Object.fromEntries(entries);
      });
    fc.assert(
      fc.property(envelope, fc.integer(), fc.boolean(), cutPoints(4000), (value, seed, whitespace, cuts) => {
        const text = layoutJson(value, seed, { whitespace, oddEscapes: true });
        const bytes = utf8(text);
        const parsed = JSON.parse(text) as Record<string, unknown>;
        const snapshot = scan(chunksAt(bytes, cuts));
        expect(snapshot.id).toEqual(parsed.id);
        expect(snapshot.method).toEqual(parsed.method);
        expect(snapshot.hasResult).toBe('result' in parsed);
        expect(snapshot.hasError).toBe('error' in parsed);
      }),
      { numRuns: 400 },
    );
  });
});

describe('nestingDepth', () => {
  it('counts objects and arrays, not brackets inside strings, and stops past the limit', async () => {
    const { nestingDepth } = await import('../../src/core/json-scan.js');
    const enc = (s: string) => new TextEncoder().encode(s);
    expect(nestingDepth(enc('1'), 10)).toBe(0);
    expect(nestingDepth(enc('{"a":[1,{"b":"[[[[\\"]]"}]}'), 10)).toBe(3);
    expect(nestingDepth(enc(`${'['.repeat(100_000)}${']'.repeat(100_000)}`), 1000)).toBe(1001);
  });
});
