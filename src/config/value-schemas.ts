// The values every section of the config is made of: sizes and durations (with their JSON Schema form),
// ports, hosts, paths, names used as keys, header names and CIDR ranges.

import { isIP } from 'node:net';
import { z } from 'zod';
import { MAX_NAME_CHARS } from '../core/client-names.js';
import { isPrintable } from '../core/printable.js';
import { DURATION_PATTERN, formatSize, parseDuration, parseSize, SIZE_PATTERN } from './sizes.js';

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A schema that accepts what `parse` accepts and reports what it throws as the reason. */
function parsedBy<T>(parse: (input: unknown) => T) {
  return z.unknown().transform((input, ctx): T => {
    try {
      return parse(input);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: messageOf(error), input });
      return z.NEVER;
    }
  });
}

/**
 * What a size or duration looks like to a JSON Schema validator (schema/mcp-edge.schema.json), which
 * cannot run parseSize or parseDuration: the same pattern, and the same integers.
 */
function sizeJsonSchema(minimum: number, description: string) {
  return {
    description,
    anyOf: [
      { type: 'integer', minimum },
      { type: 'string', pattern: SIZE_PATTERN.source },
    ],
  };
}

export function sizeAtLeast(minimum: number) {
  return parsedBy((input) => {
    const bytes = parseSize(input);
    if (bytes < minimum) throw new Error(`must be at least ${formatSize(minimum)}`);
    return bytes;
  }).meta(
    sizeJsonSchema(
      minimum,
      `Bytes, or a number with B, KB, MB, GB, KiB, MiB or GiB (e.g. "32MiB"); at least ${formatSize(minimum)}.`,
    ),
  );
}

/** A ceiling: bytes, 0 = no ceiling. */
export const ceilingSchema = parsedBy(parseSize).meta(
  sizeJsonSchema(
    0,
    'A ceiling: bytes, or a number with B, KB, MB, GB, KiB, MiB or GiB (e.g. "4MiB"); 0 = no ceiling.',
  ),
);
export const durationSchema = parsedBy(parseDuration).meta({
  description: 'An integer with ms, s, m or h (e.g. "250ms", "30s", "2m"); 0 disables.',
  anyOf: [{ const: 0 }, { type: 'string', pattern: DURATION_PATTERN.source }],
});

export const portSchema = z
  .number({ error: 'expected a port number (an integer 0..65535)' })
  .int({ error: 'expected a port number (an integer 0..65535)' })
  .min(0)
  .max(65535);

export const hostSchema = z.string().regex(/^[^\s/]+$/, { error: 'expected a host name or IP address' });

export const urlPathSchema = z
  .string()
  .regex(/^\/[^\s?#]*$/, { error: 'must be a path starting with "/" (no spaces, query or fragment)' });

/** Object keys that would collide with JavaScript's own object machinery if used as record keys. */
export const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * A method or tool name used as a key. The edge keys a name from the wire only in its bounded form
 * (core/client-names.ts), which is the name itself up to 128 printable characters: a longer name could never
 * match.
 */
export const nameKeySchema = z
  .string()
  .min(1, { error: 'must not be empty' })
  .max(MAX_NAME_CHARS, { error: `a name is at most ${MAX_NAME_CHARS} characters (MCP tool names are 1-128)` })
  .refine(isPrintable, { error: 'a name has no control characters' })
  .refine((name) => !RESERVED_KEYS.has(name), { error: 'this name is reserved' });

/** `10.0.0.0/8`, `::1/128`, or a bare address (one host). Normalized to always carry the prefix. */
export function normalizeCidr(input: string): string {
  const parts = input.split('/');
  const address = parts[0] ?? '';
  const family = address.includes('%') ? 0 : isIP(address);
  if (parts.length > 2 || family === 0) {
    throw new Error(`"${input}" is not a CIDR range; write e.g. 10.0.0.0/8, 127.0.0.1 or ::1/128`);
  }
  const maxPrefix = family === 4 ? 32 : 128;
  const prefix = parts[1];
  if (prefix === undefined) return `${address}/${maxPrefix}`;
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > maxPrefix) {
    throw new Error(`"${input}" has an invalid prefix length; IPv${family} prefixes are 0..${maxPrefix}`);
  }
  return `${address}/${prefix}`;
}

export const cidrSchema = z.string().transform((input, ctx) => {
  try {
    return normalizeCidr(input);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: messageOf(error), input });
    return z.NEVER;
  }
});

export const headerNameSchema = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: 'expected an HTTP header name' })
  .transform((name) => name.toLowerCase());
