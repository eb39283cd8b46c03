// An OAuth-protected MCP server behind mcp-edge: an SDK v1 client runs the whole MCP authorization flow
// against the edge's URL (discovery, dynamic client registration, authorization code with PKCE, token) and
// then calls a tool, reaching nothing but the edge (and, where it is separate, the authorization server).
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import {
  originBoundFetch,
  startJwtAuthorizationServer,
  startOAuthMcpServer,
  TestOAuthClient,
} from '../support/oauth-servers.js';
import { freePort } from '../support/ports.js';
import { rawRequest } from '../support/raw-http.js';
import { jsonReply, startRawUpstream } from '../support/raw-upstream.js';
import { startTestEdge } from '../support/start-edge.js';

const { track, defer } = trackHandles();

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

function textOf(result: CallToolResult): string {
  const block = result.content[0];
  return block?.type === 'text' ? block.text : '';
}

/**
 * The SDK client's flow, as an app runs it: connect (401, discovery, registration, redirect), the user agent
 * follows the authorization URL (here: one request, whose redirect carries the code), finishAuth, reconnect.
 */
async function authorizeAndCall(edgeUrl: string, fetchBound: ReturnType<typeof originBoundFetch>) {
  const oauthClient = new TestOAuthClient();
  const first = new StreamableHTTPClientTransport(new URL(edgeUrl), {
    authProvider: oauthClient,
    fetch: fetchBound.fetch,
  });
  const unauthorized = new Client({ name: 'oauth-test', version: '1' });
  await expect(unauthorized.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const authorizationUrl = oauthClient.authorizationUrl;
  if (authorizationUrl === undefined) throw new Error('the client was not sent to authorize');
  expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorizationUrl.searchParams.get('resource')).toBe(edgeUrl);
  const redirect = await fetchBound.fetch(authorizationUrl, { redirect: 'manual' });
  expect(redirect.status).toBe(302);
  const callback = new URL(redirect.headers.get('location') ?? '');
  expect(`${callback.origin}${callback.pathname}`).toBe(oauthClient.redirectUrl);
  const code = callback.searchParams.get('code');
  if (code === null) throw new Error(`no code in the redirect: ${callback.href}`);
  await first.finishAuth(code);
  await unauthorized.close();

  const client = new Client({ name: 'oauth-test', version: '1' });
  defer(() => client.close());
  await client.connect(
    new StreamableHTTPClientTransport(new URL(edgeUrl), {
      authProvider: oauthClient,
      fetch: fetchBound.fetch,
    }),
  );
  const result = (await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult;
  return { oauthClient, whoami: JSON.parse(textOf(result)) as { clientId: string; resource: string } };
}

describe('an OAuth-protected MCP server through mcp-edge', () => {
  it('runs the SDK client flow end to end through the edge when the MCP server is its own authorization server', async () => {
    const upstream = track(await startOAuthMcpServer());
    const edge = track(
      await startTestEdge(upstream.url, '', {
        upstreamYaml: '  oauth: { paths: [/authorize, /token, /register] }',
      }),
    );
    const edgeOrigin = new URL(edge.url).origin;
    // Behind the edge, the authorization server's public issuer is the edge's address.
    upstream.protect({ publicResource: new URL(edge.url), issuer: new URL(edgeOrigin) });

    // What the edge shows of the upstream's 401 and metadata: the edge's address, not the upstream's.
    const challenge = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: INITIALIZE });
    expect(challenge.status).toBe(401);
    expect(challenge.headers.get('www-authenticate')).toContain(
      `resource_metadata="${edgeOrigin}/.well-known/oauth-protected-resource/mcp"`,
    );
    await challenge.arrayBuffer();
    const direct = (await (
      await fetch(`${upstream.origin}/.well-known/oauth-protected-resource/mcp`)
    ).json()) as {
      resource: string;
    };
    expect(direct.resource).toBe(upstream.url);
    const shown = await fetch(`${edgeOrigin}/.well-known/oauth-protected-resource/mcp`);
    expect(shown.status).toBe(200);
    expect(await shown.json()).toEqual({ ...direct, resource: edge.url });

    const reach = originBoundFetch([edgeOrigin]);
    const { oauthClient, whoami } = await authorizeAndCall(edge.url, reach);
    expect(reach.refused).toEqual([]);
    expect(reach.fetched).toEqual(
      expect.arrayContaining([
        `GET ${edgeOrigin}/.well-known/oauth-protected-resource/mcp`,
        `GET ${edgeOrigin}/.well-known/oauth-authorization-server`,
        `POST ${edgeOrigin}/register`,
        `GET ${edgeOrigin}/authorize`,
        `POST ${edgeOrigin}/token`,
        `POST ${edgeOrigin}/mcp`,
      ]),
    );
    expect(whoami).toEqual({
      clientId: oauthClient.registered?.client_id,
      resource: edge.url,
      scopes: ['mcp:tools'],
    });
    // The bearer token went through to the upstream, which verified it itself.
    const call = upstream.requests.filter((r) => r.url === '/mcp' && r.headers.authorization !== undefined);
    expect(call.length).toBeGreaterThan(0);
    expect(call.every((r) => r.headers.authorization === `Bearer ${oauthClient.saved?.access_token}`)).toBe(
      true,
    );
    // OAuth requests are logged without their query or body (codes, verifiers, tokens).
    expect(edge.logText()).not.toContain(oauthClient.saved?.access_token ?? '-');
    expect(edge.logText()).not.toContain('code_challenge');
  });

  it('takes the tenant from a JWT access token the edge verifies against the authorization server JWKS', async () => {
    const authServer = track(await startJwtAuthorizationServer('acme'));
    const upstream = track(await startOAuthMcpServer());
    // The token's audience is the edge's public URL, which the edge's own config names.
    const port = await freePort();
    const edgeUrl = `http://127.0.0.1:${port}/mcp`;
    const edge = track(
      await startTestEdge(
        upstream.url,
        [
          'tenancy:',
          '  requireIdentified: true',
          '  resolve:',
          `    - jwt: { jwks: "${authServer.jwksUrl}", issuer: "${authServer.issuer.href}", audience: "${edgeUrl}", algorithms: [ES256] }`,
          'tenants:',
          '  acme: {}',
        ].join('\n'),
        { port },
      ),
    );
    expect(edge.url).toBe(edgeUrl);
    upstream.protect({ publicResource: new URL(edge.url), authorizationServer: authServer });
    const edgeOrigin = new URL(edge.url).origin;

    // No token: the edge's own tenancy refuses, and its challenge names the metadata the edge serves.
    const challenge = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: INITIALIZE });
    expect(challenge.status).toBe(401);
    expect(challenge.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${edgeOrigin}/.well-known/oauth-protected-resource/mcp"`,
    );
    await challenge.arrayBuffer();
    expect(upstream.requests.filter((r) => r.url === '/mcp')).toHaveLength(0);

    const reach = originBoundFetch([edgeOrigin, authServer.issuer.origin]);
    const { oauthClient, whoami } = await authorizeAndCall(edge.url, reach);
    expect(reach.refused).toEqual([]);
    expect(reach.fetched).toEqual(
      expect.arrayContaining([
        `GET ${edgeOrigin}/.well-known/oauth-protected-resource/mcp`,
        `GET ${authServer.issuer.origin}/.well-known/oauth-authorization-server`,
        `POST ${authServer.issuer.origin}/register`,
        `POST ${authServer.issuer.origin}/token`,
      ]),
    );
    expect(oauthClient.saved?.access_token.split('.')).toHaveLength(3);
    expect(whoami.resource).toBe(edge.url);
    // Every exchange with the token was the tenant its verified claim names.
    const exchanges = edge.logs.filter((l) => l.msg === 'exchange' && l.status === 200);
    expect(exchanges.length).toBeGreaterThan(0);
    expect(exchanges.every((l) => l.tenant === 'acme')).toBe(true);
    const toolCall = exchanges.find((l) => Array.isArray(l.tools) && l.tools.includes('whoami'));
    expect(toolCall?.tenant).toBe('acme');
  });

  it('passes only the discovery documents and the listed paths, maps the resource path, and keeps credentials at the edge', async () => {
    let upstreamOrigin = '';
    const upstream = track(
      await startRawUpstream((req) => {
        if (req.url.startsWith('/.well-known/oauth-protected-resource')) {
          return jsonReply({
            resource: 'http://127.0.0.1:1/v1/mcp',
            authorization_servers: ['https://as.example'],
          });
        }
        if (req.url === '/v1/mcp') {
          return {
            status: 401,
            headers: {
              'content-type': 'application/json',
              'www-authenticate': `Bearer error="invalid_token", resource_metadata="${upstreamOrigin}/.well-known/oauth-protected-resource/v1/mcp", scope="mcp:tools"`,
            },
            chunks: ['{"error":"invalid_token"}'],
          };
        }
        return {
          status: 200,
          headers: { 'content-type': 'text/plain' },
          chunks: [`upstream ${req.method} ${req.url}`],
        };
      }),
    );
    upstreamOrigin = new URL(upstream.url).origin;
    const edge = track(
      await startTestEdge(
        `${upstreamOrigin}/v1/mcp`,
        [
          'server: { publicUrl: "https://mcp.example.com" }',
          'tenancy:',
          '  resolve:',
          '    - apiKey: { header: x-api-key, tenants: { acme: ["2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"] } }',
          'tenants: { acme: {} }',
        ].join('\n'),
        { upstreamYaml: '  oauth: { paths: [/token] }' },
      ),
    );
    const base = new URL(edge.url).origin;

    // The resource path form maps to the upstream's own path; the resource is the public URL.
    const metadata = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`, {
      headers: { authorization: 'Bearer secret-token', 'x-api-key': 'foo', cookie: 'a=b' },
    });
    expect(await metadata.json()).toEqual({
      resource: 'https://mcp.example.com/mcp',
      authorization_servers: ['https://as.example'],
    });
    expect(upstream.received.at(-1)?.url).toBe('/.well-known/oauth-protected-resource/v1/mcp');
    // Discovery documents are public: no credential of any kind is passed on.
    expect(upstream.received.at(-1)?.headers.authorization).toBeUndefined();
    expect(upstream.received.at(-1)?.headers['x-api-key']).toBeUndefined();
    expect(upstream.received.at(-1)?.headers.cookie).toBeUndefined();
    const bare = await fetch(`${base}/.well-known/oauth-protected-resource`);
    expect(((await bare.json()) as { resource: string }).resource).toBe('https://mcp.example.com/mcp');
    expect(upstream.received.at(-1)?.url).toBe('/.well-known/oauth-protected-resource');

    // The upstream's challenge names the edge's public metadata URL; its other parameters stay.
    const challenge = await fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, 'x-api-key': 'foo' },
      body: INITIALIZE,
    });
    expect(challenge.status).toBe(401);
    expect(challenge.headers.get('www-authenticate')).toBe(
      'Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"',
    );
    await challenge.arrayBuffer();

    // Authorization-server documents keep their path; listed paths pass with what is below them.
    for (const path of [
      '/.well-known/oauth-authorization-server/tenant1',
      '/.well-known/openid-configuration',
      '/token/x',
    ]) {
      const res = await fetch(`${base}${path}?a=1`);
      expect(await res.text()).toBe(`upstream GET ${path}?a=1`);
    }
    const token = await fetch(`${base}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: 'Basic Y2xpZW50OnNlY3JldA==',
        'x-api-key': 'foo',
      },
      body: 'grant_type=authorization_code&code=abc',
    });
    expect(await token.text()).toBe('upstream POST /token');
    const posted = upstream.received.at(-1);
    expect(posted?.body.toString()).toBe('grant_type=authorization_code&code=abc');
    expect(posted?.headers.authorization).toBe('Basic Y2xpZW50OnNlY3JldA==');
    expect(posted?.headers['x-api-key']).toBeUndefined();
    expect(posted?.headers['x-forwarded-for']).toBeUndefined();
    expect(edge.logText()).not.toContain('code=abc');

    // Anything else is the edge's 404, and never reaches the upstream.
    const before = upstream.received.length;
    for (const path of [
      '/.well-known/oauth-protected-resource/other',
      '/.well-known/oauth-protected-resource/v1/mcp',
      '/authorize',
      '/tokens',
      '/.well-known/jwks.json',
      '/token/..%2F..%2Fv1/mcp',
      '/token/%2e%2e/v1/mcp',
    ]) {
      const res = await rawRequest(edge.url, [
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
      ]);
      expect(res.status, path).toBe(404);
    }
    expect(upstream.received.length).toBe(before);
  });

  it('passes no discovery document with upstream.oauth.discovery false, and refuses a foreign Host on them', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply({ resource: 'x' })));
    const off = track(
      await startTestEdge(upstream.url, '', { upstreamYaml: '  oauth: { discovery: false }' }),
    );
    const base = new URL(off.url).origin;
    expect((await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).status).toBe(404);
    const guarded = track(await startTestEdge(upstream.url, 'server: { allowedHosts: [mcp.example.com] }'));
    const res = await fetch(`${new URL(guarded.url).origin}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(403);
    expect(upstream.received).toHaveLength(0);
  });

  it('withholds a verified JWT its resolver does not forward on upstream.oauth.paths too, as on the MCP endpoint', async () => {
    const secret = 'a-shared-secret-for-the-jwt-resolver-000000';
    const token = await new SignJWT({ tenant: 'acme' })
      .setProtectedHeader({ alg: 'HS256' })
      .setAudience('mcp-edge')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secret));
    const upstream = track(
      await startRawUpstream((req) =>
        req.url === '/token'
          ? jsonReply({ access_token: 'x' })
          : jsonReply({ jsonrpc: '2.0', id: 1, result: {} }),
      ),
    );
    const authorizationAt = async (forward: boolean) => {
      const edge = track(
        await startTestEdge(
          upstream.url,
          [
            'tenancy:',
            '  resolve:',
            `    - jwt: { secret: "${secret}", audience: mcp-edge, claim: tenant, forward: ${forward} }`,
            'tenants: { acme: {} }',
          ].join('\n'),
          { upstreamYaml: '  oauth: { paths: [/token] }' },
        ),
      );
      const headers = { authorization: `Bearer ${token}` };
      const mcp = await fetch(edge.url, {
        method: 'POST',
        headers: { ...MCP_POST_HEADERS, ...headers },
        body: INITIALIZE,
      });
      expect(mcp.status).toBe(200);
      await mcp.arrayBuffer();
      const atEndpoint = upstream.received.at(-1)?.headers.authorization;
      const tokenAnswer = await fetch(`${new URL(edge.url).origin}/token`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=refresh_token&refresh_token=r',
      });
      expect(tokenAnswer.status).toBe(200);
      await tokenAnswer.arrayBuffer();
      expect(upstream.received.at(-1)?.url).toBe('/token');
      return { atEndpoint, atToken: upstream.received.at(-1)?.headers.authorization };
    };
    // forward: false: the JWT is the edge's alone, on every path.
    expect(await authorizationAt(false)).toEqual({ atEndpoint: undefined, atToken: undefined });
    // forward: true: it is the upstream's token, and crosses on every path.
    expect(await authorizationAt(true)).toEqual({
      atEndpoint: `Bearer ${token}`,
      atToken: `Bearer ${token}`,
    });
  });

  it('warns at start when the Host header would name the resource: discovery on, no publicUrl, no allowedHosts', async () => {
    const warningsOf = async (yaml: string, upstreamYaml?: string) => {
      const edge = track(
        await startTestEdge(
          'http://127.0.0.1:9/mcp',
          yaml,
          upstreamYaml !== undefined ? { upstreamYaml } : {},
        ),
      );
      return edge.logs.filter((line) => line.level === 40).map((line) => line.msg);
    };
    expect(await warningsOf('')).toEqual([
      "upstream.oauth.discovery is on, and neither server.publicUrl nor server.allowedHosts is set: the resource URL in OAuth discovery documents and 401 challenges is taken from each request's Host header, which any client can set. Set server.publicUrl to the URL clients use (or list server.allowedHosts), or set upstream.oauth.discovery: false if the MCP server is not OAuth-protected",
    ]);
    expect(await warningsOf('server: { publicUrl: "https://mcp.example.com" }')).toEqual([]);
    expect(await warningsOf('server: { allowedHosts: [mcp.example.com] }')).toEqual([]);
    expect(await warningsOf('', '  oauth: { discovery: false }')).toEqual([]);
  });
});
