// The pure parts of `mcp-edge audit`: where listed items lie in the bytes sent, the calls file, the
// findings over walks, and which of a host's budgets decides.
import { describe, expect, it } from 'vitest';
import { AuditUsageError, parseAuditArgs } from '../../src/audit/args.js';
import { CallsFileError, parseCallsFile } from '../../src/audit/calls.js';
import { shareOf } from '../../src/audit/catalog.js';
import { cursorFindings, pagingFindings } from '../../src/audit/findings.js';
import { listedItemSpans } from '../../src/audit/item-spans.js';
import { LISTINGS, type ListingWalk } from '../../src/audit/listing.js';

const bytesOf = (text: string) => Buffer.from(text, 'utf8');
const spansText = (text: string, key: string) => {
  const bytes = bytesOf(text);
  return listedItemSpans(bytes, key)?.map(([start, end]) => bytes.subarray(start, end).toString('utf8'));
};

describe('listedItemSpans', () => {
  it('gives each item exactly as sent: whitespace inside it, escapes, multi-byte characters', () => {
    const text =
      '{"id":1, "result" : { "tools" : [ {"name":"caf\\u00e9" ,"x":"é\\"}"} ,\n{ "name": "b" } ] }, "jsonrpc":"2.0"}';
    expect(spansText(text, 'tools')).toEqual(['{"name":"caf\\u00e9" ,"x":"é\\"}"}', '{ "name": "b" }']);
  });

  it('reads the last `result` and the last `tools` member, as JSON.parse keeps them, and only at that path', () => {
    const text =
      '{"result":{"tools":[1]},"x":{"tools":[2,3]},"result":{"meta":{"tools":[4]},"tools":[5,6],"tools":[7]}}';
    expect(spansText(text, 'tools')).toEqual(['7']);
    expect(spansText('{"result":{"prompts":[]}}', 'tools')).toBeUndefined();
    expect(spansText('{"result":{"tools":[]}}', 'tools')).toEqual([]);
  });

  it('gives nothing for bytes that are not one JSON object', () => {
    expect(spansText('{"result":{"tools":[{"name":"a"}', 'tools')).toBeUndefined();
    expect(spansText('[{"result":{"tools":[]}}]', 'tools')).toBeUndefined();
  });
});

describe('parseCallsFile', () => {
  it('reads tool calls and other methods, skipping blank lines and comments', () => {
    const calls = parseCallsFile(
      '# a comment\n{"tool":"echo","arguments":{"message":"hi"}}\n\n{"method":"resources/read","params":{"uri":"x://y"}}\r\n{"tool":"noargs"}\n',
      'calls.jsonl',
    );
    expect(calls).toEqual([
      { line: 2, method: 'tools/call', tool: 'echo', params: { name: 'echo', arguments: { message: 'hi' } } },
      { line: 4, method: 'resources/read', tool: undefined, params: { uri: 'x://y' } },
      { line: 5, method: 'tools/call', tool: 'noargs', params: { name: 'noargs', arguments: {} } },
    ]);
  });

  it('names the line of what it cannot read', () => {
    expect(() => parseCallsFile('{"tool":"a"}\n{nope', 'f.jsonl')).toThrow(/^f\.jsonl:2: not JSON/);
    expect(() => parseCallsFile('[1]', 'f.jsonl')).toThrow(CallsFileError);
    expect(() => parseCallsFile('{"tool":"a","arguments":[1]}', 'f.jsonl')).toThrow(
      /f\.jsonl:1: "arguments" must be an object/,
    );
    expect(() => parseCallsFile('{"name":"a"}', 'f.jsonl')).toThrow(/expected \{"tool": NAME/);
  });
});

describe('parseAuditArgs', () => {
  it('takes a URL or a command after --, with defaults for the bounds', () => {
    const options = parseAuditArgs([
      'http://127.0.0.1:3000/mcp',
      '--header',
      'Authorization=Bearer a=b',
      '--hosts',
      'codex, claude-code',
    ]);
    expect(options.target).toEqual({ url: new URL('http://127.0.0.1:3000/mcp') });
    expect(options.headers).toEqual({ Authorization: 'Bearer a=b' });
    expect(options.hosts).toEqual(['codex', 'claude-code']);
    expect(options).toMatchObject({
      maxPages: 100,
      timeoutMs: 60_000,
      maxMessageBytes: 64 * 1024 * 1024,
      json: false,
    });
    expect(parseAuditArgs(['--json', '--', 'node', 'server.js', '--json']).target).toEqual({
      command: ['node', 'server.js', '--json'],
    });
  });

  it('refuses what it cannot use, with the reason', () => {
    expect(() => parseAuditArgs([])).toThrow(AuditUsageError);
    expect(() => parseAuditArgs(['ftp://x'])).toThrow(/only http and https/);
    expect(() => parseAuditArgs(['http://x', '--', 'node'])).toThrow(/not both/);
    expect(() => parseAuditArgs(['http://x', '--max-pages', '0'])).toThrow(/--max-pages/);
    expect(() => parseAuditArgs(['http://x', '--timeout', '10'])).toThrow(/--timeout/);
    expect(() => parseAuditArgs(['http://x', '--header', 'nothing'])).toThrow(/NAME=VALUE/);
  });
});

const tools = LISTINGS[0]!;
function walkOf(pages: string[][], stop: ListingWalk['stop'] = 'end'): ListingWalk {
  return {
    listing: tools,
    pages: pages.map((names, i) => ({
      bytes: 10,
      items: names.length,
      nextCursor: i < pages.length - 1 ? `c${i}` : undefined,
    })),
    items: pages.flatMap((names, page) =>
      names.map((name) => ({ value: { name }, bytes: new Uint8Array(1), page })),
    ),
    stop,
  };
}

describe('findings', () => {
  it('pages that repeat an item, and a second walk that skips or adds items', () => {
    expect(pagingFindings(walkOf([['a', 'b'], ['c']]), walkOf([['a', 'b'], ['c']]))).toEqual([]);
    const repeated = pagingFindings(
      walkOf([
        ['a', 'b'],
        ['b', 'c'],
      ]),
      undefined,
    );
    expect(repeated.map((f) => f.code)).toEqual(['pages-repeat-items']);
    expect(repeated[0]?.message).toContain('"b"');
    const unstable = pagingFindings(walkOf([['a', 'b'], ['c']]), walkOf([['a'], ['c', 'd']]));
    expect(unstable.map((f) => f.code)).toEqual(['pages-unstable']);
    expect(unstable[0]?.message).toBe('a second walk of tools/list skipped "b" and added "d"');
    // A walk that did not end is not compared.
    expect(pagingFindings(walkOf([['a']], 'page-cap'), walkOf([['b']]))).toEqual([]);
  });

  it('an invalid cursor: -32602 is right, a result or another code is a finding', () => {
    expect(cursorFindings('tools/list', { answered: 'invalid-params' })).toEqual([]);
    expect(cursorFindings('tools/list', { answered: 'result', items: 3 })[0]?.code).toBe(
      'invalid-cursor-accepted',
    );
    expect(
      cursorFindings('tools/list', { answered: 'other-error', code: -32603, message: 'boom' })[0]?.code,
    ).toBe('invalid-cursor-code');
  });
});

describe('shareOf', () => {
  const size = (unit: 'bytes' | 'lines', observed: number, limit: number) => ({
    unit,
    limit,
    observed,
    estimated: false,
    lowerBound: false,
  });

  it('the budget over decides; else the fullest one', () => {
    expect(shareOf([size('bytes', 100, 1000), size('lines', 200, 256)])).toMatchObject({
      unit: 'lines',
      size: 200,
      over: false,
    });
    expect(shareOf([size('bytes', 2000, 1000), size('lines', 2000, 256)])).toMatchObject({
      unit: 'lines',
      over: true,
    });
    expect(shareOf([size('bytes', 2000, 1000), size('lines', 10, 256)])).toMatchObject({
      unit: 'bytes',
      over: true,
      budgets: [
        { unit: 'bytes', size: 2000, budget: 1000, over: true },
        { unit: 'lines', size: 10, budget: 256, over: false },
      ],
    });
    expect(shareOf([])).toBeUndefined();
  });
});
