// The 2026-07-28 header check (SEP-2243) as an exchange filter. From that protocol revision a POST mirrors its
// body in headers, so that gateways and rate limiters route without reading it: Mcp-Method the method (every
// request), Mcp-Name the tool, prompt or resource of a tools/call, prompts/get or resources/read. Whoever
// routes, limits or counts by a header while the server runs the body is a confused deputy, and not every
// server checks; the edge reads the body anyway, so it refuses a message whose headers disagree with it (400,
// the table's HeaderMismatch, its id), each message of a batch on its own. A message whose headers agree passes
// untouched. Older revisions mirror nothing: their headers are neither checked nor used. The edge itself
// chooses ceilings, quotas and metrics by the body alone.
import type { IncomingHttpHeaders } from 'node:http';
import { boundedName, boundedUri } from '../../core/client-names.js';
import { headerValue } from '../../core/headers.js';
import { edgeAnswer } from '../../core/refusals/answers.js';
import type { HeaderMismatch } from '../../core/refusals/facts.js';
import type { RequestMessage } from '../../inspect/request-body.js';
import type { ExchangeFilter } from './exchange-filter.js';

/** The first protocol revision whose requests carry the headers (MCP-Protocol-Version compares as a date). */
const FIRST_REVISION = '2026-07-28';

/** The methods Mcp-Name is required for: the body member it mirrors, its value as read, its bounded form. */
const NAMED: Readonly<
  Record<
    string,
    { field: string; of: (m: RequestMessage) => string | undefined; bound: (v: string) => string }
  >
> = {
  'tools/call': { field: 'params.name', of: (m) => m.tool, bound: boundedName },
  'prompts/get': { field: 'params.name', of: (m) => m.prompt, bound: boundedName },
  'resources/read': { field: 'params.uri', of: (m) => m.resourceUri, bound: boundedUri },
};

const SENTINEL_START = '=?base64?';
const SENTINEL_END = '?=';
/** Canonical Base64 (padding where it belongs), as the specification's servers must decode it. */
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** A plain header value: visible ASCII, space and tab (RFC 9110 section 5.5), nothing else. */
const PLAIN_VALUE = /^[\t\x20-\x7e]*$/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The headers a 2026-07-28 request mirrors its body in, as received (node has trimmed their whitespace). */
export interface MirroredHeaders {
  method: string | undefined;
  name: string | undefined;
}

/** The headers to check a request against, or undefined when its revision mirrors nothing in headers. */
export function mirroredHeaders(
  protocolVersion: string | undefined,
  headers: IncomingHttpHeaders,
): MirroredHeaders | undefined {
  if (protocolVersion === undefined || protocolVersion < FIRST_REVISION) return undefined;
  return { method: headerValue(headers, 'mcp-method'), name: headerValue(headers, 'mcp-name') };
}

/**
 * The value an Mcp-Name header carries: itself when it is a plain value, decoded from its Base64 sentinel
 * (UTF-8), or undefined when it is neither (non-ASCII bytes, a sentinel that is not canonical Base64 of
 * UTF-8). The sentinel's markers are case-sensitive.
 */
export function mcpNameValue(header: string): string | undefined {
  if (!PLAIN_VALUE.test(header)) return undefined;
  if (!header.startsWith(SENTINEL_START) || !header.endsWith(SENTINEL_END)) return header;
  const encoded = header.slice(SENTINEL_START.length, header.length - SENTINEL_END.length);
  if (!CANONICAL_BASE64.test(encoded)) return undefined;
  try {
    return UTF8.decode(Buffer.from(encoded, 'base64'));
  } catch {
    return undefined;
  }
}

/**
 * How a message disagrees with the headers of its request, or undefined when it does not. A request needs
 * Mcp-Method, and Mcp-Name where its method mirrors a name its body carries as a string; a notification's
 * Mcp-Method, when there is one, must name its method too; a response mirrors nothing.
 */
export function headerMismatchOf(
  headers: MirroredHeaders,
  message: RequestMessage,
): HeaderMismatch | undefined {
  const method = message.method;
  if (method === undefined) return undefined;
  const sentMethod = headers.method;
  if (sentMethod === undefined) {
    if (message.kind !== 'request') return undefined;
    return { header: 'Mcp-Method', field: 'method', body: method, sent: undefined };
  }
  const plainMethod = PLAIN_VALUE.test(sentMethod) ? boundedName(sentMethod) : null;
  if (plainMethod !== method)
    return { header: 'Mcp-Method', field: 'method', body: method, sent: plainMethod };
  const named = message.kind === 'request' ? NAMED[method] : undefined;
  const bodyName = named?.of(message);
  // Nothing to mirror: another method, or a name that is no string (the server refuses such params).
  if (named === undefined || bodyName === undefined) return undefined;
  const sent = headers.name;
  if (sent === undefined) return { header: 'Mcp-Name', field: named.field, body: bodyName, sent: undefined };
  const value = mcpNameValue(sent);
  const bounded = value !== undefined ? named.bound(value) : null;
  return bounded === bodyName
    ? undefined
    : { header: 'Mcp-Name', field: named.field, body: bodyName, sent: bounded };
}

export function headerCheckFilter(): ExchangeFilter {
  return {
    name: 'header-check',
    requestMessage(exchange, message, request) {
      const headers = mirroredHeaders(exchange.protocolVersion, request.headers);
      const mismatch = headers !== undefined ? headerMismatchOf(headers, message) : undefined;
      return mismatch !== undefined
        ? edgeAnswer('header_mismatch', { mismatch }, message.id ?? null)
        : undefined;
    },
  };
}
