// Which headers cross the edge. MCP's own headers (Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID,
// Mcp-Method, Mcp-Name, Mcp-Param-*, Authorization, WWW-Authenticate, ...) pass untouched; hop-by-hop
// headers stop here (RFC 9110 section 7.6.1).
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
] as const;

type Headers = Record<string, string | string[] | number | undefined>;

function dropHopByHop(headers: Headers): void {
  const listed = headers.connection;
  if (typeof listed === 'string') {
    for (const name of listed.split(',')) delete headers[name.trim().toLowerCase()];
  }
  for (const name of HOP_BY_HOP) delete headers[name];
}

export interface UpstreamRequestHeaderOptions {
  /** Forward the client's Host (for upstreams that check it themselves) instead of the upstream's own. */
  preserveHost: boolean;
  upstreamHost: string;
  clientAddress: string;
  clientProtocol: 'http' | 'https';
}

/** Headers of the request as it goes upstream, from the client's (the proxy library has set length and type). */
export function upstreamRequestHeaders(
  clientHeaders: Headers,
  clientHost: string | undefined,
  options: UpstreamRequestHeaderOptions,
): Headers {
  const headers: Headers = { ...clientHeaders };
  dropHopByHop(headers);
  // The edge reads the whole body before forwarding it: the client's Expect is the edge's to meet, not the upstream's.
  delete headers.expect;
  headers.host = options.preserveHost && clientHost !== undefined ? clientHost : options.upstreamHost;
  // Sizes are measured on decoded bodies: ask for none, and decode (bounded) if an upstream compresses anyway.
  headers['accept-encoding'] = 'identity';
  const forwardedFor = clientHeaders['x-forwarded-for'];
  headers['x-forwarded-for'] = forwardedFor
    ? `${forwardedFor}, ${options.clientAddress}`
    : options.clientAddress;
  if (clientHost !== undefined && clientHeaders['x-forwarded-host'] === undefined)
    headers['x-forwarded-host'] = clientHost;
  if (clientHeaders['x-forwarded-proto'] === undefined) headers['x-forwarded-proto'] = options.clientProtocol;
  return headers;
}

/** Headers of the upstream's response as they go to the client. `rewritten`: the edge may change the body. */
export function clientResponseHeaders(
  upstreamHeaders: Headers,
  rewritten: boolean,
  decoded: boolean,
): Headers {
  const headers: Headers = { ...upstreamHeaders };
  dropHopByHop(headers);
  if (rewritten) delete headers['content-length'];
  if (decoded) delete headers['content-encoding'];
  if (isEventStream(headers['content-type'])) {
    // Nothing between here and the client may buffer or transform the stream.
    headers['x-accel-buffering'] = 'no';
    const cacheControl = headers['cache-control'];
    if (typeof cacheControl !== 'string') headers['cache-control'] = 'no-cache, no-transform';
    else if (!/no-transform/i.test(cacheControl)) headers['cache-control'] = `${cacheControl}, no-transform`;
  }
  return headers;
}

export function mediaType(contentType: unknown): string {
  if (typeof contentType !== 'string') return '';
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

export function isEventStream(contentType: unknown): boolean {
  return mediaType(contentType) === 'text/event-stream';
}

export function isJson(contentType: unknown): boolean {
  const type = mediaType(contentType);
  return type === 'application/json' || type.endsWith('+json');
}

/** The decoder for a Content-Encoding the edge can measure through, or undefined for identity/unknown. */
export function contentCoding(headers: Headers): 'gzip' | 'deflate' | 'br' | 'identity' | 'unsupported' {
  const value = headers['content-encoding'];
  if (value === undefined) return 'identity';
  const coding = String(value).trim().toLowerCase();
  if (coding === '' || coding === 'identity') return 'identity';
  if (coding === 'gzip' || coding === 'x-gzip') return 'gzip';
  if (coding === 'deflate' || coding === 'br') return coding;
  return 'unsupported';
}

/** The first value of a header as node:http gives it (repeated headers arrive as an array). */
export function headerValue(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value[0];
  return value === undefined ? undefined : String(value);
}
