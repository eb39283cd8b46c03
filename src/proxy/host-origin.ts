// Host and Origin checks of server.allowedHosts / server.allowedOrigins: one rule for the MCP endpoint and for
// what mcp-edge serves beside it (OAuth discovery and pass-through, CORS preflights).
import type { IncomingHttpHeaders } from 'node:http';
import { type EdgeHttpError, edgeRefusal } from '../core/errors.js';
import { headerValue } from './headers.js';

export function hostAllowed(allowed: readonly string[], host: string | undefined): boolean {
  if (allowed.length === 0) return true;
  if (host === undefined) return false;
  const lower = host.toLowerCase();
  const bare = lower.replace(/:\d+$/, '');
  return allowed.some((a) => {
    const entry = a.toLowerCase();
    return entry === lower || entry === bare;
  });
}

/** The 403 the MCP endpoint would give this request for its Host or Origin, or undefined. */
export function hostOriginRefusal(
  server: { allowedHosts: readonly string[]; allowedOrigins: readonly string[] },
  headers: IncomingHttpHeaders,
): EdgeHttpError | undefined {
  const host = headerValue(headers, 'host');
  if (!hostAllowed(server.allowedHosts, host)) {
    return edgeRefusal(
      403,
      'forbidden_host',
      `Host "${host ?? ''}" is not allowed by this mcp-edge (server.allowedHosts)`,
    );
  }
  const origin = headerValue(headers, 'origin');
  if (origin !== undefined && server.allowedOrigins.length > 0 && !server.allowedOrigins.includes(origin)) {
    return edgeRefusal(
      403,
      'forbidden_origin',
      `Origin "${origin}" is not allowed by this mcp-edge (server.allowedOrigins)`,
    );
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
