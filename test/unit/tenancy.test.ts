// Tenant resolution without sockets: which headers a resolver consumes (they stop at the edge), and what
// becomes of a bearer token that is not a JWT.
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { sha256Hex, TenantResolver } from '../../src/tenancy/tenant-resolver.js';

const SECRET = 'a-test-hmac-secret-that-is-32-bytes-or-more!';
const KEY = 'edge-key-0123456789';

function resolverOf(tenancyYaml: string): TenantResolver {
  const { config } = parseConfigText(
    `upstream: { url: "http://127.0.0.1:3000/mcp" }\n${tenancyYaml}\ntenants: { acme: {}, beta: {} }\n`,
    'test.yaml',
    {},
  );
  return new TenantResolver(config.tenancy, Object.keys(config.tenants));
}

async function token(claims: Record<string, unknown>): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(SECRET));
}

describe('headers meant for the edge', () => {
  const bearerKeys = resolverOf(`
tenancy:
  resolve:
    - apiKey: { bearer: true, tenants: { acme: [${sha256Hex(KEY)}] } }
    - jwt: { secret: "${SECRET}" }
`);

  it('an API key in Authorization (bearer mode) stops at the edge', async () => {
    const headers = { authorization: `Bearer ${KEY}` };
    expect(await bearerKeys.resolve(headers, '127.0.0.1')).toMatchObject({ ok: true, tenant: 'acme' });
    expect(bearerKeys.upstreamIdentity(headers, '127.0.0.1', 'acme').drop).toEqual(['authorization']);
  });

  it('a JWT the jwt resolver verified passes on by default (MCP authorization: it is the upstream token)', async () => {
    const headers = { authorization: `Bearer ${await token({ tenant: 'beta' })}` };
    expect(await bearerKeys.resolve(headers, '127.0.0.1')).toMatchObject({ ok: true, tenant: 'beta' });
    expect(bearerKeys.upstreamIdentity(headers, '127.0.0.1', 'beta').drop).toEqual([]);
  });

  it('jwt.forward: false stops a bearer JWT at the edge', async () => {
    const own = resolverOf(`
tenancy:
  resolve:
    - jwt: { secret: "${SECRET}", forward: false }
`);
    const headers = { authorization: `Bearer ${await token({ tenant: 'beta' })}` };
    expect(own.upstreamIdentity(headers, '127.0.0.1', 'beta').drop).toEqual(['authorization']);
  });

  it('an API key in its own header stops at the edge whichever resolver decided', () => {
    const keys = resolverOf(`
tenancy:
  resolve:
    - header: x-tenant-id
      trustedProxies: [127.0.0.0/8]
    - apiKey: { header: x-api-key, tenants: { acme: [${sha256Hex(KEY)}] } }
`);
    const identity = keys.upstreamIdentity({ 'x-api-key': 'anything' }, '127.0.0.1', 'default');
    expect(identity.drop).toContain('x-api-key');
  });

  it('an Authorization that is not the edge key passes when an earlier resolver decided', () => {
    const keys = resolverOf(`
tenancy:
  resolve:
    - header: x-tenant-id
      trustedProxies: [127.0.0.0/8]
    - apiKey: { bearer: true, tenants: { acme: [${sha256Hex(KEY)}] } }
`);
    const upstreamToken = { 'x-tenant-id': 'beta', authorization: 'Bearer upstream-oauth-token' };
    expect(keys.upstreamIdentity(upstreamToken, '127.0.0.1', 'beta').drop).not.toContain('authorization');
    const edgeKey = { 'x-tenant-id': 'beta', authorization: `Bearer ${KEY}` };
    expect(keys.upstreamIdentity(edgeKey, '127.0.0.1', 'beta').drop).toContain('authorization');
  });

  it('a tenant header: dropped from an untrusted peer, the resolved tenant from a trusted one', async () => {
    const header = resolverOf(`
tenancy:
  resolve:
    - header: x-tenant-id
      trustedProxies: [10.0.0.0/8]
`);
    expect(header.upstreamIdentity({ 'x-tenant-id': 'acme' }, '127.0.0.1', 'default')).toEqual({
      drop: ['x-tenant-id'],
      set: {},
    });
    expect(header.upstreamIdentity({ 'x-tenant-id': 'acme' }, '10.1.2.3', 'acme')).toEqual({
      drop: [],
      set: { 'x-tenant-id': 'acme' },
    });
    // A name the edge does not know resolves to the default tenant, and that is what the upstream is told.
    expect(await header.resolve({ 'x-tenant-id': 'nobody' }, '10.1.2.3')).toMatchObject({
      tenant: 'default',
    });
    expect(header.upstreamIdentity({ 'x-tenant-id': 'nobody' }, '10.1.2.3', 'default').set).toEqual({
      'x-tenant-id': 'default',
    });
    expect(header.upstreamIdentity({}, '10.1.2.3', 'default')).toEqual({ drop: [], set: {} });
  });
});

describe('opaque bearer tokens with a jwt resolver', () => {
  it('opaqueTokens: ignore (the default): not the resolver business, the default tenant', async () => {
    const ignore = resolverOf(`tenancy: { resolve: [ { jwt: { secret: "${SECRET}" } } ] }`);
    expect(await ignore.resolve({ authorization: 'Bearer opaque-0123' }, undefined)).toMatchObject({
      ok: true,
      tenant: 'default',
    });
  });

  it('opaqueTokens: reject answers 401', async () => {
    const reject = resolverOf(
      `tenancy: { resolve: [ { jwt: { secret: "${SECRET}", opaqueTokens: reject } } ] }`,
    );
    const decision = await reject.resolve({ authorization: 'Bearer opaque-0123' }, undefined);
    expect(decision).toMatchObject({ ok: false, status: 401 });
    expect(decision.ok ? '' : decision.wwwAuthenticate).toMatch(/^Bearer error="invalid_token"/);
    // No token at all is still anonymous (requireIdentified decides that).
    expect(await reject.resolve({}, undefined)).toMatchObject({ ok: true, tenant: 'default' });
  });
});

describe('why a 401 (the log says it; the credential is never in it)', () => {
  const jwt = resolverOf(`
tenancy:
  requireIdentified: true
  resolve:
    - apiKey: { header: x-api-key, tenants: { acme: [${sha256Hex(KEY)}] } }
    - jwt: { secret: "${SECRET}", audience: mcp-edge, issuer: https://issuer.example, claim: tenant, opaqueTokens: reject }
`);
  const signed = (claims: Record<string, unknown>, key = SECRET, exp: string | number = '5m') =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(exp)
      .sign(new TextEncoder().encode(key));
  const good = { tenant: 'acme', aud: 'mcp-edge', iss: 'https://issuer.example' };
  const reasonOf = async (headers: Record<string, string>) => {
    const decision = await jwt.resolve(headers, '127.0.0.1');
    return decision.ok ? 'ok' : decision.reason;
  };
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  it('names each failure: no credential, unknown key, not a JWT, bad signature, expired, wrong audience and issuer, unknown tenant', async () => {
    expect(await reasonOf(bearer(await signed(good)))).toBe('ok');
    expect(await reasonOf({})).toBe('no_credential');
    expect(await reasonOf({ 'x-api-key': 'not-a-key-of-this-edge' })).toBe('unknown_key');
    expect(await reasonOf(bearer('opaque-token'))).toBe('not_a_jwt');
    expect(await reasonOf(bearer(await signed(good, `${SECRET}-other`)))).toBe('bad_signature');
    expect(await reasonOf(bearer(await signed(good, SECRET, Math.floor(Date.now() / 1000) - 600)))).toBe(
      'expired',
    );
    expect(await reasonOf(bearer(await signed({ ...good, aud: 'another-service' })))).toBe('wrong_audience');
    expect(await reasonOf(bearer(await signed({ ...good, iss: 'https://elsewhere.example' })))).toBe(
      'wrong_issuer',
    );
    expect(await reasonOf(bearer(await signed({ ...good, tenant: 'nobody' })))).toBe('unknown_tenant');
    expect(await reasonOf(bearer('e30.e30.'))).toBe('malformed_token');
  });
});
