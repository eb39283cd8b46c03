// Quota rules and the window algorithm without a socket: which keys an exchange charges, how much, and what
// a memory store admits over time under a clock the test drives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { MemoryQuotaStore } from '../../src/quotas/memory-store.js';
import { answerKeys, chargesOf, quotaRulesOf, rulesFor } from '../../src/quotas/rules.js';
import { QuotaStoreError } from '../../src/quotas/store.js';
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

describe('quota rules', () => {
  it('charges each request, the body bytes, and checks the answers of every rule that covers the tenant', () => {
    const rules = rulesFromYaml(
      '  rules:\n    - { name: calls, window: 1m, requests: 10, requestBytes: 1KiB, responseBytes: 1MiB }\n    - { name: beta-only, window: 1m, requests: 5, tenants: [beta] }',
    );
    const charges = chargesOf(rules, 'acme', [list, call('a')], 160);
    expect(charges.map((c) => [c.key.rule.name, c.key.measure, c.cost, c.limit])).toEqual([
      ['calls', 'requests', 2, 10],
      ['calls', 'responseBytes', 0, 1024 * 1024],
      ['calls', 'requestBytes', 160, 1024],
    ]);
    expect(chargesOf(rules, 'beta', [list], 50).map((c) => c.key.rule.name)).toContain('beta-only');
  });

  it('keys a tenant+tool rule per tool and counts only tools/call of its tools', () => {
    const rules = rulesFromYaml(
      '  rules:\n    - { name: export-bytes, window: 1h, responseBytes: 2GiB, tools: [export_report, dump], per: tenant+tool }',
    );
    expect(chargesOf(rules, 'acme', [list], 50)).toEqual([]);
    const charges = chargesOf(rules, 'acme', [call('export_report'), call('dump'), call('other')], 300);
    expect(charges.map((c) => c.key.tool)).toEqual(['export_report', 'dump']);
    expect(new Set(charges.map((c) => c.key.id)).size).toBe(2);
    // A batch that calls one tool twice charges its keys once each, for both calls.
    const perTool = rulesFromYaml(
      '  rules:\n    - { name: per-tool, window: 1m, requests: 10, requestBytes: 1KiB, per: tenant+tool }',
    );
    const twice = chargesOf(perTool, 'acme', [call('dump'), call('a', 40), call('dump')], 260);
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
  });
});

describe('the memory store under a driven clock', () => {
  const rules = rulesFromYaml(
    '  rules:\n    - { name: calls, window: 60s, requests: 600, responseBytes: 1000 }',
  );
  const charge = (n: number) =>
    chargesOf(
      rules,
      'acme',
      Array.from({ length: n }, () => list),
      50 * n,
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

  it('lets the answer that crosses a byte budget through, and refuses the next request', () => {
    const store = new MemoryQuotaStore(100, () => 5_000_000);
    expect(store.take(charge(1), false).refused).toBe(-1);
    store.add(answerKeys(rules, 'acme', undefined), 1500);
    const next = store.take(charge(1), false);
    expect(next.refused).toBe(1);
    expect(next.used[1]).toBe(1500);
  });

  it('charges in observe mode and still says what would have been refused', () => {
    const store = new MemoryQuotaStore(100, () => 5_000_000);
    store.take(charge(600), false);
    const observed = store.take(charge(1), true);
    expect(observed.refused).toBe(0);
    expect(observed.used[0]).toBe(601);
  });

  it('holds at most maxKeys keys: a new one past them is a store error, after expired keys are let go', () => {
    let now = 5_000_000;
    const store = new MemoryQuotaStore(2, () => now);
    const tenantCharge = (tenant: string) => chargesOf(rules, tenant, [list], 50).filter((c) => c.cost > 0);
    store.take(tenantCharge('a'), false);
    store.take(tenantCharge('b'), false);
    expect(store.size).toBe(2);
    expect(() => store.take(tenantCharge('c'), false)).toThrow(QuotaStoreError);
    now += 62_000;
    expect(store.take(tenantCharge('c'), false).refused).toBe(-1);
    expect(store.size).toBe(1);
  });
});
