// The `metrics:` section: the Prometheus endpoint, near-ceiling share, and which series are exported.
import { z } from 'zod';
import { hostSchema, portSchema, urlPathSchema } from './value-schemas.js';

export const metricsSchema = z.strictObject({
  enabled: z.boolean().default(true),
  host: hostSchema.default('127.0.0.1'),
  port: portSchema.default(9464),
  path: urlPathSchema.default('/metrics'),
  // A message above this percentage of its own ceiling counts in mcp_edge_near_ceiling_messages_total.
  nearCeilingPercent: z.number().int().min(1).max(100).default(80),
  // Series switches (docs/operations.md#series-and-what-they-cost): the token histograms, and which tools
  // keep their own `tool` label value (all, none, or only those listed; the rest fold into __other__).
  tokenHistograms: z.boolean().default(true),
  toolLabels: z.union([z.enum(['all', 'none']), z.array(z.string().min(1).max(128))]).default('all'),
});
