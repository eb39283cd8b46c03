// Readiness of an HTTP upstream: is an MCP endpoint there, not only something listening? The probe POSTs a
// JSON-RPC ping to upstream.url, as a client without a session would, and takes as proof any answer only a
// JSON-RPC endpoint gives: a JSON-RPC response (a stateless server answers the ping; a stateful one refuses
// it with a JSON-RPC error, "no session" or "not initialized", in a 400 or 404), or a 401/403 with a Bearer
// challenge (an OAuth-protected MCP server, which the edge cannot authenticate to itself). An HTML 404 (a
// wrong path), a redirect or a 5xx is not ready. The verdict is logged when it is first known and when it
// changes (a warning when the endpoint does not look like MCP).

import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { EdgeConfig } from '../config/schema.js';
import { isRecord } from '../core/bytes.js';
import { isEventStream, isJson } from '../core/headers.js';

/** The ping the probe sends: its id names the edge, so a server log shows where it came from. */
export const READINESS_PING = JSON.stringify({ jsonrpc: '2.0', id: 'mcp-edge-readiness', method: 'ping' });

/** The most of an answer the probe reads: a JSON-RPC error or a ping's result is far smaller. */
const MAX_PROBE_BYTES = 64 * 1024;

export interface ProbeAnswer {
  status: number;
  contentType: string | undefined;
  wwwAuthenticate: string | undefined;
  /** The start of the body (at most MAX_PROBE_BYTES; for an event stream, up to its first event). */
  body: string;
}

export interface McpVerdict {
  mcp: boolean;
  /** What the answer was, for the log. */
  detail: string;
  /** No answer at all: the connection's error code (ECONNREFUSED, ...), or its message. */
  unreachable?: string;
}

/** Why the probe got no answer, in words that point at the cause (a refused connection is not a wrong path). */
export function unreachableWords(code: string): string {
  switch (code) {
    case 'ECONNREFUSED':
      return "connection refused: is the MCP server running, and listening on upstream.url's host and port?";
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return "upstream.url's host name does not resolve";
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'ABORT_ERR':
    case 'TimeoutError':
      return 'no answer in time (upstream.timeouts.connect): a firewall, or a server too busy to answer a ping';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return `the connection was closed before an answer (${code})`;
    default:
      return code;
  }
}

/** The log line of a verdict: ready, not an MCP endpoint, or no answer at all. */
export function verdictMessage(verdict: McpVerdict): string {
  if (verdict.mcp) return 'the upstream answers as an MCP endpoint: ready';
  if (verdict.unreachable !== undefined)
    return `the upstream is unreachable: not ready (${unreachableWords(verdict.unreachable)})`;
  return 'the upstream does not answer as an MCP endpoint: not ready (is upstream.url the MCP endpoint, /mcp included?)';
}

/** Whether `text` is one JSON-RPC response (a result or an error) or a batch of them. */
function isJsonRpcResponse(text: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  const one = (v: unknown) => isRecord(v) && v.jsonrpc === '2.0' && ('result' in v || 'error' in v);
  return Array.isArray(value) ? value.length > 0 && value.every(one) : one(value);
}

/** The data of the first event of an event stream (its `data:` lines joined), if it has one. */
function firstEventData(stream: string): string | undefined {
  const data: string[] = [];
  for (const line of stream.split(/\r\n|\r|\n/)) {
    if (line === '') {
      if (data.length > 0) return data.join('\n');
      continue;
    }
    if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  return undefined;
}

/** What an answer to the readiness ping says about the endpoint. */
export function mcpVerdict(answer: ProbeAnswer): McpVerdict {
  const { status, contentType } = answer;
  const what = `HTTP ${status}${contentType !== undefined ? ` ${contentType.split(';')[0]}` : ''}`;
  if ((status === 401 || status === 403) && /^\s*Bearer\b/i.test(answer.wwwAuthenticate ?? ''))
    return { mcp: true, detail: `${what} with a Bearer challenge (an OAuth-protected endpoint)` };
  if (status >= 500) return { mcp: false, detail: `${what}: the server failed` };
  if (status >= 200 && status < 500 && !(status >= 300 && status < 400)) {
    const message = isEventStream(contentType)
      ? firstEventData(answer.body)
      : isJson(contentType)
        ? answer.body
        : undefined;
    if (message !== undefined && isJsonRpcResponse(message))
      return { mcp: true, detail: `${what} with a JSON-RPC answer` };
  }
  return { mcp: false, detail: `${what}, not a JSON-RPC answer` };
}

/** What the probe needs of the config: where, how to authenticate, TLS, how long to wait. */
export interface ReadinessTarget {
  /** upstream.url without userinfo. */
  url: string;
  /** Basic credentials from upstream.url's userinfo, if any. */
  authorization: string | undefined;
  /** The name the log uses (credentials redacted). */
  label: string;
}

/** Reads at most MAX_PROBE_BYTES of a body; for an event stream, stops at the end of its first event. */
async function bodyStart(
  body: AsyncIterable<Buffer> & { destroy(): void },
  stream: boolean,
): Promise<string> {
  let text = '';
  for await (const chunk of body) {
    text += chunk.toString('utf8');
    if (text.length >= MAX_PROBE_BYTES || (stream && firstEventData(text) !== undefined)) break;
  }
  body.destroy();
  return text.slice(0, MAX_PROBE_BYTES);
}

/** The readiness check of an HTTP upstream: the ping, its verdict, and the log of each new verdict. */
export function mcpReadiness(
  target: ReadinessTarget,
  config: EdgeConfig,
  log: Logger,
): () => Promise<boolean> {
  const { timeouts, tls } = config.upstream;
  // A ping is answered at once: the probe waits upstream.timeouts.connect to connect and as long again for
  // the answer (not timeouts.headers, which is sized for slow tool calls), 5 s each when connect is 0.
  const waitMs = timeouts.connect > 0 ? timeouts.connect : 5000;
  const agent = new Agent({
    connect: {
      timeout: waitMs,
      rejectUnauthorized: tls.rejectUnauthorized,
      ...(tls.ca !== undefined ? { ca: readFileSync(tls.ca, 'utf8') } : {}),
    },
    headersTimeout: waitMs,
    bodyTimeout: waitMs,
  });
  let last: string | undefined;
  const note = (verdict: McpVerdict) => {
    const key = `${verdict.mcp} ${verdict.detail}`;
    if (key === last) return;
    last = key;
    const fields = { upstream: target.label, answer: verdict.detail };
    if (verdict.mcp) log.info(fields, verdictMessage(verdict));
    else log.warn(fields, verdictMessage(verdict));
  };
  return async () => {
    let verdict: McpVerdict;
    try {
      const res = await request(target.url, {
        method: 'POST',
        dispatcher: agent,
        reset: true,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(target.authorization !== undefined ? { authorization: target.authorization } : {}),
        },
        body: READINESS_PING,
        signal: AbortSignal.timeout(2 * waitMs),
      });
      const header = (name: string) => {
        const value = res.headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      const contentType = header('content-type');
      const body = await bodyStart(res.body, isEventStream(contentType));
      verdict = mcpVerdict({
        status: res.statusCode,
        contentType,
        wwwAuthenticate: header('www-authenticate'),
        body,
      });
    } catch (err) {
      const { code, name } = err as { code?: unknown; name?: unknown };
      const why = typeof code === 'string' ? code : typeof name === 'string' ? name : String(err);
      verdict = { mcp: false, detail: `unreachable (${why})`, unreachable: why };
    }
    note(verdict);
    return verdict.mcp;
  };
}
