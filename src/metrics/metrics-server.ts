// The metrics listener: its own port, apart from the proxy, so a scrape never competes with MCP traffic
// for routes or limits, and the proxy port can be exposed without exposing the metrics.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EdgeMetrics } from './edge-metrics.js';

export interface MetricsServerOptions {
  host: string;
  /** 0 lets the OS pick a free port (the returned url carries the real one). */
  port: number;
  /** e.g. `/metrics`. */
  path: string;
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

function pathOf(url: string | undefined): string {
  const raw = url ?? '/';
  const query = raw.indexOf('?');
  return query === -1 ? raw : raw.slice(0, query);
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(text);
}

/** GET (or HEAD) on the path: the text exposition. Another method on the path: 405. Any other path: 404. */
async function answer(
  metrics: EdgeMetrics,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (pathOf(req.url) !== path) return sendText(res, 404, 'not found\n');
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return sendText(res, 405, 'method not allowed\n', { allow: 'GET, HEAD' });
  }
  try {
    const body = await metrics.registry.metrics();
    res.writeHead(200, { 'content-type': metrics.registry.contentType });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch (error) {
    sendText(
      res,
      500,
      `could not collect metrics: ${error instanceof Error ? error.message : String(error)}\n`,
    );
  }
}

export function startMetricsServer(metrics: EdgeMetrics, opts: MetricsServerOptions): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    void answer(metrics, opts.path, req, res);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://${hostForUrl(opts.host)}:${port}${opts.path}`,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()));
            // Scrapers keep connections alive; close them so close() does not wait for their idle timeout.
            server.closeAllConnections();
          }),
      });
    });
  });
}
