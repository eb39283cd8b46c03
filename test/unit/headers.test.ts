// The headers a request carries upstream: what the edge believes from whom, and what stops at the edge.
import { describe, expect, it } from 'vitest';
import {
  acceptsEventStream,
  type UpstreamRequestHeaderOptions,
  upstreamRequestHeaders,
} from '../../src/core/headers.js';

const BASE: UpstreamRequestHeaderOptions = {
  preserveHost: false,
  upstreamHost: '127.0.0.1:3000',
  clientAddress: '203.0.113.7',
  clientProtocol: 'http',
  trustedPeer: false,
  drop: [],
  set: {},
  authorization: undefined,
};

const SPOOFED = {
  'content-type': 'application/json',
  'x-forwarded-for': '10.9.9.9',
  'x-forwarded-host': 'evil.example',
  'x-forwarded-proto': 'https',
  'x-forwarded-port': '443',
  'x-forwarded-prefix': '/admin',
  'x-real-ip': '10.9.9.9',
  forwarded: 'for=10.9.9.9;host=evil.example;proto=https',
};

describe('forwarding headers', () => {
  it('from a peer outside server.trustedProxies: replaced by what the edge saw, the rest dropped', () => {
    const headers = upstreamRequestHeaders(SPOOFED, 'mcp.example.com', BASE);
    expect(headers['x-forwarded-for']).toBe('203.0.113.7');
    expect(headers['x-forwarded-host']).toBe('mcp.example.com');
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers.forwarded).toBeUndefined();
    expect(headers['x-forwarded-port']).toBeUndefined();
    expect(headers['x-forwarded-prefix']).toBeUndefined();
    expect(headers['x-real-ip']).toBeUndefined();
    expect(headers.host).toBe('127.0.0.1:3000');
  });

  it('an untrusted request without a Host gets no X-Forwarded-Host at all', () => {
    const headers = upstreamRequestHeaders(SPOOFED, undefined, BASE);
    expect(headers['x-forwarded-host']).toBeUndefined();
  });

  it('from a trusted proxy: believed and extended (X-Forwarded-For and Forwarded get the edge hop)', () => {
    const headers = upstreamRequestHeaders(SPOOFED, 'edge.internal', { ...BASE, trustedPeer: true });
    expect(headers['x-forwarded-for']).toBe('10.9.9.9, 203.0.113.7');
    expect(headers['x-forwarded-host']).toBe('evil.example');
    expect(headers['x-forwarded-proto']).toBe('https');
    expect(headers['x-forwarded-port']).toBe('443');
    expect(headers['x-real-ip']).toBe('10.9.9.9');
    expect(headers.forwarded).toBe(
      'for=10.9.9.9;host=evil.example;proto=https, for=203.0.113.7;host=edge.internal;proto=http',
    );
  });

  it('a trusted proxy that sent none gets the edge values; an IPv6 peer is quoted in Forwarded', () => {
    const plain = upstreamRequestHeaders({}, 'edge.internal', { ...BASE, trustedPeer: true });
    expect(plain['x-forwarded-for']).toBe('203.0.113.7');
    expect(plain['x-forwarded-host']).toBe('edge.internal');
    expect(plain['x-forwarded-proto']).toBe('http');
    expect(plain.forwarded).toBeUndefined();
    const v6 = upstreamRequestHeaders({ forwarded: 'for=a' }, 'h', {
      ...BASE,
      trustedPeer: true,
      clientAddress: '::1',
    });
    expect(v6.forwarded).toBe('for=a, for="[::1]";host=h;proto=http');
  });

  it('repeated forwarding headers from a trusted proxy are joined, not lost', () => {
    const headers = upstreamRequestHeaders({ 'x-forwarded-for': ['1.1.1.1', '2.2.2.2'] }, 'h', {
      ...BASE,
      trustedPeer: true,
    });
    expect(headers['x-forwarded-for']).toBe('1.1.1.1, 2.2.2.2, 203.0.113.7');
  });
});

describe('what stops at the edge', () => {
  it('drops the edge-only headers and sets the ones the edge decides', () => {
    const headers = upstreamRequestHeaders(
      { authorization: 'Bearer edge-key', 'x-api-key': 'k', 'x-tenant-id': 'spoofed', 'mcp-session-id': 's' },
      'h',
      { ...BASE, drop: ['authorization', 'x-api-key'], set: { 'x-tenant-id': 'acme' } },
    );
    expect(headers.authorization).toBeUndefined();
    expect(headers['x-api-key']).toBeUndefined();
    expect(headers['x-tenant-id']).toBe('acme');
    expect(headers['mcp-session-id']).toBe('s');
  });

  it('credentials from upstream.url replace whatever Authorization the client sent', () => {
    const headers = upstreamRequestHeaders({ authorization: 'Bearer client-token' }, 'h', {
      ...BASE,
      authorization: 'Basic dTpw',
    });
    expect(headers.authorization).toBe('Basic dTpw');
    const none = upstreamRequestHeaders({ authorization: 'Bearer client-token' }, 'h', BASE);
    expect(none.authorization).toBe('Bearer client-token');
  });
});

describe('whether a client takes an SSE answer (Accept)', () => {
  it('takes one when it lists text/event-stream, a range covering it, or sends no Accept', () => {
    expect(acceptsEventStream('application/json, text/event-stream')).toBe(true);
    expect(acceptsEventStream('Text/Event-Stream;q=0.9')).toBe(true);
    expect(acceptsEventStream('text/*')).toBe(true);
    expect(acceptsEventStream('*/*')).toBe(true);
    expect(acceptsEventStream(undefined)).toBe(true);
  });

  it('does not when it lists only other types', () => {
    expect(acceptsEventStream('application/json')).toBe(false);
    expect(acceptsEventStream('application/json, text/plain')).toBe(false);
    expect(acceptsEventStream('')).toBe(false);
    expect(acceptsEventStream('application/json, text/event-stream;q=0')).toBe(false);
  });
});
