// The one schema of the YAML config. Its output type is the normalized config (sizes in bytes,
// durations in ms) that the rest of mcp-edge reads. Every object is strict: a typo is an error.
// Each section is defined in its own file (server-schema.ts, upstream-schema.ts, metrics-schema.ts,
// limits-schema.ts, tenancy-schema.ts, hosts-schema.ts, over the values of value-schemas.ts); this file
// composes them, runs the checks across sections (cross-checks.ts) and names the types the rest imports.
import { z } from 'zod';
import { checkCrossReferences } from './cross-checks.js';
import { hostBudgetsSchema, hostsSchema } from './hosts-schema.js';
import { defaultLimitsSchema, tenantSchema } from './limits-schema.js';
import { metricsSchema } from './metrics-schema.js';
import { quotasSchema } from './quotas-schema.js';
import { listenSchema, serverSchema } from './server-schema.js';
import { telemetrySchema } from './telemetry-schema.js';
import { tenancySchema, tenantIdSchema } from './tenancy-schema.js';
import { upstreamSchema } from './upstream-schema.js';

export type { IssueElsewhere } from './cross-checks.js';
export type { TenantLimitsConfig } from './limits-schema.js';
export { tenantSchema } from './limits-schema.js';
export type { QuotaRuleConfig, QuotasConfig } from './quotas-schema.js';
export type { CorsConfig } from './server-schema.js';
export type {
  ApiKeyResolverConfig,
  HeaderResolverConfig,
  JwtResolverConfig,
  TenantResolverConfig,
} from './tenancy-schema.js';

export const edgeConfigSchema = z
  .strictObject({
    listen: listenSchema.prefault({}),
    upstream: upstreamSchema,
    metrics: metricsSchema.prefault({}),
    server: serverSchema.prefault({}),
    logging: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      })
      .prefault({}),
    limits: defaultLimitsSchema.prefault({}),
    // Collection pagination is the server's contract; the edge only guards against listings that never end.
    pagination: z
      .strictObject({
        maxPagesPerListing: z.number().int().min(1).default(1000),
      })
      .prefault({}),
    tenancy: tenancySchema.prefault({}),
    tenants: z.record(tenantIdSchema, tenantSchema).default({}),
    // Host profiles (src/hosts) and what happens to a result over the budget of the host that called.
    hosts: hostsSchema,
    hostBudgets: hostBudgetsSchema,
    telemetry: telemetrySchema.prefault({}),
    // Quotas over time (src/quotas): absent, no quota filter runs at all.
    quotas: quotasSchema.optional(),
  })
  .superRefine(checkCrossReferences, { when: () => true });

/** The normalized config: sizes in bytes, durations in milliseconds, defaults filled in. */
export type EdgeConfig = z.output<typeof edgeConfigSchema>;
export type DefaultLimitsConfig = EdgeConfig['limits'];
export type StdioUpstreamConfig = NonNullable<EdgeConfig['upstream']['stdio']>;
