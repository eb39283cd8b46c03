// The configured ceilings as mcp_edge_limit_bytes exports them, and the method and tool names a policy
// mentions (they keep their own label values past the label bound).
import { ceilingsIn } from '../core/ceilings.js';
import { resolvedCeiling, resolveLimits } from '../core/limits.js';
import type { LimitName, LimitPolicy } from '../core/types.js';

/** mcp_edge_limit_bytes carries the byte ceilings of the table; a count ceiling shows in mcp_edge_limit_exceeded_total. */
const BYTE_CEILINGS = ceilingsIn('bytes');

/** One configured ceiling as exported on mcp_edge_limit_bytes. `bytes` is +Inf when the ceiling is off. */
export interface ConfiguredCeiling {
  tenant: string;
  limit: LimitName;
  method: string;
  tool: string;
  bytes: number;
}

/** A tool override applies to tools/call: that is the method its gauge is labelled with and resolved for. */
const TOOL_METHOD = 'tools/call';

function overrideNames(policy: LimitPolicy, tenant: string, layer: 'methods' | 'tools'): string[] {
  const own = Object.hasOwn(policy.tenants, tenant) ? policy.tenants[tenant]?.limits?.[layer] : undefined;
  return [...new Set([...Object.keys(policy.defaults[layer] ?? {}), ...Object.keys(own ?? {})])];
}

/** Every ceiling to export: each tenant's base, then one per configured method and tool override. */
export function configuredCeilings(policy: LimitPolicy, tenants: readonly string[]): ConfiguredCeiling[] {
  const ceilings: ConfiguredCeiling[] = [];
  for (const tenant of tenants) {
    const probes = [
      { method: '', tool: '' },
      ...overrideNames(policy, tenant, 'methods').map((method) => ({ method, tool: '' })),
      ...overrideNames(policy, tenant, 'tools').map((tool) => ({ method: TOOL_METHOD, tool })),
    ];
    for (const probe of probes) {
      const effective = resolveLimits(policy, {
        tenant,
        method: probe.method === '' ? undefined : probe.method,
        tool: probe.tool === '' ? undefined : probe.tool,
      });
      for (const ceiling of BYTE_CEILINGS) {
        const bytes = resolvedCeiling(effective, ceiling).value ?? Number.POSITIVE_INFINITY;
        ceilings.push({ tenant, limit: ceiling.name, ...probe, bytes });
      }
    }
  }
  return ceilings;
}

/** The method and tool names a policy mentions: they keep their own label values past the cap. */
export function namesInPolicy(policy: LimitPolicy, layer: 'methods' | 'tools'): Set<string> {
  const names = new Set(Object.keys(policy.defaults[layer] ?? {}));
  for (const tenant of Object.values(policy.tenants)) {
    for (const name of Object.keys(tenant.limits?.[layer] ?? {})) names.add(name);
  }
  // Tool override gauges are labelled method="tools/call": keep that value too.
  if (layer === 'methods') names.add(TOOL_METHOD);
  return names;
}
