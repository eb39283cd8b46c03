// What shutdown drained, from the tickets of requests opened and closed: only those open when shutdown began
// count, each by how it ended, and those still open at the end are unfinished.
import { describe, expect, it } from 'vitest';
import { Drain } from '../../src/proxy/drain.js';

describe('Drain', () => {
  it('reports the requests open when shutdown began, by outcome, and the unfinished ones', () => {
    const drain = new Drain();
    const closedEarly = drain.opened();
    const forwarded = drain.opened();
    const cut = drain.opened();
    const stillOpen = drain.opened();
    drain.closed(closedEarly, 'forwarded');
    drain.begin(1);
    const openedDuringShutdown = drain.opened();
    drain.closed(forwarded, 'forwarded');
    drain.closed(cut, 'client_closed');
    drain.closed(openedDuringShutdown, 'forwarded');
    const report = drain.report();
    expect(report).toMatchObject({
      inFlight: 3,
      streams: 1,
      ended: { forwarded: 1, client_closed: 1, unfinished: 1 },
    });
    expect(stillOpen).toBeTypeOf('number');
  });

  it('reports nothing in flight when nothing was open', () => {
    const drain = new Drain();
    drain.closed(drain.opened(), 'forwarded');
    drain.begin(0);
    expect(drain.report()).toMatchObject({ inFlight: 0, streams: 0, ended: {} });
  });
});
