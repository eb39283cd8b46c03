// What the edge holds and runs right now, read at each scrape from their owners: the bytes held in flight
// (mcp_edge_held_bytes) and, for a stdio upstream, its children alive and upstream.stdio.maxProcesses
// (mcp_edge_stdio_processes, mcp_edge_stdio_processes_limit). The limit is a gauge of its own, not a label:
// a label's value would change the series on every change of the bound, and the share in use is then a plain
// division of two series with the same labels.
import type { Gauge, Registry } from 'prom-client';
import { type EdgeFamilies, METRIC_NAMES } from './families.js';

export interface CapacitySources {
  /** Bytes held in flight now (src/proxy/held-bytes.ts). */
  heldBytes?: () => number;
  /** A stdio upstream's children alive now, and upstream.stdio.maxProcesses. */
  stdio?: { alive: () => number; limit: number };
}

/** Reads `read()` into the gauge whenever the registry is scraped. */
function readAtScrape(gauge: Gauge, read: () => number): void {
  gauge.set(read());
  // prom-client calls a family's collect hook before it reads the family.
  (gauge as unknown as { collect: () => void }).collect = () => gauge.set(read());
}

/** The stdio families are exported only once a stdio upstream is watched (an HTTP upstream has no children). */
export function withoutStdioFamilies(registry: Registry): void {
  registry.removeSingleMetric(METRIC_NAMES.stdioProcesses);
  registry.removeSingleMetric(METRIC_NAMES.stdioProcessesLimit);
}

/** Binds the capacity gauges to their sources. */
export function watchCapacity(registry: Registry, families: EdgeFamilies, sources: CapacitySources): void {
  if (sources.heldBytes !== undefined) readAtScrape(families.heldBytes, sources.heldBytes);
  const stdio = sources.stdio;
  if (stdio === undefined) return;
  readAtScrape(families.stdioProcesses, stdio.alive);
  families.stdioProcessesLimit.set(stdio.limit);
  const gauges = [families.stdioProcesses, families.stdioProcessesLimit];
  const names = [METRIC_NAMES.stdioProcesses, METRIC_NAMES.stdioProcessesLimit];
  gauges.forEach((gauge, i) => {
    if (registry.getSingleMetric(names[i] ?? '') === undefined) registry.registerMetric(gauge);
  });
}
