// The `limits:` section and a tenant's own `limits`: blocks of ceilings built from the CEILINGS table, with
// per-method and per-tool overrides.
import { z } from 'zod';
import { CEILINGS, type Ceiling } from '../core/ceilings.js';
import { ceilingSchema, nameKeySchema, sizeAtLeast } from './value-schemas.js';

const limitModeSchema = z.enum(['enforce', 'observe']);

/** A ceiling's value as written: a size for a byte ceiling, a whole number for a count (0: no ceiling). */
function ceilingValueSchema(ceiling: Ceiling) {
  return ceiling.unit === 'bytes'
    ? ceilingSchema
    : z
        .number({ error: `must be a whole number of ${ceiling.unit} (0: no ceiling)` })
        .int()
        .min(0);
}

type Section<D extends Ceiling['direction']> = Extract<Ceiling, { direction: D }>['key'];

/** Which block a section is in: the top-level defaults (every key defaulted), a tenant's, or a method's or tool's. */
type SectionLayer = 'defaults' | 'tenant' | 'override';

/**
 * One `request` or `response` block of ceilings, built from the table: every key optional, or (for the
 * top-level defaults) defaulted to its built-in value. A method's or tool's block has only the ceilings
 * that can differ per method (a batch has no one method).
 */
function ceilingSectionSchema<D extends Ceiling['direction']>(
  direction: D,
  layer: 'defaults',
): z.ZodType<{ [K in Section<D>]: number }, { [K in Section<D>]?: unknown }>;
function ceilingSectionSchema<D extends Ceiling['direction']>(
  direction: D,
  layer: 'tenant' | 'override',
): z.ZodType<{ [K in Section<D>]?: number }, { [K in Section<D>]?: unknown }>;
function ceilingSectionSchema(direction: Ceiling['direction'], layer: SectionLayer): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  for (const ceiling of CEILINGS) {
    if (ceiling.direction !== direction || (layer === 'override' && !ceiling.perMethod)) continue;
    const value = ceilingValueSchema(ceiling);
    shape[ceiling.key] = layer === 'defaults' ? value.default(ceiling.builtin) : value.optional();
  }
  return z.strictObject(shape);
}

const overrideBlockSchema = z.strictObject({
  request: ceilingSectionSchema('request', 'override').optional(),
  response: ceilingSectionSchema('response', 'override').optional(),
});

const overridesSchema = z.record(nameKeySchema, overrideBlockSchema);

/** The top-level `limits`: the defaults of every tenant, completed with the built-in ceilings. */
export const defaultLimitsSchema = z.strictObject({
  mode: limitModeSchema.default('enforce'),
  hardMaxBytes: sizeAtLeast(1).optional(),
  request: ceilingSectionSchema('request', 'defaults').prefault({}),
  response: ceilingSectionSchema('response', 'defaults').prefault({}),
  methods: overridesSchema.default({}),
  tools: overridesSchema.default({}),
});

/** A tenant's own `limits`: same shape, everything optional, no hardMaxBytes (that one is global). */
const tenantLimitsSchema = z.strictObject({
  request: ceilingSectionSchema('request', 'tenant').optional(),
  response: ceilingSectionSchema('response', 'tenant').optional(),
  mode: limitModeSchema.optional(),
  methods: overridesSchema.optional(),
  tools: overridesSchema.optional(),
});

/** One entry of `tenants`. `acme:` with nothing under it (YAML null) declares a tenant with no limits of its own. */
export const tenantSchema = z.preprocess(
  (value) => value ?? {},
  z.strictObject({ limits: tenantLimitsSchema.optional() }),
);

export type TenantLimitsConfig = z.output<typeof tenantLimitsSchema>;
