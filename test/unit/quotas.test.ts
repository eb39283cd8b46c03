// Quota rules and the window algorithm without a socket: which keys an exchange charges, how much, and what
// a memory store admits over time under a clock the test drives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { MemoryQuotaStore } from '../../src/quotas/memory-store.js';
import { answerKeys, chargesOf, quotaRulesOf, roomNeeded, rulesFor } from '../../src/quotas/rules.js';
import type { Held, TakeResult } from '../../src/quotas/store.js';
import { oldestCountedSlot, slotOf } from '../../src/quotas/window.js';

function rulesFromYaml(yaml: string) {
  const { config } = parseConfigText(
    `upstream: { url: http://127.0.0.1:1/mcp }\nquotas:\n${yaml}`,
    'q.yaml',
    {},
  );
  return quotaRulesOf(config.quotas?.rules ?? []);
}

const call = (tool: string, bytes = 100) => ({ kind: 'request', tool, bytes });
const list = { kind: 'request', tool: undefined, bytes: 50 };
/** Every answer's ceiling, for charges that do not care: none (an answer then reserves the whole budget). */
const noCeiling = () => null;

describe('quota rules', () => {
  it('charges each request, the body bytes, and checks the answers of every rule that covers the tenant', () => {
    const rules = rulesFromYaml(
      '  rules:\n    - { name: calls, window: 1m, requests: 10, requestBytes: 1KiB, responseBytes: 1MiB }\n    - { name: beta-only, window: 1m, requests: 5, tenants: [beta] }',
    );
    // Each request reserves its answer's ceiling (here 4,096 bytes) of the answers' budget.
    const charges = chargesOf(rules, 'acme', [list, call('a')], 160, () => 4096);
    expect(charges.map((c) => [c.key.rule.name, c.key.measure, c.cost, c.limit])).toEqual([
      ['calls', 'requests', 2, 10],
      ['calls', 'responseBytes', 2 * 4096, 1024 * 1024],
      ['calls', 'requestBytes', 160, 1024],
    ]);
    expect(charges[1]?.reserved).toEqual([
      { message: 0, amount: 4096 },
      { message: 1, amount: 4096 },
    ]);
    expect(chargesOf(rules, 'beta', [list], 50, noCeiling).map((c) => c.key.rule.name)).toContain(
      'beta-only',
    );
  });

  it('keys a tenant+tool rule per tool and counts only tools/call of its tools', () => {
    const rules = rulesFromYaml(
      '  rules:\n    - { name: export-bytes, window: 1h, responseBytes: 2GiB, tools: [export_report, dump], per: tenant+tool }',
    );
    expect(chargesOf(rules, 'acme', [list], 50, noCeiling)).toEqual([]);
    const charges = chargesOf(
      rules,
      'acme',
      [call('export_report'), call('dump'), call('other')],
      300,
      noCeiling,
    );
    expect(charges.map((c) => c.key.tool)).toEqual(['export_report', 'dump']);
    expect(new Set(charges.map((c) => c.key.id)).size).toBe(2);
    // A batch that calls one tool twice charges its keys once each, for both calls.
    const perTool = rulesFromYaml(
      '  rules:\n    - { name: per-tool, window: 1m, requests: 10, requestBytes: 1KiB, per: tenant+tool }',
    );
    const twice = chargesOf(perTool, 'acme', [call('dump'), call('a', 40), call('dump')], 260, noCeiling);
    expect(twice.map((c) => [c.key.tool, c.key.measure, c.cost])).toEqual([
      ['dump', 'requests', 2],
      ['dump', 'requestBytes', 200],
      ['a', 'requests', 1],
      ['a', 'requestBytes', 40],
    ]);
    expect(answerKeys(rules, 'acme', 'export_report')).toHaveLength(1);
    expect(answerKeys(rules, 'acme', 'other')).toHaveLength(0);
    expect(rulesFor(rules, 'acme', undefined)).toEqual([]);
    expect(rulesFor(rules, 'acme', 'dump').map((r) => r.name)).toEqual(['export-bytes']);
  });

  it('refuses a rule with no measure, a duplicate name, a bad store, with did-you-mean for a typo', () => {
    const problems = (yaml: string) => {
      try {
        parseConfigText(`upstream: { url: http://127.0.0.1:1/mcp }\nquotas:\n${yaml}`, 'q.yaml', {});
        return '';
      } catch (err) {
        return String(err);
      }
    };
    expect(problems('  rules:\n    - { name: a, window: 1m }')).toMatch(
      /q\.yaml:\d+:\d+: quotas\.rules\[0\]: a rule sets at least one of requests, requestBytes, responseBytes/,
    );
    expect(
      problems(
        '  rules:\n    - { name: a, window: 1m, requests: 1 }\n    - { name: a, window: 1m, requests: 2 }',
      ),
    ).toMatch(/quotas\.rules\[1\]\.name: rule "a" is named twice/);
    expect(problems('  store: mongodb://x')).toMatch(/quotas\.store/);
    expect(problems('  rules:\n    - { name: a, window: 1m, request: 1 }')).toMatch(
      /did you mean "requests"/,
    );
    // Each tenant's share of the memory store's keys holds at least the keys its rules keep without a tool.
    expect(
      problems('  maxKeys: 1\n  rules:\n    - { name: a, window: 1m, requests: 1, responseBytes: 1MB }'),
    ).toMatch(
      /quotas\.maxKeys: gives each of the 1 tenant 1 key, fewer than the 2 its rules keep without a tool; raise it to at least 2/,
    );
    expect(
      problems('  maxKeys: 1\n  rules:\n    - { name: a, window: 1m, requests: 1, per: tenant+tool }'),
    ).toBe('');
  });
});

describe('the memory store under a driven clock', () => {
  const rules = rulesFromYaml(
    '  rules:\n    - { name: calls, window: 60s, requests: 600, responseBytes: 1000 }',
  );
  // Answers of nothing reserve nothing: these tests watch the requests' window.
  const charge = (n: number) =>
    chargesOf(
      rules,
      'acme',
      Array.from({ length: n }, () => list),
      50 * n,
      () => 0,
    );

  it('admits exactly the limit in any window, frees it at most one slot late, and says when', () => {
    let now = 1_000_000_000_000 + 7_300; // in the middle of a slot
    const store = new MemoryQuotaStore(100, () => now);
    let admitted = 0;
    for (let i = 0; i < 700; i++) if (store.take(charge(1), false).refused === -1) admitted++;
    expect(admitted).toBe(600);
    const refused = store.take(charge(1), false);
    expect(refused.refused).toBe(0);
    expect(refused.used[0]).toBe(600);
    // Freed when its slot ends plus the window: 60 s, and at most 1 s (one slot) more.
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(60);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(61);
    now += 59_999;
    expect(store.take(charge(1), false).refused).toBe(0);
    now += refused.retryAfterSeconds * 1000 - 59_999;
    expect(store.take(charge(1), false).refused).toBe(-1);
  });

  it('property: the use it reports is the sum of the charges still counted, whatever the clock does', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: -2_000, max: 30_000 }), fc.integer({ min: 1, max: 5 })), {
          maxLength: 80,
        }),
        (steps) => {
          let now = 1_000_000_000_000;
          const store = new MemoryQuotaStore(100, () => now);
          let made: { slot: number; amount: number }[] = [];
          for (const [advance, n] of steps) {
            now += advance; // a clock may step back (an NTP correction)
            // A charge that stopped counting is let go for good, even if the clock steps back after.
            const oldest = oldestCountedSlot(now, 60_000);
            made = made.filter((c) => c.slot >= oldest);
            const expected = made.reduce((sum, c) => sum + c.amount, 0);
            const result = store.take(charge(n), false);
            expect(result.used[0]).toBe(expected + (result.refused === -1 ? n : 0));
            if (result.refused === -1) made.push({ slot: slotOf(now, 60_000), amount: n });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('admits a batch whole or not at all', () => {
    const store = new MemoryQuotaStore(100, () => 5_000_000);
    expect(store.take(charge(599), false).refused).toBe(-1);
    expect(store.take(charge(2), false).refused).toBe(0);
    expect(store.take(charge(1), false).refused).toBe(-1);
  });

  it("reserves each answer's ceiling at admission, charges the answer's real bytes instead, and lets the last one cross", async () => {
    const store = new MemoryQuotaStore(100, () => 5_000_000);
    const reserving = (ceiling: number) => chargesOf(rules, 'acme', [list], 50, () => ceiling);
    /** What a take reserved, as the filter gives it back when the answer comes. */
    const heldBy = (taken: TakeResult, ceiling: number): Held[] => {
      const key = answerKeys(rules, 'acme', undefined)[0]!;
      return [{ key, slot: taken.at[1]!.slot, life: taken.at[1]!.life, amount: ceiling }];
    };
    const first = store.take(reserving(600), false);
    expect(first.used[1]).toBe(600);
    // 600 of 1,000 are reserved: the next answer is admitted, and may cross the budget.
    const second = store.take(reserving(600), false);
    expect(second.refused).toBe(-1);
    expect(second.used[1]).toBe(1200);
    const third = store.take(reserving(600), false);
    expect(third.refused).toBe(1);
    expect(third.used[1]).toBe(1200);
    // The first answer was 100 bytes: its reservation goes back, its bytes are charged.
    store.release(heldBy(first, 600));
    store.add(answerKeys(rules, 'acme', undefined), 100);
    const fourth = store.take(reserving(600), false);
    expect(fourth.refused).toBe(-1);
    expect(fourth.used[1]).toBe(1300);
    // A batch is admitted while its answers but the largest fit (the last may cross, as one answer alone).
    const two = chargesOf(rules, 'acme', [list, list], 100, () => 400);
    expect(roomNeeded(two[1]!)).toBe(401);
    store.release([...heldBy(second, 600), ...heldBy(fourth, 600)]);
    expect((await store.use(answerKeys(rules, 'acme', undefined)))[0]).toBe(100);
    expect(store.take(two, false).refused).toBe(-1);
    expect(store.take(two, false).refused).toBe(1);
  });

  it('charges in observe mode and still says what would have been refused', () => {
    const store = new MemoryQuotaStore(100, () => 5_000_000);
    store.take(charge(600), false);
    const observed = store.take(charge(1), true);
    expect(observed.refused).toBe(0);
    expect(observed.used[0]).toBe(601);
  });
});
