// What an answer to the readiness ping proves, without sockets (the real servers are in
// test/integration/http-readiness.test.ts).
import { describe, expect, it } from 'vitest';
import { mcpVerdict, type ProbeAnswer } from '../../src/upstream/http-readiness.js';

const answer = (a: Partial<ProbeAnswer>): ProbeAnswer => ({
  status: 200,
  contentType: undefined,
  wwwAuthenticate: undefined,
  body: '',
  ...a,
});
const JSON_TYPE = 'application/json';
const ERROR =
  '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}';

describe('mcpVerdict', () => {
  it('takes a JSON-RPC answer as proof: a result, an error in a 400 or 404, one in an event stream', () => {
    expect(
      mcpVerdict(
        answer({ contentType: JSON_TYPE, body: '{"jsonrpc":"2.0","id":"mcp-edge-readiness","result":{}}' }),
      ).mcp,
    ).toBe(true);
    expect(mcpVerdict(answer({ status: 400, contentType: JSON_TYPE, body: ERROR })).mcp).toBe(true);
    expect(
      mcpVerdict(answer({ status: 404, contentType: 'application/json; charset=utf-8', body: ERROR })).mcp,
    ).toBe(true);
    expect(
      mcpVerdict(
        answer({ contentType: 'text/event-stream', body: `event: message\r\ndata: ${ERROR}\r\n\r\n` }),
      ).mcp,
    ).toBe(true);
  });

  it('takes a 401 or 403 with a Bearer challenge (OAuth-protected), not a bare one', () => {
    expect(mcpVerdict(answer({ status: 401, wwwAuthenticate: 'Bearer resource_metadata="x"' })).mcp).toBe(
      true,
    );
    expect(mcpVerdict(answer({ status: 401 })).mcp).toBe(false);
    expect(mcpVerdict(answer({ status: 401, wwwAuthenticate: 'Basic realm="x"' })).mcp).toBe(false);
  });

  it('refuses HTML, JSON that is not JSON-RPC, redirects, 5xx and an empty event stream', () => {
    const not = [
      answer({ status: 404, contentType: 'text/html', body: '<h1>Not Found</h1>' }),
      answer({ status: 404, contentType: JSON_TYPE, body: '{"error":"not found"}' }),
      answer({ contentType: JSON_TYPE, body: '{"jsonrpc":"2.0","method":"ping","id":1}' }),
      answer({ status: 200, contentType: JSON_TYPE, body: 'not json' }),
      answer({ status: 302, contentType: JSON_TYPE, body: ERROR }),
      answer({ status: 500, contentType: JSON_TYPE, body: ERROR }),
      answer({ contentType: 'text/event-stream', body: ': keep-alive\n\n' }),
      answer({ status: 202 }),
    ];
    for (const a of not) expect(mcpVerdict(a), JSON.stringify(a)).toMatchObject({ mcp: false });
    expect(mcpVerdict(not[0] as ProbeAnswer).detail).toBe('HTTP 404 text/html, not a JSON-RPC answer');
  });
});
