// `npm run bench:guard`: this build against an earlier one (BENCH_GUARD_REF, built into a temp folder) on the
// equal-rate instrument, at every message size, stdio, traced and quota paths, over independent starts; and
// this build against itself (A/A) in the same rounds, which shows the noise band of each workload. Exits 1 when
// a workload's median is worse than its band. A benchmark, not a test: run it before a release, and quote it
// in the closing note of every change to the exchange path (docs/benchmarks.md).
//
// Settings (environment): BENCH_GUARD_REF (default: the commit that recorded the newest bench/results run),
// BENCH_GUARD_STARTS (3), BENCH_GUARD_ROUNDS (3), BENCH_GUARD_WORKLOADS (all, e.g. json-1k,json-1m,traced),
// BENCH_GUARD_MIN_BAND (0.03: the least band a workload gets, whatever its A/A showed).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cpuRatio,
  formatRatio,
  type RatePath,
  type RateRun,
  rateWorkload,
  runEqualRate,
} from './equal-rate.js';
import { REPO } from './harness.js';
import type { PathId } from './result-types.js';

function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value >= 0 && process.env[name] !== undefined ? value : fallback;
}

const SETTINGS = {
  starts: envNumber('BENCH_GUARD_STARTS', 3),
  rounds: envNumber('BENCH_GUARD_ROUNDS', 3),
  minBand: envNumber('BENCH_GUARD_MIN_BAND', 0.03),
  workloads: process.env.BENCH_GUARD_WORKLOADS?.split(','),
};

/** What the guard compares: a workload of the instrument, and which kind of edge runs it. */
const GUARDED: { id: string; workload: string; edge: PathId }[] = [
  { id: 'json-1k', workload: 'json-1k', edge: 'edge-enforce' },
  { id: 'sse-1k', workload: 'sse-1k', edge: 'edge-enforce' },
  { id: 'json-1m', workload: 'json-1m', edge: 'edge-enforce' },
  { id: 'sse-1m', workload: 'sse-1m', edge: 'edge-enforce' },
  { id: 'json-8m', workload: 'json-8m', edge: 'edge-enforce' },
  { id: 'sse-8m', workload: 'sse-8m', edge: 'edge-enforce' },
  { id: 'stdio-1k', workload: 'stdio-1k', edge: 'edge-stdio' },
  { id: 'traced', workload: 'json-1k', edge: 'edge-traced' },
  { id: 'quota-memory', workload: 'json-1k', edge: 'edge-quota-memory' },
  { id: 'quota-redis', workload: 'json-1k', edge: 'edge-quota-redis' },
];

function git(args: string[]): string {
  return execFileSync('git', ['-C', REPO, ...args], { encoding: 'utf8' }).trim();
}

/** The ref to compare with: BENCH_GUARD_REF, else the commit that recorded the newest bench run. */
function guardRef(): string {
  const named = process.env.BENCH_GUARD_REF;
  if (named !== undefined && named !== '') return git(['rev-parse', '--verify', `${named}^{commit}`]);
  const dir = join(REPO, 'bench', 'results');
  const newest = readdirSync(dir)
    .filter((f) => f.endsWith('.json') && !f.startsWith('rate-'))
    .sort()
    .pop();
  if (newest === undefined) throw new Error('no recorded run in bench/results: set BENCH_GUARD_REF');
  return git(['log', '-1', '--format=%H', '--', join('bench', 'results', newest)]);
}

/**
 * `ref` built into a temp folder: its files from git, its dependencies (this checkout's when its lockfile is
 * the same, else `npm ci`), `tsc`. Returns its dist/cli.js.
 */
function buildRef(ref: string): string {
  const dir = mkdtempSync(join(tmpdir(), `mcp-edge-guard-${ref.slice(0, 8)}-`));
  execFileSync('sh', ['-c', `git -C "$0" archive "$1" | tar -x -C "$2"`, REPO, ref, dir]);
  const sameLock =
    readFileSync(join(dir, 'package-lock.json'), 'utf8') ===
    readFileSync(join(REPO, 'package-lock.json'), 'utf8');
  if (sameLock) symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  else execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  const cli = join(dir, 'dist', 'cli.js');
  if (!existsSync(cli)) throw new Error(`${ref} built no dist/cli.js`);
  return cli;
}

interface Verdict {
  id: string;
  run: RateRun;
  band: number;
  worse: boolean;
}

async function guard(id: string, workload: string, edge: PathId, baselineCli: string): Promise<Verdict> {
  const paths: RatePath[] = [
    { label: 'this', id: edge },
    { label: 'this-again', id: edge },
    { label: 'baseline', id: edge, build: baselineCli },
  ];
  const run = await runEqualRate(rateWorkload(workload), paths, {
    starts: SETTINGS.starts,
    rounds: SETTINGS.rounds,
    harness: {},
  });
  const aa = cpuRatio(run, 'this-again', 'this');
  const band = Math.max(SETTINGS.minBand, ...aa.perStart.filter(Number.isFinite).map((r) => Math.abs(r - 1)));
  const ab = cpuRatio(run, 'this', 'baseline');
  return { id, run: { ...run, workload: id }, band, worse: ab.median > 1 + band };
}

async function main(): Promise<void> {
  const ref = guardRef();
  process.stderr.write(`guard: this build against ${ref}\n`);
  const baselineCli = buildRef(ref);
  const verdicts: Verdict[] = [];
  for (const g of GUARDED) {
    if (SETTINGS.workloads !== undefined && !SETTINGS.workloads.includes(g.id)) continue;
    verdicts.push(await guard(g.id, g.workload, g.edge, baselineCli));
  }
  const lines = [
    `guard: this build (${git(['rev-parse', '--short', 'HEAD'])}) against ${ref.slice(0, 10)}, CPU per exchange at an equal rate, ${SETTINGS.starts} starts x ${SETTINGS.rounds} rounds`,
    '',
    '| workload | this / baseline | A/A (this / this) | band | verdict |',
    '|---|--:|--:|--:|---|',
    ...verdicts.map(
      (v) =>
        `| ${v.id} (${v.run.rate}/s) | ${formatRatio(cpuRatio(v.run, 'this', 'baseline'))} | ${formatRatio(cpuRatio(v.run, 'this-again', 'this'))} | ±${(v.band * 100).toFixed(0)}% | ${v.worse ? 'WORSE' : 'ok'} |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const worse = verdicts.filter((v) => v.worse);
  if (worse.length > 0) {
    process.stdout.write(`${worse.length} workload(s) worse than their noise band\n`);
    process.exitCode = 1;
  }
}

void main();
