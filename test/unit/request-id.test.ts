// Which request id an answer carries: the client's own when it is a plain bounded token, else a new one.
import { describe, expect, it } from 'vitest';
import { MAX_CLIENT_REQUEST_ID, requestIdOf } from '../../src/proxy/request-id.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('requestIdOf', () => {
  it("keeps a client's plain token (a UUID, a trace id, a ULID, up to the bound)", () => {
    for (const id of [
      '3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60',
      '4bf92f3577b34da6a3ce929d0e0e4736',
      '01HZX3J5Q8YJ6W7K9M2N4P6R8T',
      'req_42:retry/2',
      'x'.repeat(MAX_CLIENT_REQUEST_ID),
    ])
      expect(requestIdOf({ 'x-request-id': id })).toBe(id);
  });

  it('replaces an absent, empty, too long, repeated or unsafe one with a new UUID', () => {
    for (const sent of [
      undefined,
      '',
      'x'.repeat(MAX_CLIENT_REQUEST_ID + 1),
      ['a', 'b'],
      'has space',
      'quote"s',
      'new\nline',
      'ünïcode',
    ]) {
      const id = requestIdOf(sent === undefined ? {} : { 'x-request-id': sent });
      expect(id).toMatch(UUID);
    }
    expect(requestIdOf({})).not.toBe(requestIdOf({}));
  });
});
