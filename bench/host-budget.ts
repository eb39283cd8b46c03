// Non-asserting micro-benchmark: what host-budget measuring adds to judging one tools/call result.
// Run: npx tsx bench/host-budget.ts   (--json prints the rows as JSON; --adversarial only the second part)
// Compares judgeMessage with and without a host (Claude Code, tokens; Codex, bytes and lines) on a small
// result and on a 1 MiB one, in CPU microseconds per result. The edge spends about 110 us of CPU per small
// exchange (bench/results, edge-enforce), so 5% of an exchange is about 5.5 us.
// Second part (issue 23, item 4; section `hosts` of `npm run bench`): the CPU one result costs a client that
// claims to be Claude Code when the result is one long pre-token (what gpt-tokenizer's BPE is quadratic in),
// against an ordinary result of the same size, and at the response ceiling.
import { pathToFileURL } from 'node:url';
import { HostTable } from '../src/hosts/host-table.js';
import { type JudgeContext, judgeMessage } from '../src/inspect/message-verdict.js';
import type { InspectionObserver } from '../src/inspect/observer.js';
import { PendingRequests } from '../src/inspect/pending-requests.js';
import { createEdgeMetrics } from '../src/metrics/edge-metrics.js';
import { CEILING_CHECKS } from '../src/proxy/filters/ceilings.js';
import { hostBudgetCheck } from '../src/proxy/filters/host-budgets.js';

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

/** What judging a response for the default tenant needs, with the given host table (or none). */
function judgeContext(
  pending: PendingRequests,
  hosts: HostTable | undefined,
  observer: InspectionObserver = NOOP,
): JudgeContext {
  return {
    direction: 'response',
    tenant: 'default',
    policy: { defaults: {}, tenants: {} },
    mode: 'enforce',
    observer,
    answered: pending,
    answeredInSession: undefined,
    remember: undefined,
    checks: CEILING_CHECKS,
    answerChecks: [hostBudgetCheck],
    hosts: hosts === undefined ? undefined : { hosts, tenant: 'default' },
  };
}

function perResult(host: string | undefined, bytes: Uint8Array, value: unknown, rounds: number): number {
  const pending = new PendingRequests(LIMITS);
  const ctx = judgeContext(pending, host === undefined ? undefined : new HostTable());
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

export interface HostBudgetRow {
  result: string;
  host: string;
  usPerResult: number;
  addedUs: number;
}

function runAddedCost(): HostBudgetRow[] {
  const rows: HostBudgetRow[] = [];
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
  return rows;
}

/** One adversarial or ordinary result for Claude Code: CPU to judge it, and that over the ordinary result's. */
export interface AdversarialRow {
  result: string;
  chars: number;
  bytes: number;
  /** Median CPU ms to judge it as Claude Code's (a fresh text of the kind each round: no memo helps it). */
  cpuMs: number;
  /** cpuMs over the ordinary result of the same size's (the ordinary row above it). */
  vsOrdinary: number;
  /** What the edge reported: tokens, and whether a lower bound or an estimate. */
  observed: string;
}

/** A pseudo-random generator with a seed, so each round's text differs and every run is the same. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) & 0x7fffffff;
    return state / 0x80000000;
  };
}

/** Log lines: an ordinary tool result. */
function ordinaryText(chars: number, round: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < chars; i++) {
    const line = `record ${i + round * 100_000}: status ok, host web-${(i + round) % 97}, latency ${(i * 37 + round) % 1000} ms`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n').slice(0, chars);
}

/** CJK ideographs in a pseudo-random order: one pre-token, each piece new, 3 bytes and about 2 tokens a character. */
function cjkRun(chars: number, round: number): string {
  const next = seeded(round + 1);
  return Array.from({ length: chars }, () => String.fromCharCode(0x4e00 + Math.floor(next() * 20_000))).join(
    '',
  );
}

/** `a` with a `b` at pseudo-random places (1 in 100): one pre-token, each piece new, about 7 characters a token. */
function perturbedRun(chars: number, round: number): string {
  const next = seeded(round + 1000);
  return Array.from({ length: chars }, () => (next() < 0.01 ? 'b' : 'a')).join('');
}

function judgeCpuMs(text: string, hosts: HostTable): { cpuMs: number; observed: string } {
  const { bytes, value } = resultBytes(text);
  let observed = '-';
  const observer: InspectionObserver = {
    ...NOOP,
    hostBudget(o) {
      observed =
        o.over === undefined
          ? `within (share ${o.share.toFixed(2)})`
          : `${o.over.estimated === true ? 'about ' : ''}${o.over.observed.toLocaleString('en-US')} tokens${o.over.estimated === true ? ' (estimated)' : ''}`;
    },
  };
  const pending = new PendingRequests(LIMITS);
  const ctx = judgeContext(pending, hosts, observer);
  pending.remember(1, { method: 'tools/call', tool: 'echo', host: 'claude-code' });
  const start = cpuUs();
  judgeMessage(ctx, bytes, value);
  return { cpuMs: (cpuUs() - start) / 1000, observed };
}

/** The built-in profiles and hostBudgets defaults. */
const DEFAULT_HOSTS = new HostTable();
/** An operator's budget so large that counting never stops at it: only hostBudgets.maxTokenizedCharacters bounds it. */
const LARGE_BUDGET_HOSTS = new HostTable({ 'claude-code': { budgets: { tokens: 2_000_000 } } });

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export const ORDINARY_200K = 'ordinary (log lines), 200 KB';

/** Characters of a result just under the default 4 MiB response ceiling, once JSON has escaped its newlines. */
const AT_CEILING = 4_100_000;

export function runAdversarial(rounds = 5): AdversarialRow[] {
  // The tokenizer's tables load on the first count, and the code warms: not part of any row.
  for (let i = 0; i < 5; i++) judgeCpuMs(ordinaryText(200_000, 99 + i), DEFAULT_HOSTS);
  const large = ', budget 2M tokens';
  const cases: [string, number, (chars: number, round: number) => string, HostTable][] = [
    [ORDINARY_200K, 200_000, ordinaryText, DEFAULT_HOSTS],
    ['`a` x 200k, one pre-token', 200_000, (chars) => 'a'.repeat(chars), DEFAULT_HOSTS],
    ['random CJK x 100k, one pre-token', 100_000, cjkRun, DEFAULT_HOSTS],
    ['`a` with random `b`, 200k, one pre-token', 200_000, perturbedRun, DEFAULT_HOSTS],
    ['ordinary (log lines), at the 4 MiB response ceiling', AT_CEILING, ordinaryText, DEFAULT_HOSTS],
    ['`a` with random `b`, at the 4 MiB ceiling, one pre-token', AT_CEILING, perturbedRun, DEFAULT_HOSTS],
    [`ordinary (log lines), 4 MiB${large}`, AT_CEILING, ordinaryText, LARGE_BUDGET_HOSTS],
    [`random CJK x 1.3M, 4 MiB${large}`, 1_300_000, cjkRun, LARGE_BUDGET_HOSTS],
  ];
  const rows: AdversarialRow[] = [];
  let ordinaryMs = Number.NaN;
  for (const [index, [result, chars, make, hosts]] of cases.entries()) {
    const times: number[] = [];
    let observed = '-';
    let bytes = 0;
    for (let round = 0; round < rounds; round++) {
      // A new text every round and every case: no piece of one is in the tokenizer's memo from another.
      const text = make(chars, round + 100 * index);
      bytes = Buffer.byteLength(text);
      const judged = judgeCpuMs(text, hosts);
      times.push(judged.cpuMs);
      observed = judged.observed;
    }
    const cpuMs = median(times);
    if (result.startsWith('ordinary')) ordinaryMs = cpuMs;
    rows.push({ result, chars, bytes, cpuMs, vsOrdinary: cpuMs / ordinaryMs, observed });
  }
  return rows;
}

export function formatAdversarial(rows: AdversarialRow[]): string {
  return rows
    .map(
      (r) =>
        `${r.result.padEnd(58)} ${String(r.chars).padStart(8)} ch ${String(r.bytes).padStart(8)} B ${r.cpuMs.toFixed(1).padStart(8)} ms CPU ${r.vsOrdinary.toFixed(2).padStart(6)}x ordinary  ${r.observed}`,
    )
    .join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const json = process.argv.includes('--json');
  if (process.argv.includes('--adversarial')) {
    const rows = runAdversarial(Number(process.env.BENCH_ROUNDS ?? 5));
    process.stdout.write(json ? `${JSON.stringify(rows)}\n` : `${formatAdversarial(rows)}\n`);
  } else {
    const rows = runAddedCost();
    if (json) process.stdout.write(`${JSON.stringify(rows)}\n`);
    else
      for (const r of rows)
        console.log(
          `${r.result.padEnd(26)} ${r.host.padEnd(16)} ${r.usPerResult.toFixed(2).padStart(10)} us  +${r.addedUs.toFixed(2)} us`,
        );
  }
}
