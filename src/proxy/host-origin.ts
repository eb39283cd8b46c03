// Host and Origin checks of server.allowedHosts / server.allowedOrigins, for the requests mcp-edge serves
// outside the MCP endpoint (OAuth discovery and pass-through, CORS preflights): the same 403s as on the endpoint.
import type { IncomingHttpHeaders } from 'node:http';
import { type EdgeHttpError, edgeRefusal } from '../core/errors.js';
import { hostAllowed } from './admission.js';

export function firstHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The 403 the MCP endpoint would give this request for its Host or Origin, or undefined. */
export function hostOriginRefusal(
  server: { allowedHosts: readonly string[]; allowedOrigins: readonly string[] },
  headers: IncomingHttpHeaders,
): EdgeHttpError | undefined {
  const host = firstHeader(headers, 'host');
  if (!hostAllowed(server.allowedHosts, host)) {
    return edgeRefusal(
      403,
      'forbidden_host',
      `Host "${host ?? ''}" is not allowed by this mcp-edge (server.allowedHosts)`,
    );
  }
  const origin = firstHeader(headers, 'origin');
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
