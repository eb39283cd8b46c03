// The one bounded form of a value a peer names (a tool, method, prompt, resource URI, request id, progress
// token, session id, a header's text): made once, where the edge first reads the value, and the only form
// that caches, quota keys, metric labels, spans and log lines are given. The value itself still crosses the
// edge byte for byte; only what the edge keeps, keys and shows of it is bounded.
import { createHash } from 'node:crypto';
import { isPrintable, printable } from './printable.js';

/** MCP tool names are 1-128 characters (SEP-986): a name within it is kept as it is, if printable. */
export const MAX_NAME_CHARS = 128;
/** A resource URI may be longer than a name and still be one an operator reads. */
export const MAX_URI_CHARS = 512;
/** Characters of an unfit value kept in front of its digest. */
const PREFIX_CHARS = 64;
/** Hex digits of the SHA-256 that tells two long values apart: 128 bits. */
const DIGEST_HEX = 32;
/** Separates the kept prefix from the digest; a value within bounds never needs it. */
export const DIGEST_MARK = '…#';

/** The first `chars` UTF-16 units of `text`, one fewer when that would cut a surrogate pair in half. */
function prefixOf(text: string, chars: number): string {
  const cut = text.charCodeAt(chars - 1);
  return text.slice(0, cut >= 0xd800 && cut <= 0xdbff ? chars - 1 : chars);
}

/**
 * The bounded form of `raw`: `raw` itself when it is at most `maxChars` long and printable (every name a
 * well-behaved peer sends); otherwise its first characters, escaped, then `…#` and a digest of the whole
 * value, so two unfit values stay apart and none can pass for a fit one (a fit value never holds `…#`
 * followed by its own digest). At most `maxChars` characters either way.
 */
export function boundedName(raw: string, maxChars: number = MAX_NAME_CHARS): string {
  if (raw.length <= maxChars && isPrintable(raw)) return raw;
  const digest = createHash('sha256').update(raw).digest('hex').slice(0, DIGEST_HEX);
  const room = Math.min(PREFIX_CHARS, maxChars - DIGEST_MARK.length - DIGEST_HEX);
  // Escaping may lengthen the prefix sixfold; escape a prefix no longer than what can be kept.
  const prefix = room > 0 ? prefixOf(printable(prefixOf(raw, room)), room) : '';
  return `${prefix}${DIGEST_MARK}${digest}`;
}

/** boundedName of a string value that may be absent. */
export function boundedOptional(raw: string | undefined, maxChars?: number): string | undefined {
  return raw === undefined ? undefined : boundedName(raw, maxChars);
}

/** A resource URI's bounded form: longer than a name's, the same rules. */
export function boundedUri(raw: string): string {
  return boundedName(raw, MAX_URI_CHARS);
}

/** A JSON-RPC id (or progress token) as text for a span or a log line: a number as JSON writes it, a string bounded. */
export function boundedIdText(id: string | number): string {
  return typeof id === 'number' ? String(id) : boundedName(id);
}

/**
 * The key an id or progress token is matched by (a request to its answer, a token to its call): its type and
 * its bounded form, so a long id costs a map what a short one does.
 */
export function idKey(id: string | number | null): string {
  return typeof id === 'string' ? `s:${boundedName(id)}` : `n:${String(id)}`;
}
