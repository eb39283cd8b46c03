// The second floor: a minimal pass-through proxy of node:http and an undici Pool, no framework. Beside the
// bare @fastify/http-proxy it shows how much of a proxy's cost is Fastify and reply-from, and how much Node.
// Run: node dist/bench/bench/undici-proxy.js PORT UPSTREAM_ORIGIN MAX_CONNECTIONS
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
]);

function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

function main(): void {
  const port = Number(process.argv[2]);
  const upstream = process.argv[3] ?? 'http://127.0.0.1:3000';
  const connections = Number(process.argv[4] ?? 128);
  const pool = new Pool(upstream, { connections, pipelining: 1, headersTimeout: 120_000, bodyTimeout: 0 });
  const server = createServer({ keepAliveTimeout: 72_000 }, (req, res) => {
    if (req.url === '/healthz') {
      res.end('{"status":"ok"}');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      pool.stream(
        {
          path: req.url ?? '/',
          method: req.method as 'POST',
          headers: forwardedHeaders(req.headers),
          body: req.method === 'POST' ? Buffer.concat(chunks) : null,
        },
        ({ statusCode, headers }) => {
          res.statusCode = statusCode;
          for (const name of Object.keys(headers)) {
            const value = headers[name];
            if (value !== undefined && !HOP_BY_HOP.has(name)) res.setHeader(name, value);
          }
          return res;
        },
        (err) => {
          if (err === null) return;
          if (!res.headersSent) {
            res.statusCode = 502;
            res.end();
          } else res.destroy();
        },
      );
    });
  });
  server.listen(port, '127.0.0.1', () => process.stdout.write(`listening ${port}\n`));
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => void pool.close().then(() => process.exit(0)));
  });
}

main();
