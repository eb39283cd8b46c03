// CallOwners (src/core/call-owners.ts): which call an id or progress token on a stdio child belongs to.
import { describe, expect, it } from 'vitest';
import { CallOwners } from '../../src/core/call-owners.js';

describe('CallOwners', () => {
  it('an id stays claimed after its caller left, until the answer comes; then it is free', () => {
    const owners = new CallOwners<string>();
    owners.claim('A', ['n:0'], ['n:0']);
    owners.abandon('A');
    expect(owners.liveCount).toBe(0);
    expect(owners.abandonedIds).toBe(1);
    expect(owners.conflictOf(['n:0'], [])).toEqual({ kind: 'id', key: 'n:0' });
    expect(owners.answered('n:0')).toEqual({ call: 'A', abandoned: true });
    expect(owners.abandonedIds).toBe(0);
    expect(owners.conflictOf(['n:0'], ['n:0'])).toBeUndefined();
    expect(owners.answered('n:0')).toBeUndefined();
  });

  it('a progress token is held until the last id of its call is answered, and is never shared', () => {
    const owners = new CallOwners<string>();
    owners.claim('A', ['n:1', 'n:2'], ['s:tok']);
    expect(owners.conflictOf(['n:9'], ['s:tok'])).toEqual({ kind: 'progress token', key: 's:tok' });
    expect(owners.answered('n:1')).toEqual({ call: 'A', abandoned: false });
    expect(owners.ownerOfToken('s:tok')).toEqual({ call: 'A', abandoned: false });
    owners.answered('n:2');
    expect(owners.ownerOfToken('s:tok')).toBeUndefined();
    expect(owners.liveCount).toBe(0);
  });

  it('clear() forgets every claim and returns the calls whose clients still wait', () => {
    const owners = new CallOwners<string>();
    owners.claim('A', ['n:0'], []);
    owners.claim('B', ['n:1'], []);
    owners.abandon('B');
    expect(owners.liveCalls()).toEqual(['A']);
    expect(owners.clear()).toEqual(['A']);
    expect(owners.conflictOf(['n:0', 'n:1'], [])).toBeUndefined();
    expect(owners.abandonedIds).toBe(0);
  });

  it('an id its own client cancelled is freed once that client left, since the child need not answer it', () => {
    const owners = new CallOwners<string>();
    owners.claim('A', ['n:5'], []);
    owners.cancel('n:5');
    expect(owners.conflictOf(['n:5'], [])).toEqual({ kind: 'id', key: 'n:5' });
    owners.abandon('A');
    expect(owners.conflictOf(['n:5'], [])).toBeUndefined();
    expect(owners.abandonedIds).toBe(0);
    owners.claim('B', ['n:6'], []);
    owners.abandon('B');
    owners.cancel('n:6');
    expect(owners.abandonedIds).toBe(0);
    expect(owners.answered('n:6')).toBeUndefined();
  });
});
