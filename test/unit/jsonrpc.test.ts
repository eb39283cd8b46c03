import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { classifyMessage, parseJsonRpcBody } from '../../src/core/jsonrpc.js';
import { decode, jsonValue, layoutJson, rpcId, toolsCallRequest, utf8 } from '../support/json-samples.js';

describe('classifyMessage', () => {
  it.each([
    [
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { kind: 'request', id: 1, method: 'ping', tool: undefined },
    ],
    [
      { jsonrpc: '2.0', id: 'a', method: 'tools/list', params: {} },
      { kind: 'request', id: 'a', method: 'tools/list', tool: undefined },
    ],
    [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { kind: 'notification', id: undefined, method: 'notifications/initialized', tool: undefined },
    ],
    [
      { jsonrpc: '2.0', id: 0, result: {} },
      { kind: 'result', id: 0, method: undefined, tool: undefined },
    ],
    [
      { jsonrpc: '2.0', id: 'x', result: null },
      { kind: 'result', id: 'x', method: undefined, tool: undefined },
    ],
    [
      { jsonrpc: '2.0', id: 3, error: { code: -32601, message: 'nope' } },
      { kind: 'error', id: 3, method: undefined, tool: undefined },
    ],
    // An error may answer a request whose id could not be read.
    [
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } },
      { kind: 'error', id: null, method: undefined, tool: undefined },
    ],
  ])('classifies %j', (message, expected) => {
    expect(classifyMessage(message)).toEqual(expected);
  });

  it('names the tool of a tools/call request', () => {
    expect(classifyMessage(JSON.parse(toolsCallRequest(7, 'export', { rows: 5 })))).toEqual({
      kind: 'request',
      id: 7,
      method: 'tools/call',
      tool: 'export',
    });
    expect(
      classifyMessage({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 42 } }).tool,
    ).toBeUndefined();
    expect(
      classifyMessage({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: ['export'] }).tool,
    ).toBeUndefined();
    expect(
      classifyMessage({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'p' } }).tool,
    ).toBeUndefined();
  });

  it.each([
    ['no jsonrpc', { id: 1, method: 'ping' }],
    ['jsonrpc 1.0', { jsonrpc: '1.0', id: 1, method: 'ping' }],
    ['jsonrpc as a number', { jsonrpc: 2, id: 1, result: {} }],
    ['a method that is not a string', { jsonrpc: '2.0', id: 1, method: 5 }],
    ['a request with a null id', { jsonrpc: '2.0', id: null, method: 'ping' }],
    ['a request with an object id', { jsonrpc: '2.0', id: {}, method: 'ping' }],
    ['method and result', { jsonrpc: '2.0', id: 1, method: 'ping', result: {} }],
    ['result and error', { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'm' } }],
    ['a result without id', { jsonrpc: '2.0', result: {} }],
    ['a result with a null id', { jsonrpc: '2.0', id: null, result: {} }],
    ['an error without id', { jsonrpc: '2.0', error: { code: 1, message: 'm' } }],
    ['an error that is not an object', { jsonrpc: '2.0', id: 1, error: 'boom' }],
    ['an id only', { jsonrpc: '2.0', id: 1 }],
  ])('classifies %s as invalid', (_name, message) => {
    expect(classifyMessage(message).kind).toBe('invalid');
  });

  it('still reports a readable id and method of an invalid message', () => {
    expect(classifyMessage({ id: 9, method: 'tools/call', params: { name: 't' } })).toEqual({
      kind: 'invalid',
      id: 9,
      method: 'tools/call',
      tool: 't',
    });
  });

  it.each([null, 1, 'x', [], [{ jsonrpc: '2.0', id: 1, method: 'ping' }], undefined])(
    'classifies %j as invalid',
    (value) => {
      expect(classifyMessage(value)).toEqual({
        kind: 'invalid',
        id: undefined,
        method: undefined,
        tool: undefined,
      });
    },
  );

  it('only reads own members', () => {
    const inherited = Object.create({ jsonrpc: '2.0', id: 1, method: 'ping' }) as object;
    expect(classifyMessage(inherited).kind).toBe('invalid');
  });
});

describe('parseJsonRpcBody', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('parses a single message and keeps its exact bytes', () => {
    const body = utf8(' \n{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"export"}}\r\n');
    const parsed = parseJsonRpcBody(body);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.batch).toBe(false);
    expect(parsed.messages).toHaveLength(1);
    const [message] = parsed.messages;
    expect(message).toMatchObject({ kind: 'request', id: 1, method: 'tools/call', tool: 'export' });
    expect(decode(message!.bytes)).toBe(
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"export"}}',
    );
    // A view of the body, not a copy.
    expect(message!.bytes.buffer).toBe(body.buffer);
    expect(message!.bytes.byteOffset).toBe(body.byteOffset + 2);
  });

  it('parses a batch into messages, each with its own bytes', () => {
    const elements = [
      '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":"é😀"}}',
      '{"jsonrpc":"2.0","id":"r","result":{"content":[]}}',
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}',
      '{"id":5}',
    ];
    const parsed = parseJsonRpcBody(utf8(`[ ${elements.join(' ,\n')} ]`));
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.batch).toBe(true);
    expect(parsed.messages.map((m) => m.kind)).toEqual([
      'request',
      'notification',
      'result',
      'error',
      'invalid',
    ]);
    expect(parsed.messages.map((m) => decode(m.bytes))).toEqual(elements);
    expect(parsed.messages.map((m) => m.value)).toEqual(elements.map((e) => JSON.parse(e)));
  });

  it('accepts an empty batch and leaves the decision to the caller', () => {
    expect(parseJsonRpcBody(utf8('[]'))).toEqual({ ok: true, batch: true, messages: [] });
  });

  it('rejects a body that starts with a UTF-8 byte order mark', () => {
    const body = new Uint8Array([0xef, 0xbb, 0xbf, ...utf8('{"jsonrpc":"2.0","id":1,"method":"ping"}')]);
    expect(parseJsonRpcBody(body)).toEqual({ ok: false, error: 'body starts with a UTF-8 byte order mark' });
  });

  it('rejects invalid UTF-8, in a single message or in a batch element', () => {
    const bad = (prefix: string, suffix: string) =>
      new Uint8Array([...utf8(prefix), 0xc3, 0x28, ...utf8(suffix)]);
    expect(parseJsonRpcBody(bad('{"jsonrpc":"2.0","id":1,"method":"', '"}'))).toEqual({
      ok: false,
      error: 'body is not valid UTF-8',
    });
    expect(parseJsonRpcBody(bad('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"x":"', '"}]'))).toEqual({
      ok: false,
      error: 'batch element 1 is not valid UTF-8',
    });
    // A lone continuation byte and an overlong encoding are rejected too.
    expect(parseJsonRpcBody(new Uint8Array([0x22, 0x80, 0x22])).ok).toBe(false);
    expect(parseJsonRpcBody(new Uint8Array([0x22, 0xc0, 0xaf, 0x22])).ok).toBe(false);
  });

  it.each([
    ['', 'body is empty'],
    ['  \r\n', 'body is empty'],
    ['not json', 'body is not valid JSON'],
    ['{"jsonrpc":"2.0",}', 'body is not valid JSON'],
    ['{"a":1} {"b":2}', 'body is not valid JSON'],
    ['[{"a":1}, {"b":}]', 'batch element 1 is not valid JSON'],
    ['[{"a":1},]', 'body is not valid JSON'],
    ['[{"a":1}', 'body is not valid JSON'],
    ['[1 2]', 'body is not valid JSON'],
  ])('rejects %j with a readable error', (text, error) => {
    const parsed = parseJsonRpcBody(utf8(text));
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toContain(error);
  });

  it('copes with 100,000 levels of nesting without a stack overflow of its own', () => {
    const depth = 100_000;
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const single = parseJsonRpcBody(utf8(`{"jsonrpc":"2.0","id":1,"result":${deep}}`));
    expect(single.ok).toBe(true);
    if (single.ok) expect(single.messages[0]).toMatchObject({ kind: 'result', id: 1 });
    const batch = parseJsonRpcBody(utf8(`[${deep},{"jsonrpc":"2.0","id":2,"result":{}}]`));
    expect(batch.ok).toBe(true);
    if (batch.ok) expect(batch.messages.map((m) => m.kind)).toEqual(['invalid', 'result']);
  });

  it('turns a RangeError from JSON.parse (too deep for the engine) into ok:false', () => {
    vi.spyOn(JSON, 'parse').mockImplementation(() => {
      throw new RangeError('Maximum call stack size exceeded');
    });
    expect(parseJsonRpcBody(utf8('{"a":[[[[1]]]]}'))).toEqual({
      ok: false,
      error: 'body is nested too deeply to parse',
    });
    expect(parseJsonRpcBody(utf8('[{"a":1}]'))).toEqual({
      ok: false,
      error: 'batch element 0 is nested too deeply to parse',
    });
  });

  it('property: any batch of JSON values round-trips, with element bytes that parse to the element', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(jsonValue(3), fc.record({ jsonrpc: fc.constant('2.0'), id: rpcId })), {
          maxLength: 6,
        }),
        fc.integer(),
        (elements, seed) => {
          const text = layoutJson(elements, seed, { whitespace: true, oddEscapes: true });
          const parsed = parseJsonRpcBody(utf8(text));
          expect(parsed.ok).toBe(true);
          if (!parsed.ok) return;
          expect(parsed.batch).toBe(true);
          expect(parsed.messages.map((m) => m.value)).toEqual(JSON.parse(text));
          for (const message of parsed.messages) {
            expect(JSON.parse(decode(message.bytes))).toEqual(message.value);
            expect(message.kind).toBe(classifyMessage(message.value).kind);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
