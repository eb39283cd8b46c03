// The one bounded form of what a peer names (src/core/client-names.ts), and that the request reader hands on
// only that form: what caches, quota keys, labels, spans and log lines are given.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  boundedIdText,
  boundedName,
  boundedUri,
  DIGEST_MARK,
  idKey,
  MAX_NAME_CHARS,
  MAX_URI_CHARS,
} from '../../src/core/client-names.js';
import { isPrintable } from '../../src/core/printable.js';
import type { LimitPolicy } from '../../src/core/types.js';
import type { JudgeContext } from '../../src/inspect/message-verdict.js';
import { ExchangeSummary } from '../../src/inspect/observer.js';
import { judgeRequestBody } from '../../src/inspect/request-body.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';

const fitName = fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: MAX_NAME_CHARS });

describe('boundedName', () => {
  it('keeps a name within 128 printable characters as it is (the same string)', () => {
    fc.assert(fc.property(fitName, (name) => boundedName(name) === name));
    const name = 'export_report';
    expect(boundedName(name)).toBe(name);
    expect(boundedName('résumé/导出.v2')).toBe('résumé/导出.v2');
  });

  it('gives any value a printable form of at most its bound, its prefix then a digest when it did not fit', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 600 }),
        fc.constantFrom(64, 128, 512),
        (raw, max) => {
          const shown = boundedName(raw, max);
          expect(shown.length).toBeLessThanOrEqual(max);
          expect(isPrintable(shown)).toBe(true);
          if (shown !== raw) expect(shown).toMatch(/…#[0-9a-f]{32}$/);
        },
      ),
    );
  });

  it('tells unfit values apart, and none passes for a fit one', () => {
    const long = 'a'.repeat(1_000_000);
    expect(boundedName(long)).not.toBe(boundedName(`${long}b`));
    expect(boundedName(long)).toMatch(/^a{64}…#[0-9a-f]{32}$/);
    // An unprintable short name is escaped and marked: it cannot equal the printable text of its escape.
    const escaped = boundedName('a\u001bb');
    expect(escaped.startsWith('a\\u001bb')).toBe(true);
    expect(escaped).toContain(DIGEST_MARK);
    expect(escaped).not.toBe(boundedName('a\\u001bb'));
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ maxLength: 300 }), (a, b) => {
        fc.pre(a !== b);
        expect(boundedName(a)).not.toBe(boundedName(b));
      }),
    );
  });

  it('never cuts a surrogate pair in half', () => {
    const shown = boundedName(`${'a'.repeat(63)}😀${'b'.repeat(200)}`);
    expect(isPrintable(shown)).toBe(true);
    expect(shown.startsWith(`${'a'.repeat(63)}…#`)).toBe(true);
  });

  it('URIs get a larger bound; ids and tokens are their number or bounded text', () => {
    const uri = `file:///${'d/'.repeat(100)}report.csv`;
    expect(boundedUri(uri)).toBe(uri);
    expect(boundedUri(`file:///${'x'.repeat(10_000)}`).length).toBeLessThanOrEqual(MAX_URI_CHARS);
    expect(boundedIdText(42)).toBe('42');
    expect(boundedIdText('x'.repeat(100_000)).length).toBeLessThanOrEqual(MAX_NAME_CHARS);
  });

  it('idKey keys a long id by its bounded form: two long ids stay apart, a string never meets a number', () => {
    const a = 'i'.repeat(100_000);
    expect(idKey(a).length).toBeLessThanOrEqual(MAX_NAME_CHARS + 2);
    expect(idKey(a)).not.toBe(idKey(`${a}j`));
    expect(idKey('1')).not.toBe(idKey(1));
    expect(idKey('req-1')).toBe('s:req-1');
  });
});

describe('the request reader hands on bounded names only', () => {
  const ctx = (policy: LimitPolicy): JudgeContext => ({
    direction: 'request',
    tenant: 'default',
    policy,
    mode: 'enforce',
    observer: new ExchangeSummary(),
    answered: undefined,
    answeredInSession: undefined,
    remember: undefined,
    checks: CEILING_CHECKS,
  });
  const body = (messages: unknown) => Buffer.from(JSON.stringify(messages));

  it('a tool, method, prompt and resource URI of 1 MB each are read as their bounded forms', () => {
    const huge = (c: string) => c.repeat(1_000_000);
    const verdict = judgeRequestBody(
      ctx({ defaults: {}, tenants: {} }),
      body([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: huge('t'), arguments: {} } },
        { jsonrpc: '2.0', id: 2, method: 'prompts/get', params: { name: huge('p') } },
        { jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: huge('u') } },
        { jsonrpc: '2.0', id: 4, method: huge('m') },
      ]),
    );
    expect(verdict.ok).toBe(true);
    if (!verdict.ok) return;
    const [call, prompt, read, odd] = verdict.messages;
    expect(call?.tool).toBe(boundedName(huge('t')));
    expect(prompt?.prompt).toBe(boundedName(huge('p')));
    expect(read?.resourceUri).toBe(boundedUri(huge('u')));
    expect(odd?.method).toBe(boundedName(huge('m')));
  });

  it("a refusal's words name the bounded tool, not the client's megabyte", () => {
    const name = `\u001b[2J${'t'.repeat(1_000_000)}`;
    const verdict = judgeRequestBody(
      ctx({ defaults: { request: { maxMessageBytes: 1000 } }, tenants: {} }),
      body({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } }),
    );
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    const text = JSON.stringify(verdict.refusal.body);
    expect(text.length).toBeLessThan(2000);
    expect(text).toContain(boundedName(name));
  });
});
