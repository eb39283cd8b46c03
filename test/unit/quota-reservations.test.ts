// Answers' reservations and the tenants' shares of the memory store, without a socket: a reservation goes back
// exactly once however its exchange ends, the byte budget holds to the budget plus one answer whatever the
// admissions, answers, drops and clock do, and a tenant that fills its share of keys is refused alone.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { MemoryQuotaStore } from '../../src/quotas/memory-store.js';
import { type ExchangeReservations, ReservationLedger } from '../../src/quotas/reservations.js';
import { answerKeys, chargesOf, type QuotaRule, quotaRulesOf } from '../../src/quotas/rules.js';
import { oldestCountedSlot, slotOf } from '../../src/quotas/window.js';

function rulesFromYaml(rules: string): QuotaRule[] {
  const { config } = parseConfigText(
    `upstream: { url: http://127.0.0.1:1/mcp }\nquotas:\n  rules:\n${rules}`,
    'q.yaml',
    {},
  );
  return quotaRulesOf(config.quotas?.rules ?? []);
}

const WINDOW_MS = 60_000;
const BUDGET = 1000;
/** The largest answer a request may get (its ceiling), when it has one. */
const MAX_CEILING = 400;
const rules = rulesFromYaml(`    - { name: bytes, window: 60s, responseBytes: ${BUDGET} }`);
const answersKey = answerKeys(rules, 'acme', undefined)[0]!;
const request = { kind: 'request', tool: undefined, bytes: 10 };

/** A store, its ledger, and an admission of `ceilings.length` requests (ids 0, 1, ...) with those ceilings. */
function setup(now: () => number) {
  const store = new MemoryQuotaStore(100, now);
  const ledger = new ReservationLedger(store);
  /** The exchange's reservations when admitted (undefined when it reserved nothing), or 'refused'. */
  const admit = (ceilings: readonly (number | null)[]): ExchangeReservations | undefined | 'refused' => {
    const charges = chargesOf(
      rules,
      'acme',
      ceilings.map(() => request),
      10 * ceilings.length,
      (i) => ceilings[i] ?? null,
    );
    const result = store.take(charges, false);
    if (result.refused !== -1) return 'refused';
    return ledger.open(
      charges,
      result.at,
      ceilings.map((_, i) => i),
    );
  };
  /** An admission that reserved. */
  const reserve = (ceilings: readonly (number | null)[]): ExchangeReservations => {
    const admitted = admit(ceilings);
    if (typeof admitted !== 'object') throw new Error(`expected reservations, got ${admitted}`);
    return admitted;
  };
  const use = async () => (await store.use([answersKey]))[0];
  return { store, ledger, admit, reserve, use };
}

describe('reservations', () => {
  it('go back exactly once: by their answer, at the exchange end, or all at once when the store closes', async () => {
    const { store, ledger, reserve, use } = setup(() => 5_000_000);
    const exchange = reserve([300, 200]);
    expect(await use()).toBe(500);
    // The answer to 0: its 300 go back; the filter charges the answer's bytes to the keys it gets.
    const settled = exchange.settle(0);
    expect(settled?.keys).toEqual([answersKey]);
    settled?.store.add(settled.keys, 120);
    expect(await use()).toBe(320);
    // A second answer with the same id, or one this exchange never reserved for, settles nothing.
    expect(exchange.settle(0)).toBeUndefined();
    expect(exchange.settle('other')).toBeUndefined();
    // The exchange ends before the answer to 1: its 200 go back, once.
    exchange.releaseAll();
    exchange.releaseAll();
    expect(exchange.settle(1)).toBeUndefined();
    expect(await use()).toBe(120);
    expect(ledger.size).toBe(0);
    // Another exchange holds 400 when the store closes: the ledger gives them back, and nothing after.
    const open = reserve([400]);
    expect(await use()).toBe(520);
    ledger.closeAll();
    expect(await use()).toBe(120);
    open.releaseAll();
    expect(open.settle(0)).toBeUndefined();
    expect(await use()).toBe(120);
    expect(store.size).toBe(1);
  });

  it('settle repeated ids of one batch in order, each with its own reservation', async () => {
    const { store, ledger, admit, use } = setup(() => 5_000_000);
    const charges = chargesOf(rules, 'acme', [request, request], 20, (i) => [100, 250][i] ?? null);
    const result = store.take(charges, false);
    const exchange = ledger.open(charges, result.at, ['same', 'same'])!;
    expect(await use()).toBe(350);
    exchange.settle('same');
    expect(await use()).toBe(250);
    exchange.settle('same');
    expect(await use()).toBe(0);
    expect(typeof admit([1])).toBe('object');
  });

  it('property: the bytes delivered in any window never exceed the budget plus one answer, and none is left held', async () => {
    type Op =
      | { op: 'admit'; ceilings: (number | null)[] }
      | { op: 'answer'; pick: number; share: number }
      | { op: 'end'; pick: number }
      | { op: 'tick'; ms: number };
    // Ceilings and answers as often as not at their largest: the bound is crossed by big answers, if at all.
    const ceiling = fc.oneof(
      fc.constant(MAX_CEILING),
      fc.integer({ min: 1, max: MAX_CEILING }),
      fc.constant(null),
    );
    const share = fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true }));
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        arbitrary: fc.record({
          op: fc.constant('admit' as const),
          ceilings: fc.array(ceiling, { minLength: 1, maxLength: 4 }),
        }),
        weight: 3,
      },
      { arbitrary: fc.record({ op: fc.constant('answer' as const), pick: fc.nat(), share }), weight: 3 },
      { arbitrary: fc.record({ op: fc.constant('end' as const), pick: fc.nat() }), weight: 1 },
      {
        arbitrary: fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 9_000 }) }),
        weight: 1,
      },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 40, maxLength: 120, size: 'max' }), async (ops) => {
        let now = 1_000_000_000_000 + 7_300;
        const { store, ledger, admit, use } = setup(() => now);
        interface Waiting {
          /** Its exchange's reservations (none: admitted without). */
          exchange: ExchangeReservations | undefined;
          /** Ends with its exchange. */
          group: number;
          id: number;
          ceiling: number | null;
          admittedAt: number;
        }
        let waiting: Waiting[] = [];
        let groups = 0;
        const delivered: { at: number; bytes: number }[] = [];
        const end = (group: number) => {
          for (const w of waiting) if (w.group === group) w.exchange?.releaseAll();
          waiting = waiting.filter((w) => w.group !== group);
        };
        for (const step of ops) {
          if (step.op === 'admit') {
            const exchange = admit(step.ceilings);
            const group = groups++;
            if (exchange !== 'refused')
              for (const [id, c] of step.ceilings.entries())
                waiting.push({ exchange, group, id, ceiling: c, admittedAt: now });
          } else if (step.op === 'answer' && waiting.length > 0) {
            const [w] = waiting.splice(step.pick % waiting.length, 1) as [Waiting];
            // An answer within its ceiling (the ceilings filter replaces a larger one); none: any size.
            const bytes = Math.round(step.share * (w.ceiling ?? MAX_CEILING));
            // As the filter does: settled against its reservation, or charged as it comes.
            const settled = w.exchange?.settle(w.id);
            if (settled !== undefined) settled.store.add(settled.keys, bytes);
            else store.add([answersKey], bytes);
            delivered.push({ at: now, bytes });
            const inWindow = delivered.filter((d) => d.at >= now - WINDOW_MS);
            expect(inWindow.reduce((sum, d) => sum + d.bytes, 0)).toBeLessThanOrEqual(BUDGET + MAX_CEILING);
          } else if (step.op === 'end' && waiting.length > 0) {
            end(waiting[step.pick % waiting.length]!.group);
          } else if (step.op === 'tick') {
            // Calls end within the window (a call that outlives it is charged when its answer comes).
            for (const w of [...waiting]) if (w.admittedAt < now + step.ms - WINDOW_MS / 2) end(w.group);
            now += step.ms;
          }
        }
        for (const w of [...waiting]) end(w.group);
        expect(ledger.size).toBe(0);
        // Nothing reserved is left: the key holds exactly the answers still in its window.
        const oldest = oldestCountedSlot(now, WINDOW_MS);
        const counted = delivered.filter((d) => slotOf(d.at, WINDOW_MS) >= oldest);
        expect(await use()).toBe(counted.reduce((sum, d) => sum + d.bytes, 0));
      }),
      { numRuns: 200 },
    );
  });
});

describe("the memory store's keys, shared per tenant", () => {
  const perTool = rulesFromYaml('    - { name: tool-calls, window: 60s, requests: 60, per: tenant+tool }');
  const callOf = (tenant: string, tool: string) =>
    chargesOf(perTool, tenant, [{ kind: 'request', tool, bytes: 10 }], 10, () => null);

  it('refuse only the tenant that fills its share, with its own refusal, and keep counting everyone else', () => {
    let now = 5_000_000;
    const store = new MemoryQuotaStore(5, () => now);
    // Made-up tool names: one key each, until the share is held.
    for (let i = 0; i < 5; i++) expect(store.take(callOf('mallory', `made-up-${i}`), false).refused).toBe(-1);
    const full = store.take(callOf('mallory', 'made-up-5'), false);
    expect(full).toMatchObject({ refused: 0, refusedFor: 'keys' });
    // Its keys free when their window has passed: that is when it may retry.
    expect(full.retryAfterSeconds).toBeGreaterThanOrEqual(60);
    expect(full.retryAfterSeconds).toBeLessThanOrEqual(61);
    // Its keys still count.
    expect(store.take(callOf('mallory', 'made-up-0'), false).used).toEqual([2]);
    // Another tenant is counted, and refused at 61 for its budget.
    const results = Array.from({ length: 61 }, () => store.take(callOf('alice', 'search'), false));
    expect(results.filter((r) => r.refused === -1)).toHaveLength(60);
    expect(results[60]).toMatchObject({ refused: 0, refusedFor: 'budget', used: [60] });
    // Observe mode: refused as seen, the new key not made, and nothing charged for it.
    const observed = store.take(callOf('mallory', 'made-up-6'), true);
    expect(observed).toMatchObject({ refused: 0, refusedFor: 'keys', at: [{ life: -1 }] });
    expect(store.size).toBe(6);
    // A window later the keys that no longer count are let go.
    now += 61_000;
    expect(store.take(callOf('mallory', 'made-up-7'), false).refused).toBe(-1);
    expect(store.size).toBe(2);
  });

  it("takes a reload's new share: a tenant over it makes no new key until it is under", () => {
    const store = new MemoryQuotaStore(3, () => 5_000_000);
    for (let i = 0; i < 3; i++) store.take(callOf('acme', `t${i}`), false);
    store.keysPerTenant = 2;
    expect(store.take(callOf('acme', 't3'), false).refusedFor).toBe('keys');
    expect(store.take(callOf('acme', 't0'), false).refused).toBe(-1);
  });
});
