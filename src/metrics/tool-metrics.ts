// Recorders for the per-tool views: host budgets, whole-call latency, tool errors and catalog weight. The
// families are defined in families.ts; label values from the wire go through the same guards as the rest.
import type { HostBudgetObservation } from '../hosts/host-judge.js';
import type { InspectionObserver } from '../inspect/observer.js';
import type { ToolAnswerError, ToolDescriptorWeight } from '../inspect/tool-answers.js';
import type { EdgeFamilies } from './families.js';
import { type LabelGuard, OTHER_LABEL } from './label-guard.js';

export interface ToolRecorders {
  /** Observer of one tenant's tool answers, host budgets and catalog (combined with observerFor's). */
  toolObserverFor(tenant: string): InspectionObserver;
  /** A POST exchange finished: request received to the last byte of its answer. */
  callFinished(e: {
    tenant: string;
    method: string | undefined;
    tool: string | undefined;
    seconds: number;
  }): void;
}

/** Descriptors remembered per tenant for the catalog totals; names past this are not added (a hostile list is bounded). */
const MAX_CATALOG_TOOLS = 10_000;

type Child<T extends keyof EdgeFamilies> = ReturnType<EdgeFamilies[T]['labels']>;

function cached<C>(cache: Map<string, C>, key: string, make: () => C): C {
  let child = cache.get(key);
  if (child === undefined) {
    child = make();
    cache.set(key, child);
  }
  return child;
}

function tenantToolObserver(
  tenant: string,
  families: EdgeFamilies,
  guards: { tool: LabelGuard },
): InspectionObserver {
  const errors = new Map<string, Child<'toolErrors'>>();
  const exceeded = new Map<string, Child<'hostBudgetExceeded'>>();
  const shares = new Map<string, Child<'hostBudgetRatio'>>();
  const catalog = new Map<string, number>();
  return {
    message() {},
    limitExceeded() {},
    unparsable() {},
    toolAnswered(rawTool: string | undefined, error: ToolAnswerError | undefined) {
      if (error === undefined) return;
      const tool = guards.tool.bound(rawTool);
      cached(errors, `${tool}\0${error}`, () =>
        families.toolErrors.labels({ tenant, tool, kind: error }),
      ).inc();
    },
    hostBudget(o: HostBudgetObservation) {
      cached(shares, o.host, () => families.hostBudgetRatio.labels({ host: o.host, tenant })).observe(
        o.share,
      );
      const over = o.over;
      if (over === undefined) return;
      const tool = guards.tool.bound(o.tool);
      cached(exceeded, `${o.host}\0${tool}\0${over.unit}\0${over.action}`, () =>
        families.hostBudgetExceeded.labels({
          host: o.host,
          tenant,
          tool,
          unit: over.unit,
          action: over.action,
        }),
      ).inc();
    },
    toolsDescribed(tools: readonly ToolDescriptorWeight[]) {
      for (const { name, bytes } of tools) {
        if (catalog.has(name) || catalog.size < MAX_CATALOG_TOOLS) catalog.set(name, bytes);
      }
      let total = 0;
      let folded = 0;
      let anyFolded = false;
      for (const [name, bytes] of catalog) {
        total += bytes;
        const tool = guards.tool.peek(name);
        if (tool === OTHER_LABEL) {
          folded += bytes;
          anyFolded = true;
        } else families.toolDescriptorBytes.set({ tenant, tool }, bytes);
      }
      if (anyFolded) families.toolDescriptorBytes.set({ tenant, tool: OTHER_LABEL }, folded);
      families.toolCatalogBytes.set({ tenant }, total);
      families.toolCatalogTools.set({ tenant }, catalog.size);
    },
  };
}

export function createToolRecorders(
  families: EdgeFamilies,
  guards: { method: LabelGuard; tool: LabelGuard },
): ToolRecorders {
  const observers = new Map<string, InspectionObserver>();
  const durations = new Map<string, Child<'callDuration'>>();
  return {
    toolObserverFor(tenant) {
      return cached(observers, tenant, () => tenantToolObserver(tenant, families, guards));
    },
    callFinished({ tenant, method: rawMethod, tool: rawTool, seconds }) {
      const method = guards.method.bound(rawMethod);
      const tool = guards.tool.bound(rawTool);
      cached(durations, `${tenant}\0${method}\0${tool}`, () =>
        families.callDuration.labels({ tenant, method, tool }),
      ).observe(seconds);
    },
  };
}
