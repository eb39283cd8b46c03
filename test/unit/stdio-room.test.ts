// src/core/stdio-room.ts: which idle stdio child gives up its place to a new one at a process bound, and
// which timeout ends a child by itself. Plain values; the processes behind them are
// test/reliability/stdio-departed-clients.test.ts's.
import { describe, expect, it } from 'vitest';
import { type ChildQuiet, quietEnd, roomFor } from '../../src/core/stdio-room.js';

const limits = { maxProcesses: 4, maxPerTenant: 2 };
const idle = (child: string, tenant: string, quietSince: number) => ({ child, tenant, quietSince });

describe('roomFor', () => {
  it('is free below both bounds, whatever is idle', () => {
    expect(roomFor('a', limits, { total: 3, ofTenant: 1 }, [idle('x', 'a', 1)])).toEqual({ kind: 'free' });
  });

  it('at maxProcesses, takes the place of the child quiet the longest, of any tenant', () => {
    const room = roomFor('a', limits, { total: 4, ofTenant: 1 }, [
      idle('b-new', 'b', 300),
      idle('b-old', 'b', 100),
      idle('a-mid', 'a', 200),
    ]);
    expect(room).toEqual({
      kind: 'evict',
      victim: idle('b-old', 'b', 100),
      bound: { key: 'maxProcesses', limit: 4, setting: 'upstream.stdio.maxProcesses' },
    });
  });

  it("at the tenant's share, takes only one of its own, though another tenant's is quieter longer", () => {
    const room = roomFor('a', limits, { total: 3, ofTenant: 2 }, [
      idle('b-old', 'b', 100),
      idle('a', 'a', 200),
    ]);
    expect(room).toMatchObject({
      kind: 'evict',
      victim: { child: 'a' },
      bound: { key: 'maxProcessesPerTenant', limit: 2 },
    });
    // Both bounds: its own still, so that one ending frees a place in both counts.
    expect(
      roomFor('a', limits, { total: 4, ofTenant: 2 }, [idle('b', 'b', 1), idle('a', 'a', 2)]),
    ).toMatchObject({
      kind: 'evict',
      victim: { child: 'a' },
      bound: { key: 'maxProcesses' },
    });
  });

  it('is full when nothing it may take is idle (the bound named as before: maxProcesses first)', () => {
    expect(roomFor('a', limits, { total: 4, ofTenant: 1 }, [])).toEqual({
      kind: 'full',
      bound: { key: 'maxProcesses', limit: 4, setting: 'upstream.stdio.maxProcesses' },
    });
    expect(roomFor('a', limits, { total: 3, ofTenant: 2 }, [idle('b', 'b', 1)])).toMatchObject({
      kind: 'full',
      bound: { key: 'maxProcessesPerTenant' },
    });
  });
});

describe('quietEnd', () => {
  const timeouts = {
    idleTimeout: 900_000,
    idleTimeoutBeforeFirstRequest: 60_000,
    idleTimeoutWithoutStream: 30_000,
  };
  const child = (facts: Partial<ChildQuiet>): ChildQuiet => ({
    session: true,
    used: true,
    idleSince: 0,
    open: 0,
    inFlight: 0,
    quietSince: 0,
    lastActivity: 0,
    ...facts,
  });

  it('ends a session with nothing open at idleTimeoutWithoutStream, counted from when the last exchange closed', () => {
    expect(quietEnd(child({ quietSince: 1000 }), 1000 + 29_999, timeouts)).toBeUndefined();
    expect(quietEnd(child({ quietSince: 1000 }), 1000 + 30_000, timeouts)).toBe('idleTimeoutWithoutStream');
  });

  it('never ends a session with its GET stream or a POST open, or a call in flight, before idleTimeout', () => {
    expect(quietEnd(child({ open: 1, lastActivity: 1000 }), 1000 + 899_999, timeouts)).toBeUndefined();
    expect(quietEnd(child({ open: 1, lastActivity: 1000 }), 1000 + 900_000, timeouts)).toBe('idleTimeout');
    // A call in flight keeps it, whatever the clocks say.
    expect(quietEnd(child({ inFlight: 1 }), 10_000_000, timeouts)).toBeUndefined();
  });

  it("leaves a tenant's shared child (no session) to idleTimeout", () => {
    expect(quietEnd(child({ session: false, used: false }), 899_999, timeouts)).toBeUndefined();
    expect(quietEnd(child({ session: false }), 900_000, timeouts)).toBe('idleTimeout');
  });

  it('names idleTimeoutBeforeFirstRequest for a session never used, even with its GET stream open', () => {
    expect(quietEnd(child({ used: false, open: 1, idleSince: 0 }), 60_000, timeouts)).toBe(
      'idleTimeoutBeforeFirstRequest',
    );
  });

  it('0 turns a timeout off', () => {
    const off = { idleTimeout: 0, idleTimeoutBeforeFirstRequest: 0, idleTimeoutWithoutStream: 0 };
    expect(quietEnd(child({ used: false }), 10_000_000, off)).toBeUndefined();
  });
});
