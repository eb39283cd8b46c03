// The `limits:` section and a tenant's own `limits`: blocks of ceilings built from the CEILINGS table, with
// per-method and per-tool overrides.
import { z } from 'zod';
import {
  CEILING_CHOICES,
  CEILINGS,
  type Ceiling,
  type CeilingChoice,
  type ChoiceValue,
} from '../core/ceilings.js';
import { BUILTIN_MODE } from '../core/limits.js';
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
type Choices<D extends Ceiling['direction']> = Extract<CeilingChoice, { direction: D }>['key'];
type Optional<D extends Ceiling['direction']> = { [K in Section<D>]?: number } & {
  [K in Choices<D>]?: ChoiceValue<K>;
};

/**
 * Which block a section is in: the top-level defaults, a tenant's, or a method's or tool's. No block fills in
 * a key the file leaves out: the limit resolver owns the built-in values (the tables' `builtin`), so it can
 * tell a built-in from a value the file sets. The defaults carry theirs for the JSON Schema only.
 */
type SectionLayer = 'defaults' | 'tenant' | 'override';

/**
 * One `request` or `response` block of ceilings and choices, built from the tables, every key optional. A
 * method's or tool's block has only the ceilings that can differ per method (a batch has no one method).
 */
function ceilingSectionSchema<D extends Ceiling['direction']>(
  direction: D,
  layer: SectionLayer,
): z.ZodType<Optional<D>, { [K in Section<D> | Choices<D>]?: unknown }>;
function ceilingSectionSchema(direction: Ceiling['direction'], layer: SectionLayer): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  const optional = (value: z.ZodType, builtin: number | string) =>
    layer === 'defaults' ? value.optional().meta({ default: builtin }) : value.optional();
  for (const ceiling of CEILINGS) {
    if (ceiling.direction !== direction || (layer === 'override' && !ceiling.perMethod)) continue;
    shape[ceiling.key] = optional(ceilingValueSchema(ceiling), ceiling.builtin);
  }
  // Every choice may differ per method and tool.
  for (const choice of CEILING_CHOICES) {
    if (choice.direction !== direction) continue;
    shape[choice.key] = optional(z.enum(choice.values), choice.builtin);
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
  mode: limitModeSchema.optional().meta({ default: BUILTIN_MODE }),
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
