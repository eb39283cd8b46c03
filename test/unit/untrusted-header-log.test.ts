// The log of ignored tenant headers: the first of each peer per minute, memory bounded by maxPeers.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { UNTRUSTED_HEADER_MESSAGE, UntrustedHeaderLog } from '../../src/tenancy/untrusted-header-log.js';
import { capturedLog } from '../support/start-edge.js';

function logged() {
  const log = capturedLog();
  let now = 0;
  const headers = new UntrustedHeaderLog(pino({ level: 'info' }, log.sink), {
    windowMs: 60_000,
    maxPeers: 3,
    now: () => now,
  });
  const lines = () => log.records().filter((l) => l.msg === UNTRUSTED_HEADER_MESSAGE);
  return { headers, lines, records: log.records, at: (ms: number) => (now = ms) };
}

describe('UntrustedHeaderLog', () => {
  it('logs the first header of each peer in a minute at info, and that peer again in the next minute', () => {
    const { headers, lines, at } = logged();
    headers.note('10.0.0.1');
    headers.note('10.0.0.1');
    headers.note('10.0.0.2');
    at(59_999);
    headers.note('10.0.0.1');
    expect(lines().map((l) => [l.peer, l.level])).toEqual([
      ['10.0.0.1', 30],
      ['10.0.0.2', 30],
    ]);
    at(60_000);
    headers.note('10.0.0.1');
    expect(lines().map((l) => l.peer)).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.1']);
  });

  it('remembers at most maxPeers peers a minute; the others are counted and said once the minute ends', () => {
    const { headers, lines, records, at } = logged();
    for (let i = 0; i < 1000; i++) headers.note(`10.0.${i >> 8}.${i & 255}`);
    expect(headers.peers).toBe(3);
    expect(lines()).toHaveLength(3);
    at(60_000);
    headers.note('10.9.9.9');
    expect(records().find((l) => l.peersNotLogged !== undefined)).toMatchObject({
      peersNotLogged: 997,
      maxPeers: 3,
    });
    expect(headers.peers).toBe(1);
  });
});
