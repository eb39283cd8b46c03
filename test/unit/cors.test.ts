// The pure CORS rules of server.cors: which origins are granted and what a preflight is answered.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import {
  actualResponseHeaders,
  corsPolicyOf,
  isPreflight,
  originGranted,
  preflightHeaders,
} from '../../src/proxy/cors.js';

function policyOf(cors: string) {
  const { config } = parseConfigText(
    `upstream: { url: http://127.0.0.1:3000/mcp }\nserver: { cors: ${cors} }\n`,
    'e',
    {},
  );
  const policy = corsPolicyOf(config.server.cors);
  if (policy === undefined) throw new Error('no policy');
  return policy;
}

describe('CORS policy', () => {
  it('is a preflight only with OPTIONS, Origin and Access-Control-Request-Method', () => {
    expect(isPreflight('OPTIONS', { origin: 'https://a', 'access-control-request-method': 'POST' })).toBe(
      true,
    );
    expect(isPreflight('OPTIONS', { origin: 'https://a' })).toBe(false);
    expect(isPreflight('OPTIONS', { 'access-control-request-method': 'POST' })).toBe(false);
    expect(isPreflight('POST', { origin: 'https://a', 'access-control-request-method': 'POST' })).toBe(false);
  });

  it('grants listed origins, or any with "*", never the opaque "null" origin', () => {
    const listed = policyOf('{ allowedOrigins: ["https://app.example.com"] }');
    expect(originGranted(listed, 'https://app.example.com')).toBe(true);
    expect(originGranted(listed, 'https://app.example.com:8443')).toBe(false);
    expect(originGranted(listed, undefined)).toBe(false);
    const any = policyOf('{ allowedOrigins: ["*"] }');
    expect(originGranted(any, 'https://whoever.example')).toBe(true);
    expect(originGranted(any, 'null')).toBe(false);
  });

  it('answers a preflight with the configured lists, naming the origin, and allows headers by prefix', () => {
    const policy = policyOf(
      '{ allowedOrigins: ["*"], allowedHeaders: [content-type, mcp-param-*], maxAge: 90s }',
    );
    expect(preflightHeaders(policy, 'https://a.example', 'Content-Type, Mcp-Param-City, X-Other')).toEqual({
      'access-control-allow-origin': 'https://a.example',
      'access-control-allow-methods': 'POST, GET, DELETE',
      'access-control-allow-headers': 'content-type, mcp-param-city',
      'access-control-max-age': '90',
      vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
    });
    expect(actualResponseHeaders(policy, 'https://a.example')).toEqual({
      'access-control-allow-origin': 'https://a.example',
      'access-control-expose-headers': 'mcp-session-id, www-authenticate, x-request-id',
    });
  });
});
