// Readiness of an HTTP upstream asks the MCP endpoint, not the port: real MCP servers (server-everything,
// SDK v1 stateful and stateless, SDK v2) are ready; a plain HTTP server that answers HTML 404 at that path,
// and server-everything's own port without /mcp, are not; an OAuth-protected endpoint (401 with a Bearer
// challenge) is. The log at start says which, a warning when the endpoint does not look like MCP, and
// "connection refused" when nothing listens there.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trackHandles } from '../support/handles.js';
import { startRawUpstream } from '../support/raw-upstream.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startV2Server } from '../support/sdk-v2-server.js';
import { type ServerEverything, startServerEverything } from '../support/server-everything.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

const { track } = trackHandles();
let everything: ServerEverything;
let html: Server;
let htmlUrl: string;

beforeAll(async () => {
  everything = await startServerEverything();
  html = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!DOCTYPE html><html><body><h1>404 Not Found</h1></body></html>');
  });
  await new Promise<void>((resolve) => html.listen(0, '127.0.0.1', resolve));
  htmlUrl = `http://127.0.0.1:${(html.address() as AddressInfo).port}/mcp`;
}, 30_000);

afterAll(async () => {
  await everything?.close();
  await new Promise((resolve) => html?.close(resolve));
});

async function readiness(upstreamUrl: string): Promise<{ status: number; edge: TestEdge }> {
  const edge = track(await startTestEdge(upstreamUrl, '', { probeUpstream: true }));
  const res = await fetch(new URL('/readyz', edge.url));
  await res.arrayBuffer();
  return { status: res.status, edge };
}

/** The verdict line the edge logged (at start, or at the first /readyz). */
function verdictLine(edge: TestEdge): Record<string, unknown> | undefined {
  return edge.logs.find((l) => String(l.msg).startsWith('the upstream '));
}

describe('/readyz for an HTTP upstream', () => {
  it('is ready in front of server-everything, and the log says an MCP endpoint answered', async () => {
    const { status, edge } = await readiness(everything.url);
    expect(status).toBe(200);
    expect(verdictLine(edge)).toMatchObject({
      level: 30,
      msg: 'the upstream answers as an MCP endpoint: ready',
    });
    expect(String(verdictLine(edge)?.answer)).toMatch(/JSON-RPC answer/);
  });

  it("is not ready at server-everything's port without /mcp, and the log warns", async () => {
    const { status, edge } = await readiness(`http://127.0.0.1:${everything.port}`);
    expect(status).toBe(503);
    expect(verdictLine(edge)).toMatchObject({ level: 40 });
    expect(String(verdictLine(edge)?.msg)).toContain('does not answer as an MCP endpoint');
  });

  it('is not ready in front of a plain HTTP server that answers HTML 404 at the path', async () => {
    const { status, edge } = await readiness(htmlUrl);
    expect(status).toBe(503);
    expect(verdictLine(edge)).toMatchObject({
      level: 40,
      answer: 'HTTP 404 text/html, not a JSON-RPC answer',
    });
  });

  it('is ready in front of SDK servers: v1 stateful, v1 stateless, v2', async () => {
    for (const server of [
      track(await startV1Server({ mode: 'stateful' })),
      track(await startV1Server({ mode: 'stateless' })),
      track(await startV2Server()),
    ]) {
      const { status, edge } = await readiness(server.url);
      expect({ url: server.url, status }).toEqual({ url: server.url, status: 200 });
      expect(verdictLine(edge)?.level).toBe(30);
    }
  }, 60_000);

  it('is ready in front of an OAuth-protected endpoint (401 with a Bearer challenge), not a bare 401', async () => {
    const protectedServer = track(
      await startRawUpstream(() => ({
        status: 401,
        headers: {
          'www-authenticate':
            'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"',
        },
        chunks: [],
      })),
    );
    expect((await readiness(protectedServer.url)).status).toBe(200);
    const bare = track(await startRawUpstream(() => ({ status: 401, chunks: ['no'] })));
    expect((await readiness(bare.url)).status).toBe(503);
  });

  it('says when the verdict changes: ready, then not once the server is gone', async () => {
    const server = await startV1Server({ mode: 'stateless' });
    const { status, edge } = await readiness(server.url);
    expect(status).toBe(200);
    await server.close();
    const after = await fetch(new URL('/readyz', edge.url));
    expect(after.status).toBe(503);
    const lines = edge.logs.filter((l) => String(l.msg).startsWith('the upstream '));
    expect(lines.map((l) => l.level)).toEqual([30, 40]);
    expect(String(lines[1]?.answer)).toContain('unreachable');
  });
});

describe('/readyz when nothing listens at upstream.url', () => {
  it('says connection refused, not that the path may be wrong', async () => {
    const closed = await startV1Server({ mode: 'stateless' });
    const url = closed.url;
    await closed.close();
    const { status, edge } = await readiness(url);
    expect(status).toBe(503);
    const line = verdictLine(edge);
    expect(line?.level).toBe(40);
    expect(String(line?.msg)).toBe(
      "the upstream is unreachable: not ready (connection refused: is the MCP server running, and listening on upstream.url's host and port?)",
    );
    expect(String(line?.msg)).not.toContain('/mcp included');
    expect(String(line?.answer)).toBe('unreachable (ECONNREFUSED)');
  });
});
