// The metric children that add into prom-client's series directly: the exposition must be what prom-client's
// own children give for the same observations, byte for byte, however scrapes fall between them.
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createFamilies } from '../../src/metrics/families.js';
import { counterCell, histogramCell } from '../../src/metrics/fast-children.js';

function pair() {
  const fast = new Registry();
  const plain = new Registry();
  for (const r of [fast, plain]) r.setDefaultLabels({ upstream: 'http://127.0.0.1:3000/mcp' });
  return { fast, plain, fastFamilies: createFamilies(fast), plainFamilies: createFamilies(plain) };
}

const value = fc.oneof(
  fc.integer({ min: 0, max: 2 ** 28 }),
  fc.double({ min: 0, max: 200, noNaN: true }),
  fc.constantFrom(256, 512, 64 * 1024 * 1024, 0.005, 120),
);

describe('fast metric children', () => {
  it('expose exactly what prom-client children expose for the same values', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), value, fc.boolean()), { maxLength: 60 }),
        async (steps) => {
          const { fast, plain, fastFamilies: f, plainFamilies: p } = pair();
          const tools = ['a', 'b', 'c', 'd'];
          const fastBytes = new Map<number, ReturnType<typeof histogramCell>>();
          const fastSeconds = new Map<number, ReturnType<typeof histogramCell>>();
          const fastCount = new Map<number, ReturnType<typeof counterCell>>();
          for (const [which, v, scrape] of steps) {
            const tool = tools[which]!;
            const labels = () => ({
              direction: 'response',
              kind: 'result',
              method: 'tools/call',
              tool,
              tenant: 't',
            });
            if (!fastBytes.has(which)) fastBytes.set(which, histogramCell(f.messageBytes, labels()));
            fastBytes.get(which)!.observe(Math.round(v));
            p.messageBytes.labels(labels()).observe(Math.round(v));
            const seconds = { tenant: tool, status: '200' };
            if (!fastSeconds.has(which))
              fastSeconds.set(which, histogramCell(f.upstreamDuration, { ...seconds }));
            fastSeconds.get(which)!.observe(v / 1000);
            p.upstreamDuration.labels({ ...seconds }).observe(v / 1000);
            const count = { tenant: tool, http_method: 'POST', status: '200', outcome: 'forwarded' };
            if (!fastCount.has(which)) fastCount.set(which, counterCell(f.requests, { ...count }));
            fastCount.get(which)!.inc();
            p.requests.labels({ ...count }).inc();
            if (scrape) expect(await fast.metrics()).toBe(await plain.metrics());
          }
          expect(await fast.metrics()).toBe(await plain.metrics());
        },
      ),
      { numRuns: 150 },
    );
  });

  it('refuses a value that is not a number, as prom-client does', () => {
    const { fastFamilies: f } = pair();
    const cell = histogramCell(f.upstreamDuration, { tenant: 't', status: '200' });
    // The fast cell itself, not prom-client's child it falls back to when prom-client's internals moved.
    expect('startTimer' in cell).toBe(false);
    expect(() => cell.observe(Number.NaN)).toThrow(TypeError);
  });
});
