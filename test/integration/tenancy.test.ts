// Per-tenant limits through the real proxy: identifying the tenant (header, API key, JWT), layered
// policy, `explain`, and config reload while clients keep calling.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, McpError } from '@modelcontextprotocol/sdk/types.js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/tenancy/tenant-resolver.js';
import { connectV1Client } from '../support/clients.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { spawnTsx } from '../support/processes.js';
import { sseReply, startRawUpstream } from '../support/raw-upstream.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge, testEdgeYaml } from '../support/start-edge.js';

const { track, defer } = trackHandles();

const KiB = 1024;
const MCP_HEADERS = MCP_POST_HEADERS;
const SECRET = 'a-test-hmac-secret-that-is-32-bytes-or-more!';

const TWO_TENANTS = `
limits: { response: { maxMessageBytes: 64KiB } }
tenancy:
  default: default
  resolve:
    - header: x-tenant-id
      trustedProxies: [127.0.0.0/8]
tenants:
  acme:
    limits:
      response: { maxMessageBytes: 256KiB }
  beta:
    limits:
      tools: { export_report: { response: { maxMessageBytes: 512KiB } } }
`;

async function outcomeOf(promise: Promise<unknown>): Promise<'ok' | { code: number; data: unknown }> {
  try {
    await promise;
    return 'ok';
  } catch (err) {
    if (err instanceof McpError) return { code: err.code, data: err.data };
    throw err;
  }
}

describe('two tenants, one proxy', () => {
  it('the same oversized call passes for one tenant and is refused for the other; tenant tool overrides apply', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, TWO_TENANTS));
    const acme = track(await connectV1Client(edge.url, { headers: { 'x-tenant-id': 'acme' } }));
    const beta = track(await connectV1Client(edge.url, { headers: { 'x-tenant-id': 'beta' } }));
    const call = { name: 'sized', arguments: { bytes: 100 * KiB } };

    expect(await outcomeOf(acme.client.callTool(call))).toBe('ok');
    const refused = await outcomeOf(beta.client.callTool(call));
    expect(refused).toMatchObject({ code: -32603, data: { tenant: 'beta', limitBytes: 64 * KiB } });

    // beta's own tool override lifts export_report to 512 KiB; acme stays at its 256 KiB.
    const report = { name: 'export_report', arguments: { bytes: 300 * KiB } };
    expect(await outcomeOf(beta.client.callTool(report))).toBe('ok');
    expect(await outcomeOf(acme.client.callTool(report))).toMatchObject({
      data: { tenant: 'acme', limitBytes: 256 * KiB },
    });

    const tenants = edge.logs.filter((l) => l.msg === 'exchange').map((l) => l.tenant);
    expect(new Set(tenants)).toEqual(new Set(['acme', 'beta']));
  });

  it('ignores (and counts) a tenant header from a peer outside trustedProxies', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(server.url, TWO_TENANTS.replace('127.0.0.0/8', '10.0.0.0/8'), { metrics: true }),
    );
    const spoof = track(await connectV1Client(edge.url, { headers: { 'x-tenant-id': 'acme' } }));
    const refused = await outcomeOf(
      spoof.client.callTool({ name: 'sized', arguments: { bytes: 100 * KiB } }),
    );
    expect(refused).toMatchObject({ data: { tenant: 'default', limitBytes: 64 * KiB } });
    const scrape = await (await fetch(edge.metricsUrl!)).text();
    const counted = /mcp_edge_untrusted_tenant_header_total\{[^}]*\} (\d+)/.exec(scrape);
    expect(Number(counted?.[1])).toBeGreaterThan(0);
  });

  it('treats IPv6 loopback peers by their own CIDR', async () => {
    const upstream = track(
      await startRawUpstream(() => sseReply(['data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'])),
    );
    const edge = track(
      await startTestEdge(
        upstream.url,
        TWO_TENANTS.replace('[127.0.0.0/8]', '["::1/128"]').replace('127.0.0.1', '::1'),
      ),
    );
    const v4 = await fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'x-tenant-id': 'acme' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    await v4.text();
    expect(edge.logs.filter((l) => l.msg === 'exchange').at(-1)?.tenant).toBe('default');
  });
});

describe('API keys', () => {
  const KEY = 'acme-key-0123456789';
  const yaml = `
tenancy:
  resolve:
    - apiKey: { header: x-api-key, tenants: { acme: [${sha256Hex(KEY)}] } }
tenants:
  acme: { limits: { response: { maxMessageBytes: 1MiB } } }
`;

  it('right key: its tenant; wrong key: 401 and nothing upstream; no key: the default tenant', async () => {
    const upstream = track(
      await startRawUpstream(() => sseReply(['data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'])),
    );
    const edge = track(await startTestEdge(upstream.url, yaml));
    const post = (headers: Record<string, string>) =>
      fetch(edge.url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, ...headers },
        body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      });

    const right = await post({ 'x-api-key': KEY });
    expect(right.status).toBe(200);
    await right.text();
    const wrong = await post({ 'x-api-key': `${KEY}x` });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { data: { reason: string } } }).error.data.reason).toBe(
      'unauthenticated',
    );
    const none = await post({});
    expect(none.status).toBe(200);
    await none.text();

    const tenants = edge.logs.filter((l) => l.msg === 'exchange').map((l) => [l.tenant, l.status]);
    expect(tenants).toEqual([
      ['acme', 200],
      ['default', 401],
      ['default', 200],
    ]);
    expect(upstream.received).toHaveLength(2);
    // The edge's own credential does not travel upstream, and never reaches a log line.
    expect(upstream.received.every((r) => r.headers['x-api-key'] === undefined)).toBe(true);
    expect(edge.logText()).not.toContain(KEY);
  });

  it('mcp-edge hash-key prints the SHA-256 of a key read from stdin', async () => {
    const child = spawnTsx('src/cli.ts', ['hash-key'], { stdin: true });
    defer(() => child.stop());
    child.child.stdin?.end(`${KEY}\n`);
    expect((await child.exited).code).toBe(0);
    expect(child.stdout().trim()).toBe(sha256Hex(KEY));
  });
});

describe('JWT bearer tokens', () => {
  async function hsToken(
    claims: Record<string, unknown>,
    opts: { exp?: string | number; aud?: string; secret?: string } = {},
  ) {
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('https://issuer.test')
      .setAudience(opts.aud ?? 'mcp-edge')
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? '5m')
      .sign(new TextEncoder().encode(opts.secret ?? SECRET));
  }

  it('valid tokens identify their tenant; expired, wrong audience and wrong signature are refused with 401', async () => {
    const upstream = track(
      await startRawUpstream(() => sseReply(['data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'])),
    );
    const edge = track(
      await startTestEdge(
        upstream.url,
        `
tenancy:
  resolve:
    - jwt: { secret: "${SECRET}", issuer: https://issuer.test, audience: mcp-edge, claim: tenant }
tenants:
  acme: {}
`,
      ),
    );
    const post = (token: string) =>
      fetch(edge.url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
        body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      });
    const valid = await post(await hsToken({ tenant: 'acme' }));
    expect(valid.status).toBe(200);
    await valid.text();
    for (const token of [
      await hsToken({ tenant: 'acme' }, { exp: Math.floor(Date.now() / 1000) - 60 }),
      await hsToken({ tenant: 'acme' }, { aud: 'someone-else' }),
      await hsToken({ tenant: 'acme' }, { secret: 'another-secret-that-is-long-enough-000000' }),
      await hsToken({ tenant: 'nobody' }),
      'abc.def.ghi',
    ]) {
      const refused = await post(token);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
      await refused.text();
    }
    expect(upstream.received).toHaveLength(1);
    expect(edge.logs.find((l) => l.msg === 'exchange')?.tenant).toBe('acme');
  });

  it('verifies RS256 tokens against a JWKS served on loopback', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const jwks: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    defer(() => new Promise((resolve) => jwks.close(resolve)));
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;

    const upstream = track(
      await startRawUpstream(() => sseReply(['data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'])),
    );
    const edge = track(
      await startTestEdge(
        upstream.url,
        `
tenancy:
  requireIdentified: true
  resolve:
    - jwt: { jwks: "${jwksUrl}", audience: mcp-edge, claim: org }
tenants:
  acme: {}
`,
      ),
    );
    const token = await new SignJWT({ org: 'acme' })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setAudience('mcp-edge')
      .setExpirationTime('5m')
      .sign(privateKey);
    const ok = await fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(ok.status).toBe(200);
    await ok.text();
    // requireIdentified: no credential at all is refused too.
    const anonymous = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(anonymous.status).toBe(401);
    expect(upstream.received).toHaveLength(1);
  });
});

describe('explain', () => {
  it('prints the layered effective limits with their sources', async () => {
    const file = `${process.env.TMPDIR ?? '/tmp'}/mcp-edge-explain-${process.pid}.yaml`;
    writeFileSync(
      file,
      `upstream: { url: http://127.0.0.1:3000/mcp }
limits:
  methods: { tools/call: { response: { maxMessageBytes: 2MiB } } }
tenants:
  acme:
    limits:
      tools: { export: { response: { maxMessageBytes: 32MiB } } }
`,
    );
    const child = spawnTsx('src/cli.ts', [
      'explain',
      '--config',
      file,
      '--tenant',
      'acme',
      '--tool',
      'export',
    ]);
    defer(() => child.stop());
    expect((await child.exited).code).toBe(0);
    const out = child.stdout();
    expect(out).toContain('tenant "acme", method "tools/call", tool "export"');
    expect(out).toMatch(
      /response\.maxMessageBytes\s+33,554,432 bytes \(32\.0 MiB\)\s+from tenants\.acme\.limits\.tools\.export\.response\.maxMessageBytes/,
    );
    expect(out).toMatch(/request\.maxBodyBytes\s+4,194,304 bytes \(4\.00 MiB\)\s+from built-in default/);
  });
});

describe('config reload without a restart', () => {
  it('new exchanges get a changed ceiling within 2 s, an in-flight stream keeps its policy, a broken file changes nothing', async () => {
    // The upstream answers tools/call "slow" with an SSE stream whose result comes 1.5 s later.
    const big = `{"jsonrpc":"2.0","id":"slow","result":{"content":[{"type":"text","text":"${'s'.repeat(100 * KiB)}"}]}}`;
    const upstream = track(
      await startRawUpstream((req) => {
        const body = JSON.parse(req.body.toString() || '{}') as { id?: unknown };
        if (body.id === 'slow') return sseReply([': started\n\n', { delayMs: 1500 }, `data: ${big}\n\n`]);
        return sseReply([
          `data: {"jsonrpc":"2.0","id":${JSON.stringify(body.id)},"result":{"content":[{"type":"text","text":"${'x'.repeat(100 * KiB)}"}]}}\n\n`,
        ]);
      }),
    );
    const yamlFor = (limit: string) => `limits: { response: { maxMessageBytes: ${limit} } }`;
    const edge = track(await startTestEdge(upstream.url, yamlFor('1MiB'), { fromFile: true }));
    const call = async (id: string) => {
      const res = await fetch(edge.url, {
        method: 'POST',
        headers: MCP_HEADERS,
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 't' } }),
      });
      return res.text();
    };
    expect(await call('a1')).not.toContain('limit_exceeded');

    // An exchange in flight under the 1 MiB policy...
    const inFlight = call('slow');
    await new Promise((resolve) => setTimeout(resolve, 200));
    // ...while the file changes to 64 KiB.
    writeFileSync(edge.configFile!, testEdgeYaml(upstream.url, yamlFor('64KiB')));
    const changedAt = Date.now();
    let refusedAt = 0;
    while (Date.now() - changedAt < 5000) {
      if ((await call(`b${Date.now()}`)).includes('limit_exceeded')) {
        refusedAt = Date.now();
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(refusedAt).toBeGreaterThan(0);
    expect(refusedAt - changedAt).toBeLessThan(2000);
    expect(await inFlight).toContain(big);

    // A broken file: the 64 KiB policy stays in force, and the failure is logged with its line.
    writeFileSync(
      edge.configFile!,
      testEdgeYaml(upstream.url, 'limits: { response: { maxMessageBytes: 4 mb } }'),
    );
    await expect
      .poll(() => edge.logs.some((l) => l.msg?.toString().startsWith('config reload failed')), {
        timeout: 3000,
      })
      .toBe(true);
    expect(await call('c1')).toContain('limit_exceeded');
    const failure = edge.logs.find((l) => l.msg?.toString().startsWith('config reload failed'));
    expect(String(failure?.error)).toMatch(/:\d+:\d+: limits\.response\.maxMessageBytes/);
  });

  it('reloads on SIGHUP and reports listener changes as needing a restart', async () => {
    const upstream = track(
      await startRawUpstream(() => sseReply(['data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'])),
    );
    const edge = track(await startTestEdge(upstream.url, '', { fromFile: true }));
    writeFileSync(
      edge.configFile!,
      testEdgeYaml(upstream.url, '').replace('port: 0, path: /mcp', 'port: 0, path: /other'),
    );
    const result = await edge.reload();
    expect(result).toEqual({ ok: true, changed: true, restartRequired: ['listen'] });
    // Not half-applied: the edge still serves /mcp.
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(res.status).toBe(200);
    await res.text();
  });
});

// Keep the StreamableHTTPError import meaningful for readers: a 401 reaches SDK clients as a transport error.
describe('SDK clients and the 401', () => {
  it('an SDK v1 client with a wrong API key sees a transport error with status 401', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(
        server.url,
        `
tenancy:
  resolve:
    - apiKey: { tenants: { acme: [${sha256Hex('right')}] } }
tenants: { acme: {} }
`,
      ),
    );
    const err = await connectV1Client(edge.url, { headers: { 'x-api-key': 'wrong' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(401);
    const ok = track(await connectV1Client(edge.url, { headers: { 'x-api-key': 'right' } }));
    const result = (await ok.client.callTool({ name: 'echo', arguments: { text: 'hi' } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
  });
});
