// Host and Origin checks of server.allowedHosts / server.allowedOrigins: one rule for the MCP endpoint and for
// what mcp-edge serves beside it (OAuth discovery and pass-through, CORS preflights).
import type { IncomingHttpHeaders } from 'node:http';
import { headerValue } from '../core/headers.js';
import { type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';

/** host[:port] as RFC 9110 section 7.2 has it: a name (labels; `_` too, as container names carry), or an IP literal. */
const HOST_PATTERN = /^([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;

/** A Host header as the edge uses it: the name as sent (lower-cased, no port), and the http origin it names. */
export interface ParsedHost {
  readonly name: string;
  readonly origin: string;
}

/** The longest Host kept read: a DNS name (253) with a port; a longer one is read each time it comes. */
const MAX_KEPT_HOST_CHARS = 260;
/** How many Hosts are kept read; the set starts again when full (a client sends one Host, many clients a few). */
const MAX_KEPT_HOSTS = 256;
/** Hosts read before, each with its reading (null: not a host): checked on every request, read by a URL parse. */
const keptHosts = new Map<string, ParsedHost | null>();

/**
 * The one reading of a Host header: undefined when it is not a host[:port] that a URL can carry (a port
 * past 65535, an IP literal that is not one, anything but a host). Every use of the Host (allowedHosts,
 * the edge's public origin) goes through here, so what admission accepts the rest can use.
 */
export function parseHost(host: string): ParsedHost | undefined {
  const kept = keptHosts.get(host);
  if (kept !== undefined) return kept ?? undefined;
  const parsed = readHost(host);
  if (host.length <= MAX_KEPT_HOST_CHARS) {
    if (keptHosts.size >= MAX_KEPT_HOSTS) keptHosts.clear();
    keptHosts.set(host, parsed ?? null);
  }
  return parsed;
}

function readHost(host: string): ParsedHost | undefined {
  const match = HOST_PATTERN.exec(host);
  if (match === null || !URL.canParse(`http://${host}`)) return undefined;
  return { name: (match[1] ?? '').toLowerCase(), origin: new URL(`http://${host}`).origin };
}

export function hostAllowed(allowed: readonly string[], host: string | undefined): boolean {
  if (allowed.length === 0) return true;
  const parsed = host === undefined ? undefined : parseHost(host);
  if (host === undefined || parsed === undefined) return false;
  const lower = host.toLowerCase();
  return allowed.some((a) => {
    const entry = a.toLowerCase();
    return entry === lower || entry === parsed.name;
  });
}

/**
 * The answer the MCP endpoint would give this request for its Host or Origin, or undefined: 400 for a Host
 * that is not a host[:port] (RFC 9110 section 7.2; the edge could not name itself from it), 403 for one that
 * server.allowedHosts does not list, or an Origin that server.allowedOrigins does not.
 */
export function hostOriginRefusal(
  server: { allowedHosts: readonly string[]; allowedOrigins: readonly string[] },
  headers: IncomingHttpHeaders,
): EdgeHttpError | undefined {
  const host = headerValue(headers, 'host');
  if (host !== undefined && parseHost(host) === undefined) {
    return edgeAnswer('invalid_host', { host });
  }
  if (!hostAllowed(server.allowedHosts, host)) {
    return edgeAnswer('forbidden_host', { host });
  }
  const origin = headerValue(headers, 'origin');
  if (origin !== undefined && server.allowedOrigins.length > 0 && !server.allowedOrigins.includes(origin)) {
    return edgeAnswer('forbidden_origin', { origin });
  }
  return undefined;
}

/** The path of a request target, without its query. */
export function pathOf(url: string | undefined): string {
  const target = url ?? '/';
  const query = target.indexOf('?');
  return query === -1 ? target : target.slice(0, query);
}

/** The query of a request target, with its "?" (or ""). */
export function queryOf(url: string | undefined): string {
  const target = url ?? '';
  const query = target.indexOf('?');
  return query === -1 ? '' : target.slice(query);
}
