// The budget a Redis store holds for its edge (leases.ts), without a socket: what is spent locally, what a
// take asks Redis to lease, what goes back and when, under a clock the test drives; and the script's call as
// the store writes it and reads its reply (redis-script.ts).
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { Leases } from '../../src/quotas/leases.js';
import { KEY_PREFIX, scriptCallOf, takeRepliesOf } from '../../src/quotas/redis-script.js';
import { chargesOf, type QuotaCharge, quotaRulesOf } from '../../src/quotas/rules.js';

const { config } = parseConfigText(
  'upstream: { url: http://127.0.0.1:1/mcp }\nquotas:\n  rules:\n    - { name: calls, window: 1m, requests: 1000, responseBytes: 1MiB }',
  'q.yaml',
  {},
);
const rules = quotaRulesOf(config.quotas?.rules ?? []);
/** Each request reserves this much of the answers' budget (its answer's ceiling). */
const ANSWER_CEILING = 100;
/** One request's charges: 1 request, and its answer's reservation. */
const charges = (requests = 1): QuotaCharge[] =>
  chargesOf(rules, 'acme', [{ kind: 'request', tool: undefined, bytes: 10 }], 10, () => ANSWER_CEILING).map(
    (charge) => (charge.key.measure === 'requests' ? { ...charge, cost: requests } : charge),
  );
const [requests, answers] = charges() as [QuotaCharge, QuotaCharge];

/** Grants `granted` of `charge`'s key in slot 7, the store counting `counted`, ending at `endsAt`. */
function grant(
  leases: Leases,
  charge: QuotaCharge,
  granted: number,
  counted: number,
  endsAt: number,
  slot = 7,
) {
  return leases.grant({ key: charge.key, limit: charge.limit, granted, counted, slot, life: 1, endsAt });
}

describe('leases', () => {
  it('spend a take only when every key has room, and report each key as if charged now', () => {
    const leases = new Leases();
    expect(leases.serve(charges(), 0)).toBeUndefined();
    grant(leases, requests, 3, 4, 100);
    // The answers' key holds nothing: nothing is spent, the take goes to Redis.
    expect(leases.serve(charges(), 10)).toBeUndefined();
    grant(leases, answers, 500, 500, 100);
    // Each key as if charged now, and where its units were charged (to give back what an answer leaves).
    expect(leases.serve(charges(), 10)).toEqual({
      used: [2, ANSWER_CEILING],
      at: [
        { slot: 7, life: 1 },
        { slot: 7, life: 1 },
      ],
    });
    expect(leases.serve(charges(), 11)?.used).toEqual([3, 2 * ANSWER_CEILING]);
    // Two requests at once do not fit in the one unit left; one does.
    expect(leases.serve(charges(2), 12)).toBeUndefined();
    expect(leases.serve(charges(), 12)?.used).toEqual([4, 3 * ANSWER_CEILING]);
    expect(leases.serve(charges(), 13)).toBeUndefined();
    // A reservation is spent only from units that cover it whole.
    const small = new Leases();
    grant(small, requests, 3, 4, 100);
    grant(small, answers, ANSWER_CEILING - 1, ANSWER_CEILING - 1, 100);
    expect(small.serve(charges(), 10)).toBeUndefined();
  });

  it('are not spent at or after their end, nor under a limit other than the one they were leased under', () => {
    const leases = new Leases();
    grant(leases, requests, 5, 6, 100);
    grant(leases, answers, 500, 500, 100);
    expect(leases.serve(charges(), 100)).toBeUndefined();
    const reloaded = charges().map((charge) => ({ ...charge, limit: charge.limit / 2 }));
    expect(leases.serve(reloaded, 50)).toBeUndefined();
    expect(leases.serve(charges(), 50)?.used).toEqual([2, ANSWER_CEILING]);
  });

  it('ask for a first lease, then twice what the last one spent', () => {
    const leases = new Leases();
    expect(leases.want(requests)).toBe(8);
    expect(leases.want(answers)).toBe(64 * 1024);
    // A reservation larger than that asks for twice itself: a smaller lease could never serve the next one.
    expect(leases.want({ ...answers, cost: 100_000 })).toBe(200_000);
    grant(leases, requests, 40, 41, 100);
    grant(leases, answers, 100_000, 100_000, 100);
    for (let i = 0; i < 30; i++) leases.serve(charges(), 10);
    expect(leases.want(requests)).toBe(60);
    expect(leases.draw(answers.key, 80_000, 20)).toBe(0);
    // 30 reservations and 80,000 bytes drawn.
    expect(leases.want(answers)).toBe(2 * (30 * ANSWER_CEILING + 80_000));
  });

  it('draw an answer from the lease and leave the rest to Redis', () => {
    const leases = new Leases();
    expect(leases.draw(answers.key, 300, 0)).toBe(300);
    grant(leases, answers, 1000, 1000, 100);
    expect(leases.draw(answers.key, 600, 10)).toBe(0);
    expect(leases.draw(answers.key, 600, 10)).toBe(200);
    expect(leases.draw(answers.key, 600, 10)).toBe(600);
  });

  it('give back what is unspent: taken back for a take, at their end, on a grant of a later slot, on close', () => {
    const leases = new Leases();
    grant(leases, requests, 10, 11, 100);
    leases.serve([requests], 5);
    expect(leases.held(requests.key)).toBe(9);
    expect(leases.release([requests])).toEqual([{ key: requests.key, slot: 7, life: 1, amount: 9 }]);
    expect(leases.release([requests])).toEqual([]);
    // A grant in the same slot adds to the lease; one of a later slot gives the earlier one's units back.
    expect(grant(leases, requests, 4, 20, 100)).toBeUndefined();
    expect(grant(leases, requests, 4, 24, 100)).toBeUndefined();
    expect(grant(leases, requests, 6, 30, 200, 8)).toEqual({
      key: requests.key,
      slot: 7,
      life: 1,
      amount: 8,
    });
    expect(leases.expire(199)).toEqual([]);
    expect(leases.expire(200)).toEqual([{ key: requests.key, slot: 8, life: 1, amount: 6 }]);
    grant(leases, answers, 1000, 1000, 300);
    expect(leases.releaseAll()).toEqual([{ key: answers.key, slot: 7, life: 1, amount: 1000 }]);
    expect(leases.size).toBe(0);
  });

  it('keep a key that spent as a record of what it spent for a while, and forget one that did not', () => {
    const leases = new Leases();
    grant(leases, requests, 10, 11, 100);
    grant(leases, answers, 1000, 1000, 100);
    leases.serve([requests], 50);
    expect(leases.expire(100)).toHaveLength(2);
    // The answers' lease was never spent: forgotten. The requests' is a record (nothing to spend) ...
    expect(leases.size).toBe(1);
    expect(leases.serve([requests], 150)).toBeUndefined();
    expect(leases.want(requests)).toBe(8);
    expect(leases.nextEnd()).toBeGreaterThan(100);
    // ... until a whole while passes unused.
    expect(leases.expire(leases.nextEnd() ?? 0)).toEqual([]);
    expect(leases.size).toBe(0);
    expect(leases.nextEnd()).toBeUndefined();
  });

  it('are all taken back when the connection to the store is lost: none is spent after', () => {
    const leases = new Leases();
    grant(leases, requests, 10, 11, 100);
    expect(leases.releaseAll()).toEqual([{ key: requests.key, slot: 7, life: 1, amount: 10 }]);
    expect(leases.serve([requests], 1)).toBeUndefined();
    expect(leases.releaseAll()).toEqual([]);
  });
});

describe("the Redis script's call", () => {
  it('carries the units given back, then the answers, then the takes with what each asks to lease', () => {
    const { keys, args } = scriptCallOf(
      [{ key: requests.key, slot: 7, life: 1_700_000_000_000, amount: 3 }],
      [{ key: answers.key, amount: 1200 }],
      [{ charges: charges(2), force: false, wants: [16, 0] }],
    );
    const [r, a] = [`${KEY_PREFIX}${requests.key.id}`, `${KEY_PREFIX}${answers.key.id}`];
    expect(keys).toEqual([r, a, r, a]);
    expect(args).toEqual([
      ...['r', 1, 3, 7, 1_700_000_000_000],
      ...['a', 1, 1200, 60_000],
      // Per key: window, limit, cost, the room it needs (requests whole; a reservation one byte), lease asked.
      ...['t', 2, '0', 60_000, 1000, 2, 2, 16, 60_000, 1024 * 1024, ANSWER_CEILING, 1, 0],
    ]);
  });

  it('reads each take of a reply: the refused key, the retry and each key as counted and leased', () => {
    const take = { charges: charges(), force: false, wants: [8, 0] };
    // Per take: refused (1-based, 0: none), retry ms, then per key counted, leased, slot, ms left in it, life.
    const reply = [0, 0, 10, 8, 7, 120, 5, 0, 0, 7, 120, 6, 1, 3000, 600, 0, 7, 90, 5, 50, 0, 7, 90, 6];
    expect(takeRepliesOf(reply, [take, take])).toEqual([
      {
        refused: -1,
        retryMs: 0,
        keys: [
          { counted: 10, leased: 8, slot: 7, slotLeftMs: 120, life: 5 },
          { counted: 0, leased: 0, slot: 7, slotLeftMs: 120, life: 6 },
        ],
      },
      {
        refused: 0,
        retryMs: 3000,
        keys: [
          { counted: 600, leased: 0, slot: 7, slotLeftMs: 90, life: 5 },
          { counted: 50, leased: 0, slot: 7, slotLeftMs: 90, life: 6 },
        ],
      },
    ]);
  });
});
