// What crosses the edge towards the upstream, through real sockets: forwarding headers only from trusted
// proxies, the edge's own credentials and tenant headers never, upstream.url credentials as Basic
// authentication and shown nowhere.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/tenancy/tenant-resolver.js';
import { connectV1Client } from '../support/clients.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { jsonReply, startRawUpstream } from '../support/raw-upstream.js';
import { headerValue } from '../support/recorded-request.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

const PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
const SPOOFED = {
  'x-forwarded-for': '10.9.9.9',
  'x-forwarded-host': 'evil.example',
  'x-forwarded-proto': 'https',
  forwarded: 'for=10.9.9.9;host=evil.example;proto=https',
  'x-real-ip': '10.9.9.9',
};

function pingUpstream() {
  return startRawUpstream(() => jsonReply({ jsonrpc: '2.0', id: 1, result: {} }));
}

async function post(url: string, headers: Record<string, string>): Promise<Response> {
  const res = await fetch(url, { method: 'POST', headers: { ...MCP_POST_HEADERS, ...headers }, body: PING });
  await res.arrayBuffer();
  return res;
}

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address !== null ? address.port : 0;
}

describe('forwarding headers', () => {
  it('a client outside server.trustedProxies cannot spoof them: an SDK server sees what the edge saw', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url));
    const { client } = track(await connectV1Client(edge.url, { headers: SPOOFED }));
    await client.listTools();
    const edgeHost = new URL(edge.url).host;
    const posts = server.requests.filter((r) => r.method === 'POST');
    expect(posts.length).toBeGreaterThan(1);
    for (const seen of posts) {
      expect(headerValue(seen.headers, 'x-forwarded-for')).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
      expect(headerValue(seen.headers, 'x-forwarded-host')).toBe(edgeHost);
      expect(headerValue(seen.headers, 'x-forwarded-proto')).toBe('http');
      expect(seen.headers.forwarded).toBeUndefined();
      expect(seen.headers['x-real-ip']).toBeUndefined();
    }
  });

  it('a peer inside server.trustedProxies supplies them, and the edge adds its own hop', async () => {
    const upstream = track(await pingUpstream());
    const edge = track(await startTestEdge(upstream.url, 'server: { trustedProxies: [127.0.0.0/8] }'));
    await post(edge.url, SPOOFED);
    const seen = upstream.received[0]!.headers;
    expect(seen['x-forwarded-for']).toMatch(/^10\.9\.9\.9, (::ffff:)?127\.0\.0\.1$/);
    expect(seen['x-forwarded-host']).toBe('evil.example');
    expect(seen['x-forwarded-proto']).toBe('https');
    expect(seen['x-real-ip']).toBe('10.9.9.9');
    expect(seen.forwarded).toMatch(/^for=10\.9\.9\.9;host=evil\.example;proto=https, for=/);
  });
});

describe('credentials and identity meant for the edge', () => {
  const KEY = 'edge-api-key-0123456789';

  it('API-key bearer mode: the edge key in Authorization never reaches the upstream', async () => {
    const upstream = track(await pingUpstream());
    const edge = track(
      await startTestEdge(
        upstream.url,
        `tenancy:\n  resolve:\n    - apiKey: { bearer: true, tenants: { acme: [${sha256Hex(KEY)}] } }\ntenants: { acme: {} }`,
      ),
    );
    const res = await post(edge.url, { authorization: `Bearer ${KEY}` });
    expect(res.status).toBe(200);
    expect(edge.logs.find((l) => l.msg === 'exchange')?.tenant).toBe('acme');
    expect(upstream.received).toHaveLength(1);
    expect(upstream.received[0]!.headers.authorization).toBeUndefined();
    expect(upstream.received[0]!.rawHeaders.join('\n')).not.toContain(KEY);
  });

  it('a tenant header from an untrusted peer is dropped; from a trusted one it carries the resolved tenant', async () => {
    const upstream = track(await pingUpstream());
    const tenancy = (cidr: string) =>
      `tenancy:\n  resolve:\n    - header: x-tenant-id\n      trustedProxies: [${cidr}]\ntenants: { acme: {} }`;
    const untrusted = track(await startTestEdge(upstream.url, tenancy('10.0.0.0/8')));
    await post(untrusted.url, { 'x-tenant-id': 'acme' });
    expect(upstream.received[0]!.headers['x-tenant-id']).toBeUndefined();

    const trusted = track(await startTestEdge(upstream.url, tenancy('127.0.0.0/8')));
    await post(trusted.url, { 'x-tenant-id': 'acme' });
    await post(trusted.url, { 'x-tenant-id': 'nobody' });
    expect(upstream.received[1]!.headers['x-tenant-id']).toBe('acme');
    expect(upstream.received[2]!.headers['x-tenant-id']).toBe('default');
  });
});

describe('credentials in upstream.url', () => {
  const PASSWORD = 's3cret-Pa55';

  it('are sent upstream as Basic authentication, in place of the client Authorization', async () => {
    const upstream = track(await pingUpstream());
    const url = upstream.url.replace('http://', `http://mcp-user:${PASSWORD}@`);
    const edge = track(await startTestEdge(url, '', { metrics: true }));
    const res = await post(edge.url, { authorization: 'Bearer a-client-token' });
    expect(res.status).toBe(200);
    const expected = `Basic ${Buffer.from(`mcp-user:${PASSWORD}`).toString('base64')}`;
    expect(upstream.received[0]!.headers.authorization).toBe(expected);

    // Shown nowhere: not in the log, not in a metric series.
    expect(edge.logText()).not.toContain(PASSWORD);
    expect(edge.logs.find((l) => typeof l.upstream === 'string')?.upstream).toBe(
      upstream.url.replace('http://', 'http://<redacted>@'),
    );
    const scrape = await (await fetch(edge.metricsUrl!)).text();
    expect(scrape).toContain('mcp_edge_requests_total');
    expect(scrape).not.toContain(PASSWORD);
    expect(scrape).not.toContain('mcp-user');
  });

  it('never reach a client: not in the 502 body, not on /readyz', async () => {
    const port = await closedPort();
    const edge = track(await startTestEdge(`http://mcp-user:${PASSWORD}@127.0.0.1:${port}/mcp`));
    const failed = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: PING });
    expect(failed.status).toBe(502);
    const body = await failed.text();
    expect(body).not.toContain(PASSWORD);
    expect(body).not.toContain('mcp-user');
    const ready = await fetch(new URL('/readyz', edge.url));
    expect(ready.status).toBe(503);
    const readyBody = await ready.text();
    expect(readyBody).not.toContain(PASSWORD);
    expect(readyBody).not.toContain('mcp-user');
    expect(edge.logText()).not.toContain(PASSWORD);
  });
});
