// The small HTTP client for what mcp-edge passes to the upstream outside the MCP endpoint: OAuth discovery
// documents, the authorization server's own endpoints (upstream.oauth.paths) and CORS preflights when
// server.cors is unset. These are small documents: bodies are read whole and bounded, never streamed, and
// a redirect is handed to the client (a browser follows it), never followed here.
import { readFileSync } from 'node:fs';
import {
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { EdgeConfig } from '../config/schema.js';
import { guardWith } from '../core/guard.js';
import { HOP_BY_HOP } from '../core/headers.js';

/** Largest answer read from the upstream on these paths (metadata, a token, a login page). */
export const PLAIN_MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * Request headers that cross on these paths, no others: no X-Forwarded-*, no tenant or API-key header of the
 * edge. Authorization and Cookie only where `credentials` is set (the authorization server's endpoints).
 */
const PASSED_REQUEST_HEADERS = [
  'accept',
  'accept-language',
  'content-type',
  'user-agent',
  'mcp-protocol-version',
  'origin',
  'access-control-request-method',
  'access-control-request-headers',
] as const;
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'dpop'] as const;

/** Response headers that do not cross (hop-by-hop, and the framing Fastify sets itself). */
const DROPPED_RESPONSE_HEADERS: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'content-length']);

export interface PlainAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

export class PlainForwardError extends Error {
  constructor(
    readonly kind: 'unreachable' | 'timeout' | 'too_large',
    message: string,
  ) {
    super(message);
  }
}

export interface PlainRequest {
  method: string;
  headers: IncomingHttpHeaders;
  body?: Buffer | undefined;
  /** Pass Authorization and Cookie (the authorization server's endpoints need client credentials). */
  credentials: boolean;
  /** Header names that carry the edge's own credentials: never passed. */
  withheld: readonly string[];
}

export function plainRequestHeaders(request: PlainRequest, upstreamHost: string): Record<string, string> {
  const headers: Record<string, string> = {};
  const names = request.credentials
    ? [...PASSED_REQUEST_HEADERS, ...CREDENTIAL_HEADERS]
    : PASSED_REQUEST_HEADERS;
  for (const name of names) {
    if (request.withheld.includes(name)) continue;
    const value = request.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  headers.host = upstreamHost;
  // Documents the edge may rewrite (protected-resource metadata) must arrive readable.
  headers['accept-encoding'] = 'identity';
  if (request.body !== undefined && request.body.length > 0)
    headers['content-length'] = String(request.body.length);
  return headers;
}

export function plainResponseHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const listed = headers.connection;
  const named = new Set(
    typeof listed === 'string' ? listed.split(',').map((name) => name.trim().toLowerCase()) : [],
  );
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || DROPPED_RESPONSE_HEADERS.has(name) || named.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/** Sends one request to `target` on the upstream and reads its whole answer (bounded). */
export function plainForward(config: EdgeConfig, target: URL, request: PlainRequest): Promise<PlainAnswer> {
  const { timeouts, tls } = config.upstream;
  const options: RequestOptions & { rejectUnauthorized?: boolean; ca?: string } = {
    method: request.method,
    headers: plainRequestHeaders(request, target.host),
    timeout: timeouts.headers > 0 ? timeouts.headers : undefined,
  };
  if (target.protocol === 'https:') {
    options.rejectUnauthorized = tls.rejectUnauthorized;
    if (tls.ca !== undefined) options.ca = readFileSync(tls.ca, 'utf8');
  }
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // These callbacks run outside any try/catch: what they throw (a defect of the edge, never the upstream's
    // doing) rejects this request with that error, which the caller's route answers as the edge's failure.
    const guard = guardWith((err) => {
      req.destroy();
      reject(err);
    });
    const req = send(
      target,
      options,
      guard((res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on(
          'data',
          guard((chunk: Buffer) => {
            bytes += chunk.length;
            if (bytes > PLAIN_MAX_RESPONSE_BYTES) {
              res.destroy();
              reject(
                new PlainForwardError('too_large', `the answer is over ${PLAIN_MAX_RESPONSE_BYTES} bytes`),
              );
              return;
            }
            chunks.push(chunk);
          }),
        );
        res.once(
          'end',
          guard(() =>
            resolve({
              status: res.statusCode ?? 502,
              headers: plainResponseHeaders(res.headers),
              body: Buffer.concat(chunks),
            }),
          ),
        );
        res.once('error', (err) => reject(new PlainForwardError('unreachable', err.message)));
      }),
    );
    req.once(
      'timeout',
      guard(() => req.destroy(new PlainForwardError('timeout', 'no answer in time'))),
    );
    req.once('error', (err) =>
      reject(
        err instanceof PlainForwardError
          ? err
          : new PlainForwardError('unreachable', (err as { code?: string }).code ?? err.message),
      ),
    );
    req.end(request.body !== undefined && request.body.length > 0 ? request.body : undefined);
  });
}
