// The `hosts:` and `hostBudgets:` sections: host profiles over the built-ins, and what happens to a tool
// result over the budget of the host that called (src/hosts). Strict like the rest of the config.
import { z } from 'zod';
import { HOST_CHANNELS, HOST_UNITS, type HostUnit } from '../hosts/profiles.js';
import { DEFAULT_MAX_TOKENIZED_CHARS, MAX_PIECE_CHARS } from '../hosts/tokens.js';
import { nameKeySchema } from './value-schemas.js';

/** A host name is a label value: short, plain. `other` is every unknown host's. */
const hostNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, {
    error: 'a host name is 1 to 64 characters of a-z, 0-9, "_", "." or "-", starting with a letter or digit',
  })
  .refine((name) => name !== 'other', { error: '"other" is the label of every host no profile matches' });

const budgetShape = Object.fromEntries(
  HOST_UNITS.map((unit) => [unit, z.number().int().min(1).optional()]),
) as Record<HostUnit, z.ZodOptional<z.ZodNumber>>;

const budgetsSchema = z
  .strictObject(budgetShape)
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    error: `give at least one of ${HOST_UNITS.join(', ')}`,
  });

const hostEntrySchema = z.strictObject({
  title: z.string().min(1).optional(),
  // Patterns tried against the client's name (clientInfo.name, else the User-Agent's first product); `*` is a wildcard.
  match: z.array(z.string().min(1)).min(1).optional(),
  // In the host's own units; given, they replace the built-in's budgets. Each bounds one tool result.
  budgets: budgetsSchema.optional(),
  // The budget of the tool definitions the host shows the model in every conversation (mcp-edge audit
  // judges a catalog by it); given, it replaces the built-in's.
  catalogBudgets: budgetsSchema.optional(),
  channels: z.enum(HOST_CHANNELS).optional(),
});

// Absent sections stay absent in the normalized config (the built-ins and `observe` apply).
export const hostsSchema = z.record(hostNameSchema, hostEntrySchema).optional();

const actionSchema = z.enum(['observe', 'refuse']);
const toolActionsSchema = z.record(nameKeySchema, z.strictObject({ action: actionSchema }));

export const hostBudgetsSchema = z
  .strictObject({
    // observe: count and forward; refuse: replace the result with an error for the same id.
    action: actionSchema.default('observe'),
    tools: toolActionsSchema.optional(),
    tenants: z
      .record(
        nameKeySchema,
        z.strictObject({ action: actionSchema.optional(), tools: toolActionsSchema.optional() }),
      )
      .optional(),
    // The most characters of one result counted in tokens (CPU per result is linear in it); past them the
    // count is an estimate from the part counted, reported as such.
    maxTokenizedCharacters: z
      .number()
      .int()
      .min(16 * MAX_PIECE_CHARS)
      .default(DEFAULT_MAX_TOKENIZED_CHARS),
  })
  .optional();
