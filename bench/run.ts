// `npm run bench`: the cost of measuring and enforcing, side by side (issue 7).
//
// Everything runs on 127.0.0.1, each part in its own process: the fast upstream (bench/upstream.ts), the
// paths to it (direct; a bare @fastify/http-proxy; a bare node:http + undici Pool proxy; nginx when installed;
// mcp-edge enforce; mcp-edge observe),
// and the load (autocannon, and bench/latency-probe.ts for unloaded latency). Paths alternate within each
// round; figures are medians over rounds, and ratios are medians of the per-round ratios (paths of one round
// ran seconds apart, so a busy moment of this shared machine weighs on all of them alike). A path that
// changes another (this build against BENCH_BASELINE_CLI's, traces or a quota against edge-enforce) is also
// run side by side with it: both under the same load in the same seconds, their CPU per exchange compared
// per round, so that the host's slow and fast spells weigh on both alike.
//
// Settings (environment): BENCH_ROUNDS (5), BENCH_SECONDS per load run (3), BENCH_SIDE_ROUNDS (9),
// BENCH_IDLE_HOLD_S (60), BENCH_IDLE_STREAMS (1000), BENCH_PROBE_COUNT (1000), BENCH_SECTIONS
// (core,hosts,load,huge,idle,stdio; hosts is bench/host-budget.ts --adversarial, what measuring one result
// costs for a claimed host; stdio is bench/stdio.ts, the stdio upstream beside supergateway, with its own
// BENCH_STDIO_* settings), BENCH_WORKLOADS (all; e.g. json-1k,sse-1k,json-1k-quota-memory,json-1k-quota-redis;
// the quota ones start a redis-server), BENCH_PATHS (all; e.g. bare,edge-enforce; direct always runs),
// BENCH_HUGE_RUNS (3), BENCH_CPU_PROF (a directory: profile the Node proxies of PROFILED_PATHS), BENCH_BASELINE_CLI
// (the dist/cli.js of another build of mcp-edge, e.g. a clone of an earlier commit: runs as path edge-baseline,
// enforce, beside this build, so a change is measured against what it changed in the same run), BENCH_RECORDED
// (a results file: every figure of this run is compared with it; default: the newest file in bench/results).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { CoreMeasureRow } from './core-measure.js';
import { BUILT, Harness, machine, metricSum, NODE, nginxBinary, type PathRun, REPO } from './harness.js';
import type { AdversarialRow } from './host-budget.js';
import { cannon, probe } from './load.js';
import { memoryOf, resetPeak, runToEnd, sampleMemory, sleep, startProcess } from './proc.js';
import { compareWithRecorded, evaluateTargets, formatReport, type Report } from './report.js';
import {
  type CannonRun,
  type HugeResult,
  type IdleResult,
  median,
  type PathId,
  type RuleToggled,
  type SideBySide,
  type Workload,
  type WorkloadResult,
} from './result-types.js';
import type { StdioBench } from './stdio.js';
import { WORKLOADS } from './workloads.js';

function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

const SETTINGS = {
  rounds: envNumber('BENCH_ROUNDS', 5),
  seconds: envNumber('BENCH_SECONDS', 3),
  idleHoldS: envNumber('BENCH_IDLE_HOLD_S', 60),
  idleStreams: envNumber('BENCH_IDLE_STREAMS', 1000),
  probeCount: envNumber('BENCH_PROBE_COUNT', 1000),
  hugeRuns: envNumber('BENCH_HUGE_RUNS', 3),
  sideRounds: envNumber('BENCH_SIDE_ROUNDS', 9),
  sections: (process.env.BENCH_SECTIONS ?? 'core,hosts,load,huge,idle,stdio').split(','),
  workloads: process.env.BENCH_WORKLOADS?.split(','),
  paths: process.env.BENCH_PATHS?.split(','),
  cpuProfDir: process.env.BENCH_CPU_PROF,
  baselineCli: process.env.BENCH_BASELINE_CLI,
  recorded: process.env.BENCH_RECORDED,
};

function pathWanted(id: PathId): boolean {
  return id === 'direct' || SETTINGS.paths === undefined || SETTINGS.paths.includes(id);
}

async function runWorkload(h: Harness, w: Workload, paths: PathRun[]): Promise<WorkloadResult> {
  const seconds = SETTINGS.seconds;
  const rounds: WorkloadResult['rounds'] = {};
  // Warm-up, discarded: a full-length run per path. A path that sat idle through the workloads before this
  // one (the extra paths do) reads high for its first seconds; a one-second warm-up left that in round 1.
  for (const p of paths) {
    rounds[p.id] = { cannon: [], probe: [] };
    await cannon(h, p, w, seconds);
  }
  for (const p of paths) if (p.proc !== undefined) resetPeak(p.proc.pid);
  const samplers = new Map(
    paths.flatMap((p) => (p.proc !== undefined ? [[p.id, sampleMemory(p.proc.pid, 200)] as const] : [])),
  );
  for (let round = 0; round < SETTINGS.rounds; round++) {
    const order = paths.map((_, i) => paths[(i + round) % paths.length]!);
    for (const p of order) {
      const run = await cannon(h, p, w, seconds);
      rounds[p.id]!.cannon.push(run);
      process.stderr.write(
        `  ${w.id} round ${round + 1} ${p.id.padEnd(17)} ${run.rps.toFixed(0).padStart(6)} req/s ${run.mbps.toFixed(1).padStart(7)} MB/s p50 ${run.p50Ms} ms cpu/req ${run.cpuUsPerRequest?.toFixed(0) ?? '-'} us\n`,
      );
    }
    if (w.probe) {
      for (const p of order) rounds[p.id]!.probe.push(await probe(h, p.url, w, SETTINGS.probeCount));
    }
  }
  const peaks = new Map([...samplers].map(([id, s]) => [id, s.stop().peakKiB / 1024] as const));
  const perRound = (id: PathId, pick: (c: CannonRun) => number) => rounds[id]!.cannon.map(pick);
  const summary: WorkloadResult['paths'] = {};
  const hasBare = rounds.bare !== undefined;
  for (const p of paths) {
    const r = rounds[p.id]!;
    const ratio = (pick: (c: CannonRun) => number) =>
      hasBare && p.id !== 'direct'
        ? median(r.cannon.map((c, i) => pick(c) / pick(rounds.bare!.cannon[i]!)))
        : undefined;
    const cpu = (c: CannonRun) => c.cpuUsPerRequest ?? Number.NaN;
    summary[p.id] = {
      cpuUsPerRequest: p.proc !== undefined ? median(perRound(p.id, cpu)) : undefined,
      cpuVsBare: p.proc !== undefined ? ratio(cpu) : undefined,
      rps: median(perRound(p.id, (c) => c.rps)),
      p50Ms: median(perRound(p.id, (c) => c.p50Ms)),
      p99Ms: median(perRound(p.id, (c) => c.p99Ms)),
      mbps: median(perRound(p.id, (c) => c.mbps)),
      probeP50Us: w.probe ? median(r.probe.map((x) => x.p50Us)) : undefined,
      probeP99Us: w.probe ? median(r.probe.map((x) => x.p99Us)) : undefined,
      addedP50Us:
        w.probe && p.id !== 'direct'
          ? median(r.probe.map((x, i) => x.p50Us - rounds.direct!.probe[i]!.p50Us))
          : undefined,
      rpsVsBare: ratio((c) => c.rps),
      mbpsVsBare: ratio((c) => c.mbps),
      peakRssMiB: peaks.get(p.id),
      non2xx: r.cannon.reduce((a, c) => a + c.non2xx, 0),
      errors: r.cannon.reduce((a, c) => a + c.errors, 0),
    };
  }
  const sideBySide: SideBySide[] = [];
  for (const [against, path] of sideBySidePairs(paths))
    sideBySide.push(await runSideBySide(h, w, against, path));
  const ruleToggled: RuleToggled[] = [];
  for (const path of paths)
    if (path.setQuotaRule !== undefined) ruleToggled.push(await runRuleToggled(h, w, path));
  return { workload: w, paths: summary, rounds, sideBySide, ruleToggled };
}

/**
 * A quota path's rule on against off: two edges of the path side by side (a twin started for this), the rule
 * on in one and off in the other (`rules: []` keeps the filter and charges nothing), swapped every round.
 * Side by side, both see the host alike; swapped, what differs between the two processes (launches of one
 * build differ by a few percent, whatever they run) weighs on both sides of a pair of rounds alike, so a
 * pair's figure is the geometric mean of its two rounds' ratios.
 */
async function runRuleToggled(h: Harness, w: Workload, path: PathRun): Promise<RuleToggled> {
  const twin = await h.startPath(path.id);
  const setRule = (edge: PathRun, on: boolean) => edge.setQuotaRule?.(on) ?? Promise.resolve();
  try {
    // Warm-up, discarded: the path has run every round before this; the twin starts cold.
    for (let i = 0; i < 2; i++) await cannon(h, twin, w, SETTINGS.seconds);
    const cpuRatios: number[] = [];
    let first = Number.NaN;
    for (let round = 0; round < 2 * Math.ceil(SETTINGS.sideRounds / 2); round++) {
      const pathOn = round % 2 === 0;
      await setRule(path, pathOn);
      await setRule(twin, !pathOn);
      const [pathRun, twinRun] = await Promise.all([
        cannon(h, path, w, SETTINGS.seconds),
        cannon(h, twin, w, SETTINGS.seconds),
      ]);
      const [on, off] = pathOn ? [pathRun, twinRun] : [twinRun, pathRun];
      const ratio = (on.cpuUsPerRequest ?? Number.NaN) / (off.cpuUsPerRequest ?? Number.NaN);
      process.stderr.write(
        `  ${w.id} rule on/off ${round + 1} ${path.id} on ${on.cpuUsPerRequest?.toFixed(0)} us/req, off ${off.cpuUsPerRequest?.toFixed(0)} us/req: ${ratio.toFixed(2)}x\n`,
      );
      if (pathOn) first = ratio;
      else cpuRatios.push(Math.sqrt(first * ratio));
    }
    return { path: path.id, cpuRatios, cpuRatio: median(cpuRatios) };
  } finally {
    await setRule(path, true);
    await twin.proc?.stop();
  }
}

/** What a workload measures side by side: each changed path against the one it changes. */
function sideBySidePairs(paths: readonly PathRun[]): [against: PathRun, path: PathRun][] {
  const byId = new Map(paths.map((p) => [p.id, p]));
  const enforce = byId.get('edge-enforce');
  if (enforce === undefined) return [];
  const pairs: [PathRun, PathRun][] = [];
  const baseline = byId.get('edge-baseline');
  if (baseline !== undefined) pairs.push([baseline, enforce]);
  for (const id of ['edge-traced', 'edge-quota-memory', 'edge-quota-redis'] as const) {
    const path = byId.get(id);
    if (path !== undefined) pairs.push([enforce, path]);
  }
  return pairs;
}

/**
 * `path` and `against` under the same load at the same moment, round after round. Run one after the other,
 * a ratio swings with the shared host (its CPU time per request moves between levels for seconds at a
 * time); side by side, both are in the same level.
 */
async function runSideBySide(h: Harness, w: Workload, against: PathRun, path: PathRun): Promise<SideBySide> {
  const cpuRatios: number[] = [];
  for (let round = 0; round < SETTINGS.sideRounds; round++) {
    // The two swap places every round: in paired runs, which of two edges started first moved their ratio by
    // several percent, and a path always in the second place would carry that as its own cost.
    const order = round % 2 === 0 ? [against, path] : [path, against];
    const runs = await Promise.all(order.map((p) => cannon(h, p, w, SETTINGS.seconds)));
    const a = runs[order.indexOf(against)]!;
    const b = runs[order.indexOf(path)]!;
    const ratio = (b.cpuUsPerRequest ?? Number.NaN) / (a.cpuUsPerRequest ?? Number.NaN);
    cpuRatios.push(ratio);
    process.stderr.write(
      `  ${w.id} side by side ${round + 1} ${path.id} ${b.cpuUsPerRequest?.toFixed(0)} us/req, ${against.id} ${a.cpuUsPerRequest?.toFixed(0)} us/req: ${ratio.toFixed(2)}x\n`,
    );
  }
  return { path: path.id, against: against.id, cpuRatios, cpuRatio: median(cpuRatios) };
}

/** What a quota path costs against edge-enforce: CPU per exchange (side by side, and in the rounds) and added p50 latency. */
function quotaCost(result: WorkloadResult): string | undefined {
  const quotaId = result.workload.extraPaths.find((id) => id.startsWith('edge-quota-'));
  const quota = quotaId !== undefined ? result.rounds[quotaId] : undefined;
  const enforce = result.rounds['edge-enforce'];
  if (quotaId === undefined || quota === undefined || enforce === undefined) return undefined;
  const inRounds = median(
    quota.cannon.map(
      (c, i) => (c.cpuUsPerRequest ?? Number.NaN) / (enforce.cannon[i]?.cpuUsPerRequest ?? Number.NaN),
    ),
  );
  const sideBySide = result.sideBySide.find((s) => s.path === quotaId)?.cpuRatio ?? Number.NaN;
  const toggled = result.ruleToggled?.find((t) => t.path === quotaId)?.cpuRatio ?? Number.NaN;
  const percent = (ratio: number) => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)}%`;
  const addedUs = median(quota.probe.map((x, i) => x.p50Us - (enforce.probe[i]?.p50Us ?? Number.NaN)));
  return `${result.workload.id}: ${quotaId} CPU per exchange ${percent(toggled)} with its rule on against off (two edges swapping it), ${percent(sideBySide)} against edge-enforce side by side (${percent(inRounds)} in rounds one after the other), unloaded p50 ${addedUs.toFixed(0)} us added`;
}

async function warmEdge(h: Harness, url: string): Promise<void> {
  await probe(h, url, WORKLOADS[0]!, 50);
}

async function runHuge(h: Harness, answer: 'huge-json' | 'huge-sse'): Promise<HugeResult> {
  const runs: HugeResult['runs'] = [];
  for (let i = 0; i < SETTINGS.hugeRuns; i++) {
    const edge = await h.startPath('edge-enforce');
    const pid = edge.proc!.pid;
    await warmEdge(h, edge.url);
    await sleep(500);
    const baselineKiB = memoryOf(pid).rssKiB;
    resetPeak(pid);
    const sampler = sampleMemory(pid, 20);
    const out = await runToEnd(
      NODE,
      [join(BUILT, 'huge-client.js'), edge.url, answer, '30000'],
      h.log('huge'),
      60_000,
    );
    // Whatever the edge still does after answering counts too.
    await sleep(1000);
    const { peakKiB } = sampler.stop();
    const r = JSON.parse(out) as { ok: boolean; errorMs: number; head?: string; error?: string };
    runs.push({
      errorMs: r.errorMs,
      ok: r.ok,
      baselineMiB: baselineKiB / 1024,
      peakMiB: peakKiB / 1024,
      growthMiB: (peakKiB - baselineKiB) / 1024,
      head: (r.head ?? r.error ?? '').slice(0, 200),
    });
    process.stderr.write(
      `  ${answer} run ${i + 1}: error after ${r.errorMs.toFixed(0)} ms, RSS +${((peakKiB - baselineKiB) / 1024).toFixed(1)} MiB, ok=${r.ok}\n`,
    );
    await edge.proc!.stop();
  }
  return {
    answer,
    runs,
    errorMs: median(runs.map((r) => (r.ok ? r.errorMs : Number.POSITIVE_INFINITY))),
    growthMiB: median(runs.map((r) => r.growthMiB)),
  };
}

async function runIdle(h: Harness, id: PathId): Promise<IdleResult> {
  const path = await h.startPath(id, SETTINGS.idleStreams + 100);
  const pid = path.proc!.pid;
  await warmEdge(h, path.url);
  await sleep(500);
  const baselineKiB = memoryOf(pid).rssKiB;
  resetPeak(pid);
  const sampler = sampleMemory(pid, 250);
  const port = new URL(path.url).port;
  const client = h.track(
    startProcess(
      'idle-streams',
      NODE,
      [
        join(BUILT, 'idle-streams.js'),
        port,
        '/mcp',
        String(SETTINGS.idleStreams),
        String(SETTINGS.idleHoldS),
      ],
      h.log(`idle-${id}`),
    ),
  );
  // RSS just before the client lets go: the streams are all still open then.
  const log = h.log(`idle-${id}`);
  while (!readFileSync(log, 'utf8').includes('open ') && client.child.exitCode === null) await sleep(100);
  await sleep(Math.max(0, SETTINGS.idleHoldS * 1000 - 1500));
  const heldKiB = memoryOf(pid).rssKiB;
  await client.exited;
  const { peakKiB } = sampler.stop();
  const lines = readFileSync(log, 'utf8').trim().split('\n');
  const summary = JSON.parse(lines[lines.length - 1] ?? '{}') as {
    connected?: number;
    opened?: number;
    stillOpen?: number;
    openMs?: number;
    statuses?: string[];
  };
  await path.proc!.stop();
  const result: IdleResult = {
    path: id,
    streams: SETTINGS.idleStreams,
    connected: summary.connected ?? 0,
    opened: summary.opened ?? 0,
    statuses: summary.statuses ?? [],
    stillOpen: summary.stillOpen ?? 0,
    openMs: summary.openMs ?? 0,
    holdS: SETTINGS.idleHoldS,
    baselineMiB: baselineKiB / 1024,
    heldMiB: heldKiB / 1024,
    peakMiB: peakKiB / 1024,
  };
  process.stderr.write(
    `  idle ${id}: ${result.connected} connected, ${result.opened} with headers (${result.stillOpen} still open at the end), RSS ${result.baselineMiB.toFixed(0)} -> held ${result.heldMiB.toFixed(0)} MiB, peak ${result.peakMiB.toFixed(0)} MiB\n`,
  );
  return result;
}

/** The run this one is compared with: BENCH_RECORDED, else the newest results file. */
function recordedRun(): { file: string; report: Report } | undefined {
  const dir = join(REPO, 'bench', 'results');
  let file = SETTINGS.recorded;
  if (file === undefined) {
    if (!existsSync(dir)) return undefined;
    const newest = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .pop();
    if (newest === undefined) return undefined;
    file = join(dir, newest);
  }
  return { file, report: JSON.parse(readFileSync(file, 'utf8')) as Report };
}

async function main(): Promise<void> {
  const h = new Harness({ cpuProfDir: SETTINGS.cpuProfDir, baselineCli: SETTINGS.baselineCli });
  const startedAt = new Date();
  const report: Report = {
    startedAt: startedAt.toISOString(),
    machine: {
      ...machine(),
      loadAverageAtStart: loadavg()
        .map((l) => l.toFixed(2))
        .join(' '),
    },
    settings: { ...SETTINGS },
    notes: [],
    core: undefined,
    load: [],
    huge: [],
    idle: [],
    verdicts: [],
    comparison: undefined,
  };
  let stdio: StdioBench | undefined;
  const nginxPresent = nginxBinary() !== undefined;
  if (!nginxPresent)
    report.notes.push('nginx is not installed: the nginx path is skipped (apt-get install nginx to add it)');
  const stopping = () => {
    void h.stopAll().then(() => process.exit(130));
  };
  process.once('SIGINT', stopping);
  process.once('SIGTERM', stopping);
  try {
    if (SETTINGS.sections.includes('core')) {
      process.stderr.write('core: measureMessage vs JSON.parse\n');
      const out = await runToEnd(NODE, [join(BUILT, 'core-measure.js'), '--json'], h.log('core'), 900_000);
      report.core = JSON.parse(out) as CoreMeasureRow[];
    }
    if (SETTINGS.sections.includes('hosts')) {
      process.stderr.write('hosts: measuring one result for a claimed host, adversarial against ordinary\n');
      const out = await runToEnd(
        NODE,
        [join(BUILT, 'host-budget.js'), '--adversarial', '--json'],
        h.log('hosts'),
        900_000,
      );
      report.hosts = JSON.parse(out) as AdversarialRow[];
    }
    await h.startUpstream();
    if (SETTINGS.sections.includes('load')) {
      const ids = (
        [
          'direct',
          'bare',
          'node-undici',
          ...(nginxPresent ? (['nginx'] as const) : []),
          ...(SETTINGS.baselineCli !== undefined ? (['edge-baseline'] as const) : []),
          'edge-enforce',
          'edge-observe',
        ] as PathId[]
      ).filter(pathWanted);
      const running = new Map<PathId, PathRun>();
      // The extra paths of the workloads this run loads (the traced edge only for json-1k-traced, say).
      const wanted = WORKLOADS.filter(
        (w) => SETTINGS.workloads === undefined || SETTINGS.workloads.includes(w.id),
      );
      const extra = [...new Set(wanted.flatMap((w) => w.extraPaths))];
      for (const id of [...ids, ...extra].filter(pathWanted)) {
        running.set(id, await h.startPath(id));
      }
      for (const w of WORKLOADS) {
        if (SETTINGS.workloads !== undefined && !SETTINGS.workloads.includes(w.id)) continue;
        process.stderr.write(`load: ${w.id} (${w.title})\n`);
        const paths = [...ids, ...w.extraPaths.filter(pathWanted)].map((id) => running.get(id)!);
        const result = await runWorkload(h, w, paths);
        const enforce = running.get('edge-enforce');
        if (w.id === 'mix' && enforce?.metricsUrl !== undefined) {
          // Cumulative over the whole run: only the mix goes over a ceiling.
          result.limitRejections = await metricSum(enforce.metricsUrl, 'mcp_edge_limit_exceeded_total');
        }
        report.load.push(result);
        const quotaNote = quotaCost(result);
        if (quotaNote !== undefined) report.notes.push(quotaNote);
      }
      for (const p of running.values()) await p.proc?.stop();
    }
    if (SETTINGS.sections.includes('huge')) {
      process.stderr.write('memory: 1 GiB upstream body against a 4 MiB ceiling\n');
      report.huge.push(await runHuge(h, 'huge-json'));
      report.huge.push(await runHuge(h, 'huge-sse'));
    }
    if (SETTINGS.sections.includes('idle')) {
      process.stderr.write(`memory: ${SETTINGS.idleStreams} idle GET streams held ${SETTINGS.idleHoldS} s\n`);
      for (const id of ['edge-enforce', 'bare', ...(nginxPresent ? (['nginx'] as const) : [])] as PathId[]) {
        report.idle.push(await runIdle(h, id));
      }
    }
    if (SETTINGS.sections.includes('stdio')) {
      process.stderr.write('stdio: the stdio upstream beside supergateway\n');
      const out = await runToEnd(NODE, [join(BUILT, 'stdio.js'), '--json'], h.log('stdio'), 1_800_000);
      stdio = JSON.parse(out) as StdioBench;
    }
  } finally {
    await h.stopAll();
  }
  report.machine.loadAverageAtEnd = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  report.verdicts = evaluateTargets(report);
  const recorded = recordedRun();
  if (recorded !== undefined) {
    report.comparison = { file: recorded.file, rows: compareWithRecorded(report, recorded.report) };
  }
  const text = [formatReport(report), ...(stdio !== undefined ? ['', stdio.text] : [])].join('\n');
  process.stdout.write(`${text}\n`);
  const resultsDir = join(REPO, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({ ...report, stdio, table: text }, null, 2)}\n`);
  process.stdout.write(`results: ${file}\n`);
  rmSync(h.work, { recursive: true, force: true });
  const missed = report.verdicts.filter((v) => v.verdict === 'MISS').length;
  if (missed > 0) process.stdout.write(`${missed} target(s) missed\n`);
  const worse = report.comparison?.rows.filter((r) => r.verdict === 'WORSE').length ?? 0;
  if (worse > 0) process.stdout.write(`${worse} figure(s) worse than the recorded run\n`);
}

void main();
