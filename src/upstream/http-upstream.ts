// The HTTP upstream, the first kind of Upstream: undici Pools carry each admitted exchange to a Streamable
// HTTP MCP server, with the request headers rewritten for it; its answers go back through the call. Calls
// (POST, DELETE) and GET streams have a pool and a count each (connection-slots.ts): a stream open for hours
// never holds a call's connection. The server is the authority on its sessions: its answers (a 404 for a
// session it forgot) are relayed. Messages of the edge's own go by a plain POST; readiness is a TCP connect.
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { type Dispatcher, Pool } from 'undici';
import type { EdgeConfig } from '../config/schema.js';
import { headerValue, upstreamRequestHeaders } from '../core/headers.js';
import { basicAuthorization, redactUrl, withoutCredentials } from '../core/url-credentials.js';
import { CallSlots, type Release, StreamSlots } from './connection-slots.js';
import { mcpReadiness } from './http-readiness.js';
import type { Upstream, UpstreamCall, UpstreamKind } from './upstream.js';

/** Errors of a request written to a connection the upstream had already closed. */
const STALE_CONNECTION_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE']);
/** Methods the edge may send twice: they change nothing upstream (RFC 9110 section 9.2.2). A POST is never resent. */
const RESENDABLE_METHODS: ReadonlySet<string> = new Set(['GET', 'DELETE']);

/**
 * A reset on a pooled connection cannot tell "closed before it read the request" from "read it, then
 * closed": the edge cannot prove a POST never reached the upstream, and a tools/call must never run twice
 * because of the edge. Only an idempotent GET or DELETE is sent once more.
 */
export function resendDelay(method: string, err: unknown, attempt: number): number | null {
  if (attempt > 0 || !RESENDABLE_METHODS.has(method)) return null;
  const code = (err as { code?: string } | null)?.code ?? '';
  return STALE_CONNECTION_CODES.has(code) ? 1 : null;
}

/** The kind: upstream.url; described by its URL, credentials redacted. */
export const httpKind: UpstreamKind = {
  configured: (config) => config.upstream.url !== undefined,
  create: (config, log) => httpUpstream(config, log),
  describe: (config) => redactUrl(config.upstream.url ?? ''),
};

export function httpUpstream(config: EdgeConfig, log: Logger): Upstream {
  const url = config.upstream.url;
  if (url === undefined) throw new Error('the HTTP upstream needs upstream.url');
  const upstream = new URL(url);
  // Userinfo in upstream.url is sent as Basic credentials, never in a URL (see src/core/url-credentials.ts).
  const upstreamAuthorization = basicAuthorization(url);
  // fetch refuses a URL with credentials (and its error would name it).
  const plainUrl = withoutCredentials(url);
  const carried = exchanges(config, upstream, upstreamAuthorization, log);
  return {
    label: redactUrl(url),
    publicName: upstream.origin,
    httpEndpoint: upstream,
    handle: carried.handle,
    // After the last exchange has closed: a request the edge answered itself at shutdown may still wait on
    // the server (a slow tool), and would keep the process alive until it answers.
    close: carried.close,
    send(sessionId, message) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      if (sessionId !== undefined) headers['mcp-session-id'] = sessionId;
      if (upstreamAuthorization !== undefined) headers.authorization = upstreamAuthorization;
      fetch(plainUrl, { method: 'POST', headers, body: JSON.stringify(message) })
        .then((res) => res.body?.cancel())
        .catch((err: unknown) =>
          log.warn({ err: String(err) }, 'could not send a message of the edge upstream'),
        );
    },
    ready: mcpReadiness(
      { url: plainUrl, authorization: upstreamAuthorization, label: redactUrl(url) },
      config,
      log,
    ),
  };
}

/** How the client's request headers go upstream. */
function requestHeadersFor(
  config: EdgeConfig,
  upstream: URL,
  upstreamAuthorization: string | undefined,
  call: UpstreamCall,
): IncomingHttpHeaders {
  const { headers, peer } = call.request;
  return upstreamRequestHeaders(headers, headerValue(headers, 'host'), {
    preserveHost: config.upstream.preserveHost,
    upstreamHost: upstream.host,
    clientAddress: peer ?? '',
    clientProtocol: 'http',
    authorization: upstreamAuthorization,
    ...call.exchange.crossing(headers, peer),
  }) as IncomingHttpHeaders;
}

/** An undici failure as the call takes it: a timeout (504) or an unreachable upstream (502), and its code. */
function failureOf(err: Error): { kind: 'timeout' | 'unreachable'; detail: string } {
  const code = (err as { code?: string }).code;
  const timeout =
    code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || err.name === 'TimeoutError';
  return { kind: timeout ? 'timeout' : 'unreachable', detail: code ?? err.message };
}

/** The pools, their counts, and how one exchange goes through them; close ends whatever they still carry. */
function exchanges(
  config: EdgeConfig,
  upstream: URL,
  upstreamAuthorization: string | undefined,
  log: Logger,
): { handle(call: UpstreamCall): void; close(): Promise<void> } {
  const { timeouts, maxConnections, maxStreamConnections } = config.upstream;
  const poolOf = (connections: number) =>
    new Pool(upstream.origin, {
      connections,
      pipelining: 1,
      headersTimeout: timeouts.headers,
      bodyTimeout: timeouts.idle,
      connect: {
        timeout: timeouts.connect,
        rejectUnauthorized: config.upstream.tls.rejectUnauthorized,
        ...(config.upstream.tls.ca !== undefined ? { ca: readFileSync(config.upstream.tls.ca, 'utf8') } : {}),
      },
    });
  const calls = poolOf(maxConnections);
  const streams = poolOf(maxStreamConnections);
  const callSlots = new CallSlots(maxConnections, timeouts.queue);
  const streamSlots = new StreamSlots(maxStreamConnections);

  /**
   * Runs `send` once a call connection is free. A call that found none within upstream.timeouts.queue gets
   * the 503 of the call's failure path and is never sent; a client that left stops waiting.
   */
  const withCallSlot = (call: UpstreamCall, send: (release: Release) => void) => {
    const leave = callSlots.acquire(send, () =>
      call.fail(
        'capacity',
        `no call connection came free within ${timeouts.queue} ms (upstream.maxConnections: ${maxConnections}, ${callSlots.waiting} waiting)`,
      ),
    );
    call.onClose(leave);
  };

  /** A GET stream opens only within its capacity; past it the client is refused at once. */
  const withStreamSlot = (call: UpstreamCall, send: (release: Release) => void) => {
    const slot = streamSlots.open();
    if (slot !== undefined) {
      send(slot);
      return;
    }
    const { tenant, sessionId } = call.exchange;
    log.warn(
      { tenant, session: sessionId, maxStreamConnections },
      'no room for another GET stream; answered 405',
    );
    call.refuse({ kind: 'stream_capacity', limit: maxStreamConnections });
  };

  /**
   * Sends the request once (a POST is never resent: resendDelay), or a GET or DELETE once more after a reset
   * of a stale pooled connection. A POST's connection slot is the pool's again once its answer's body ended;
   * a GET's or DELETE's when the client's response closes (the relay then ends the upstream request; one
   * still waiting for headers ends when they come, or at upstream.timeouts.headers).
   */
  const handle = (call: UpstreamCall) => {
    const { method, query, body } = call.request;
    const headers = requestHeadersFor(config, upstream, upstreamAuthorization, call);
    const sendsBody = method === 'POST' || (method === 'DELETE' && body.length > 0);
    if (sendsBody) {
      headers['content-length'] = String(body.length);
      headers['content-type'] ??= 'application/json';
    } else headers['content-length'] = undefined; // a length the client claimed for a body not sent
    const options: Dispatcher.RequestOptions = {
      path: upstream.pathname + query,
      method,
      headers: headers as Record<string, string | string[]>,
      ...(sendsBody ? { body } : {}),
    };
    const pool = method === 'GET' ? streams : calls;
    const send = (release: Release) => {
      if (method !== 'POST') call.onClose(release);
      call.exchange.sent();
      attempt(0, release);
    };
    // undici rethrows what its callback throws, where nothing catches it: the exchange's guard takes it, and
    // lets go of an answer's body that no one will read.
    const attempt = (attempts: number, release: Release) => {
      let answer: Readable | undefined;
      pool.request(
        options,
        call.guard(() => answer?.destroy())((err: Error | null, res: Dispatcher.ResponseData) => {
          answer = res?.body;
          if (err !== null) {
            const delay = resendDelay(method, err, attempts);
            if (delay !== null && call.isOpen()) {
              setTimeout(() => attempt(attempts + 1, release), delay);
              return;
            }
            release();
            const failure = failureOf(err);
            call.fail(failure.kind, failure.detail);
            return;
          }
          if (method === 'POST') res.body.once('close', release);
          call.deliver({
            statusCode: res.statusCode,
            headers: res.headers,
            body: { kind: 'bytes', stream: res.body },
          });
        }),
      );
    };
    if (method === 'GET') withStreamSlot(call, send);
    else withCallSlot(call, send);
  };
  const close = async () => {
    await Promise.all([calls.destroy(), streams.destroy()]);
  };
  return { handle, close };
}
