// Admission without Fastify or sockets: which requests become exchanges of which tenant, and the refusals.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { edgeAnswer } from '../../src/core/refusals/answers.js';
import { runtimeOf } from '../../src/exchange/exchange.js';
import { admit } from '../../src/proxy/admission.js';
import { FilterChain } from '../../src/proxy/filters/filter-chain.js';
import { parseHost } from '../../src/proxy/host-origin.js';
import { createLogger } from '../../src/run.js';
import { sha256Hex } from '../../src/tenancy/tenant-resolver.js';

function runtime(yaml: string) {
  const { config } = parseConfigText(
    `upstream: { url: http://127.0.0.1:3000/mcp }\n${yaml}`,
    'edge.yaml',
    {},
  );
  return runtimeOf(config);
}

const KEY = 'k-acme-0123456789';
const edge = runtime(
  [
    'server: { allowedHosts: [mcp.example.com], allowedOrigins: ["https://app.example.com"] }',
    `tenancy: { resolve: [ { apiKey: { header: x-api-key, tenants: { acme: ["${sha256Hex(KEY)}"] } } } ] }`,
    'tenants: { acme: {} }',
  ].join('\n'),
);
const ctx = { filters: new FilterChain([], createLogger('silent')) };
const host = { host: 'mcp.example.com' };

describe('admit', () => {
  it('admits a request with a right key as an exchange of its tenant, with its session', async () => {
    const admission = await admit(ctx, edge, {
      method: 'POST',
      headers: { ...host, 'x-api-key': KEY, 'mcp-session-id': 's-1' },
      peer: '127.0.0.1',
    });
    expect(admission.ok).toBe(true);
    expect(admission.exchange).toMatchObject({ tenant: 'acme', sessionId: 's-1', mode: 'enforce' });
  });

  it('gives a request without a credential the default tenant', async () => {
    const admission = await admit(ctx, edge, { method: 'GET', headers: host, peer: '127.0.0.1' });
    expect(admission).toMatchObject({ ok: true, exchange: { tenant: 'default' } });
  });

  it.each([
    ['a method the endpoint does not take', { method: 'PUT', headers: host }, 405, 'method_not_allowed'],
    ['a foreign Host', { method: 'POST', headers: { host: 'evil.example' } }, 403, 'forbidden_host'],
    [
      'a foreign Origin',
      { method: 'POST', headers: { ...host, origin: 'https://evil.example' } },
      403,
      'forbidden_origin',
    ],
    [
      'a wrong API key',
      { method: 'POST', headers: { ...host, 'x-api-key': 'wrong' } },
      401,
      'unauthenticated',
    ],
  ])('refuses %s under the default tenant', async (_what, request, status, reason) => {
    const admission = await admit(ctx, edge, { ...request, peer: '127.0.0.1' });
    expect(admission.ok).toBe(false);
    if (admission.ok) return;
    expect(admission.exchange.tenant).toBe('default');
    expect(admission.refusal.status).toBe(status);
    expect(JSON.parse(admission.refusal.body)).toMatchObject({
      error: { data: { reason, enforcedBy: 'mcp-edge' } },
    });
    if (status === 405) expect(admission.refusal.headers.allow).toBe('POST, GET, DELETE');
  });
});

describe('admit: a Host the edge cannot use in a URL', () => {
  // The default config: no server.allowedHosts, so nothing else looks at the Host before the edge names itself.
  const open = runtime('');

  it.each(['a:99999', '[1.2.3.4]', '127.0.0.1:65536', 'a b', 'user@evil.example'])(
    'refuses Host "%s" with 400 before the upstream',
    async (badHost) => {
      const admission = await admit(ctx, open, {
        method: 'POST',
        headers: { host: badHost },
        peer: '127.0.0.1',
      });
      expect(admission.ok).toBe(false);
      if (admission.ok) return;
      expect(admission.refusal.status).toBe(400);
      expect(JSON.parse(admission.refusal.body)).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: `Host "${badHost}" is not a valid host[:port] (RFC 9110 section 7.2)`,
          data: { reason: 'invalid_request', enforcedBy: 'mcp-edge' },
        },
      });
    },
  );

  it.each(['edge.internal:8080', '127.0.0.1:65535', '[::1]:8080', 'mcp_edge:8080', 'EDGE.'])(
    'admits Host "%s"',
    async (goodHost) => {
      const admission = await admit(ctx, open, {
        method: 'POST',
        headers: { host: goodHost },
        peer: '127.0.0.1',
      });
      expect(admission.ok).toBe(true);
    },
  );
});

describe('parseHost: a Host read again', () => {
  it('reads a Host the same the second time, and after more Hosts than it keeps read', () => {
    const hosts = ['edge.internal:8080', 'a:99999', '[::1]:8080', 'user@evil.example', 'EDGE.'];
    const first = hosts.map((host) => parseHost(host));
    expect(first.map((parsed) => parsed?.origin)).toEqual([
      'http://edge.internal:8080',
      undefined,
      'http://[::1]:8080',
      undefined,
      'http://edge.',
    ]);
    expect(hosts.map((host) => parseHost(host))).toEqual(first);
    for (let i = 0; i < 1000; i++) parseHost(`h${i}.example:${i % 2 === 0 ? 80 : 99999}`);
    expect(hosts.map((host) => parseHost(host))).toEqual(first);
    expect(parseHost('h7.example:99999')).toBeUndefined();
    expect(parseHost('h8.example:80')?.name).toBe('h8.example');
    const long = `${'a'.repeat(300)}:80`;
    expect(parseHost(long)?.name).toBe('a'.repeat(300));
    expect(parseHost(long)?.name).toBe('a'.repeat(300));
  });
});

describe('admit with exchange filters', () => {
  const tooMany = edgeAnswer('quota_store_unavailable', { retryAfterSeconds: 1 });

  it("a filter's refusal refuses an exchange that every earlier stage admitted, under its tenant", async () => {
    const seen: string[] = [];
    const filters = new FilterChain(
      [
        { name: 'watch', admit: (exchange) => void seen.push(`watch:${exchange.tenant}`) },
        { name: 'quota', admit: (exchange) => (exchange.tenant === 'acme' ? tooMany : undefined) },
        { name: 'after', admit: (exchange) => void seen.push(`after:${exchange.tenant}`) },
      ],
      createLogger('silent'),
    );
    const refused = await admit({ filters }, edge, {
      method: 'POST',
      headers: { ...host, 'x-api-key': KEY },
      peer: '127.0.0.1',
    });
    expect(refused).toMatchObject({ ok: false, exchange: { tenant: 'acme' }, refusal: tooMany });
    const admitted = await admit({ filters }, edge, { method: 'POST', headers: host, peer: '127.0.0.1' });
    expect(admitted).toMatchObject({ ok: true, exchange: { tenant: 'default' } });
    // The first refusal decides; the filters after it are not asked for that exchange.
    expect(seen).toEqual(['watch:acme', 'watch:default', 'after:default']);
  });

  it('tells every filter of an exchange refused before it (a wrong key), and keeps that refusal', async () => {
    const facts: unknown[] = [];
    const filters = new FilterChain(
      [
        {
          name: 'quota',
          admit: (_exchange, fact) => {
            facts.push(fact);
            return tooMany;
          },
        },
      ],
      createLogger('silent'),
    );
    const refused = await admit({ filters }, edge, {
      method: 'POST',
      headers: { ...host, 'x-api-key': 'wrong' },
      peer: '127.0.0.1',
    });
    expect(refused).toMatchObject({ ok: false, refusal: { status: 401 } });
    expect(facts).toEqual([
      { untrustedTenantHeader: false, refused: true, headers: { ...host, 'x-api-key': 'wrong' } },
    ]);
  });
});
