// Trace context spliced into a message's params._meta (src/core/meta-entries.ts): every other byte kept.
import { describe, expect, it } from 'vitest';
import { withMetaEntries } from '../../src/core/meta-entries.js';

const TRACE = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (out: Uint8Array | undefined) => (out === undefined ? undefined : new TextDecoder().decode(out));

describe('withMetaEntries', () => {
  it('adds to an existing _meta, after what the client put there, so its own traceparent is not the one kept', () => {
    const sent =
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7,"traceparent":"client"}}}';
    const out = text(withMetaEntries(bytes(sent), TRACE));
    expect(out).toBe(
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7,"traceparent":"client","traceparent":"${TRACE.traceparent}"}}}`,
    );
    expect(JSON.parse(out ?? '').params._meta).toEqual({ progressToken: 7, traceparent: TRACE.traceparent });
  });

  it('adds _meta to params, and params to a message without them, keeping the bytes around as sent', () => {
    expect(text(withMetaEntries(bytes('{"id":1, "method":"ping", "params":{ }}'), TRACE))).toBe(
      `{"id":1, "method":"ping", "params":{ "_meta":{"traceparent":"${TRACE.traceparent}"}}}`,
    );
    expect(
      text(withMetaEntries(bytes('{"id":1,"method":"tools/list","params":{"cursor":"c"} }'), TRACE)),
    ).toBe(
      `{"id":1,"method":"tools/list","params":{"cursor":"c","_meta":{"traceparent":"${TRACE.traceparent}"}} }`,
    );
    expect(
      text(withMetaEntries(bytes('{"jsonrpc":"2.0","method":"notifications/initialized"}'), TRACE)),
    ).toBe(
      `{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{"traceparent":"${TRACE.traceparent}"}}}`,
    );
  });

  it('writes nothing where params or _meta is not an object, or the bytes are not one object', () => {
    expect(withMetaEntries(bytes('{"id":1,"method":"m","params":[1]}'), TRACE)).toBeUndefined();
    expect(withMetaEntries(bytes('{"id":1,"method":"m","params":{"_meta":null}}'), TRACE)).toBeUndefined();
    expect(withMetaEntries(bytes('[{"id":1}]'), TRACE)).toBeUndefined();
    // A response the client sends (to a server's request) has no method: never written to.
    expect(withMetaEntries(bytes('{"jsonrpc":"2.0","id":1,"result":{}}'), TRACE)).toBeUndefined();
    expect(withMetaEntries(bytes('{"id":1,'), TRACE)).toBeUndefined();
  });
});
