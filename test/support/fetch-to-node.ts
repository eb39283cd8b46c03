// Serves a web-standard fetch handler ((Request) => Promise<Response>) on node:http, streaming the
// response body as it is produced. (What `toNodeHandler` of @modelcontextprotocol/node does; that
// package is not a dependency here.)
import type { IncomingMessage, ServerResponse } from 'node:http';

export type FetchHandler = (request: Request) => Promise<Response>;

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function toWebHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (let index = 0; index + 1 < req.rawHeaders.length; index += 2) {
    headers.append(req.rawHeaders[index] ?? '', req.rawHeaders[index + 1] ?? '');
  }
  return headers;
}

export function toWebRequest(req: IncomingMessage, body: Buffer, signal: AbortSignal): Request {
  const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD' && body.length > 0;
  return new Request(url, { method, headers: toWebHeaders(req), signal, ...(hasBody ? { body } : {}) });
}

/** Resolves when a full write buffer drains, or when the response goes away (then it never will). */
export function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

async function pipeBody(body: ReadableStream<Uint8Array>, res: ServerResponse): Promise<void> {
  const reader = body.getReader();
  res.once('close', () => {
    reader.cancel().catch(() => {});
  });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || res.destroyed) break;
      if (!res.write(value)) await drainedOrClosed(res);
    }
  } finally {
    res.end();
  }
}

/** Writes a web Response to a node response: status, headers at once (SSE needs them early), then the body. */
export async function writeWebResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  res.writeHead(response.status, response.statusText, headers);
  res.flushHeaders();
  if (response.body === null) {
    res.end();
    return;
  }
  await pipeBody(response.body, res);
}

/**
 * A node:http request handler for `handler`. `onBody` sees each request's raw body bytes before the
 * handler does. A client that goes away aborts the Request's signal.
 */
export function nodeHandlerFor(
  handler: FetchHandler,
  onBody?: (req: IncomingMessage, body: Buffer) => void,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const body = await readBody(req);
    onBody?.(req, body);
    const aborter = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) aborter.abort();
    });
    const response = await handler(toWebRequest(req, body, aborter.signal));
    await writeWebResponse(response, res);
  };
}
