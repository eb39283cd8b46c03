// A scripted HTTP upstream: each request is answered with exactly the bytes a test gives, chunk by chunk,
// with delays between chunks, optionally resetting the connection afterwards. For SSE framing edge
// cases (CRLF / LF / CR line endings, comments, multi-line data), slow or stalled bodies and cut streams.

import { once } from 'node:events';
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { isRecord } from '../../src/core/bytes.js';
import { closeHttpServer, listenOn } from '../../src/demo/server.js';
import { drainedOrClosed, readBody } from './fetch-to-node.js';

export type RawChunk = Buffer | string | { delayMs: number } | { until: Promise<unknown> };

export interface RawReply {
  status: number;
  headers?: OutgoingHttpHeaders;
  /** Written in order, each as its own write; `{ delayMs }` waits before the next one, `{ until }` for its promise. */
  chunks?: RawChunk[];
  /** Destroy the socket after the last chunk instead of ending the response (a cut stream). */
  destroyAfter?: boolean;
  /** Yield an event-loop turn after each chunk, so a reader in this process gets each chunk as its own read. */
  paced?: boolean;
}

export interface RawRequest {
  method: string;
  url: string;
  /** Lower-cased, as node:http gives them. */
  headers: IncomingHttpHeaders;
  /** Names and values as they arrived, alternating. */
  rawHeaders: string[];
  body: Buffer;
}

export type RawHandler = (req: RawRequest) => RawReply | Promise<RawReply>;

export interface RawUpstream {
  /** `http://127.0.0.1:PORT/mcp` (any path is accepted and passed to the handler). */
  url: string;
  /** Every request received, in arrival order, with its exact body bytes. */
  received: RawRequest[];
  close(): Promise<void>;
}

async function writeChunks(
  res: ServerResponse,
  chunks: RawChunk[],
  stop: AbortSignal,
  paced: boolean,
): Promise<void> {
  for (const chunk of chunks) {
    if (res.destroyed || stop.aborted) return;
    if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) {
      if (!res.write(chunk)) await drainedOrClosed(res);
      if (paced) await nextTurn();
    } else if ('until' in chunk) {
      await Promise.race([chunk.until, once(stop, 'abort')]);
    } else {
      await sleep(chunk.delayMs, undefined, { signal: stop }).catch(() => {});
    }
  }
}

export async function startRawUpstream(handler: RawHandler): Promise<RawUpstream> {
  const received: RawRequest[] = [];
  const closing = new AbortController();
  const { server, url } = await listenOn(
    async (req, res) => {
      const request: RawRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: { ...req.headers },
        rawHeaders: [...req.rawHeaders],
        body: await readBody(req),
      };
      received.push(request);
      const reply = await handler(request);
      // A response that goes away (client gone, or close()) stops the script.
      const stop = AbortSignal.any([closing.signal, abortOnClose(res)]);
      res.writeHead(reply.status, reply.headers ?? {});
      res.flushHeaders();
      await writeChunks(res, reply.chunks ?? [], stop, reply.paced === true);
      if (reply.destroyAfter) res.destroy();
      else res.end();
    },
    // Any path: scripts decide what each URL means.
    { anyPath: true },
  );
  return {
    url,
    received,
    async close() {
      closing.abort();
      await closeHttpServer(server);
    },
  };
}

function abortOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  return controller.signal;
}

/** One SSE event with the given line ending: `id`, `event`, `retry` fields, then one `data:` line per data line. */
export function sseEvent(
  fields: { data: string | object; id?: string; event?: string; retry?: number },
  eol: '\n' | '\r\n' | '\r' = '\n',
): string {
  const data = typeof fields.data === 'string' ? fields.data : JSON.stringify(fields.data);
  const lines: string[] = [];
  if (fields.event !== undefined) lines.push(`event: ${fields.event}`);
  if (fields.id !== undefined) lines.push(`id: ${fields.id}`);
  if (fields.retry !== undefined) lines.push(`retry: ${fields.retry}`);
  for (const line of data.split(/\r\n|\r|\n/)) lines.push(`data: ${line}`);
  return lines.join(eol) + eol + eol;
}

/** The JSON-RPC message(s) of a request body, or undefined when it is not JSON. */
export function parseJsonBody(req: RawRequest): unknown {
  try {
    return JSON.parse(req.body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** A 200 application/json reply carrying `message` (stringified unless it is already a string). */
export function jsonReply(message: unknown, headers: OutgoingHttpHeaders = {}): RawReply {
  const body = typeof message === 'string' ? message : JSON.stringify(message);
  return { status: 200, headers: { 'content-type': 'application/json', ...headers }, chunks: [body] };
}

/** A 200 text/event-stream reply made of the given chunks. */
export function sseReply(
  chunks: RawChunk[],
  opts: { headers?: OutgoingHttpHeaders; destroyAfter?: boolean } = {},
): RawReply {
  return {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...opts.headers },
    chunks,
    ...(opts.destroyAfter === undefined ? {} : { destroyAfter: opts.destroyAfter }),
  };
}

/**
 * Answers the MCP handshake so an SDK client can connect to a scripted upstream: `initialize` with a
 * canned result (tools capability, the client's protocol version), any notification with 202, a GET with 405.
 * Returns undefined for everything else, for the script to answer.
 */
export function handshakeReply(req: RawRequest, opts: { sessionId?: string } = {}): RawReply | undefined {
  const sessionHeaders: OutgoingHttpHeaders =
    opts.sessionId === undefined ? {} : { 'mcp-session-id': opts.sessionId };
  if (req.method === 'GET') return { status: 405, headers: { allow: 'POST' } };
  if (req.method === 'DELETE') return { status: 200, headers: sessionHeaders };
  const message = parseJsonBody(req);
  if (!isRecord(message)) return undefined;
  if (message.method === 'initialize') {
    const params = isRecord(message.params) ? message.params : {};
    const protocolVersion =
      typeof params.protocolVersion === 'string' ? params.protocolVersion : '2025-11-25';
    return jsonReply(
      {
        jsonrpc: '2.0',
        id: message.id,
        result: {
          protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: 'raw-upstream', version: '0.0.0' },
        },
      },
      sessionHeaders,
    );
  }
  if (message.id === undefined && typeof message.method === 'string')
    return { status: 202, headers: sessionHeaders };
  return undefined;
}
