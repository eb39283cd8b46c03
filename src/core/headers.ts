// Which headers cross the edge. MCP's own headers (Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID,
// Mcp-Method, Mcp-Name, Mcp-Param-*, Authorization, WWW-Authenticate, ...) pass untouched; hop-by-hop
// headers stop here (RFC 9110 section 7.6.1), and so do the edge's own credentials and identity headers;
// forwarding headers are believed only from a trusted proxy.
export const HOP_BY_HOP = [
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

export interface UpstreamRequestHeaderOptions {
  /** Forward the client's Host (for upstreams that check it themselves) instead of the upstream's own. */
  preserveHost: boolean;
  upstreamHost: string;
  clientAddress: string;
  clientProtocol: 'http' | 'https';
  /** The peer is in `server.trustedProxies`: the forwarding headers it sent are believed and extended. */
  trustedPeer: boolean;
  /** Headers meant for the edge alone (its API keys, a tenant header it may not believe): they stop here. */
  drop: readonly string[];
  /** Headers the edge sets for the upstream (a believed tenant header carries the resolved tenant). */
  set: Readonly<Record<string, string>>;
  /** `Authorization` from `upstream.url`'s userinfo: it replaces whatever the client sent. */
  authorization: string | undefined;
}

/** Forwarding headers the edge extends from a trusted proxy and replaces from anyone else. */
const FORWARDING = ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'forwarded'] as const;
/** Forwarding headers the edge does not set itself: passed from a trusted proxy, dropped from anyone else. */
const FORWARDING_PASSED_ONLY = ['x-forwarded-port', 'x-forwarded-prefix', 'x-forwarded-server', 'x-real-ip'];

function joined(value: string | string[] | number | undefined): string | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(', ') : String(value);
  return text.trim() === '' ? undefined : text;
}

/** RFC 7239 node and value syntax: an IPv6 address is bracketed, and anything but a token is quoted. */
function forwardedValue(value: string, isAddress: boolean): string {
  const text = isAddress && value.includes(':') ? `[${value}]` : value;
  return /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(text) ? text : `"${text.replace(/["\\]/g, '\\$&')}"`;
}

/**
 * X-Forwarded-For/-Host/-Proto and Forwarded as the upstream gets them. From a trusted proxy its values are
 * kept and the edge's hop is added (X-Forwarded-For and Forwarded appended to, the others set when absent);
 * from anyone else they are what the edge saw (the peer address, the Host it was sent, its own protocol), a
 * client's Forwarded is dropped and so are the forwarding headers the edge does not set itself.
 */
function setForwarding(
  headers: Headers,
  client: Headers,
  clientHost: string | undefined,
  options: UpstreamRequestHeaderOptions,
): void {
  const sent: Partial<Record<(typeof FORWARDING)[number], string>> = {};
  if (options.trustedPeer) for (const name of FORWARDING) sent[name] = joined(client[name]);
  const forwardedFor = sent['x-forwarded-for'];
  headers['x-forwarded-for'] =
    forwardedFor !== undefined ? `${forwardedFor}, ${options.clientAddress}` : options.clientAddress;
  const host = sent['x-forwarded-host'] ?? clientHost;
  if (host !== undefined) headers['x-forwarded-host'] = host;
  headers['x-forwarded-proto'] = sent['x-forwarded-proto'] ?? options.clientProtocol;
  const forwarded = sent.forwarded;
  if (forwarded !== undefined) {
    const hop = [`for=${forwardedValue(options.clientAddress, true)}`];
    if (clientHost !== undefined) hop.push(`host=${forwardedValue(clientHost, false)}`);
    hop.push(`proto=${options.clientProtocol}`);
    headers.forwarded = `${forwarded}, ${hop.join(';')}`;
  }
}

const HOP_BY_HOP_NAMES: ReadonlySet<string> = new Set(HOP_BY_HOP);
/** Never copied from the client: the edge sets them itself (or, for Expect, meets it: it reads the whole body). */
const SET_BY_EDGE: ReadonlySet<string> = new Set(['host', 'accept-encoding', 'expect', ...FORWARDING]);
const PASSED_ONLY: ReadonlySet<string> = new Set(FORWARDING_PASSED_ONLY);

/**
 * Headers of the request as it goes upstream, from the client's (the proxy library has set length and type).
 * Built by copying what crosses rather than deleting what does not (deletes send V8 objects to slow mode).
 */
export function upstreamRequestHeaders(
  clientHeaders: Headers,
  clientHost: string | undefined,
  options: UpstreamRequestHeaderOptions,
): Headers {
  const listed = clientHeaders.connection;
  const connectionListed =
    typeof listed === 'string'
      ? new Set(listed.split(',').map((name) => name.trim().toLowerCase()))
      : undefined;
  const headers: Headers = {};
  for (const name in clientHeaders) {
    if (HOP_BY_HOP_NAMES.has(name) || SET_BY_EDGE.has(name)) continue;
    if (connectionListed?.has(name) || (!options.trustedPeer && PASSED_ONLY.has(name))) continue;
    if (options.drop.includes(name)) continue;
    headers[name] = clientHeaders[name];
  }
  headers.host = options.preserveHost && clientHost !== undefined ? clientHost : options.upstreamHost;
  // Sizes are measured on decoded bodies: ask for none, and decode (bounded) if an upstream compresses anyway.
  headers['accept-encoding'] = 'identity';
  setForwarding(headers, clientHeaders, clientHost, options);
  for (const name in options.set) headers[name] = options.set[name];
  if (options.authorization !== undefined) headers.authorization = options.authorization;
  return headers;
}

/** Headers of the upstream's response as they go to the client. `rewritten`: the edge may change the body. */
export function clientResponseHeaders(
  upstreamHeaders: Headers,
  rewritten: boolean,
  decoded: boolean,
): Headers {
  // Built by copying what crosses rather than deleting what does not (deletes send V8 objects to slow mode).
  const listed = upstreamHeaders.connection;
  const connectionListed =
    typeof listed === 'string'
      ? new Set(listed.split(',').map((name) => name.trim().toLowerCase()))
      : undefined;
  const headers: Headers = {};
  for (const name in upstreamHeaders) {
    if (HOP_BY_HOP_NAMES.has(name) || connectionListed?.has(name)) continue;
    if ((rewritten && name === 'content-length') || (decoded && name === 'content-encoding')) continue;
    headers[name] = upstreamHeaders[name];
  }
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
  const semicolon = contentType.indexOf(';');
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

export function isEventStream(contentType: unknown): boolean {
  return mediaType(contentType) === 'text/event-stream';
}

/** Does an Accept header let the answer be an SSE stream? (No header, or a range that covers text/event-stream.) */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (accept === undefined) return true;
  return accept.split(',').some((range) => {
    const type = mediaType(range);
    const covers = type === 'text/event-stream' || type === 'text/*' || type === '*/*';
    return covers && !/;\s*q\s*=\s*0(\.0*)?\s*(;|$)/i.test(range);
  });
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
