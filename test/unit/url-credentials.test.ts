// Credentials written into upstream.url: never shown, sent upstream as Basic authentication.
import { describe, expect, it } from 'vitest';
import {
  basicAuthorization,
  REDACTED,
  redactUrl,
  withoutCredentials,
} from '../../src/core/url-credentials.js';

describe('redactUrl', () => {
  it.each([
    ['http://user:password@127.0.0.1:3000/mcp', `http://${REDACTED}@127.0.0.1:3000/mcp`],
    ['https://ghp_token123@mcp.example.com/mcp?x=1', `https://${REDACTED}@mcp.example.com/mcp?x=1`],
    ['http://:only-a-password@[::1]:8/mcp', `http://${REDACTED}@[::1]:8/mcp`],
    ['http://127.0.0.1:3000/mcp', 'http://127.0.0.1:3000/mcp'],
    ['./jwks.json', './jwks.json'],
  ])('%s is shown as %s', (input, shown) => {
    expect(redactUrl(input)).toBe(shown);
  });

  it('never shows a percent-encoded password either', () => {
    const shown = redactUrl('http://us%40er:p%3Ass%20w@host/mcp');
    expect(shown).not.toMatch(/us%40er|p%3Ass|ss%20w/);
  });
});

describe('withoutCredentials and basicAuthorization', () => {
  it('split the userinfo off the URL and make it a Basic credential (percent-decoded, RFC 7617)', () => {
    const url = 'http://us%40er:p%3Ass%20w%C3%A9@127.0.0.1:3000/mcp?q=1';
    expect(withoutCredentials(url)).toBe('http://127.0.0.1:3000/mcp?q=1');
    expect(basicAuthorization(url)).toBe(`Basic ${Buffer.from('us@er:p:ss wé', 'utf8').toString('base64')}`);
  });

  it('a user without a password still authenticates, with an empty password', () => {
    expect(basicAuthorization('http://token@host/mcp')).toBe(
      `Basic ${Buffer.from('token:').toString('base64')}`,
    );
  });

  it('no userinfo: no credential, the URL unchanged', () => {
    expect(basicAuthorization('http://host:1/mcp')).toBeUndefined();
    expect(withoutCredentials('http://host:1/mcp')).toBe('http://host:1/mcp');
  });
});
