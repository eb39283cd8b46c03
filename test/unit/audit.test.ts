// The pure parts of `mcp-edge audit`: where listed items lie in the bytes sent, the calls file, the
// findings over walks, which of a host's budgets decides, and the catalog judged by catalog budgets only.
import { describe, expect, it } from 'vitest';
import { AuditUsageError, parseAuditArgs } from '../../src/audit/args.js';
import { CallsFileError, parseCallsFile } from '../../src/audit/calls.js';
import { catalogWeight, shareOf } from '../../src/audit/catalog.js';
import { cursorFindings, pagingFindings, toolFindings } from '../../src/audit/findings.js';
import { listedItemSpans } from '../../src/audit/item-spans.js';
import { LISTINGS, type ListingWalk } from '../../src/audit/listing.js';
import { type AuditReport, overBudget } from '../../src/audit/report.js';
import { formatAuditTable } from '../../src/audit/table.js';
import { HostTable } from '../../src/hosts/host-table.js';
import { BUILTIN_HOST_PROFILES } from '../../src/hosts/profiles.js';

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

describe('catalogWeight: the catalog against catalog budgets only', () => {
  const walkOf = (descriptors: readonly Record<string, unknown>[]): ListingWalk => ({
    listing: LISTINGS[0] as ListingWalk['listing'],
    pages: [{ bytes: 0, items: descriptors.length, nextCursor: undefined }],
    items: descriptors.map((value) => ({ value, bytes: bytesOf(JSON.stringify(value)), page: 0 })),
    stop: 'end',
  });
  // 1,400 bytes of few tokens (13.7% of Codex's 10 KiB per tool output; about 1% of Claude Code's 25,000
  // tokens of tool definitions), and a descriptor of thousands of tokens.
  const wide = { name: 'wide', description: 'a'.repeat(1_400) };
  const wordy = { name: 'wordy', description: Array.from({ length: 3_000 }, (_, i) => `w${i}`).join(' ') };
  const profiles = BUILTIN_HOST_PROFILES;

  it('judges the catalog only by the hosts that have a catalog budget, and reports one total', () => {
    const catalog = catalogWeight(walkOf(Array.from({ length: 10 }, () => wide)), profiles, 131_072);
    expect(catalog.totalBytes).toBeGreaterThan(10_240);
    expect(Object.keys(catalog.hosts)).toEqual(['claude-code']);
    expect(catalog.hosts['claude-code']).toMatchObject({
      unit: 'tokens',
      size: catalog.totalTokens,
      over: false,
    });
    // The totals are the sums of the tools' own sizes.
    expect(catalog.totalTokens).toBe(catalog.tools.reduce((sum, t) => sum + t.tokens, 0));
    expect(catalog.totalChars).toBe(catalog.tools.reduce((sum, t) => sum + t.chars, 0));
    expect(catalog.totalLines).toBe(10);
    const report = { catalog: { ...catalog, tools: [] }, calls: [] };
    expect(overBudget(report, ['codex', 'claude-code'])).toEqual([]);
  });

  it('descriptor-heavy uses the catalog budget: a wide descriptor of few tokens is no finding', () => {
    const catalog = catalogWeight(walkOf([wide, wordy]), profiles, 131_072);
    expect(catalog.tools.find((t) => t.name === 'wide')?.strictest).toMatchObject({
      host: 'claude-code',
      unit: 'tokens',
    });
    const findings = toolFindings(catalog, 0.1).filter((f) => f.code === 'descriptor-heavy');
    expect(findings.map((f) => f.subject)).toEqual(['wordy']);
    const tokens = catalog.tools.find((t) => t.name === 'wordy')?.tokens ?? 0;
    expect(findings[0]?.message).toContain(
      `wordy's descriptor is ${tokens} tokens, ${((tokens / 25_000) * 100).toFixed(1)}% of claude-code's catalog budget of 25000`,
    );
  });

  it('a configured catalog budget is judged like the built-in one; a host without one is not', () => {
    const table = new HostTable({
      'tiny-host': { budgets: { characters: 100 }, catalogBudgets: { bytes: 1_000 } },
      'results-only': { budgets: { bytes: 10 } },
    });
    const chosen = ['tiny-host', 'results-only']
      .map((name) => table.profile(name))
      .filter((p) => p !== undefined);
    const catalog = catalogWeight(walkOf([wide]), chosen, 131_072);
    expect(Object.keys(catalog.hosts)).toEqual(['tiny-host']);
    expect(catalog.hosts['tiny-host']).toMatchObject({
      unit: 'bytes',
      budget: 1_000,
      size: catalog.totalBytes,
      over: true,
    });
    expect(
      overBudget({ catalog: { ...catalog, tools: [] }, calls: [] }, ['tiny-host', 'results-only']),
    ).toEqual([`tiny-host: the catalog is ${catalog.totalBytes} bytes, over its catalog budget of 1000`]);
  });
});

describe('formatAuditTable', () => {
  it('says what each number counts: the descriptors as sent, the answers, the resource links', () => {
    const report: AuditReport = {
      server: { name: 'srv', version: '1', target: 'http://127.0.0.1/mcp' },
      protocolVersion: '2025-11-25',
      bounds: { maxPages: 1, timeoutMs: 1000, maxMessageBytes: 1024 },
      hosts: [],
      catalog: {
        totalBytes: 7639,
        totalChars: 7639,
        totalTokens: 1706,
        totalLines: 13,
        tools: [],
        pages: [],
        hosts: {},
      },
      listings: [
        {
          method: 'tools/list',
          pages: [{ bytes: 7700, items: 13 }],
          items: 13,
          totalBytes: 7700,
          stop: 'end',
        },
      ],
      calls: [
        {
          line: 1,
          method: 'tools/call',
          tool: 'links',
          bytes: 900,
          channels: null,
          duplicatedBytes: 0,
          isError: false,
          resourceLinks: { count: 5, withSize: 0, withMimeType: 5, links: [] },
          hosts: {},
        },
      ],
      findings: [],
      failOver: { hosts: [], over: [] },
    };
    const table = formatAuditTable(report);
    expect(table).toContain(
      'their descriptors as sent: 7,639 bytes, 7,639 characters, 1,706 tokens (o200k_base)',
    );
    expect(table).toContain('Listings (bytes: the answers, envelopes included):');
    expect(table).toMatch(/resource links\n/);
    expect(table).toContain('5: 0 with size, 5 with mimeType');
  });
});
