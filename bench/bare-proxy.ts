// The floor for our stack: a bare @fastify/http-proxy with no inspection, configured like mcp-edge's
// (same undici pool and timeouts), so the difference between the two is what inspecting costs.
// Run: node dist/bench/bench/bare-proxy.js PORT UPSTREAM_ORIGIN MAX_CONNECTIONS
import httpProxy from '@fastify/http-proxy';
import Fastify from 'fastify';

async function main(): Promise<void> {
  const port = Number(process.argv[2]);
  const upstream = process.argv[3] ?? 'http://127.0.0.1:3000';
  const connections = Number(process.argv[4] ?? 128);
  const app = Fastify({ logger: false, exposeHeadRoutes: false, keepAliveTimeout: 72_000 });
  app.get('/healthz', async () => ({ status: 'ok' }));
  await app.register(httpProxy, {
    upstream,
    prefix: '/mcp',
    rewritePrefix: '/mcp',
    routes: ['/'],
    httpMethods: ['POST', 'GET', 'DELETE'],
    undici: { connections, pipelining: 1, headersTimeout: 120_000, bodyTimeout: 0 },
  });
  await app.listen({ host: '127.0.0.1', port });
  process.stdout.write(`listening ${port}\n`);
  process.once('SIGTERM', () => {
    app.server.closeAllConnections();
    app.close().then(() => process.exit(0));
  });
}

void main();
