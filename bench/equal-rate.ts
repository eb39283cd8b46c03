// The bench's instrument for CPU figures: every path driven at the same fixed rate in the same seconds, the
// CPU time and system calls per exchange read from each path's own process (/proc), and ratios taken round by
// round. A process can start in a mode that costs it more for its lifetime (rounds within a start agree,
// starts disagree), so every path is started afresh several times and the spread over starts is shown.
import { readFileSync } from 'node:fs';
import { Harness, type HarnessOptions, type PathRun } from './harness.js';
import { type LoadSpec, type PacedRun, paced } from './load.js';
import { median, type PathId } from './result-types.js';

/** One workload of the instrument: what is sent, at which rate, how long a round lasts. */
export interface RateWorkload {
  id: string;
  title: string;
  load: LoadSpec;
  /** Requests per second, the same on every path. */
  rate: number;
  seconds: number;
  /** Wants the HTTP upstream (bench/upstream.ts); a stdio path spawns its own server. */
  http: boolean;
}

export const RATE_WORKLOADS: readonly RateWorkload[] = [
  {
    id: 'json-1k',
    title: 'tools/call, 1 KiB result, JSON',
    load: { answer: 'json-1k', tool: 'small', connections: 10 },
    rate: 1000,
    seconds: 5,
    http: true,
  },
  {
    id: 'sse-1k',
    title: 'tools/call, 1 KiB result, SSE',
    load: { answer: 'sse-1k', tool: 'small', connections: 10 },
    rate: 1000,
    seconds: 5,
    http: true,
  },
  {
    id: 'json-1m',
    title: '1 MiB result, JSON',
    load: { answer: 'json-1m', tool: 'medium', connections: 4 },
    rate: 60,
    seconds: 6,
    http: true,
  },
  {
    id: 'sse-1m',
    title: '1 MiB result, SSE',
    load: { answer: 'sse-1m', tool: 'medium', connections: 4 },
    rate: 40,
    seconds: 6,
    http: true,
  },
  {
    id: 'json-8m',
    title: '8 MiB result, JSON',
    load: { answer: 'json-8m', tool: 'big', connections: 2 },
    rate: 8,
    seconds: 8,
    http: true,
  },
  {
    id: 'sse-8m',
    title: '8 MiB result, SSE',
    load: { answer: 'sse-8m', tool: 'big', connections: 2 },
    rate: 8,
    seconds: 8,
    http: true,
  },
  {
    id: 'stdio-1k',
    title: 'tools/call, about 1 KiB result, stdio upstream (server-everything, 8 sessions)',
    load: { answer: 'none', tool: 'echo', connections: 16, sessions: 8 },
    rate: 300,
    seconds: 5,
    http: false,
  },
];

/** A workload by id. */
export function rateWorkload(id: string): RateWorkload {
  const found = RATE_WORKLOADS.find((w) => w.id === id);
  if (found === undefined) throw new Error(`no equal-rate workload "${id}"`);
  return found;
}

/** A path of a comparison: a label of its own (two edges of one build are two paths), what it runs. */
export interface RatePath {
  label: string;
  id: PathId;
  /** An mcp-edge path: the dist/cli.js it runs (default: this build). */
  build?: string | undefined;
}

/** What one path did in one round, per exchange. */
export interface PathRound {
  requests: number;
  failed: number;
  cpuUs: number;
  reads: number;
  writes: number;
  /** The share of the CPU time spent in the kernel, and minor page faults per exchange. */
  sysShare: number;
  faults: number;
  /** With --trace-gc (BENCH_EDGE_NODE_FLAGS), an mcp-edge path's young and full collections per exchange. */
  scavenges?: number;
  fullGcs?: number;
}

/** The young (scavenge) and full (mark-compact) collections in a --trace-gc log's text. */
export function collectionsIn(text: string): { scavenges: number; fullGcs: number } {
  return {
    scavenges: text.split('Scavenge').length - 1,
    fullGcs: text.split('Mark-Compact').length - 1,
  };
}

/** The collections a --trace-gc log has recorded so far. */
function gcCounts(log: string | undefined): { scavenges: number; fullGcs: number } | undefined {
  if (log === undefined) return undefined;
  const text = readFileSync(log, 'utf8');
  if (!text.includes('Scavenge') && !text.includes('Mark-Compact')) return undefined;
  return collectionsIn(text);
}

export interface StartRun {
  /** Each round: the figures of every path, by label. */
  rounds: Record<string, PathRound>[];
}

export interface RateRun {
  workload: string;
  rate: number;
  paths: readonly RatePath[];
  starts: StartRun[];
}

export interface RateSettings {
  starts: number;
  rounds: number;
  harness: HarnessOptions;
}

function perExchange(run: PacedRun): PathRound {
  const n = Math.max(1, run.requests);
  return {
    requests: run.requests,
    failed: run.non2xx + run.errors,
    cpuUs: (run.cpuMs * 1000) / n,
    reads: run.readCalls / n,
    writes: run.writeCalls / n,
    sysShare: run.cpuMs > 0 ? run.sysMs / run.cpuMs : 0,
    faults: run.minorFaults / n,
  };
}

/** Every path at the workload's rate at once for one round. */
async function oneRound(
  h: Harness,
  w: RateWorkload,
  running: readonly [RatePath, PathRun][],
): Promise<Record<string, PathRound>> {
  const gcBefore = running.map(([, path]) => gcCounts(path.log));
  const runs = await Promise.all(running.map(([, path]) => paced(h, path, w.load, w.seconds, w.rate)));
  const round: Record<string, PathRound> = {};
  running.forEach(([path, run], i) => {
    const figures = perExchange(runs[i]!);
    const before = gcBefore[i];
    const after = gcCounts(run.log);
    if (before !== undefined && after !== undefined) {
      const n = Math.max(1, figures.requests);
      figures.scavenges = (after.scavenges - before.scavenges) / n;
      figures.fullGcs = (after.fullGcs - before.fullGcs) / n;
    }
    round[path.label] = figures;
  });
  return round;
}

function describe(label: string, p: PathRound): string {
  const gc = p.scavenges !== undefined ? `, ${p.scavenges.toFixed(2)} sc ${p.fullGcs?.toFixed(3)} mc` : '';
  const kernel = `${Math.round(p.sysShare * 100)}% sys, ${p.faults.toFixed(0)} pf`;
  return `${label} ${p.cpuUs.toFixed(0)} us, ${p.reads.toFixed(1)} r ${p.writes.toFixed(1)} w, ${kernel}${gc}`;
}

/** One start: fresh processes of every path (and the upstream), a discarded warm-up round, then the rounds. */
async function oneStart(
  w: RateWorkload,
  paths: readonly RatePath[],
  settings: RateSettings,
): Promise<StartRun> {
  const h = new Harness(settings.harness);
  try {
    if (w.http) await h.startUpstream();
    const running: [RatePath, PathRun][] = [];
    for (const path of paths) running.push([path, await h.startPath(path.id, 128, path.build)]);
    await oneRound(h, w, running);
    const rounds: Record<string, PathRound>[] = [];
    for (let r = 0; r < settings.rounds; r++) {
      const round = await oneRound(h, w, running);
      rounds.push(round);
      const line = paths.map((p) => describe(p.label, round[p.label]!)).join(' | ');
      process.stderr.write(`  ${w.id}@${w.rate}/s round ${r + 1}: ${line}\n`);
    }
    return { rounds };
  } finally {
    await h.stopAll();
  }
}

/** `paths` at the workload's rate: `settings.starts` independent starts of `settings.rounds` rounds. */
export async function runEqualRate(
  w: RateWorkload,
  paths: readonly RatePath[],
  settings: RateSettings,
): Promise<RateRun> {
  const starts: StartRun[] = [];
  for (let s = 0; s < settings.starts; s++) {
    process.stderr.write(`equal rate: ${w.id} at ${w.rate}/s, start ${s + 1} of ${settings.starts}\n`);
    starts.push(await oneStart(w, paths, settings));
  }
  return { workload: w.id, rate: w.rate, paths, starts };
}

/** A figure over starts: the median of each start's median over its rounds, and the starts' range. */
export interface OverStarts {
  median: number;
  min: number;
  max: number;
  perStart: number[];
}

function overStarts(perStart: number[]): OverStarts {
  const finite = perStart.filter(Number.isFinite);
  return {
    median: median(finite),
    min: finite.length > 0 ? Math.min(...finite) : Number.NaN,
    max: finite.length > 0 ? Math.max(...finite) : Number.NaN,
    perStart,
  };
}

/** `label`'s CPU per exchange over `against`'s, taken in each round, over starts. */
export function cpuRatio(run: RateRun, label: string, against: string): OverStarts {
  return overStarts(
    run.starts.map((start) =>
      median(
        start.rounds.map(
          (round) => (round[label]?.cpuUs ?? Number.NaN) / (round[against]?.cpuUs ?? Number.NaN),
        ),
      ),
    ),
  );
}

/** A per-exchange figure of one path over starts (CPU, reads, writes). */
export function figure(run: RateRun, label: string, pick: (p: PathRound) => number): OverStarts {
  return overStarts(
    run.starts.map((start) =>
      median(start.rounds.map((round) => (round[label] ? pick(round[label]) : Number.NaN))),
    ),
  );
}

/** Rounds in which a path completed fewer than 95% of the exchanges the rate asked for, or any failed. */
export function shortfalls(run: RateRun, seconds: number): string[] {
  const wanted = run.rate * seconds;
  const notes: string[] = [];
  run.starts.forEach((start, s) => {
    start.rounds.forEach((round, r) => {
      for (const [label, p] of Object.entries(round)) {
        if (p.requests < 0.95 * wanted || p.failed > 0)
          notes.push(
            `${run.workload} start ${s + 1} round ${r + 1}: ${label} completed ${p.requests} of ${wanted} (${p.failed} failed)`,
          );
      }
    });
  });
  return notes;
}

/** "1.23x (1.10-1.40, 3)": a ratio's median, its range over starts and how many starts. */
export function formatRatio(r: OverStarts): string {
  if (!Number.isFinite(r.median)) return '-';
  const n = r.perStart.filter(Number.isFinite).length;
  return n > 1
    ? `${r.median.toFixed(2)}x (${r.min.toFixed(2)}-${r.max.toFixed(2)}, ${n})`
    : `${r.median.toFixed(2)}x`;
}
