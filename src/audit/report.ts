// The audit's result as one value: what `--json` prints and the table is drawn from, and the exit code
// `--fail-over` asks for.
import type { CallReport } from './calls.js';
import type { CatalogWeight, ToolWeight } from './catalog.js';
import type { Finding } from './findings.js';
import type { ListingWalk, WalkStop } from './listing.js';

export interface ListingReport {
  method: string;
  pages: { bytes: number; items: number; nextCursor?: string }[];
  items: number;
  totalBytes: number;
  stop: WalkStop;
}

export interface HostReport {
  name: string;
  title: string;
  /** Each bounds one tool result. */
  budgets: { unit: string; limit: number }[];
  /** The tool definitions' budget, where the host has one, and what it does past it. */
  catalog: { budgets: { unit: string; limit: number }[]; past: string } | undefined;
  channels: string;
  past: string;
}

export interface AuditReport {
  server: { name: string | undefined; version: string | undefined; target: string };
  protocolVersion: string | undefined;
  bounds: { maxPages: number; timeoutMs: number; maxMessageBytes: number };
  hosts: HostReport[];
  catalog: Omit<CatalogWeight, 'tools'> & { tools: Omit<ToolWeight, 'descriptor'>[] };
  listings: ListingReport[];
  calls: CallReport[];
  findings: Finding[];
  failOver: { hosts: string[]; over: string[] };
}

export function listingReport(walk: ListingWalk): ListingReport {
  return {
    method: walk.listing.method,
    pages: walk.pages.map((p) => ({
      bytes: p.bytes,
      items: p.items,
      ...(p.nextCursor !== undefined ? { nextCursor: p.nextCursor } : {}),
    })),
    items: walk.items.length,
    totalBytes: walk.pages.reduce((sum, p) => sum + p.bytes, 0),
    stop: walk.stop,
  };
}

/**
 * What is over each --fail-over host's budget: the catalog over its catalog budget (a host without one never
 * fails on its catalog), or a call's answer over its result budget.
 */
export function overBudget(
  report: Pick<AuditReport, 'catalog' | 'calls'>,
  hosts: readonly string[],
): string[] {
  const over: string[] = [];
  for (const host of hosts) {
    const catalog = report.catalog.hosts[host];
    if (catalog?.over === true)
      over.push(
        `${host}: the catalog is ${catalog.size} ${catalog.unit}, over its catalog budget of ${catalog.budget}`,
      );
    for (const call of report.calls) {
      const size = call.hosts[host];
      if (size?.over === true) {
        over.push(
          `${host}: ${call.tool ?? call.method} (line ${call.line}) is ${size.size} ${size.unit}, over ${size.budget}`,
        );
      }
    }
  }
  return over;
}
