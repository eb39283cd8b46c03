// Load on one path: autocannon flat out for some seconds (requests per second, latency, the path's CPU per
// request), or at a fixed rate (the path's CPU and system calls per exchange), and the unloaded latency probe.
import { join } from 'node:path';
import { BUILT, type Harness, NODE, type PathRun, REPO } from './harness.js';
import { cpuMsOf, ioOf, kernelOf, runToEnd } from './proc.js';
import type { CannonRun, ProbeRun, Workload } from './result-types.js';

const AUTOCANNON = join(REPO, 'node_modules', 'autocannon', 'autocannon.js');

export function requestBody(tool: string, host?: string): string {
  const meta =
    host === undefined
      ? {}
      : { _meta: { 'io.modelcontextprotocol/clientInfo': { name: host, version: '2' } } };
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: tool, arguments: {}, ...meta },
  });
}

/** What autocannon's JSON output says of a run (the fields the bench reads). */
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  throughput: { average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

/** What a load sends: the upstream's answer (x-bench-answer), the tool, the body when it is not a plain call. */
export interface LoadSpec {
  answer: string;
  tool: string;
  connections: number;
  host?: string | undefined;
  /** The request body; default requestBody(tool, host). */
  body?: string | undefined;
  /** Calls over this many sessions, each with its own id (bench/paced-client.ts), not one body from autocannon. */
  sessions?: number | undefined;
}

/** autocannon against `url` for `seconds`: flat out, or at `rate` requests per second over all connections. */
async function runAutocannon(
  h: Harness,
  url: string,
  spec: LoadSpec,
  seconds: number,
  rate?: number,
): Promise<AutocannonResult> {
  const out = await runToEnd(
    NODE,
    [
      AUTOCANNON,
      '-j',
      '-n',
      '-c',
      String(spec.connections),
      '-d',
      String(seconds),
      ...(rate !== undefined ? ['-R', String(rate)] : []),
      '-m',
      'POST',
      '-H',
      'content-type=application/json',
      '-H',
      'accept=application/json, text/event-stream',
      '-H',
      'mcp-protocol-version=2025-06-18',
      '-H',
      `x-bench-answer=${spec.answer}`,
      '-b',
      spec.body ?? requestBody(spec.tool, spec.host),
      url,
    ],
    h.log('autocannon'),
    (seconds + 30) * 1000,
  );
  return JSON.parse(out) as AutocannonResult;
}

/** Flat out: as many requests as the path takes from `connections` for `seconds`. */
export async function cannon(h: Harness, path: PathRun, w: Workload, seconds: number): Promise<CannonRun> {
  const cpuBefore = path.proc !== undefined ? cpuMsOf(path.proc.pid) : 0;
  const r = await runAutocannon(h, path.url, w, seconds);
  const cpuMs = path.proc !== undefined ? cpuMsOf(path.proc.pid) - cpuBefore : undefined;
  return {
    cpuUsPerRequest:
      cpuMs !== undefined && r.requests.total > 0 ? (cpuMs * 1000) / r.requests.total : undefined,
    rps: r.requests.average,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    mbps: r.throughput.average / 1e6,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

/** One run at a fixed rate: what it completed, and the path process's CPU and system calls over it. */
export interface PacedRun {
  requests: number;
  non2xx: number;
  errors: number;
  cpuMs: number;
  readCalls: number;
  writeCalls: number;
  sysMs: number;
  minorFaults: number;
  p50Ms: number;
  p99Ms: number;
}

/** `spec` at `rate` requests per second on `path` for `seconds`, with the path's own counters around it. */
export async function paced(
  h: Harness,
  path: PathRun,
  spec: LoadSpec,
  seconds: number,
  rate: number,
): Promise<PacedRun> {
  const pid = path.proc?.pid;
  // A stdio edge's children are its MCP servers: the edge's own figures are its process's.
  const own = path.id === 'edge-stdio';
  const cpuBefore = pid !== undefined ? cpuMsOf(pid, own) : 0;
  const ioBefore = pid !== undefined ? ioOf(pid, own) : { readCalls: 0, writeCalls: 0 };
  const kernelBefore = pid !== undefined ? kernelOf(pid, own) : { sysMs: 0, minorFaults: 0 };
  const r =
    spec.sessions !== undefined
      ? await sessionCalls(h, path.url, spec, seconds, rate)
      : fromAutocannon(await runAutocannon(h, path.url, spec, seconds, rate));
  const io = pid !== undefined ? ioOf(pid, own) : ioBefore;
  const kernel = pid !== undefined ? kernelOf(pid, own) : kernelBefore;
  return {
    ...r,
    cpuMs: pid !== undefined ? cpuMsOf(pid, own) - cpuBefore : 0,
    readCalls: io.readCalls - ioBefore.readCalls,
    writeCalls: io.writeCalls - ioBefore.writeCalls,
    sysMs: kernel.sysMs - kernelBefore.sysMs,
    minorFaults: kernel.minorFaults - kernelBefore.minorFaults,
  };
}

type Completed = Pick<PacedRun, 'requests' | 'non2xx' | 'errors' | 'p50Ms' | 'p99Ms'>;

function fromAutocannon(r: AutocannonResult): Completed {
  return {
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
  };
}

/** bench/paced-client.ts: calls at `rate` over `spec.sessions` sessions, every call its own id. */
async function sessionCalls(
  h: Harness,
  url: string,
  spec: LoadSpec,
  seconds: number,
  rate: number,
): Promise<Completed> {
  const out = await runToEnd(
    NODE,
    [
      join(BUILT, 'paced-client.js'),
      url,
      String(rate),
      String(seconds),
      String(spec.sessions),
      String(spec.connections),
    ],
    h.log('paced-client'),
    (seconds + 60) * 1000,
  );
  return JSON.parse(out) as Completed;
}

export async function probe(h: Harness, url: string, w: Workload, count: number): Promise<ProbeRun> {
  const out = await runToEnd(
    NODE,
    [join(BUILT, 'latency-probe.js'), url, w.answer, w.tool, String(count)],
    h.log('latency-probe'),
    120_000,
  );
  return JSON.parse(out) as ProbeRun;
}
