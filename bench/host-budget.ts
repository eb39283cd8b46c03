// Non-asserting micro-benchmark: what host-budget measuring adds to judging one tools/call result.
// Run: npx tsx bench/host-budget.ts   (--json prints the rows as JSON)
// Compares judgeMessage with and without a host (Claude Code, tokens; Codex, bytes and lines) on a small
// result and on a 1 MiB one, in CPU microseconds per result. The edge spends about 110 us of CPU per small
// exchange (bench/results, edge-enforce), so 5% of an exchange is about 5.5 us.
import { HostTable } from '../src/hosts/host-table.js';
import { type JudgeContext, judgeMessage } from '../src/inspect/message-verdict.js';
import type { InspectionObserver } from '../src/inspect/observer.js';
import { PendingRequests } from '../src/inspect/pending-requests.js';
import { createEdgeMetrics } from '../src/metrics/edge-metrics.js';

const NOOP: InspectionObserver = { message() {}, limitExceeded() {}, unparsable() {}, hostBudget() {} };
const LIMITS = { maxEntries: 1_000_000, maxBytes: 1 << 30, ttlMs: 3_600_000 };

function log(n: number): string {
  return Array.from(
    { length: n },
    (_, i) => `record ${i}: status ok, host web-${i % 97}, latency ${(i * 37) % 1000} ms`,
  ).join('\n');
}

function resultBytes(text: string): { bytes: Uint8Array; value: unknown } {
  const value = { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text }] } };
  return { bytes: Buffer.from(JSON.stringify(value)), value };
}

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function perResult(host: string | undefined, bytes: Uint8Array, value: unknown, rounds: number): number {
  const pending = new PendingRequests(LIMITS);
  const ctx: JudgeContext = {
    direction: 'response',
    tenant: 'default',
    policy: { defaults: {}, tenants: {} },
    mode: 'enforce',
    observer: NOOP,
    answered: pending,
    answeredInSession: undefined,
    remember: undefined,
    hosts: host === undefined ? undefined : { hosts: new HostTable(), tenant: 'default' },
  };
  const subject = { method: 'tools/call', tool: 'search', host };
  for (let i = 0; i < Math.min(rounds, 50); i++) {
    pending.remember(1, subject);
    judgeMessage(ctx, bytes, value);
  }
  const start = cpuUs();
  for (let i = 0; i < rounds; i++) {
    pending.remember(1, subject);
    judgeMessage(ctx, bytes, value);
  }
  return (cpuUs() - start) / rounds;
}

const rows: { result: string; host: string; usPerResult: number; addedUs: number }[] = [];
for (const [name, text, rounds] of [
  ['small (200 B)', 'found 3 matching records: web-1, web-2, web-3', 200_000],
  ['1 MiB', log(19_750), 20],
] as const) {
  const { bytes, value } = resultBytes(text);
  const label = `${name}, ${bytes.length.toLocaleString('en-US')} B`;
  const base = perResult(undefined, bytes, value, rounds);
  rows.push({ result: label, host: 'none (no hosts)', usPerResult: base, addedUs: 0 });
  for (const host of ['claude-code', 'codex', 'claude-desktop']) {
    const us = perResult(host, bytes, value, rounds);
    rows.push({ result: label, host, usPerResult: us, addedUs: us - base });
  }
}
// What every exchange pays for the per-tool views, whatever its size: the whole-call latency histogram and
// the host-budget share histogram (prom-client children, cached per label set).
const metrics = createEdgeMetrics({ upstream: 'http://127.0.0.1:3000/mcp', collectDefault: false });
const toolObserver = metrics.toolObserverFor('default');
for (const [name, record] of [
  [
    'recorder: call duration',
    () => metrics.callFinished({ tenant: 'default', method: 'tools/call', tool: 'search', seconds: 0.001 }),
  ],
  [
    'recorder: host budget share',
    () =>
      toolObserver.hostBudget?.({
        host: 'claude-code',
        tenant: 'default',
        tool: 'search',
        share: 0.01,
        over: undefined,
      }),
  ],
] as const) {
  const rounds = 1_000_000;
  for (let i = 0; i < 10_000; i++) record();
  const start = cpuUs();
  for (let i = 0; i < rounds; i++) record();
  rows.push({
    result: name,
    host: '-',
    usPerResult: (cpuUs() - start) / rounds,
    addedUs: (cpuUs() - start) / rounds,
  });
}
if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(rows)}\n`);
else
  for (const r of rows)
    console.log(
      `${r.result.padEnd(26)} ${r.host.padEnd(16)} ${r.usPerResult.toFixed(2).padStart(10)} us  +${r.addedUs.toFixed(2)} us`,
    );
