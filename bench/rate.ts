// `npm run bench:rate`: the equal-rate instrument (bench/equal-rate.ts) over every message size, against the
// bare @fastify/http-proxy, the node:http + undici floor, nginx when installed and a baseline build
// (BENCH_BASELINE_CLI), and the traced and quota paths against the untraced edge; each over independent starts.
//
// Settings (environment): BENCH_RATE_STARTS (3), BENCH_RATE_ROUNDS (3), BENCH_RATE_WORKLOADS (all, e.g.
// json-1k,json-1m), BENCH_RATE_FEATURES (1: also the traced and quota paths; 0 skips them), BENCH_BASELINE_CLI,
// BENCH_CPU_PROF (a directory: profile the Node proxies), BENCH_EDGE_NODE_FLAGS (node flags of every mcp-edge,
// e.g. "--trace-gc": the rounds then show its collections per exchange).
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import {
  cpuRatio,
  figure,
  formatRatio,
  RATE_WORKLOADS,
  type RatePath,
  type RateRun,
  rateWorkload,
  runEqualRate,
  shortfalls,
} from './equal-rate.js';
import { machine, nginxBinary, REPO } from './harness.js';

function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value >= 0 && process.env[name] !== undefined ? value : fallback;
}

const SETTINGS = {
  starts: envNumber('BENCH_RATE_STARTS', 3),
  rounds: envNumber('BENCH_RATE_ROUNDS', 3),
  workloads: process.env.BENCH_RATE_WORKLOADS?.split(','),
  features: envNumber('BENCH_RATE_FEATURES', 1) > 0,
  baselineCli: process.env.BENCH_BASELINE_CLI,
  cpuProfDir: process.env.BENCH_CPU_PROF,
  edgeNodeFlags: process.env.BENCH_EDGE_NODE_FLAGS?.split(' ').filter((f) => f !== ''),
};

/** The paths every HTTP workload compares: the references, then the builds of mcp-edge. */
function referencePaths(): RatePath[] {
  return [
    { label: 'bare', id: 'bare' },
    { label: 'floor', id: 'node-undici' },
    ...(nginxBinary() !== undefined ? [{ label: 'nginx', id: 'nginx' } as const] : []),
    { label: 'edge', id: 'edge-enforce' },
    ...(SETTINGS.baselineCli !== undefined ? [{ label: 'baseline', id: 'edge-baseline' } as const] : []),
  ];
}

/** The paths a stdio workload compares: this build, and the baseline's when given. */
function stdioPaths(): RatePath[] {
  return [
    { label: 'edge', id: 'edge-stdio' },
    ...(SETTINGS.baselineCli !== undefined
      ? [{ label: 'baseline', id: 'edge-stdio', build: SETTINGS.baselineCli } as const]
      : []),
  ];
}

const FEATURES: { title: string; paths: RatePath[] }[] = [
  {
    title: 'traced (OTLP, every exchange sampled; and sampled none) against untraced',
    paths: [
      { label: 'edge', id: 'edge-enforce' },
      { label: 'traced', id: 'edge-traced' },
      { label: 'unsampled', id: 'edge-traced-unsampled' },
    ],
  },
  {
    title: 'a quota rule (memory store; Redis on loopback) against none',
    paths: [
      { label: 'edge', id: 'edge-enforce' },
      { label: 'quota-memory', id: 'edge-quota-memory' },
      { label: 'quota-redis', id: 'edge-quota-redis' },
    ],
  },
];

function row(run: RateRun, label: string, against: string): string {
  return `| ${run.workload} (${run.rate}/s) | ${label} / ${against} | ${formatRatio(cpuRatio(run, label, against))} |`;
}

function pathFigures(run: RateRun): string[] {
  return run.paths.map((p) => {
    const cpu = figure(run, p.label, (x) => x.cpuUs);
    const reads = figure(run, p.label, (x) => x.reads);
    const writes = figure(run, p.label, (x) => x.writes);
    return `| ${run.workload} (${run.rate}/s) | ${p.label} | ${cpu.median.toFixed(0)} (${cpu.min.toFixed(0)}-${cpu.max.toFixed(0)}) | ${reads.median.toFixed(1)} (${reads.min.toFixed(1)}-${reads.max.toFixed(1)}) | ${writes.median.toFixed(1)} (${writes.min.toFixed(1)}-${writes.max.toFixed(1)}) |`;
  });
}

function ratioRows(run: RateRun): string[] {
  const labels = new Set(run.paths.map((p) => p.label));
  const rows: string[] = [];
  const add = (label: string, against: string) => {
    if (labels.has(label) && labels.has(against)) rows.push(row(run, label, against));
  };
  add('edge', 'bare');
  add('edge', 'floor');
  add('edge', 'baseline');
  add('baseline', 'bare');
  add('floor', 'bare');
  add('nginx', 'bare');
  add('traced', 'edge');
  add('unsampled', 'edge');
  add('quota-memory', 'edge');
  add('quota-redis', 'edge');
  return rows;
}

function report(runs: RateRun[]): string {
  const lines = [
    `equal rate: ${SETTINGS.starts} independent starts x ${SETTINGS.rounds} rounds; ratios of CPU per exchange taken round by round: median over starts (range over starts, starts)`,
    '',
    '| workload | CPU per exchange | ratio |',
    '|---|---|--:|',
    ...runs.flatMap(ratioRows),
    '',
    '| workload | path | CPU us per exchange | reads per exchange | writes per exchange |',
    '|---|---|--:|--:|--:|',
    ...runs.flatMap(pathFigures),
  ];
  const notes = runs.flatMap((run) => shortfalls(run, rateWorkload(run.workload).seconds));
  if (notes.length > 0)
    lines.push('', 'short or failed rounds (the rate was not met):', ...notes.map((n) => `- ${n}`));
  return lines.join('\n');
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const harness = {
    cpuProfDir: SETTINGS.cpuProfDir,
    baselineCli: SETTINGS.baselineCli,
    edgeNodeFlags: SETTINGS.edgeNodeFlags,
  };
  const settings = { starts: SETTINGS.starts, rounds: SETTINGS.rounds, harness };
  const wanted = RATE_WORKLOADS.filter(
    (w) => SETTINGS.workloads === undefined || SETTINGS.workloads.includes(w.id),
  );
  const runs: RateRun[] = [];
  for (const w of wanted)
    runs.push(await runEqualRate(w, w.http ? referencePaths() : stdioPaths(), settings));
  if (SETTINGS.features && (SETTINGS.workloads === undefined || SETTINGS.workloads.includes('json-1k'))) {
    for (const feature of FEATURES) {
      process.stderr.write(`equal rate: ${feature.title}\n`);
      runs.push(await runEqualRate(rateWorkload('json-1k'), feature.paths, settings));
    }
  }
  const text = report(runs);
  process.stdout.write(`${text}\n`);
  const dir = join(REPO, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `rate-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  writeFileSync(
    file,
    `${JSON.stringify({ startedAt: startedAt.toISOString(), machine: { ...machine(), loadAverageAtEnd: load }, settings: SETTINGS, runs, table: text }, null, 2)}\n`,
  );
  process.stdout.write(`results: ${file}\n`);
}

void main();
