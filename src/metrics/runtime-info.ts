// What the process runs as and in: its version (mcp_edge_build_info), the memory limit of its container
// (mcp_edge_memory_limit_bytes), and the outcome of its last configuration load.
import { totalmem } from 'node:os';
import type { Registry } from 'prom-client';
import { packageVersion } from '../version.js';
import { type EdgeFamilies, METRIC_NAMES } from './families.js';

/**
 * The memory limit to export: the cgroup's (process.constrainedMemory(), what a container's memory limit
 * sets), or undefined when there is none. Node reports "no limit" as 0 or as a huge number (cgroup v1's
 * unlimited), so a limit not below the machine's memory is no limit.
 */
export function memoryLimitOf(constrained: number | undefined, total: number): number | undefined {
  if (constrained === undefined || !Number.isFinite(constrained) || constrained <= 0) return undefined;
  return constrained < total ? constrained : undefined;
}

function currentMemoryLimit(): number | undefined {
  const constrained =
    typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : undefined;
  return memoryLimitOf(constrained, totalmem());
}

/**
 * Sets build info, exports the memory limit when there is one (refreshed at each scrape: a pod can be resized
 * in place; without a limit at start the family is left out), and records the start as the first load.
 */
export function recordRuntimeInfo(
  registry: Registry,
  families: EdgeFamilies,
  now: () => number = Date.now,
): void {
  families.buildInfo.set({ version: packageVersion(), node: process.versions.node }, 1);
  const memoryLimit = families.memoryLimit;
  const atStart = currentMemoryLimit();
  if (atStart === undefined) registry.removeSingleMetric(METRIC_NAMES.memoryLimit);
  else {
    memoryLimit.set(atStart);
    // prom-client calls a family's collect hook before it reads the family.
    (memoryLimit as unknown as { collect: () => void }).collect = () => {
      memoryLimit.set(currentMemoryLimit() ?? atStart);
    };
  }
  recordConfigLoad(families, true, now);
}

/** mcp_edge_config_last_reload_success and _timestamp_seconds: the outcome and time of the last load. */
export function recordConfigLoad(families: EdgeFamilies, ok: boolean, now: () => number = Date.now): void {
  families.configLastReloadSuccess.set(ok ? 1 : 0);
  families.configLastReloadTimestamp.set(now() / 1000);
}
