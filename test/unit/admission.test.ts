// Admission without Fastify or sockets: which requests become exchanges of which tenant, and the refusals.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { admit } from '../../src/proxy/admission.js';
import { runtimeOf } from '../../src/proxy/exchange.js';
import { FilterChain } from '../../src/proxy/filters/exchange-filter.js';
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
const ctx = { filters: new FilterChain([]) };
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
