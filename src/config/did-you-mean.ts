// "did you mean": for an unknown key, the allowed key nearest to it, or the list of allowed keys.
import { type core, z } from 'zod';
import type { PathSegment } from './config-error.js';
import { edgeConfigSchema } from './schema.js';

/** The schema one step inside optional/default/transform wrappers, where its shape is. */
function unwrapSchema(schema: core.$ZodType): core.$ZodType {
  let current = schema;
  for (;;) {
    if (
      current instanceof z.ZodOptional ||
      current instanceof z.ZodDefault ||
      current instanceof z.ZodPrefault ||
      current instanceof z.ZodNullable
    ) {
      current = current.unwrap();
    } else if (current instanceof z.ZodPipe) {
      current = current.in instanceof z.ZodTransform ? current.out : current.in;
    } else return current;
  }
}

/** The keys the schema allows at a path, for "did you mean". */
export function allowedKeysAt(path: readonly PathSegment[]): string[] {
  let schema = unwrapSchema(edgeConfigSchema);
  for (const segment of path) {
    if (schema instanceof z.ZodObject) {
      const next = (schema.shape as Record<string, core.$ZodType>)[String(segment)];
      if (next === undefined) return [];
      schema = unwrapSchema(next);
    } else if (schema instanceof z.ZodRecord) schema = unwrapSchema(schema.valueType);
    else if (schema instanceof z.ZodArray) schema = unwrapSchema(schema.element);
    else return [];
  }
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution =
        (previous[j - 1] ?? 0) + (a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

export function unknownKeyReason(key: string, allowed: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  for (const candidate of allowed) {
    const distance = editDistance(key, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const hint = best !== undefined ? `did you mean "${best}"?` : `allowed here: ${allowed.join(', ')}`;
  return allowed.length === 0 ? `unknown key "${key}"` : `unknown key "${key}"; ${hint}`;
}
