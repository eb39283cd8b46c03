// The printable form of a text someone else chose, and audit's table drawn from a report whose every
// server-chosen value carries terminal control sequences.
import { describe, expect, it } from 'vitest';
import type { AuditReport } from '../../src/audit/report.js';
import { formatAuditTable } from '../../src/audit/table.js';
import { printable, printableJsonLines } from '../../src/core/printable.js';
import { controlsIn, HOSTILE, HOSTILE_SHOWN } from '../support/terminal-text.js';

const controls = [
  ...Array.from({ length: 0x20 }, (_, c) => c),
  0x7f,
  ...Array.from({ length: 0x20 }, (_, c) => 0x80 + c),
];
const bytesOf = (text: string) => Buffer.from(text, 'utf8');

describe('printable', () => {
  it('writes every C0 control (TAB, LF, CR included), DEL and every C1 control as its \\u escape', () => {
    for (const code of controls) {
      const spelled = `\\u${code.toString(16).padStart(4, '0')}`;
      expect(printable(`a${String.fromCharCode(code)}b`), spelled).toBe(`a${spelled}b`);
    }
    const all = String.fromCharCode(...controls);
    expect(controlsIn(bytesOf(all))).toHaveLength(controls.length - 1); // all but LF, which controlsIn allows
    expect(controlsIn(bytesOf(printable(all)))).toEqual([]);
  });

  it('shows the sequences a hostile server sends as visible text', () => {
    expect(printable(HOSTILE)).toBe(HOSTILE_SHOWN);
    expect(printable('ok\r\nAudit OK\tdone')).toBe('ok\\u000d\\u000aAudit OK\\u0009done');
  });

  it('leaves everything else as it is: printable ASCII, a backslash, letters past U+009F, emoji', () => {
    const text = ' ~\\u001b "quoted" é € \u00a0 \u00ff 中文 😀';
    expect(printable(text)).toBe(text);
    expect(printable('')).toBe('');
  });

  it('a JSON text keeps its layout and still parses to the same value, with DEL and C1 escaped', () => {
    const value = { name: `scripted${HOSTILE}`, list: [`\u0085\u009f`, 'plain'], nested: { '\u007f': 1 } };
    const raw = JSON.stringify(value, null, 2);
    // JSON.stringify leaves DEL and the C1 controls raw.
    expect(controlsIn(bytesOf(raw)).length).toBeGreaterThan(0);
    const shown = printableJsonLines(raw);
    expect(controlsIn(bytesOf(shown))).toEqual([]);
    expect(shown.split('\n')).toHaveLength(raw.split('\n').length);
    expect(JSON.parse(shown)).toEqual(value);
  });
});

const share = { size: 10, unit: 'tokens' as const, budget: 100, share: 0.1, over: false };

function hostileReport(): AuditReport {
  const tool = `evil${HOSTILE}`;
  return {
    server: { name: `srv${HOSTILE}`, version: `1${HOSTILE}`, target: `http://127.0.0.1/${HOSTILE}` },
    protocolVersion: `2025${HOSTILE}`,
    bounds: { maxPages: 1, timeoutMs: 1000, maxMessageBytes: 1024 },
    hosts: [],
    catalog: {
      totalBytes: 1,
      totalChars: 1,
      totalTokens: 1,
      totalLines: 1,
      tools: [
        {
          name: tool,
          bytes: 1,
          chars: 1,
          tokens: 1,
          lines: 1,
          page: 0,
          strictest: { host: 'claude-code', size: 10, unit: 'tokens', budget: 100, share: 0.1 },
        },
      ],
      pages: [{ bytes: 1, items: 1, descriptorBytes: 1 }],
      hosts: { 'claude-code': share },
    },
    listings: [
      { method: 'tools/list', pages: [{ bytes: 1, items: 1 }], items: 1, totalBytes: 1, stop: 'end' },
    ],
    calls: [
      {
        line: 1,
        method: 'tools/call',
        tool,
        bytes: 1,
        channels: null,
        duplicatedBytes: 0,
        isError: false,
        error: { code: -32602, message: `unknown${HOSTILE}` },
        resourceLinks: { count: 0, withSize: 0, withMimeType: 0, links: [] },
        hosts: { 'claude-code': { ...share, over: true, past: `cut${HOSTILE}` } },
      },
      {
        line: 2,
        method: 'tools/call',
        tool,
        bytes: 1,
        channels: null,
        duplicatedBytes: 0,
        isError: true,
        isErrorText: `denied${HOSTILE}`,
        resourceLinks: { count: 0, withSize: 0, withMimeType: 0, links: [] },
        hosts: {},
      },
    ],
    findings: [{ code: 'listing-error', subject: tool, message: `failed: ${HOSTILE}`, fix: `fix${HOSTILE}` }],
    failOver: { hosts: ['claude-code'], over: [`claude-code: ${tool} is over`] },
  };
}

describe('formatAuditTable', () => {
  it('prints every server-chosen value in printable form, and only its own line breaks', () => {
    const table = formatAuditTable(hostileReport());
    expect(controlsIn(bytesOf(table))).toEqual([]);
    const lines = table.split('\n');
    expect(lines).toContain(`mcp-edge audit of http://127.0.0.1/${HOSTILE_SHOWN}`);
    expect(lines).toContain(`server srv${HOSTILE_SHOWN} 1${HOSTILE_SHOWN}, protocol 2025${HOSTILE_SHOWN}`);
    expect(lines).toContain(`  line 1 (evil${HOSTILE_SHOWN}): unknown${HOSTILE_SHOWN}`);
    expect(lines).toContain(`  line 2 (evil${HOSTILE_SHOWN}), isError: denied${HOSTILE_SHOWN}`);
    expect(lines).toContain(`  past its budget, claude-code: cut${HOSTILE_SHOWN}`);
    expect(lines).toContain(`  ! listing-error: failed: ${HOSTILE_SHOWN}`);
    expect(lines).toContain(`    fix: fix${HOSTILE_SHOWN}`);
    expect(lines).toContain(`Over budget (--fail-over): claude-code: evil${HOSTILE_SHOWN} is over`);
    // A grid's column is as wide as the escaped text it holds.
    const header = lines.find((l) => l.startsWith('  tool '));
    expect(header?.indexOf('bytes')).toBe(`  evil${HOSTILE_SHOWN}  `.length);
  });
});
