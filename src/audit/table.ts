// The audit as a readable table for a terminal. Most of what it shows was chosen by the server audited (its
// name, tool names, error messages, findings that quote them): every value goes through printable, as a
// grid cell or as a substitution of the `shown` tag, so the only control characters printed are the
// table's own line breaks.
import { printable } from '../core/printable.js';
import type { HostShare } from './catalog.js';
import type { AuditReport } from './report.js';

const number = new Intl.NumberFormat('en-US');
const n = (value: number): string => number.format(value);
const percent = (share: number): string => `${(share * 100).toFixed(share < 0.1 ? 2 : 1)}%`;

/** A template literal whose substitutions are shown in their printable form; its own text is the table's. */
function shown(text: TemplateStringsArray, ...values: readonly unknown[]): string {
  return text.reduce((line, part, i) => `${line}${printable(String(values[i - 1]))}${part}`);
}

function row(cells: readonly string[], widths: readonly number[], right: ReadonlySet<number>): string {
  return `  ${cells
    .map((cell, i) => (right.has(i) ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
    .join('  ')
    .trimEnd()}`;
}

function grid(header: readonly string[], cells: readonly string[][], right: ReadonlySet<number>): string[] {
  const rows = cells.map((r) => r.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [row(header, widths, right), ...rows.map((r) => row(r, widths, right))];
}

function sizeText(size: HostShare): string {
  const at = size.atLeast === true ? '>=' : size.estimated === true ? '~' : '';
  return `${at}${n(size.size)} ${size.unit} of ${n(size.budget)}`;
}

/**
 * The catalog against each catalog budget, and the hosts that have none: their budgets bound each tool
 * result (the calls), never the tool list.
 */
function catalogBudgetLines(report: AuditReport): string[] {
  const { catalog } = report;
  const lines = ["The catalog in every conversation, against each host's catalog budget:"];
  const judged = Object.entries(catalog.hosts);
  if (judged.length > 0) {
    lines.push(
      ...grid(
        ['host', 'size', 'share', ''],
        judged.map(([host, size]) => [host, sizeText(size), percent(size.share), size.over ? 'OVER' : '']),
        new Set([1, 2]),
      ),
    );
    for (const [host] of judged) {
      const past = report.hosts.find((h) => h.name === host)?.catalog?.past;
      if (past !== undefined) lines.push(shown`  ${host}: ${past}`);
    }
  }
  const without = report.hosts.filter((h) => h.catalog === undefined).map((h) => h.name);
  if (without.length > 0)
    lines.push(shown`  no catalog budget: ${without.join(', ')} (their budgets bound each tool result)`);
  return lines;
}

export function formatAuditTable(report: AuditReport): string {
  const lines: string[] = [];
  const { server, catalog } = report;
  lines.push(shown`mcp-edge audit of ${server.target}`);
  lines.push(
    shown`server ${server.name ?? '(no name)'} ${server.version ?? ''}, protocol ${report.protocolVersion ?? '(unknown)'}`,
  );
  lines.push('');
  lines.push(
    `Catalog: ${catalog.tools.length} tools on ${catalog.pages.length} page(s); their descriptors as sent: ${n(catalog.totalBytes)} bytes, ${n(catalog.totalChars)} characters, ${n(catalog.totalTokens)} tokens (o200k_base)`,
  );
  if (catalog.tools.length > 0) {
    lines.push(
      ...grid(
        ['tool', 'bytes', 'chars', 'tokens', 'page', 'of a catalog budget'],
        catalog.tools.map((t) => [
          t.name,
          n(t.bytes),
          n(t.chars),
          n(t.tokens),
          String(t.page + 1),
          t.strictest !== undefined ? `${t.strictest.host} ${percent(t.strictest.share)}` : '',
        ]),
        new Set([1, 2, 3, 4]),
      ),
    );
  }
  lines.push('');
  lines.push(...catalogBudgetLines(report));
  lines.push('');
  lines.push('Listings (bytes: the answers, envelopes included):');
  lines.push(
    ...grid(
      ['method', 'pages', 'items', 'bytes', 'ended'],
      report.listings.map((l) => [
        l.method,
        String(l.pages.length),
        String(l.items),
        n(l.totalBytes),
        l.stop === 'end' ? 'yes' : `no: ${l.stop}`,
      ]),
      new Set([1, 2, 3]),
    ),
  );
  if (report.calls.length > 0) {
    lines.push('');
    lines.push('Calls:');
    lines.push(
      ...grid(
        ['line', 'call', 'bytes', 'content', 'structured', 'duplicated', 'isError', 'resource links'],
        report.calls.map((c) => [
          String(c.line),
          c.tool ?? c.method,
          `${c.bytesAtLeast === true ? '>=' : ''}${n(c.bytes)}`,
          c.channels !== null ? n(c.channels.content) : '-',
          c.channels !== null ? n(c.channels.structuredContent) : '-',
          n(c.duplicatedBytes),
          c.error !== undefined ? `error ${c.error.code ?? ''}`.trim() : c.isError ? 'yes' : 'no',
          c.resourceLinks.count > 0
            ? `${c.resourceLinks.count}: ${c.resourceLinks.withSize} with size, ${c.resourceLinks.withMimeType} with mimeType`
            : '-',
        ]),
        new Set([0, 2, 3, 4, 5]),
      ),
    );
    lines.push('');
    lines.push('Calls per host:');
    const hostRows: string[][] = [];
    for (const c of report.calls) {
      for (const [host, size] of Object.entries(c.hosts)) {
        hostRows.push([
          String(c.line),
          c.tool ?? c.method,
          host,
          sizeText(size),
          percent(size.share),
          size.over ? 'OVER' : 'under',
        ]);
      }
    }
    lines.push(...grid(['line', 'call', 'host', 'size', 'share', ''], hostRows, new Set([0, 3, 4])));
    const pasts = new Map<string, string>();
    for (const c of report.calls) {
      for (const [host, size] of Object.entries(c.hosts)) if (size.over) pasts.set(host, size.past);
    }
    for (const [host, past] of pasts) lines.push(shown`  past its budget, ${host}: ${past}`);
    for (const c of report.calls) {
      if (c.error !== undefined)
        lines.push(shown`  line ${c.line} (${c.tool ?? c.method}): ${c.error.message}`);
      else if (c.isErrorText !== undefined)
        lines.push(shown`  line ${c.line} (${c.tool ?? c.method}), isError: ${c.isErrorText}`);
    }
  }
  lines.push('');
  if (report.findings.length === 0) lines.push('Findings: none');
  else {
    lines.push(`Findings (${report.findings.length}):`);
    for (const f of report.findings) {
      lines.push(shown`  ! ${f.code}: ${f.message}`);
      lines.push(shown`    fix: ${f.fix}`);
    }
  }
  if (report.failOver.hosts.length > 0) {
    lines.push('');
    lines.push(
      report.failOver.over.length === 0
        ? shown`Within the budget of ${report.failOver.hosts.join(', ')}.`
        : shown`Over budget (--fail-over): ${report.failOver.over.join('; ')}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
