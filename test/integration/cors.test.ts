// Browser MCP clients: a CORS preflight exactly as a browser sends it, over a real socket, and the actual
// requests that follow, with server.cors set (the edge answers) and unset (the upstream answers).
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectV1Client } from '../support/clients.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { rawRequest } from '../support/raw-http.js';
import { startRawUpstream } from '../support/raw-upstream.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

const APP = 'http://localhost:5173';

/** The preflight Chrome sends before an SDK client's POST from a page at `origin` (headers in its order). */
function browserPreflight(url: string, origin: string, method = 'POST'): string {
  const { host, pathname, search } = new URL(url);
  return [
    `OPTIONS ${pathname}${search} HTTP/1.1`,
    `Host: ${host}`,
    'Connection: keep-alive',
    'Accept: */*',
    `Access-Control-Request-Method: ${method}`,
    'Access-Control-Request-Headers: authorization,content-type,mcp-protocol-version,mcp-session-id',
    `Origin: ${origin}`,
    'User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36',
    'Sec-Fetch-Mode: cors',
    'Sec-Fetch-Site: cross-site',
    'Sec-Fetch-Dest: empty',
    `Referer: ${origin}/`,
    'Accept-Encoding: gzip, deflate, br, zstd',
    'Accept-Language: en-US,en;q=0.9',
    '',
    '',
  ].join('\r\n');
}

/** Status and lower-cased headers of a raw HTTP/1.1 response. */
function parsed(response: string): { status: number; headers: Record<string, string>; body: string } {
  const [head = '', body = ''] = response.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

async function preflight(url: string, origin: string, method = 'POST') {
  // keep-alive, as a browser sends it: the answer is read until the connection has been quiet a moment.
  const raw = await rawRequest(url, [browserPreflight(url, origin, method)], 400);
  return parsed(raw.response);
}

describe('CORS with server.cors set: the edge answers', () => {
  const CORS_YAML = `server: { cors: { allowedOrigins: ["${APP}"], maxAge: 2h } }`;

  it('answers a browser preflight itself, then the SDK client with Origin works and can read what it needs', async () => {
    const upstream = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(upstream.url, CORS_YAML));
    const answer = await preflight(edge.url, APP);
    expect(answer.status).toBe(204);
    expect(answer.headers).toMatchObject({
      'access-control-allow-origin': APP,
      'access-control-allow-methods': 'POST, GET, DELETE',
      'access-control-allow-headers':
        'content-type, authorization, mcp-session-id, mcp-protocol-version, last-event-id, mcp-method, mcp-name',
      'access-control-max-age': '7200',
    });
    expect(answer.headers.vary).toContain('Origin');
    expect(upstream.requests).toHaveLength(0);

    // The actual requests, as the browser then sends them: with Origin. Every answer grants it.
    const seen: Headers[] = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      seen.push(res.headers);
      return res;
    };
    const client = track(await connectV1Client(edge.url, { headers: { origin: APP }, fetch: recording }));
    const result = (await client.client.callTool({
      name: 'echo',
      arguments: { text: 'hi' },
    })) as CallToolResult;
    expect(result.content[0]).toMatchObject({ type: 'text' });
    expect(seen.length).toBeGreaterThan(1);
    for (const headers of seen) {
      expect(headers.get('access-control-allow-origin')).toBe(APP);
      expect(headers.get('access-control-expose-headers')).toBe(
        'mcp-session-id, www-authenticate, x-request-id',
      );
      expect(headers.get('vary')).toContain('Origin');
    }
    expect(upstream.requests.some((r) => r.method === 'OPTIONS')).toBe(false);
  });

  it('refuses a preflight from an origin it does not grant, and grants nothing on its answers', async () => {
    const upstream = track(await startRawUpstream(() => ({ status: 200, chunks: [] })));
    const edge = track(await startTestEdge(upstream.url, CORS_YAML));
    const answer = await preflight(edge.url, 'https://evil.example');
    expect(answer.status).toBe(403);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    expect(JSON.parse(answer.body)).toMatchObject({ error: { data: { reason: 'forbidden_origin' } } });
    const post = await fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, origin: 'https://evil.example' },
      body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    });
    expect(post.headers.get('access-control-allow-origin')).toBeNull();
    expect(upstream.received.map((r) => r.method)).toEqual(['POST']);
  });

  it("puts its own CORS headers, not the upstream's, on the edge's own errors and on upstream answers", async () => {
    const upstream = track(
      await startRawUpstream(() => ({
        status: 202,
        headers: { 'access-control-allow-origin': '*', 'access-control-allow-credentials': 'true' },
        chunks: [],
      })),
    );
    const edge = track(
      await startTestEdge(
        upstream.url,
        [
          CORS_YAML,
          'tenancy: { requireIdentified: true, resolve: [{ jwt: { secret: "0123456789abcdef0123456789abcdef" } }] }',
        ].join('\n'),
      ),
    );
    // The edge's own 401: a browser client must be able to read its WWW-Authenticate.
    const refused = await fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, origin: APP },
      body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(APP);
    expect(refused.headers.get('access-control-expose-headers')).toContain('www-authenticate');
    expect(refused.headers.get('www-authenticate')).toContain('Bearer');
    // A preflight never carries credentials, so tenancy does not apply to it.
    expect((await preflight(edge.url, APP)).status).toBe(204);
    expect(upstream.received).toHaveLength(0);
    // An upstream answer: the upstream's "*" and credentials grant are replaced by the edge's policy.
    const open = track(await startTestEdge(upstream.url, CORS_YAML));
    const relayed = await fetch(open.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, origin: APP },
      body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    });
    expect(relayed.status).toBe(202);
    expect(relayed.headers.get('access-control-allow-origin')).toBe(APP);
    expect(relayed.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('keeps server.allowedOrigins the gate: a foreign origin is refused with 403 before CORS', async () => {
    const upstream = track(await startRawUpstream(() => ({ status: 200, chunks: [] })));
    const edge = track(
      await startTestEdge(
        upstream.url,
        `server: { allowedOrigins: ["${APP}"], cors: { allowedOrigins: ["${APP}"] } }`,
      ),
    );
    const foreign = await preflight(edge.url, 'https://evil.example');
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body)).toMatchObject({ error: { data: { reason: 'forbidden_origin' } } });
    expect(foreign.body).toContain('server.allowedOrigins');
    expect((await preflight(edge.url, APP)).status).toBe(204);
    expect(upstream.received).toHaveLength(0);
  });
});

describe('CORS with server.cors unset: preflights go to the upstream', () => {
  it("passes a browser preflight to the upstream's MCP endpoint and returns its answer", async () => {
    const upstream = track(
      await startRawUpstream((req) =>
        req.method === 'OPTIONS'
          ? {
              status: 204,
              headers: {
                'access-control-allow-origin': req.headers.origin ?? '',
                'access-control-allow-methods': 'POST, GET, DELETE',
                'access-control-allow-headers': req.headers['access-control-request-headers'] ?? '',
              },
              chunks: [],
            }
          : { status: 202, headers: { 'access-control-allow-origin': APP }, chunks: [] },
      ),
    );
    const edge = track(await startTestEdge(upstream.url));
    const answer = await preflight(`${edge.url}?x=1`, APP);
    expect(answer.status).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe(APP);
    expect(answer.headers['access-control-allow-headers']).toBe(
      'authorization,content-type,mcp-protocol-version,mcp-session-id',
    );
    const received = upstream.received[0];
    expect(received).toMatchObject({ method: 'OPTIONS', url: '/mcp?x=1' });
    expect(received?.headers).toMatchObject({ origin: APP, 'access-control-request-method': 'POST' });
    // The actual request: the upstream's own CORS headers pass.
    const post = await fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, origin: APP },
      body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    });
    expect(post.headers.get('access-control-allow-origin')).toBe(APP);
  });

  it('still answers an OPTIONS that is not a preflight with 405, without asking the upstream', async () => {
    const upstream = track(await startRawUpstream(() => ({ status: 204, chunks: [] })));
    const edge = track(await startTestEdge(upstream.url));
    const res = await fetch(edge.url, { method: 'OPTIONS' });
    expect(res.status).toBe(405);
    expect(upstream.received).toHaveLength(0);
  });
});
