// `npm run bench:gc-probe`: why one start of mcp-edge costs more than the next. Starts the upstream and one
// edge (this build) afresh, BENCH_PROBE_STARTS times, each with node flags BENCH_EDGE_NODE_FLAGS (--trace-gc is
// always added), drives it at a workload's equal-rate pace (BENCH_PROBE_WORKLOAD, json-1m) for a warm-up and
// then BENCH_PROBE_SECONDS (20), and prints one line per start: CPU per exchange, the kernel's share of it,
// minor page faults, read and write calls per exchange, and the young (scavenge) and full (mark-compact)
// collections per 100 exchanges. It runs the edge alone: its figures are for comparing starts and flags with
// each other, not with the bare proxy (bench:rate does that).
import { readFileSync } from 'node:fs';
import { collectionsIn, rateWorkload } from './equal-rate.js';
import { Harness } from './harness.js';
import { paced } from './load.js';

const starts = Number(process.env.BENCH_PROBE_STARTS ?? 6);
const seconds = Number(process.env.BENCH_PROBE_SECONDS ?? 20);
const workload = rateWorkload(process.env.BENCH_PROBE_WORKLOAD ?? 'json-1m');
const flags = ['--trace-gc', ...(process.env.BENCH_EDGE_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '')];

async function oneStart(n: number): Promise<void> {
  const h = new Harness({ edgeNodeFlags: flags });
  try {
    await h.startUpstream();
    const edge = await h.startPath('edge-enforce');
    const log = edge.log ?? '';
    await paced(h, edge, workload.load, Math.min(5, seconds), workload.rate);
    const before = readFileSync(log, 'utf8').length;
    const run = await paced(h, edge, workload.load, seconds, workload.rate);
    const gc = collectionsIn(readFileSync(log, 'utf8').slice(before));
    const per = Math.max(1, run.requests);
    const line = [
      `start ${n}: ${run.requests} exchanges`,
      `${((run.cpuMs * 1000) / per).toFixed(0)} us CPU each (${Math.round((100 * run.sysMs) / Math.max(1, run.cpuMs))}% sys)`,
      `${(run.minorFaults / per).toFixed(1)} page faults`,
      `${(run.readCalls / per).toFixed(1)} r ${(run.writeCalls / per).toFixed(1)} w`,
      `per 100: ${((100 * gc.scavenges) / per).toFixed(1)} scavenges ${((100 * gc.fullGcs) / per).toFixed(1)} mark-compacts`,
    ];
    process.stdout.write(`${line.join(', ')}\n`);
  } finally {
    await h.stopAll();
  }
}

process.stdout.write(
  `gc-probe: ${workload.id} at ${workload.rate}/s, Node ${process.version}, edge flags: ${flags.join(' ')}\n`,
);
for (let n = 1; n <= starts; n++) await oneStart(n);
