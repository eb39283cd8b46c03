// The 2026-07-28 header check's decisions without sockets: which revision carries the headers, how an Mcp-Name
// value is read (plain, or the Base64 sentinel of UTF-8), and which message disagrees with which header, as
// the specification's table and its SDK's server say.
import { describe, expect, it } from 'vitest';
import { boundedName, boundedUri } from '../../src/core/client-names.js';
import type { RequestMessage } from '../../src/inspect/request-body.js';
import { headerMismatchOf, mcpNameValue, mirroredHeaders } from '../../src/proxy/filters/header-check.js';

const sentinel = (value: string) => `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;

function message(fields: Partial<RequestMessage>): RequestMessage {
  return {
    kind: 'request',
    id: 1,
    method: undefined,
    tool: undefined,
    prompt: undefined,
    resourceUri: undefined,
    bytes: 10,
    continues: false,
    ...fields,
  };
}
const call = (tool: string) => message({ method: 'tools/call', tool: boundedName(tool) });

describe('which requests mirror their body in headers', () => {
  it('from protocol revision 2026-07-28 on; an older revision, or none, mirrors nothing', () => {
    const headers = { 'mcp-method': 'tools/list', 'mcp-name': 'x' };
    expect(mirroredHeaders('2026-07-28', headers)).toEqual({ method: 'tools/list', name: 'x' });
    expect(mirroredHeaders('2026-07-28', {})).toEqual({ method: undefined, name: undefined });
    expect(mirroredHeaders('2025-11-25', headers)).toBeUndefined();
    expect(mirroredHeaders('2025-03-26', headers)).toBeUndefined();
    expect(mirroredHeaders(undefined, headers)).toBeUndefined();
  });
});

describe('an Mcp-Name value', () => {
  it('is itself when plain ASCII, spaces and tabs inside included', () => {
    expect(mcpNameValue('get_weather')).toBe('get_weather');
    expect(mcpNameValue('file:///projects/my app/config.json')).toBe('file:///projects/my app/config.json');
    expect(mcpNameValue('a\tb')).toBe('a\tb');
  });

  it("is decoded from the Base64 sentinel as UTF-8: the specification's examples", () => {
    expect(mcpNameValue('=?base64?SGVsbG8sIOS4lueVjA==?=')).toBe('Hello, 世界');
    expect(mcpNameValue('=?base64?IHBhZGRlZCA=?=')).toBe(' padded ');
    expect(mcpNameValue('=?base64?bGluZTEKbGluZTI=?=')).toBe('line1\nline2');
    expect(mcpNameValue('=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=')).toBe('=?base64?literal?=');
    expect(mcpNameValue(sentinel('météo'))).toBe('météo');
  });

  it('is no value when it holds a byte outside ASCII, or a sentinel that is not canonical Base64 of UTF-8', () => {
    expect(mcpNameValue('caf\u00e9')).toBeUndefined();
    expect(mcpNameValue('a\u0000b')).toBeUndefined();
    expect(mcpNameValue('=?base64?not base64!?=')).toBeUndefined();
    // Padding left out, or characters of Base64url: not the canonical alphabet and form.
    expect(mcpNameValue('=?base64?SGVsbG8?=')).toBeUndefined();
    expect(mcpNameValue('=?base64?-_8=?=')).toBeUndefined();
    // Bytes that are no UTF-8.
    expect(mcpNameValue(`=?base64?${Buffer.from([0xff, 0xfe]).toString('base64')}?=`)).toBeUndefined();
  });

  it("takes the sentinel's markers as they are written: another letter case is a plain value", () => {
    expect(mcpNameValue('=?BASE64?SGk=?=')).toBe('=?BASE64?SGk=?=');
  });
});

describe('a message against the headers of its request', () => {
  it('a request without Mcp-Method disagrees; a notification without one, or a response, does not', () => {
    const none = { method: undefined, name: undefined };
    expect(headerMismatchOf(none, message({ method: 'tools/list' }))).toEqual({
      header: 'Mcp-Method',
      field: 'method',
      body: 'tools/list',
      sent: undefined,
    });
    expect(
      headerMismatchOf(none, message({ kind: 'notification', id: undefined, method: 'notifications/x' })),
    ).toBeUndefined();
    expect(
      headerMismatchOf({ method: 'tools/call', name: 'x' }, message({ kind: 'result' })),
    ).toBeUndefined();
  });

  it('Mcp-Method must name the message method exactly (letter case included), for a notification too', () => {
    const headers = { method: 'tools/list', name: undefined };
    expect(headerMismatchOf(headers, message({ method: 'tools/list' }))).toBeUndefined();
    expect(headerMismatchOf(headers, call('echo'))).toMatchObject({
      header: 'Mcp-Method',
      sent: 'tools/list',
    });
    expect(
      headerMismatchOf({ method: 'Tools/List', name: undefined }, message({ method: 'tools/list' })),
    ).toMatchObject({ header: 'Mcp-Method', sent: 'Tools/List' });
    expect(
      headerMismatchOf(headers, message({ kind: 'notification', id: undefined, method: 'notifications/x' })),
    ).toMatchObject({ header: 'Mcp-Method', body: 'notifications/x' });
    expect(headerMismatchOf({ method: 'tools/c\u00e1ll', name: undefined }, call('echo'))).toMatchObject({
      header: 'Mcp-Method',
      sent: null,
    });
  });

  it('Mcp-Name must mirror params.name of a tools/call or prompts/get and params.uri of a resources/read', () => {
    expect(headerMismatchOf({ method: 'tools/call', name: 'echo' }, call('echo'))).toBeUndefined();
    expect(headerMismatchOf({ method: 'tools/call', name: 'echo' }, call('rm'))).toEqual({
      header: 'Mcp-Name',
      field: 'params.name',
      body: 'rm',
      sent: 'echo',
    });
    expect(headerMismatchOf({ method: 'tools/call', name: undefined }, call('echo'))).toMatchObject({
      header: 'Mcp-Name',
      sent: undefined,
    });
    const prompt = message({ method: 'prompts/get', prompt: 'greet' });
    expect(headerMismatchOf({ method: 'prompts/get', name: 'greet' }, prompt)).toBeUndefined();
    expect(headerMismatchOf({ method: 'prompts/get', name: 'other' }, prompt)).toMatchObject({
      field: 'params.name',
    });
    const read = message({ method: 'resources/read', resourceUri: 'file:///a.txt' });
    expect(headerMismatchOf({ method: 'resources/read', name: 'file:///a.txt' }, read)).toBeUndefined();
    expect(headerMismatchOf({ method: 'resources/read', name: 'file:///b.txt' }, read)).toMatchObject({
      field: 'params.uri',
    });
  });

  it('compares the decoded name: a Base64 name agrees with its body, an undecodable one disagrees', () => {
    expect(
      headerMismatchOf({ method: 'tools/call', name: sentinel('météo') }, call('météo')),
    ).toBeUndefined();
    expect(headerMismatchOf({ method: 'tools/call', name: 'm\u00e9t\u00e9o' }, call('météo'))).toMatchObject({
      sent: null,
    });
  });

  it('tells long names apart by their bounded form (a digest of the whole name), as ceilings and quotas do', () => {
    const long = 'a'.repeat(300);
    expect(headerMismatchOf({ method: 'tools/call', name: long }, call(long))).toBeUndefined();
    expect(headerMismatchOf({ method: 'tools/call', name: `${long}b` }, call(`${long}c`))).toMatchObject({
      header: 'Mcp-Name',
    });
    const uri = `file:///${'d/'.repeat(400)}x`;
    const read = message({ method: 'resources/read', resourceUri: boundedUri(uri) });
    expect(headerMismatchOf({ method: 'resources/read', name: uri }, read)).toBeUndefined();
  });

  it('wants no Mcp-Name where the body names nothing to mirror, and ignores one on other methods', () => {
    expect(
      headerMismatchOf({ method: 'tools/call', name: undefined }, message({ method: 'tools/call' })),
    ).toBeUndefined();
    expect(
      headerMismatchOf({ method: 'tools/list', name: 'anything' }, message({ method: 'tools/list' })),
    ).toBeUndefined();
  });
});
