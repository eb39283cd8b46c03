import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyMessage, parseAnswerBody } from '../../src/core/jsonrpc.js';
import { measureMessage, measureScannedMessage } from '../../src/core/measure.js';
import { scanMessage } from '../../src/core/message-scan.js';
import type { LimitMode, LimitPolicy, MessageSubject } from '../../src/core/types.js';
import { clientIdentityOf } from '../../src/hosts/host-table.js';
import { JsonResponseInspector } from '../../src/inspect/json-response.js';
import { type JudgeContext, judgeMessage } from '../../src/inspect/message-verdict.js';
import { PendingRequests } from '../../src/inspect/pending-requests.js';
import { SseResponseInspector } from '../../src/inspect/sse-response.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';
import {
  chunksAt,
  cutPoints,
  damagedJson,
  decode,
  jsonValue,
  layoutJson,
  rpcId,
  trickyString,
  utf8,
} from '../support/json-samples.js';
import { recordingObserver } from '../support/recording-observer.js';

const ANSWERS: (MessageSubject | undefined)[] = [
  undefined,
  { method: 'tools/call', tool: 'export' },
  { method: 'tools/list', tool: undefined },
  { method: 'resources/read', tool: undefined },
];

function parsedOrUndefined(bytes: Uint8Array): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(decode(bytes)) };
  } catch {
    return undefined;
  }
}

/**
 * The differential check: the scan accepts exactly what JSON.parse accepts, classifies as classifyMessage
 * classifies the parsed value, and measures as measureMessage measures it, for any request it may answer.
 */
function expectSameAsParse(bytes: Uint8Array, deep = false): boolean {
  const parsed = parsedOrUndefined(bytes);
  const scanned = scanMessage(bytes);
  expect(scanned === undefined, decode(bytes)).toBe(parsed === undefined);
  if (scanned === undefined || parsed === undefined) return false;
  expect(scanned.classified).toEqual(classifyMessage(parsed.value));
  for (const answers of ANSWERS) {
    expect(measureScannedMessage(scanned, answers)).toEqual(measureMessage(bytes, parsed.value, answers));
  }
  // A deep-equal of 100,000 levels would overflow the stack of the comparison itself.
  if (!deep) expect(scanned.value()).toEqual(parsed.value);
  // The client a request names, read from its clientInfo entry alone, is the one the parsed message names.
  const method = scanned.classified.method;
  expect(clientIdentityOf(scanned.namingValue(), method)).toEqual(clientIdentityOf(parsed.value, method));
  return true;
}

const block = fc.oneof(
  fc.record({ type: fc.constant('text'), text: fc.oneof(fc.string({ unit: 'binary' }), trickyString) }),
  fc.record({ type: fc.constantFrom('image', 'audio'), data: fc.base64String(), mimeType: fc.string() }),
  fc.record({ type: fc.constant('resource_link'), uri: fc.webUrl(), name: fc.string({ unit: 'binary' }) }),
  fc.record({
    type: fc.constant('resource'),
    resource: fc.record({ uri: fc.webUrl(), text: fc.string({ unit: 'binary' }) }),
  }),
  fc.record({ type: fc.oneof(fc.string(), jsonValue(1)), text: jsonValue(1), other: jsonValue(2) }),
  jsonValue(2),
);

const structured = fc.oneof(fc.dictionary(fc.string({ unit: 'binary' }), jsonValue(3)), jsonValue(2));

/** A tool result whose text blocks are often a copy of structuredContent, in some layout or nearly. */
const toolResult = fc
  .record({
    content: fc.array(block, { maxLength: 5 }),
    structuredContent: structured,
    copies: fc.array(fc.constantFrom('compact', 'pretty', 'tabs', 'four', 'near', 'none'), { maxLength: 3 }),
    isError: fc.oneof(fc.boolean(), fc.boolean(), jsonValue(1)),
    extra: jsonValue(2),
  })
  .map(({ content, structuredContent, copies, isError, extra }) => {
    const copyText = (kind: string): string | undefined => {
      const compact = JSON.stringify(structuredContent);
      if (kind === 'compact') return compact;
      if (kind === 'pretty') return JSON.stringify(structuredContent, null, 2);
      if (kind === 'tabs') return JSON.stringify(structuredContent, null, '\t');
      if (kind === 'four') return JSON.stringify(structuredContent, null, 4);
      if (kind === 'near') return `${compact.slice(0, -1)} `;
      return undefined;
    };
    const blocks = [...content];
    for (const kind of copies) {
      const text = copyText(kind);
      if (text !== undefined) blocks.push({ type: 'text', text });
    }
    return { content: blocks, structuredContent, isError, extra };
  });

/** What a client names itself with: usually well formed, sometimes not. */
const clientInfo = fc.oneof(
  fc.record({ name: fc.string({ unit: 'binary' }), version: fc.string() }, { requiredKeys: [] }),
  jsonValue(2),
);

const message = fc.oneof(
  fc.record({ result: toolResult, jsonrpc: fc.constant('2.0'), id: rpcId }),
  fc.record({ jsonrpc: fc.constant('2.0'), id: rpcId, result: fc.record({ tools: fc.array(jsonValue(2)) }) }),
  fc.record(
    {
      jsonrpc: fc.constantFrom('2.0', '1.0', 2),
      id: fc.oneof(rpcId, jsonValue(1)),
      method: fc.oneof(
        fc.constantFrom('tools/call', 'ping', 'notifications/progress', 'initialize'),
        jsonValue(1),
      ),
      params: fc.oneof(
        fc.record({ name: fc.oneof(fc.string(), jsonValue(1)), arguments: jsonValue(2) }),
        fc.record(
          {
            name: fc.string(),
            clientInfo: clientInfo,
            _meta: fc.record(
              { 'io.modelcontextprotocol/clientInfo': clientInfo, progressToken: rpcId, other: jsonValue(2) },
              { requiredKeys: [] },
            ),
          },
          { requiredKeys: [] },
        ),
        jsonValue(1),
      ),
      result: fc.oneof(toolResult, jsonValue(1)),
      error: fc.oneof(fc.record({ code: fc.integer(), message: fc.string() }), jsonValue(1)),
    },
    { requiredKeys: [] },
  ),
  jsonValue(3),
);

describe('scanMessage against JSON.parse + measureMessage', () => {
  it('property: any message in any layout and escaping reads and measures the same', () => {
    fc.assert(
      fc.property(message, fc.integer(), fc.boolean(), fc.boolean(), (m, seed, whitespace, oddEscapes) => {
        expectSameAsParse(utf8(layoutJson(m, seed, { whitespace, oddEscapes })));
      }),
      { numRuns: 3000 },
    );
  });

  it('property: a repeated member wins last, as in JSON.parse', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.constantFrom(
              'result',
              'id',
              'jsonrpc',
              'method',
              'error',
              'params',
              'x',
              'content',
              'type',
              'text',
            ),
            message,
          ),
          { minLength: 1, maxLength: 6 },
        ),
        fc.integer(),
        (members, seed) => {
          // Objects with repeated keys, at the top and inside result, blocks and params.
          const write = (pairs: [string, unknown][]) =>
            `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${layoutJson(v, seed)}`).join(',')}}`;
          const inner = write(members);
          const text = write([
            ['jsonrpc', '2.0'],
            ['id', 1],
          ]).slice(0, -1);
          expectSameAsParse(
            utf8(`${text},"result":{"content":[${inner},${inner}],"structuredContent":${inner}}}`),
          );
          expectSameAsParse(utf8(`${text},"method":"tools/call","params":${inner}}`));
          expectSameAsParse(utf8(inner));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('property: a damaged text is refused exactly when JSON.parse refuses it', () => {
    const edit = fc.record({
      at: fc.nat(),
      remove: fc.nat({ max: 3 }),
      insert: fc.constantFrom(
        '',
        '"',
        '\\',
        ',',
        ':',
        '{',
        '}',
        '[',
        ']',
        '0',
        '-',
        '.',
        'e',
        'x',
        ' ',
        '\u0001',
        '\n',
        '\\u',
        'é',
      ),
    });
    fc.assert(
      fc.property(message, fc.integer(), fc.array(edit, { minLength: 1, maxLength: 3 }), (m, seed, edits) => {
        let text = layoutJson(m, seed, { whitespace: true, oddEscapes: true });
        for (const { at, remove, insert } of edits) {
          const k = at % (text.length + 1);
          text = text.slice(0, k) + insert + text.slice(k + remove);
        }
        const bytes = utf8(text);
        // Cutting a surrogate pair leaves a lone surrogate, which UTF-8 cannot carry: such bytes are not the scan's to read.
        if (!isUtf8(bytes)) return;
        expectSameAsParse(bytes);
      }),
      { numRuns: 6000 },
    );
  });

  it('reads what names the client from the clientInfo entry alone: the arguments are never parsed', () => {
    const info = { name: 'claude-code', version: '2.1.0' };
    const request = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: {
        name: 'export',
        arguments: { rows: Array.from({ length: 50 }, (_, i) => ({ i })) },
        _meta: { progressToken: 1, 'io.modelcontextprotocol/clientInfo': info },
      },
    };
    const scanned = scanMessage(utf8(JSON.stringify(request)));
    expect(scanned?.namingValue()).toEqual({
      params: { _meta: { 'io.modelcontextprotocol/clientInfo': info } },
    });
    // Without the entry nothing is parsed; an initialize is read whole (its clientInfo is in params).
    const plain = { ...request, params: { name: 'export', arguments: {} } };
    expect(scanMessage(utf8(JSON.stringify(plain)))?.namingValue()).toBeUndefined();
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { clientInfo: info } };
    expect(scanMessage(utf8(JSON.stringify(initialize)))?.namingValue()).toEqual(initialize);
  });

  it('reads ids, methods and names in every form JSON allows for them as JSON.parse reads them', () => {
    const ids = ['1.0', '-0', '1E2', '1e+21', '1e400', '-1e-400', '0.1e-5', '9007199254740993', '"a"', '""'];
    const more = ['"\\u0031"', '"é😀"', '"\\\\"', 'true', 'false', 'null', '{}', '[]', '"x\\u0000y"'];
    for (const id of [...ids, ...more]) {
      for (const method of ['"tools/call"', '"tools\\/call"', '"\\u0074ools/call"', '7']) {
        const text = `{"jsonrpc":"2.0","id":${id},"method":${method},"params":{"name":${id}}}`;
        expect(expectSameAsParse(utf8(text)), text).toBe(true);
      }
    }
  });

  it('accepts and refuses the edge cases of the grammar as JSON.parse does', () => {
    const cases = [
      '',
      ' ',
      '0',
      '-0',
      '01',
      '1.',
      '.5',
      '-',
      '1e',
      '1e+',
      '1E-5',
      '-1.5e+300',
      '1e999',
      'tru',
      'true',
      'nul',
      'null ',
      'falsey',
      '"a\u0001b"',
      '"a\\xb"',
      '"\\u12G4"',
      '"\\u12"',
      '"\\ud800"',
      '"\\/"',
      '"unterminated',
      '"ends in backslash\\',
      '{"a":1,}',
      '[1,]',
      '[,1]',
      '{"a" 1}',
      '{"a":}',
      '{,}',
      '{"a":1 "b":2}',
      '\ufeff{}',
      '{}\ufeff',
      '[]',
      '{}',
      ' \t\r\n{ } \n',
      '{"jsonrpc":"2.0","id":1,"result":{}}x',
      '{"jsonrpc":"2.0","id":1,"result":{}} {}',
      '{"jsonrpc":"2\\u002e0","i\\u0064":1,"r\\u0065sult":{"cont\\u0065nt":[{"t\\u0079pe":"t\\u0065xt","text":"x"}]}}',
      '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}],"structuredContent":{"a":-0}}}',
      '{"jsonrpc":"2.0","id":1.0,"result":{"content":{}}}',
      '{"jsonrpc":"2.0","id":1e400,"result":{"content":[]}}',
      '{"jsonrpc":"2.0","id":[1],"error":{"code":1}}',
      '{"jsonrpc":"2.0","id":null,"error":{"code":1}}',
      '{"jsonrpc":"2.0","id":null,"error":[]}',
      '{"__proto__":{"id":1},"jsonrpc":"2.0","result":{}}',
      '{"jsonrpc":"2.0","method":"tools/call","id":"x","params":{"name":"a","name":7}}',
      `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
      `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`,
      `${'['.repeat(100_000)}${']'.repeat(99_999)}`,
      // A copy of a structuredContent sent with far more whitespace than content: not counted (the detector's bound).
      `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\\n  \\"a\\": 1\\n}"}],"structuredContent":{"a":1${' '.repeat(10_000)}}}}`,
      `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\\n  \\"a\\": 1\\n}"}],"structuredContent":{"a":1${' '.repeat(10)}}}}`,
    ];
    const accepted = cases.filter((text) => expectSameAsParse(utf8(text), text.length > 100_000));
    // Both sides of the grammar were exercised.
    expect(accepted.length).toBeGreaterThan(10);
    expect(accepted.length).toBeLessThan(cases.length - 10);
  });

  it('recognizes a long copy of structuredContent from the literal bytes, in any layout', () => {
    const sc = { rows: Array.from({ length: 300 }, (_, n) => ({ n, name: `row ${n} "é😀"\\` })) };
    for (const indent of [undefined, 2, 4, '\t']) {
      const copy = JSON.stringify(sc, null, indent);
      const text = JSON.stringify({
        result: { content: [{ type: 'text', text: copy }], structuredContent: sc },
        jsonrpc: '2.0',
        id: 3,
      });
      const scanned = scanMessage(utf8(text));
      expect(measureScannedMessage(scanned!, ANSWERS[1]).duplicatedBytes).toBe(Buffer.byteLength(copy));
      expectSameAsParse(utf8(text));
    }
  });
});

/** Everything an inspector tells its observer, in order. */
function recordingContext(mode: LimitMode, ceiling: number): { ctx: JudgeContext; log: unknown[] } {
  const log: unknown[] = [];
  const observer = recordingObserver(log);
  const pending = new PendingRequests({ maxEntries: 100, maxBytes: 1 << 20, ttlMs: 60_000 });
  pending.remember(1, { method: 'tools/call', tool: 'export' });
  pending.remember('a', { method: 'tools/list', tool: undefined });
  const policy: LimitPolicy = {
    defaults: {
      response: { maxMessageBytes: ceiling },
      tools: { export: { response: { maxMessageBytes: ceiling * 2 } } },
    },
    tenants: {},
  };
  const ctx: JudgeContext = {
    direction: 'response',
    tenant: 'default',
    policy,
    mode,
    observer,
    answered: pending,
    answeredInSession: undefined,
    remember: () => {},
    checks: CEILING_CHECKS,
  };
  return { ctx, log };
}

/** How a held JSON body is judged by decoding and parsing it whole, as a client reads it (lossily, issue 42). */
function judgedByParsing(ctx: JudgeContext, body: Uint8Array): string[] {
  const parsed = parseAnswerBody(body);
  if (!parsed.ok) {
    ctx.observer.unparsable('response', body.length, `JSON response: ${parsed.error}`);
    return ['forward'];
  }
  return parsed.messages.map((m) => judgeMessage(ctx, m.bytes, m.value, m).action);
}

/** How an SSE event's data was judged before: decoded (lossily) and parsed. A batch: false (it is split as before). */
function eventJudgedByParsing(ctx: JudgeContext, data: Uint8Array): boolean {
  // Empty data (a priming event's `data:`): clients dispatch no message for it, so there is nothing to judge.
  if (data.length === 0) return true;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    ctx.observer.unparsable('response', data.length, 'SSE data is not JSON');
    return true;
  }
  if (Array.isArray(value)) return false;
  judgeMessage(ctx, data, value);
  return true;
}

const damagedBody = damagedJson(message, 3);

describe('held messages judged from their bytes, against decoding and parsing them', () => {
  it('property: a JSON body, any chunking, valid or not: the same records, the same verdict, the bytes as sent', () => {
    fc.assert(
      fc.property(
        damagedBody,
        cutPoints(4096),
        fc.constantFrom<LimitMode>('enforce', 'observe'),
        fc.integer({ min: 20, max: 400 }),
        (body, cuts, mode, ceiling) => {
          const scanned = recordingContext(mode, ceiling);
          const inspector = new JsonResponseInspector(scanned.ctx, null, [1]);
          for (const chunk of chunksAt(body, cuts)) inspector.push(chunk);
          const outcome = inspector.finish();
          const parsed = recordingContext(mode, ceiling);
          const actions = judgedByParsing(parsed.ctx, body);
          expect(scanned.log).toEqual(parsed.log);
          const forwarded = actions.every((action) => action === 'forward');
          expect(outcome.action).toBe(forwarded ? 'forward' : 'replace');
          if (outcome.action === 'forward') {
            const bytes = Buffer.concat(outcome.toClient.map((piece) => Buffer.from(piece)));
            expect(bytes.equals(body)).toBe(true);
          }
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('property: an SSE event, valid or not (invalid UTF-8 in a string still parses, lossily): the same records', () => {
    fc.assert(
      fc.property(
        damagedBody,
        fc.constantFrom<LimitMode>('enforce', 'observe'),
        fc.integer({ min: 20, max: 400 }),
        (data, mode, ceiling) => {
          // SSE data cannot hold a line break: such bodies are written on one line.
          if (data.includes(0x0a) || data.includes(0x0d)) return;
          const scanned = recordingContext(mode, ceiling);
          const inspector = new SseResponseInspector(scanned.ctx, null);
          const event = Buffer.concat([Buffer.from('data: '), data, Buffer.from('\n\n')]);
          const out = [inspector.push(event), inspector.end()];
          const parsed = recordingContext(mode, ceiling);
          if (eventJudgedByParsing(parsed.ctx, data)) expect(scanned.log).toEqual(parsed.log);
          const sent = Buffer.concat(out.flatMap((o) => o.toClient.map((c) => Buffer.from(c))));
          // What a ceiling rejected, or an ambiguous key kept from the client, is the only change to the bytes.
          const changed = scanned.log.some(
            (entry) =>
              (entry as { action?: string }).action === 'rejected' || 'ambiguous' in (entry as object),
          );
          if (!changed) expect(sent.equals(event)).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('a tool result read from its bytes tells a failed tool as a parsed one does', () => {
  const answered = (text: string) => {
    const judged = recordingContext('enforce', 1 << 20);
    const inspector = new JsonResponseInspector(judged.ctx, null, [1]);
    inspector.push(Buffer.from(text));
    inspector.finish();
    const parsed = recordingContext('enforce', 1 << 20);
    judgedByParsing(parsed.ctx, Buffer.from(text));
    const toolRecord = (log: unknown[]) => log.find((entry) => 'tool' in (entry as object));
    expect(toolRecord(judged.log)).toEqual(toolRecord(parsed.log));
    return toolRecord(judged.log);
  };

  it('isError: true is a tool error; "true", 1 or false is not; the last of repeated keys decides', () => {
    const result = (members: string) => `{"jsonrpc":"2.0","id":1,"result":{"content":[]${members}}}`;
    expect(answered(result(',"isError":true'))).toEqual({ tool: 'export', error: 'is_error' });
    expect(answered(result(',"isError":"true"'))).toEqual({ tool: 'export', error: undefined });
    expect(answered(result(',"isError":1'))).toEqual({ tool: 'export', error: undefined });
    expect(answered(result(',"isError":true,"isError":false'))).toEqual({ tool: 'export', error: undefined });
    expect(answered(result(',"isError":false,"isError":true'))).toEqual({
      tool: 'export',
      error: 'is_error',
    });
    expect(answered('{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}')).toEqual({
      tool: 'export',
      error: 'jsonrpc_error',
    });
  });
});
