import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  emptyChannels,
  estimateTokens,
  measureMessage,
  measureScannedMessage,
} from '../../src/core/measure.js';
import { scanMessage } from '../../src/core/message-scan.js';
import type { MessageMeasurement, MessageSubject, ResultChannels } from '../../src/core/types.js';
import {
  decode,
  items,
  jsonValue,
  layoutJson,
  toolResultSpans,
  toolsCallRequest,
  trickyText,
  utf8,
} from '../support/json-samples.js';

const TOOLS_CALL: MessageSubject = { method: 'tools/call', tool: 'export' };
const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** Measures a message serialized the way the MCP TypeScript SDK does (result first, id last). */
function measureResult(result: unknown, answers: MessageSubject | undefined): MessageMeasurement {
  const text = JSON.stringify({ result, jsonrpc: '2.0', id: 5 });
  return measureMessage(utf8(text), JSON.parse(text), answers);
}

function channels(partial: Partial<ResultChannels>): ResultChannels {
  return { ...emptyChannels(), ...partial };
}

describe('estimateTokens', () => {
  it('is a rough ceil(bytes / 4)', () => {
    expect([0, 1, 4, 5, 8, 1_000_001].map(estimateTokens)).toEqual([0, 1, 1, 2, 2, 250_001]);
  });
});

describe('measureMessage', () => {
  it('measures a text-only tool result', () => {
    const block = { type: 'text', text: 'hello "world"\n' };
    const text = JSON.stringify({ result: { content: [block] }, jsonrpc: '2.0', id: 5 });
    const measured = measureMessage(utf8(text), JSON.parse(text), TOOLS_CALL);
    expect(measured).toEqual({
      envelopeBytes: text.length,
      kind: 'result',
      id: 5,
      method: undefined,
      tool: undefined,
      channels: channels({ content_text: bytesOf(block) }),
      duplicatedBytes: 0,
      estimatedTokens: Math.ceil(text.length / 4),
    });
  });

  it('measures a structured-only tool result', () => {
    const structuredContent = { rows: [{ id: 1, name: 'a' }], total: 1 };
    const measured = measureResult({ content: [], structuredContent }, TOOLS_CALL);
    expect(measured.channels).toEqual(channels({ structured: bytesOf(structuredContent) }));
    expect(measured.duplicatedBytes).toBe(0);
  });

  it('counts a compact copy of structuredContent in a text block as duplicated', () => {
    const structuredContent = { rows: items(20), note: trickyText };
    const copy = JSON.stringify(structuredContent);
    const block = { type: 'text', text: copy };
    const measured = measureResult({ content: [block], structuredContent }, TOOLS_CALL);
    expect(measured.channels).toEqual(
      channels({ content_text: bytesOf(block), structured: bytesOf(structuredContent) }),
    );
    expect(measured.duplicatedBytes).toBe(Buffer.byteLength(copy));
  });

  it('counts a pretty-printed copy (2 spaces, 4 spaces, tabs) as duplicated', () => {
    const structuredContent = {
      rows: items(10),
      empty: {},
      none: [],
      nested: { a: [[]], b: [{}] },
      note: trickyText,
    };
    for (const indent of [2, 4, '\t']) {
      const copy = JSON.stringify(structuredContent, null, indent);
      const measured = measureResult(
        { content: [{ type: 'text', text: copy }], structuredContent },
        TOOLS_CALL,
      );
      expect(measured.duplicatedBytes, `indent ${JSON.stringify(indent)}`).toBe(Buffer.byteLength(copy));
    }
  });

  it('sums every duplicating text block and ignores the others', () => {
    const structuredContent = { a: 1, b: ['x', 'y'] };
    const compact = JSON.stringify(structuredContent);
    const pretty = JSON.stringify(structuredContent, null, 2);
    const measured = measureResult(
      {
        content: [
          { type: 'text', text: compact },
          { type: 'text', text: 'Here are the results.' },
          { type: 'text', text: pretty },
          { type: 'image', data: compact, mimeType: 'image/png' },
        ],
        structuredContent,
      },
      TOOLS_CALL,
    );
    expect(measured.duplicatedBytes).toBe(compact.length + pretty.length);
  });

  it('does not count near-copies', () => {
    const structuredContent = { a: 1, b: ['x', 'y'] };
    const compact = JSON.stringify(structuredContent);
    const nearCopies = [
      compact.slice(0, -1),
      `${compact} `,
      compact.replace('"x"', '"X"'),
      JSON.stringify(structuredContent, null, 2).replace('\n  "b"', '\n   "b"'),
      JSON.stringify({ b: ['x', 'y'], a: 1 }),
      JSON.stringify(structuredContent).replace(':', ': '),
      '',
    ];
    const measured = measureResult(
      {
        content: nearCopies.map((text) => ({ type: 'text', text })),
        structuredContent,
      },
      TOOLS_CALL,
    );
    expect(measured.duplicatedBytes).toBe(0);
  });

  it('recognizes a copy when the raw structuredContent is not in JSON.stringify form', () => {
    // As a Python server may send it: floats like 1.0, whitespace, \u escapes.
    const text =
      '{"jsonrpc": "2.0", "id": 1, "result": {"content": [' +
      '{"type": "text", "text": "{\\n  \\"score\\": 1.0,\\n  \\"name\\": \\"caf\\\\u00e9\\"\\n}"},' +
      '{"type": "text", "text": "{\\"score\\":1,\\"name\\":\\"café\\"}"}' +
      '], "structuredContent": {"score": 1.0, "name": "caf\\u00e9"}}}';
    const value = JSON.parse(text) as { result: { content: Array<{ text: string }> } };
    const measured = measureMessage(utf8(text), value, TOOLS_CALL);
    const [pythonCopy, stringifyCopy] = value.result.content;
    // The first block copies the raw layout as sent; the second equals JSON.stringify(structuredContent).
    expect(measured.duplicatedBytes).toBe(
      Buffer.byteLength(pythonCopy!.text) + Buffer.byteLength(stringifyCopy!.text),
    );
  });

  it('measures image, audio, resource_link and embedded resource blocks in their own channels', () => {
    const blocks = {
      image: { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
      audio: { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
      link: { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt', mimeType: 'text/plain' },
      textResource: {
        type: 'resource',
        resource: { uri: 'file:///b.md', mimeType: 'text/markdown', text: '# B' },
      },
      blobResource: { type: 'resource', resource: { uri: 'file:///c.bin', blob: 'AAEC' } },
      text: { type: 'text', text: 'caption' },
    };
    const measured = measureResult({ content: Object.values(blocks) }, TOOLS_CALL);
    expect(measured.channels).toEqual(
      channels({
        content_text: bytesOf(blocks.text),
        content_image: bytesOf(blocks.image),
        content_audio: bytesOf(blocks.audio),
        content_resource_link: bytesOf(blocks.link),
        content_resource: bytesOf(blocks.textResource) + bytesOf(blocks.blobResource),
      }),
    );
  });

  it('ignores unknown block types and blocks that are not objects, without failing', () => {
    const text = { type: 'text', text: 'kept' };
    const measured = measureResult(
      {
        content: [{ type: 'video', data: 'x' }, 'text', null, [text], { text: 'no type' }, text],
      },
      TOOLS_CALL,
    );
    expect(measured.channels).toEqual(channels({ content_text: bytesOf(text) }));
  });

  it('counts UTF-8 bytes as sent, never UTF-16 units', () => {
    const heavy = '中文字符😀🚀e\u0301\u0327 한국어 '.repeat(50);
    const structuredContent = { text: heavy };
    const block = { type: 'text', text: JSON.stringify(structuredContent) };
    const message = { result: { content: [block], structuredContent }, jsonrpc: '2.0', id: 'é' };
    const text = JSON.stringify(message);
    const measured = measureMessage(utf8(text), JSON.parse(text), TOOLS_CALL);
    expect(measured.envelopeBytes).toBe(Buffer.byteLength(text));
    expect(measured.envelopeBytes).toBeGreaterThan(text.length);
    expect(measured.channels).toEqual(
      channels({ content_text: bytesOf(block), structured: bytesOf(structuredContent) }),
    );
    expect(measured.duplicatedBytes).toBe(Buffer.byteLength(block.text));
    expect(measured.estimatedTokens).toBe(Math.ceil(Buffer.byteLength(text) / 4));
  });

  it('measures a 50,000-item structured result and its copy', () => {
    const structuredContent = { items: items(50_000) };
    const copy = JSON.stringify(structuredContent);
    const measured = measureResult(
      { content: [{ type: 'text', text: copy }], structuredContent },
      TOOLS_CALL,
    );
    expect(measured.channels?.structured).toBe(Buffer.byteLength(copy));
    expect(measured.duplicatedBytes).toBe(Buffer.byteLength(copy));
    const pretty = JSON.stringify(structuredContent, null, 2);
    const prettyMeasured = measureResult(
      { content: [{ type: 'text', text: pretty }], structuredContent },
      TOOLS_CALL,
    );
    expect(prettyMeasured.duplicatedBytes).toBe(Buffer.byteLength(pretty));
  });

  describe('long copies (found without scanning the text)', () => {
    const structuredContent = { rows: items(200), note: trickyText };
    const compact = JSON.stringify(structuredContent);
    const pretty = JSON.stringify(structuredContent, null, 2);

    it('counts compact, 2-space, 4-space and tab copies, and measures every block exactly', () => {
      for (const copy of [
        compact,
        pretty,
        JSON.stringify(structuredContent, null, 4),
        JSON.stringify(structuredContent, null, '\t'),
      ]) {
        const blocks = [
          { type: 'text', text: 'Summary: 200 rows.' },
          { type: 'text', text: copy },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        ];
        const measured = measureResult({ content: blocks, structuredContent, isError: false }, TOOLS_CALL);
        expect(measured.duplicatedBytes).toBe(Buffer.byteLength(copy));
        expect(measured.channels).toEqual(
          channels({
            content_text: bytesOf(blocks[0]) + bytesOf(blocks[1]),
            content_image: bytesOf(blocks[2]),
            structured: bytesOf(structuredContent),
          }),
        );
      }
    });

    it('is not misled by a later member named structuredContent', () => {
      // The last "structuredContent" key of the message is nested: the copy must be judged against the real one.
      const nested = { ...structuredContent, inner: { structuredContent: { rows: items(300) } } };
      const copyOfNested = JSON.stringify(nested.inner.structuredContent);
      const measured = measureResult(
        {
          content: [
            { type: 'text', text: JSON.stringify(nested) },
            { type: 'text', text: copyOfNested },
          ],
          structuredContent: nested,
          _meta: { structuredContent: nested.inner.structuredContent },
        },
        TOOLS_CALL,
      );
      expect(measured.duplicatedBytes).toBe(Buffer.byteLength(JSON.stringify(nested)));
      expect(measured.channels?.structured).toBe(bytesOf(nested));
    });

    it('uses the content array JSON.parse keeps when "content" is repeated', () => {
      const copyBlock = JSON.stringify({ type: 'text', text: compact });
      const otherBlock = JSON.stringify({ type: 'text', text: 'x'.repeat(compact.length) });
      const sc = JSON.stringify(structuredContent);
      for (const [first, second, duplicated] of [
        [copyBlock, otherBlock, 0],
        [otherBlock, copyBlock, Buffer.byteLength(compact)],
      ] as const) {
        const text = `{"result":{"content":[${first}],"content":[${second}],"structuredContent":${sc}},"jsonrpc":"2.0","id":1}`;
        const measured = measureMessage(utf8(text), JSON.parse(text), TOOLS_CALL);
        expect(measured.duplicatedBytes).toBe(duplicated);
        expect(measured.channels?.content_text).toBe(Buffer.byteLength(second));
      }
    });

    it('still recognizes a copy whose literal escapes differently (e.g. \\u00e9, as Python writes)', () => {
      const sc = { rows: items(100) };
      const copy = JSON.stringify(sc);
      const asciiLiteral = JSON.stringify(copy).replace(
        /[\u0080-\uffff]/g,
        (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
      );
      const text = `{"result":{"content":[{"type":"text","text":${asciiLiteral}}],"structuredContent":${copy}},"jsonrpc":"2.0","id":1}`;
      const measured = measureMessage(utf8(text), JSON.parse(text), TOOLS_CALL);
      expect(measured.duplicatedBytes).toBe(Buffer.byteLength(copy));
      expect(measured.channels?.content_text).toBe(
        Buffer.byteLength(`{"type":"text","text":${asciiLiteral}}`),
      );
    });

    it('does not count a long text that differs from the copy in its last character', () => {
      const almost = `${pretty.slice(0, -1)}]`;
      const measured = measureResult(
        { content: [{ type: 'text', text: almost }], structuredContent },
        TOOLS_CALL,
      );
      expect(measured.duplicatedBytes).toBe(0);
      expect(measured.channels?.content_text).toBe(bytesOf({ type: 'text', text: almost }));
    });
  });

  it('reports no channels for a tools/list result, however large', () => {
    const schema = (depth: number): unknown =>
      depth === 0
        ? { type: 'string', description: 'leaf "quoted" é' }
        : {
            type: 'object',
            properties: { child: schema(depth - 1), list: { type: 'array', items: { type: 'number' } } },
          };
    const tools = Array.from({ length: 2000 }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool number ${i}`,
      inputSchema: schema(8),
      outputSchema: schema(6),
    }));
    const text = JSON.stringify({ result: { tools, nextCursor: 'abc' }, jsonrpc: '2.0', id: 2 });
    const value: unknown = JSON.parse(text);
    for (const answers of [{ method: 'tools/list', tool: undefined }, undefined]) {
      const measured = measureMessage(utf8(text), value, answers);
      expect(measured).toMatchObject({ kind: 'result', id: 2, channels: undefined, duplicatedBytes: 0 });
      expect(measured.envelopeBytes).toBe(Buffer.byteLength(text));
    }
  });

  it('decides what a tool result is from the request it answers, else from a content array', () => {
    const result = { content: [{ type: 'text', text: 'x' }] };
    expect(measureResult(result, undefined).channels).toBeDefined();
    expect(measureResult(result, { method: undefined, tool: undefined }).channels).toBeDefined();
    expect(measureResult(result, { method: 'prompts/get', tool: undefined }).channels).toBeUndefined();
    expect(measureResult({ structuredContent: { a: 1 } }, undefined).channels).toBeUndefined();
    expect(measureResult({ structuredContent: { a: 1 } }, TOOLS_CALL).channels).toEqual(
      channels({ structured: 7 }),
    );
  });

  it('measures requests, notifications and errors without channels', () => {
    const request = toolsCallRequest(9, 'export', { content: [{ type: 'text', text: 'x' }] });
    expect(measureMessage(utf8(request), JSON.parse(request))).toEqual({
      envelopeBytes: request.length,
      kind: 'request',
      id: 9,
      method: 'tools/call',
      tool: 'export',
      channels: undefined,
      duplicatedBytes: 0,
      estimatedTokens: Math.ceil(request.length / 4),
    });
    const error = '{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"boom","data":{"content":[]}}}';
    expect(measureMessage(utf8(error), JSON.parse(error), TOOLS_CALL)).toMatchObject({
      kind: 'error',
      channels: undefined,
    });
    const note = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"é"}}';
    expect(measureMessage(utf8(note), JSON.parse(note))).toMatchObject({
      kind: 'notification',
      method: 'notifications/message',
      envelopeBytes: Buffer.byteLength(note),
    });
  });

  it('never changes the bytes or the value', () => {
    const structuredContent = { rows: items(5) };
    const text = JSON.stringify({
      result: {
        content: [{ type: 'text', text: JSON.stringify(structuredContent, null, 2) }],
        structuredContent,
      },
      jsonrpc: '2.0',
      id: 1,
    });
    const bytes = utf8(text);
    const deepFreeze = (v: unknown): unknown => {
      if (typeof v === 'object' && v !== null) {
        for (const child of Object.values(v)) deepFreeze(child);
        Object.freeze(v);
      }
      return v;
    };
    const value = deepFreeze(JSON.parse(text));
    const measured = measureMessage(bytes, value, TOOLS_CALL);
    expect(measured.duplicatedBytes).toBeGreaterThan(0);
    expect(Buffer.from(bytes).toString('utf8')).toBe(text);
    expect(value).toEqual(JSON.parse(text));
  });

  it('copes with a structuredContent nested 100,000 levels deep', () => {
    const depth = 100_000;
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const text = `{"result":{"content":[{"type":"text","text":"not a copy"},{"type":"text","text":"${deep}"}],"structuredContent":${deep}},"jsonrpc":"2.0","id":1}`;
    const measured = measureMessage(utf8(text), JSON.parse(text), TOOLS_CALL);
    expect(measured.channels?.structured).toBe(2 * depth);
    expect(measured.duplicatedBytes).toBe(2 * depth);
    // A raw form JSON.stringify would not write (1.0) sends the check to JSON.stringify, which cannot go this deep.
    const pythonish = `{"result":{"content":[{"type":"text","text":"[1.5,${deep}]"}],"structuredContent":[1.0,${deep}]},"id":1}`;
    expect(measureMessage(utf8(pythonish), JSON.parse(pythonish), TOOLS_CALL).duplicatedBytes).toBe(0);
  });

  it('property: channel bytes are the UTF-8 length of each block as serialized, and never exceed the envelope', () => {
    const block = fc.oneof(
      fc.record({ type: fc.constant('text'), text: fc.string({ unit: 'binary' }) }),
      fc.record({ type: fc.constantFrom('image', 'audio'), data: fc.base64String(), mimeType: fc.string() }),
      fc.record({
        type: fc.constant('resource_link'),
        uri: fc.webUrl(),
        name: fc.string({ unit: 'binary' }),
      }),
      fc.record({
        type: fc.constant('resource'),
        resource: fc.record({ uri: fc.webUrl(), text: fc.string({ unit: 'binary' }) }),
      }),
      fc.record({ type: fc.string(), other: jsonValue(2) }),
    );
    const result = fc.record(
      {
        content: fc.array(block, { maxLength: 6 }),
        structuredContent: fc.dictionary(fc.string(), jsonValue(3)),
      },
      { requiredKeys: ['content'] },
    );
    const channelOf: Record<string, keyof ResultChannels> = {
      text: 'content_text',
      image: 'content_image',
      audio: 'content_audio',
      resource_link: 'content_resource_link',
      resource: 'content_resource',
    };
    fc.assert(
      fc.property(result, fc.integer(), (r, id) => {
        const text = JSON.stringify({ result: r, jsonrpc: '2.0', id });
        const measured = measureMessage(utf8(text), JSON.parse(text), TOOLS_CALL);
        const expected = channels({});
        for (const b of r.content) {
          const channel = Object.hasOwn(channelOf, b.type) ? channelOf[b.type] : undefined;
          if (channel) expected[channel] += bytesOf(b);
        }
        if (r.structuredContent !== undefined) expected.structured = bytesOf(r.structuredContent);
        expect(measured.channels).toEqual(expected);
        const sum = Object.values(measured.channels!).reduce((a, b) => a + b, 0);
        expect(sum).toBeLessThanOrEqual(measured.envelopeBytes);
        expect(measured.envelopeBytes).toBe(Buffer.byteLength(text));
      }),
      { numRuns: 300 },
    );
  });

  it('property: long copies in any layout are counted, and every span matches a plain scan', () => {
    const copyKind = fc.constantFrom('compact', 'pretty', 'tabs', 'raw', 'other');
    const padding = fc.string({ unit: 'binary', minLength: 0, maxLength: 40 }).map((s) => s.repeat(60));
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ unit: 'binary' }), jsonValue(3)),
        padding,
        copyKind,
        fc.integer(),
        fc.record({ whitespace: fc.boolean(), oddEscapes: fc.boolean() }),
        (partial, pad, kind, seed, layout) => {
          const sc = { ...partial, pad };
          const envelope = {
            jsonrpc: '2.0',
            id: 1,
            result: { content: [{}], structuredContent: sc, isError: false },
          };
          const laidOut = layoutJson(envelope, seed, layout);
          const before = toolResultSpans(utf8(laidOut));
          const [blockStart, blockEnd] = before.content[0]!;
          const raw = decode(utf8(laidOut).subarray(before.structured![0], before.structured![1]));
          const copy = {
            compact: JSON.stringify(sc),
            pretty: JSON.stringify(sc, null, 2),
            tabs: JSON.stringify(sc, null, '\t'),
            raw,
            other: `${JSON.stringify(sc, null, 2)} `,
          }[kind];
          // The text block goes in place of the empty one, in the layout as sent (bytes, as spans are bytes).
          const laidOutBytes = utf8(laidOut);
          const bytes = new Uint8Array([
            ...laidOutBytes.subarray(0, blockStart),
            ...utf8(JSON.stringify({ type: 'text', text: copy })),
            ...laidOutBytes.subarray(blockEnd),
          ]);
          const measured = measureMessage(bytes, JSON.parse(decode(bytes)), TOOLS_CALL);
          expect(measured.duplicatedBytes).toBe(kind === 'other' ? 0 : Buffer.byteLength(copy));
          const plain = toolResultSpans(bytes);
          expect(measured.channels?.content_text).toBe(plain.content[0]![1] - plain.content[0]![0]);
          expect(measured.channels?.structured).toBe(plain.structured![1] - plain.structured![0]);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('counts a copy of a structuredContent sent with more whitespace than content (fast-check seed 242414664)', () => {
    // `{}` sent as `{` + 11 whitespace bytes + `}`: a size ratio once ruled the 2-byte copy out.
    const text =
      '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{\r\n\n\n\n\r\r\r \r }}}';
    const scanned = scanMessage(utf8(text));
    if (scanned === undefined) throw new Error('the message should scan');
    expect(measureMessage(utf8(text), JSON.parse(text), TOOLS_CALL).duplicatedBytes).toBe(2);
    expect(measureScannedMessage(scanned, TOOLS_CALL).duplicatedBytes).toBe(2);
  });

  it('property: a text block is counted as duplicated exactly when it is a compact or pretty copy', () => {
    const copyKind = fc.constantFrom('compact', 'pretty', 'other');
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ unit: 'binary' }), jsonValue(3)),
        copyKind,
        fc.integer(),
        (sc, kind, seed) => {
          const copy =
            kind === 'compact'
              ? JSON.stringify(sc)
              : kind === 'pretty'
                ? JSON.stringify(sc, null, 2)
                : `${JSON.stringify(sc)}\n`;
          // The message itself in any layout and escaping: the copy is judged against what was sent.
          const text = layoutJson(
            {
              jsonrpc: '2.0',
              id: 1,
              result: { content: [{ type: 'text', text: copy }], structuredContent: sc },
            },
            seed,
            {
              whitespace: true,
            },
          );
          const measured = measureMessage(utf8(text), JSON.parse(text), TOOLS_CALL);
          expect(measured.duplicatedBytes).toBe(kind === 'other' ? 0 : Buffer.byteLength(copy));
        },
      ),
      { numRuns: 300 },
    );
  });
});
