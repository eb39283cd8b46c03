import { describe, expect, it } from 'vitest';
import { CallSlots, type Release, StreamSlots } from '../../src/upstream/connection-slots.js';

/** A waiting call's fate, as a promise: 'started' with its release, or 'expired'. */
function queued(slots: CallSlots) {
  let cancel = () => {};
  const fate = new Promise<{ kind: 'started'; release: Release } | { kind: 'expired' }>((resolve) => {
    cancel = slots.acquire(
      (release) => resolve({ kind: 'started', release }),
      () => resolve({ kind: 'expired' }),
    );
  });
  return { fate, cancel };
}

function held(slots: CallSlots): Release {
  let got: Release | undefined;
  slots.acquire(
    (release) => {
      got = release;
    },
    () => {},
  );
  if (got === undefined) throw new Error('expected a free slot');
  return got;
}

describe('CallSlots', () => {
  it('starts calls at once up to its capacity, then hands each freed slot to the oldest waiter', async () => {
    const slots = new CallSlots(2, 60_000);
    const first = held(slots);
    held(slots);
    const a = queued(slots);
    const b = queued(slots);
    expect(slots.waiting).toBe(2);
    first();
    first(); // a second release of the same holding frees nothing more
    const started = await a.fate;
    expect(started.kind).toBe('started');
    expect(slots.held).toBe(2);
    expect(slots.waiting).toBe(1);
    if (started.kind === 'started') started.release();
    expect((await b.fate).kind).toBe('started');
    expect(slots.held).toBe(2);
  });

  it('expires a call that waited queueTimeout, and one that finds the queue full at once', async () => {
    const slots = new CallSlots(1, 50);
    held(slots);
    const waiting = queued(slots);
    const beyond = queued(slots); // capacity 1: at most one call waits
    expect(await beyond.fate).toEqual({ kind: 'expired' });
    expect(await waiting.fate).toEqual({ kind: 'expired' });
    expect(slots.waiting).toBe(0);
    expect(slots.held).toBe(1);
  });

  it('with queueTimeout 0 a call that finds no slot is expired at once', async () => {
    const slots = new CallSlots(1, 0);
    held(slots);
    expect(await queued(slots).fate).toEqual({ kind: 'expired' });
  });

  it('a caller that left is taken out of the queue: the freed slot goes to the next one', async () => {
    const slots = new CallSlots(2, 60_000);
    const first = held(slots);
    held(slots);
    const gone = queued(slots);
    const next = queued(slots);
    gone.cancel();
    expect(slots.waiting).toBe(1);
    first();
    expect((await next.fate).kind).toBe('started');
    expect(await Promise.race([gone.fate, Promise.resolve('still waiting')])).toBe('still waiting');
  });
});

describe('StreamSlots', () => {
  it('bounds streams in all, and frees a slot once on release', () => {
    const slots = new StreamSlots(2);
    const first = slots.open();
    const second = slots.open();
    expect(typeof first).toBe('function');
    expect(typeof second).toBe('function');
    expect(slots.open()).toBeUndefined();
    if (first === undefined) throw new Error('expected a slot');
    first();
    first();
    expect(slots.openStreams).toBe(1);
    expect(typeof slots.open()).toBe('function');
    expect(slots.open()).toBeUndefined();
  });
});
