// The pure rules of the OAuth discovery routes: which upstream document a path is, the edge's public
// origin, and the two values the edge rewrites.
import { describe, expect, it } from 'vitest';
import {
  METADATA_MAX_DEPTH,
  MetadataTooDeepError,
  publicOrigin,
  resourceMetadataUrl,
  rewriteChallenge,
  rewriteResourceMetadata,
  upstreamDiscoveryPath,
} from '../../src/proxy/well-known.js';

const PRM = '/.well-known/oauth-protected-resource';

describe('upstreamDiscoveryPath', () => {
  it('maps the protected-resource metadata of listen.path to the upstream path, and the bare document to itself', () => {
    expect(upstreamDiscoveryPath(`${PRM}/mcp`, '/mcp', '/v1/mcp')).toBe(`${PRM}/v1/mcp`);
    expect(upstreamDiscoveryPath(PRM, '/mcp', '/v1/mcp')).toBe(PRM);
    expect(upstreamDiscoveryPath(`${PRM}/mcp`, '/mcp', '/mcp/')).toBe(`${PRM}/mcp`);
    expect(upstreamDiscoveryPath(PRM, '/', '/mcp')).toBe(`${PRM}/mcp`);
    expect(upstreamDiscoveryPath(`${PRM}/mcp`, '/mcp', '/')).toBe(PRM);
  });

  it('serves no other resource', () => {
    expect(upstreamDiscoveryPath(`${PRM}/v1/mcp`, '/mcp', '/v1/mcp')).toBeUndefined();
    expect(upstreamDiscoveryPath(`${PRM}x`, '/mcp', '/mcp')).toBeUndefined();
    expect(upstreamDiscoveryPath('/.well-known/jwks.json', '/mcp', '/mcp')).toBeUndefined();
  });

  it('keeps the path of authorization-server documents (their suffix is the issuer path)', () => {
    for (const path of [
      '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-authorization-server/tenant1',
      '/.well-known/openid-configuration',
      '/.well-known/openid-configuration/tenant1',
    ]) {
      expect(upstreamDiscoveryPath(path, '/mcp', '/v1/mcp')).toBe(path);
    }
  });
});

describe('publicOrigin', () => {
  it('prefers server.publicUrl, else http:// and the Host header', () => {
    expect(publicOrigin('https://mcp.example.com', 'evil.example')).toBe('https://mcp.example.com');
    expect(publicOrigin(undefined, 'edge.internal:8080')).toBe('http://edge.internal:8080');
    expect(publicOrigin(undefined, '[::1]:8080')).toBe('http://[::1]:8080');
    expect(publicOrigin(undefined, 'EDGE:80')).toBe('http://edge');
  });

  it('takes nothing from a Host that is not a host', () => {
    for (const host of [
      undefined,
      '',
      'a b',
      'evil.example/path',
      'user@evil.example',
      'evil.example?x',
      'h:99999x',
      // Shaped like host[:port], but no URL can carry them: these threw from a response hook and ended the process.
      'a:99999',
      '[1.2.3.4]',
      '127.0.0.1:65536',
    ]) {
      expect(publicOrigin(undefined, host), String(host)).toBeUndefined();
    }
  });
});

describe('rewriteChallenge', () => {
  const options = {
    upstreamOrigin: 'http://10.0.0.5:3000',
    metadataUrl: resourceMetadataUrl('https://mcp.example.com', '/mcp'),
    addIfMissing: false,
  };

  it('replaces a resource_metadata URL on the upstream origin, quoted or not, and nothing else', () => {
    expect(
      rewriteChallenge(
        'Bearer error="invalid_token", resource_metadata="http://10.0.0.5:3000/.well-known/oauth-protected-resource/v1/mcp", scope="a b"',
        options,
      ),
    ).toBe(
      'Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="a b"',
    );
    expect(rewriteChallenge('Bearer resource_metadata=http://10.0.0.5:3000/x', options)).toBe(
      'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"',
    );
  });

  it('leaves a metadata URL elsewhere, and challenges without one, alone', () => {
    const elsewhere =
      'Bearer resource_metadata="https://meta.example.com/.well-known/oauth-protected-resource"';
    expect(rewriteChallenge(elsewhere, options)).toBe(elsewhere);
    expect(rewriteChallenge('Bearer error="invalid_token"', options)).toBe('Bearer error="invalid_token"');
    expect(rewriteChallenge('ApiKey', { ...options, addIfMissing: true })).toBe('ApiKey');
  });

  it("adds the edge's metadata URL to the edge's own Bearer challenge", () => {
    const add = { ...options, addIfMissing: true };
    expect(rewriteChallenge('Bearer', add)).toBe(`Bearer resource_metadata="${options.metadataUrl}"`);
    expect(rewriteChallenge('Bearer error="invalid_token"', add)).toBe(
      `Bearer error="invalid_token", resource_metadata="${options.metadataUrl}"`,
    );
  });
});

describe('rewriteResourceMetadata', () => {
  it('sets resource and keeps every other member in order', () => {
    const body = Buffer.from(
      '{"resource":"http://10.0.0.5:3000/mcp","authorization_servers":["https://as"],"x":1}',
    );
    expect(rewriteResourceMetadata(body, 'https://mcp.example.com/mcp')?.toString()).toBe(
      '{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://as"],"x":1}',
    );
  });

  it('refuses, without recursing, a document nested past METADATA_MAX_DEPTH; one at the bound is rewritten', () => {
    const nested = (depth: number) =>
      Buffer.from(`{"resource":"http://u/mcp","x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`);
    // Thousands deep: JSON.stringify of it overflowed the stack (a 500 from outside the handler's try).
    expect(() => rewriteResourceMetadata(nested(20_000), 'https://e/mcp')).toThrow(MetadataTooDeepError);
    expect(() => rewriteResourceMetadata(nested(METADATA_MAX_DEPTH + 1), 'https://e/mcp')).toThrow(
      `nested deeper than ${METADATA_MAX_DEPTH} levels`,
    );
    expect(
      JSON.parse(rewriteResourceMetadata(nested(METADATA_MAX_DEPTH), 'https://e/mcp')?.toString() ?? ''),
    ).toMatchObject({ resource: 'https://e/mcp' });
  });

  it('leaves what is not protected-resource metadata unchanged (undefined)', () => {
    for (const text of ['not json', '[]', 'null', '{"authorization_servers":[]}', '{"resource":5}']) {
      expect(rewriteResourceMetadata(Buffer.from(text), 'https://e/mcp'), text).toBeUndefined();
    }
  });
});
