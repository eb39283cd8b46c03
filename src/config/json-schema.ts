// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the config's own ${VAR} syntax, described in text
// The JSON Schema of the config file, generated from the one zod schema (schema.ts) for editors and
// other tools: `npm run schema` writes it to schema/mcp-edge.schema.json, and a test keeps the two equal.
// It describes what the file may contain before mcp-edge reads it, so it also accepts `${VAR}` in any
// value (interpolated at load). Cross-checks (a tenant named in tenancy must exist, metrics.port must
// differ from listen.port, ...) are beyond it: `mcp-edge check-config` remains the authority.
import { z } from 'zod';
import { edgeConfigSchema, tenantSchema } from './schema.js';

export type JsonSchema = { [key: string]: unknown };

/** A string holding `${NAME}` or `${NAME:-fallback}`, the environment references the loader replaces. */
export const ENV_REFERENCE_SCHEMA: JsonSchema = {
  type: 'string',
  pattern: '\\$\\{[A-Za-z_][A-Za-z0-9_]*(:-[^}$]*)?\\}',
  description:
    'An environment variable reference (${NAME} or ${NAME:-fallback}), replaced when the file is loaded.',
};
const ENV_REFERENCE_REF = { $ref: '#/definitions/envReference' };

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value whose form the schema constrains beyond "any string", so a `${VAR}` in its place would fail. */
function isConstrainedValue(node: JsonSchema): boolean {
  if (Array.isArray(node.anyOf) || 'const' in node || 'enum' in node) return true;
  if (node.type === 'integer' || node.type === 'number' || node.type === 'boolean') return true;
  return node.type === 'string' && ('pattern' in node || 'minLength' in node);
}

/**
 * Lets every constrained value also be an environment reference (the alternatives of an anyOf are one
 * value: the reference is added to the anyOf, not to each of them). Keys (propertyNames) are never interpolated.
 */
function allowEnvReferences(node: JsonSchema, isValue = true): JsonSchema {
  const copy: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'properties' && isSchema(value)) {
      copy[key] = Object.fromEntries(
        Object.entries(value).map(([name, child]) => [
          name,
          isSchema(child) ? allowEnvReferences(child) : child,
        ]),
      );
    } else if ((key === 'items' || key === 'additionalProperties') && isSchema(value)) {
      copy[key] = allowEnvReferences(value);
    } else if (key === 'anyOf' && Array.isArray(value)) {
      copy[key] = value.map((child: unknown) => (isSchema(child) ? allowEnvReferences(child, false) : child));
    } else copy[key] = value;
  }
  if (!isValue || !isConstrainedValue(copy)) return copy;
  const { description, default: fallback, ...form } = copy;
  const alternatives = Array.isArray(form.anyOf) && Object.keys(form).length === 1 ? form.anyOf : [form];
  return {
    ...(description !== undefined ? { description } : {}),
    ...(fallback !== undefined ? { default: fallback } : {}),
    anyOf: [...alternatives, ENV_REFERENCE_REF],
  };
}

/** The JSON Schema (draft-07, the draft editors' YAML support handles best) of the config file. */
export function configJsonSchema(): JsonSchema {
  const generated = z.toJSONSchema(edgeConfigSchema, {
    target: 'draft-7',
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      // `acme:` alone is YAML null, which the loader reads as `acme: {}`.
      if (ctx.zodSchema === tenantSchema) {
        const entry = { ...ctx.jsonSchema };
        for (const key of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as JsonSchema)[key];
        Object.assign(ctx.jsonSchema, { anyOf: [{ type: 'null' }, entry] });
      }
    },
  }) as JsonSchema;
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: 'mcp-edge configuration',
    description:
      'The YAML config file of mcp-edge. Every key is documented in config/mcp-edge.example.yaml; `mcp-edge check-config FILE` checks what this schema cannot.',
    ...allowEnvReferences(rest, false),
    definitions: { envReference: ENV_REFERENCE_SCHEMA },
  };
}

/** The file as written: two-space JSON and a final newline. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}
