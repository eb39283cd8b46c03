// What a benchmark run measured, as plain values: the paths and workloads, each run's figures and their
// summaries. bench/run.ts fills them and bench/report.ts judges and prints them.

export type PathId =
  | 'direct'
  | 'bare'
  | 'node-undici'
  | 'nginx'
  | 'edge-baseline'
  | 'edge-enforce'
  | 'edge-observe'
  | 'edge-enforce-info'
  | 'edge-traced'
  | 'edge-traced-unsampled'
  | 'edge-quota-memory'
  | 'edge-quota-redis'
  | 'edge-stdio';

export interface Workload {
  id: string;
  title: string;
  answer: string;
  tool: string;
  connections: number;
  /** Also run the unloaded latency probe (c=1). */
  probe: boolean;
  /** Which target applies to mcp-edge enforce on this workload. */
  target: 'small' | 'large' | undefined;
  extraPaths: PathId[];
  /** The caller names this host in `_meta` clientInfo, so the edge measures each result against its budget. */
  host?: string;
}

export interface CannonRun {
  /** CPU time the path's proxy process used per request (microseconds); undefined for direct. */
  cpuUsPerRequest: number | undefined;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  mbps: number;
  requests: number;
  non2xx: number;
  errors: number;
}

export interface ProbeRun {
  p50Us: number;
  p99Us: number;
}

export function median(values: number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface PathSummary {
  /** Proxy CPU time per request (microseconds): what the proxy costs, whatever else the machine runs. */
  cpuUsPerRequest: number | undefined;
  cpuVsBare: number | undefined;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  mbps: number;
  probeP50Us: number | undefined;
  probeP99Us: number | undefined;
  /** Median over rounds of (probe p50 of this path - probe p50 of direct). */
  addedP50Us: number | undefined;
  /** Median over rounds of this path's req/s (and MB/s) over the bare proxy's. */
  rpsVsBare: number | undefined;
  mbpsVsBare: number | undefined;
  peakRssMiB: number | undefined;
  non2xx: number;
  errors: number;
}

/**
 * A path against the one it changes (a build against the starting build, traces or a quota against the same
 * edge without), both loaded in the same seconds, round after round: whatever the shared machine does then
 * weighs on both alike.
 */
export interface SideBySide {
  path: PathId;
  against: PathId;
  /** Per round: the path's CPU per exchange over the other's. */
  cpuRatios: number[];
  /** Their median. */
  cpuRatio: number;
}

/**
 * A quota path's CPU per exchange with its rule on over off: two edges of the path side by side, the rule
 * switched by a reload and swapped between them every round.
 */
export interface RuleToggled {
  path: PathId;
  /** Per pair of rounds (each edge on once): the geometric mean of the two on-over-off ratios. */
  cpuRatios: number[];
  /** Their median. */
  cpuRatio: number;
}

export interface WorkloadResult {
  workload: Workload;
  paths: Partial<Record<PathId, PathSummary>>;
  rounds: Partial<Record<PathId, { cannon: CannonRun[]; probe: ProbeRun[] }>>;
  sideBySide: SideBySide[];
  /** Absent in runs recorded before it was measured. */
  ruleToggled?: RuleToggled[];
  limitRejections?: number;
}

export interface HugeResult {
  answer: string;
  runs: {
    errorMs: number;
    growthMiB: number;
    baselineMiB: number;
    peakMiB: number;
    ok: boolean;
    head: string;
  }[];
  errorMs: number;
  growthMiB: number;
}

export interface IdleResult {
  path: PathId;
  streams: number;
  /** TCP connections made and requests sent. */
  connected: number;
  /** Streams whose 200 response headers arrived. */
  opened: number;
  statuses: string[];
  stillOpen: number;
  openMs: number;
  holdS: number;
  baselineMiB: number;
  heldMiB: number;
  peakMiB: number;
}
