// Security at the edge: nothing secret in logs, nothing internal exposed, TLS verified, foreign Host and
// Origin refused before the upstream sees them.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/load.js';
import { sha256Hex } from '../../src/tenancy/tenant-resolver.js';
import { connectV1Client } from '../support/clients.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { rawRequest } from '../support/raw-http.js';
import { jsonReply, startRawUpstream } from '../support/raw-upstream.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge } from '../support/start-edge.js';

const { track, defer } = trackHandles();

const HEADERS = MCP_POST_HEADERS;

describe('logs never carry bodies or credentials', () => {
  it('a full run with planted secrets leaves none of them in the log', async () => {
    const secrets = {
      bearer: 'planted-bearer-7f3a9c',
      cookie: 'planted-cookie-51be02',
      apiKey: 'planted-api-key-9d41e7',
      jwtSecret: 'planted-jwt-secret-0123456789abcdef0123456789',
      argument: 'planted-argument-c0ffee',
      result: 'planted-result-bead00',
    };
    const jwt = await new SignJWT({ tenant: 'acme' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secrets.jwtSecret));
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(
        server.url,
        `
limits: { response: { maxMessageBytes: 64KiB } }
tenancy:
  resolve:
    - apiKey: { tenants: { acme: [${sha256Hex(secrets.apiKey)}] } }
    - jwt: { secret: "${secrets.jwtSecret}" }
tenants: { acme: {} }
`,
      ),
    );
    const credentials: Record<string, string>[] = [
      { 'x-api-key': secrets.apiKey, cookie: `session=${secrets.cookie}` },
      { authorization: `Bearer ${jwt}`, cookie: `session=${secrets.cookie}` },
    ];
    for (const headers of credentials) {
      const { client } = track(await connectV1Client(edge.url, { headers }));
      await client.callTool({ name: 'echo', arguments: { text: `${secrets.argument} ${secrets.result}` } });
      await client.callTool({ name: 'sized', arguments: { bytes: 100 * 1024 } }).catch(() => {});
    }
    // A refused credential and a broken body are logged too, still without secrets.
    await fetch(edge.url, {
      method: 'POST',
      headers: { ...HEADERS, authorization: `Bearer ${secrets.bearer}.x.y` },
      body: '{}',
    });
    await fetch(edge.url, {
      method: 'POST',
      headers: { ...HEADERS, 'x-api-key': secrets.apiKey },
      body: `{"broken": "${secrets.argument}`,
    });

    const log = edge.logText();
    expect(log.length).toBeGreaterThan(1000);
    expect(edge.logs.filter((l) => l.msg === 'exchange').length).toBeGreaterThanOrEqual(6);
    for (const [name, secret] of Object.entries(secrets)) {
      expect(log.includes(secret), `${name} leaked into the log`).toBe(false);
    }
    expect(log).not.toContain(jwt);
  });
});

describe('nothing internal is exposed', () => {
  it('the metrics listener binds loopback by default, and the proxy port serves neither metrics nor config', async () => {
    expect(defaultConfig({ upstreamUrl: 'http://127.0.0.1:3000/mcp' }).metrics.host).toBe('127.0.0.1');
    const upstream = track(await startRawUpstream(() => jsonReply('{}')));
    const edge = track(await startTestEdge(upstream.url, '', { metrics: true }));
    expect(new URL(edge.metricsUrl!).hostname).toBe('127.0.0.1');
    const base = edge.url.replace(/\/mcp$/, '');
    for (const path of ['/metrics', '/config', '/debug', '/.env']) {
      expect((await fetch(`${base}${path}`)).status).toBe(404);
    }
    expect(upstream.received).toHaveLength(0);
  });
});

describe('upstream TLS', () => {
  function selfSignedCertificate(): { key: string; cert: string; caFile: string } {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    writeFileSync(join(dir, 'ca.pem'), cert);
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert, caFile: join(dir, 'ca.pem') };
  }

  it('verifies certificates by default (502 for an untrusted one) and trusts a configured CA', async () => {
    const tls = selfSignedCertificate();
    const server = createServer({ key: tls.key, cert: tls.cert }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    defer(() => new Promise((resolve) => server.close(resolve)));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const call = (edgeUrl: string) =>
      fetch(edgeUrl, { method: 'POST', headers: HEADERS, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });

    const strict = track(await startTestEdge(url));
    const refused = await call(strict.url);
    expect(refused.status).toBe(502);
    expect(((await refused.json()) as { error: { data: { reason: string } } }).error.data.reason).toBe(
      'upstream_unreachable',
    );

    const trusting = track(await startTestEdge(url, '', { upstreamYaml: `  tls: { ca: ${tls.caFile} }` }));
    const ok = await call(trusting.url);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });
});

describe('DNS rebinding: allowedHosts and allowedOrigins at the edge', () => {
  it('refuses a foreign Host or Origin with 403 before anything reaches the upstream', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply('{"jsonrpc":"2.0","id":1,"result":{}}')));
    const edge = track(
      await startTestEdge(
        upstream.url,
        'server: { allowedHosts: [localhost, 127.0.0.1], allowedOrigins: ["http://localhost:6274"] }',
      ),
    );
    const port = new URL(edge.url).port;
    const send = (host: string, origin?: string) =>
      rawRequest(edge.url, [
        `POST /mcp HTTP/1.1\r\nHost: ${host}\r\n${origin ? `Origin: ${origin}\r\n` : ''}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 40\r\nConnection: close\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"ping"}`,
      ]);
    const foreignHost = await send(`evil.example:${port}`);
    expect(foreignHost.status).toBe(403);
    expect(foreignHost.response).toContain('forbidden_host');
    const foreignOrigin = await send(`localhost:${port}`, 'http://evil.example');
    expect(foreignOrigin.status).toBe(403);
    expect(foreignOrigin.response).toContain('forbidden_origin');
    expect(upstream.received).toHaveLength(0);

    expect((await send(`localhost:${port}`, 'http://localhost:6274')).status).toBe(200);
    expect((await send(`127.0.0.1:${port}`)).status).toBe(200);
    expect(upstream.received).toHaveLength(2);
  });
});
