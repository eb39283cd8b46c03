// The `quotas:` section: what a tenant (or one of its tools) may take over time, counted in one process or
// shared by every replica through Redis. The rules' logic is src/quotas/; this file is only their shape.
import { z } from 'zod';
import { tenantIdSchema } from './tenancy-schema.js';
import { durationSchema, sizeAtLeast } from './value-schemas.js';

/** The shortest window: a window is kept as 60 slots, and a slot under ~16 ms says nothing a clock can keep. */
const MIN_WINDOW_MS = 1000;

const storeSchema = z.union([
  z.literal('memory'),
  z.string().regex(/^rediss?:\/\/[^\s]+$/, {
    error: 'expected "memory", or a Redis URL: redis://host:port/db (rediss:// for TLS)',
  }),
]);

const ruleSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9_-]{1,64}$/, { error: 'a rule name is 1 to 64 characters of a-z, 0-9, "_" or "-"' }),
    window: durationSchema.refine((ms) => ms >= MIN_WINDOW_MS, { error: 'a quota window is at least 1s' }),
    requests: z.number({ error: 'must be a whole number of requests' }).int().min(1).optional(),
    requestBytes: sizeAtLeast(1).optional(),
    responseBytes: sizeAtLeast(1).optional(),
    tools: z
      .array(z.string().min(1).max(128))
      .min(1, { error: 'list at least one tool, or leave tools out' })
      .optional(),
    tenants: z
      .array(tenantIdSchema)
      .min(1, { error: 'list at least one tenant, or leave tenants out' })
      .optional(),
    per: z.enum(['tenant', 'tenant+tool']).default('tenant'),
  })
  .refine(
    (rule) =>
      rule.requests !== undefined || rule.requestBytes !== undefined || rule.responseBytes !== undefined,
    {
      error: 'a rule sets at least one of requests, requestBytes, responseBytes',
    },
  );

export const quotasSchema = z.strictObject({
  store: storeSchema.default('memory'),
  onStoreError: z.enum(['allow', 'refuse']).default('allow'),
  storeTimeout: durationSchema
    .refine((ms) => ms >= 1, { error: 'storeTimeout must be at least 1ms' })
    .default(50),
  // The memory store's bound: the most keys (rule, tenant, tool) it holds, shared evenly by the tenants
  // (src/quotas/select-store.ts); a tenant past its share is refused a new key (a 429 of its own).
  maxKeys: z.number().int().min(1).default(100_000),
  rules: z
    .array(ruleSchema)
    .default([])
    .superRefine((rules, ctx) => {
      const seen = new Set<string>();
      rules.forEach((rule, index) => {
        if (seen.has(rule.name))
          ctx.addIssue({
            code: 'custom',
            path: [index, 'name'],
            message: `rule "${rule.name}" is named twice; names are unique`,
          });
        seen.add(rule.name);
      });
    }),
});

export type QuotasConfig = z.output<typeof quotasSchema>;
export type QuotaRuleConfig = QuotasConfig['rules'][number];
