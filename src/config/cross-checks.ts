// Checks across sections, run on the whole file even when a field failed: tenant references, API key
// hashes, metrics.port against listen.port, OAuth paths against the edge's own, CORS against allowedOrigins.
import type { z } from 'zod';

/** For a cross-check issue whose key may be missing from the file: the key (and wording) to report instead. */
export interface IssueElsewhere {
  path: (string | number)[];
  message: string;
}

/** Reads a possibly invalid parsed value without trusting its shape (cross-checks run even after errors). */
function recordAt(value: unknown, ...path: string[]): Record<string, unknown> | undefined {
  let current: unknown = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return typeof current === 'object' && current !== null ? (current as Record<string, unknown>) : undefined;
}

/** Tenant references must name a defined tenant; a key hash may identify only one tenant. */
export function checkCrossReferences(config: unknown, ctx: z.RefinementCtx): void {
  const tenants = recordAt(config, 'tenants') ?? {};
  const isDefined = (id: unknown): boolean => typeof id === 'string' && Object.hasOwn(tenants, id);
  const tenancy = recordAt(config, 'tenancy');
  const defaultTenant = tenancy?.default;
  if (typeof defaultTenant === 'string' && defaultTenant !== 'default' && !isDefined(defaultTenant)) {
    ctx.addIssue({
      code: 'custom',
      path: ['tenancy', 'default'],
      message: `tenant "${defaultTenant}" is not defined under tenants`,
    });
  }
  const resolvers = Array.isArray(tenancy?.resolve) ? (tenancy.resolve as unknown[]) : [];
  if (tenancy?.requireIdentified === true && resolvers.length === 0) {
    ctx.addIssue({
      code: 'custom',
      path: ['tenancy', 'requireIdentified'],
      message: 'requireIdentified is true but tenancy.resolve is empty, so every request would be refused',
    });
  }
  const hashOwners = new Map<string, string>();
  resolvers.forEach((resolver, index) => {
    const keyTenants = recordAt(resolver, 'apiKey', 'tenants') ?? {};
    for (const [tenant, hashes] of Object.entries(keyTenants)) {
      const path = ['tenancy', 'resolve', index, 'apiKey', 'tenants', tenant];
      if (!isDefined(tenant)) {
        ctx.addIssue({ code: 'custom', path, message: `tenant "${tenant}" is not defined under tenants` });
      }
      if (!Array.isArray(hashes)) continue;
      hashes.forEach((hash: unknown, hashIndex) => {
        if (typeof hash !== 'string') return;
        const owner = hashOwners.get(hash);
        if (owner !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [...path, hashIndex],
            message: `this key hash is already listed for tenant "${owner}"; a key identifies one tenant`,
          });
        } else hashOwners.set(hash, tenant);
      });
    }
  });
  for (const tenant of Object.keys(recordAt(config, 'hostBudgets', 'tenants') ?? {})) {
    if (tenant !== 'default' && !isDefined(tenant)) {
      ctx.addIssue({
        code: 'custom',
        path: ['hostBudgets', 'tenants', tenant],
        message: `tenant "${tenant}" is not defined under tenants`,
      });
    }
  }
  checkQuotaKeyShare(config, [defaultTenant, ...Object.keys(tenants)], ctx);
  const listen = recordAt(config, 'listen');
  checkOAuthAndCors(config, typeof listen?.path === 'string' ? listen.path : '/mcp', ctx);
  const metrics = recordAt(config, 'metrics');
  if (metrics?.enabled !== false && typeof metrics?.port === 'number' && metrics.port !== 0) {
    if (metrics.port === listen?.port) {
      // Where metrics.port is left at its default, the file has no line for it: the loader then points at listen.port.
      const elsewhere: IssueElsewhere = {
        path: ['listen', 'port'],
        message: `must differ from metrics.port, which is ${metrics.port} by default; set one of them to another port`,
      };
      ctx.addIssue({
        code: 'custom',
        path: ['metrics', 'port'],
        message: 'must differ from listen.port',
        params: { elsewhere },
      });
    }
  }
}

/**
 * The memory quota store gives each tenant maxKeys over the tenants (src/quotas/select-store.ts): a share must
 * hold the keys a tenant's rules keep without a tool, or the tenant would be refused without naming any tool.
 */
function checkQuotaKeyShare(config: unknown, tenantIds: unknown[], ctx: z.RefinementCtx): void {
  const quotas = recordAt(config, 'quotas');
  if (quotas === undefined || quotas.store !== 'memory' || typeof quotas.maxKeys !== 'number') return;
  const tenants = new Set(tenantIds.filter((id) => typeof id === 'string'));
  const rules = Array.isArray(quotas.rules) ? (quotas.rules as unknown[]) : [];
  let needed = 0;
  for (const tenant of tenants) {
    let keys = 0;
    for (const rule of rules) {
      const r = recordAt(rule) ?? {};
      const covers = !Array.isArray(r.tenants) || r.tenants.includes(tenant);
      if (!covers || r.per === 'tenant+tool') continue;
      keys += ['requests', 'requestBytes', 'responseBytes'].filter((m) => r[m] !== undefined).length;
    }
    needed = Math.max(needed, keys);
  }
  const share = Math.floor(quotas.maxKeys / Math.max(1, tenants.size));
  if (share >= needed && share >= 1) return;
  ctx.addIssue({
    code: 'custom',
    path: ['quotas', 'maxKeys'],
    message: `gives each of the ${tenants.size} ${tenants.size === 1 ? 'tenant' : 'tenants'} ${share} ${share === 1 ? 'key' : 'keys'}, fewer than the ${Math.max(1, needed)} its rules keep without a tool; raise it to at least ${Math.max(1, needed) * tenants.size}`,
  });
}

/** Paths the edge serves itself: an OAuth pass-through path must not shadow them. */
const EDGE_OWN_PATHS = ['/healthz', '/readyz', '/.well-known'];

function within(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`);
}

/** OAuth pass-through paths stay clear of the edge's own; CORS grants only origins allowedOrigins lets in. */
function checkOAuthAndCors(config: unknown, listenPath: string, ctx: z.RefinementCtx): void {
  const paths = recordAt(config, 'upstream', 'oauth')?.paths;
  if (Array.isArray(paths)) {
    paths.forEach((path: unknown, index) => {
      if (typeof path !== 'string') return;
      const clash = [listenPath, ...EDGE_OWN_PATHS].find((own) => within(path, own) || within(own, path));
      if (clash !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['upstream', 'oauth', 'paths', index],
          message: `"${path}" overlaps "${clash}", which mcp-edge serves itself`,
        });
      }
    });
  }
  const server = recordAt(config, 'server');
  const allowed = Array.isArray(server?.allowedOrigins) ? (server.allowedOrigins as unknown[]) : [];
  const corsOrigins = recordAt(server, 'cors')?.allowedOrigins;
  if (allowed.length === 0 || !Array.isArray(corsOrigins)) return;
  corsOrigins.forEach((origin: unknown, index) => {
    if (typeof origin !== 'string' || allowed.includes(origin)) return;
    ctx.addIssue({
      code: 'custom',
      path: ['server', 'cors', 'allowedOrigins', index],
      message:
        origin === '*'
          ? '"*" would grant CORS to origins that server.allowedOrigins refuses with 403; list the origins'
          : `"${origin}" is not in server.allowedOrigins, so its requests would be refused with 403; add it there too`,
    });
  });
}
