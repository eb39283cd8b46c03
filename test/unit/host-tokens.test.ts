// Token counting for host budgets (src/hosts/tokens.ts): gpt-tokenizer's own count on ordinary text, and a
// CPU cost per result that is linear in its length whatever the text (issue 23, item 4).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { edgeError } from '../../src/core/refusals/answers.js';
import type { HostBudgetViolation } from '../../src/core/refusals/facts.js';
import { countTextTokens, MAX_PIECE_CHARS } from '../../src/hosts/tokens.js';

/** The library itself, called the way the edge called it before: the reference count. */
const { countTokens } = createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as {
  countTokens: (text: string, options: { disallowedSpecial: Set<string> }) => number;
};
const libraryCount = (text: string) => countTokens(text, { disallowedSpecial: new Set() });

const file = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** Ordinary tool-result-like text: this repository's prose, source and JSON, and CJK prose. */
const ORDINARY: Record<string, string> = {
  markdown: file('docs/limits.md'),
  typescript: file('src/core/measure.ts'),
  json: file('package-lock.json').slice(0, 150_000),
  'Chinese prose': file('node_modules/@biomejs/biome/README.zh-CN.md'),
  'Japanese prose': file('node_modules/@biomejs/biome/README.ja.md'),
  'log lines': Array.from(
    { length: 2000 },
    (_, i) => `record ${i}: status ok, host web-${i % 97}, latency ${(i * 37) % 1000} ms`,
  ).join('\n'),
};

/** About 200,000 characters of the repository's own docs: ordinary text to compare costs with. */
function ordinary200k(): string {
  const docs = [
    'README.md',
    'docs/limits.md',
    'docs/operations.md',
    'docs/benchmarks.md',
    'docs/reliability.md',
  ];
  let text = '';
  for (let round = 0; text.length < 200_000; round++) text += `${file(docs[round % docs.length]!)}\n`;
  return text.slice(0, 200_000);
}

/** CJK ideographs in a fixed pseudo-random order: one pre-token with no repeated piece to remember. */
function cjkRun(length: number): string {
  let seed = 23;
  const chars: string[] = [];
  for (let i = 0; i < length; i++) {
    seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
    chars.push(String.fromCharCode(0x4e00 + (seed % 20_000)));
  }
  return chars.join('');
}

function cpuMs(work: () => void): number {
  const start = process.cpuUsage();
  work();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

const UNLIMITED = Number.MAX_SAFE_INTEGER;

describe('counting tokens for a host budget', () => {
  it('counts ordinary text exactly as gpt-tokenizer does (no pre-token over the piece size)', () => {
    for (const [name, text] of Object.entries(ORDINARY)) {
      const count = countTextTokens(text, UNLIMITED, UNLIMITED);
      expect({ name, tokens: count.tokens }).toEqual({ name, tokens: libraryCount(text) });
      expect(count).toMatchObject({ lowerBound: false, estimated: false, piecedPreTokens: 0 });
    }
  });

  it('counts a 200 KB single pre-token (a x 200k, random CJK x 100k) at a cost near ordinary text of that size', () => {
    countTextTokens('load the tables first', UNLIMITED, UNLIMITED);
    const ordinary = ordinary200k();
    const ordinaryMs = cpuMs(() => countTextTokens(ordinary, UNLIMITED, UNLIMITED));
    const letters = 'a'.repeat(200_000);
    const cjk = cjkRun(100_000);
    let lettersCount: ReturnType<typeof countTextTokens> | undefined;
    let cjkCount: ReturnType<typeof countTextTokens> | undefined;
    const lettersMs = cpuMs(() => {
      lettersCount = countTextTokens(letters, UNLIMITED, UNLIMITED);
    });
    const cjkMs = cpuMs(() => {
      cjkCount = countTextTokens(cjk, UNLIMITED, UNLIMITED);
    });
    // gpt-tokenizer's own count of these is quadratic in the run: 15 s for 100k `a`, 102 s for 100k CJK
    // (issue 23), thousands of times ordinary text. Counted in pieces: `a` costs less than ordinary text (its
    // pieces repeat), random ideographs about twice as much (they fall back to byte pairs, the library's
    // slowest path, and weigh 3 bytes each).
    expect(
      lettersMs,
      `a x 200k: ${lettersMs} ms CPU against ${ordinaryMs} ms for ordinary text`,
    ).toBeLessThan(2 * ordinaryMs);
    expect(cjkMs, `CJK x 100k: ${cjkMs} ms CPU against ${ordinaryMs} ms for ordinary text`).toBeLessThan(
      10 * ordinaryMs,
    );
    // `a` x 8 is one o200k token, so the pieces (a multiple of 8 long) count what the whole run does.
    expect(lettersCount).toEqual({ tokens: 25_000, lowerBound: false, estimated: false, piecedPreTokens: 1 });
    expect(cjkCount?.piecedPreTokens).toBe(1);
  });

  it('never splits a surrogate pair between pieces', () => {
    // One pre-token of a space and 800 emoji: 1,601 UTF-16 units, so a cut every MAX_PIECE_CHARS units
    // would fall inside an emoji, and each half would be counted as U+FFFD (806 tokens instead of 800).
    const emoji = ` ${'😀'.repeat(800)}`;
    expect(emoji.length % MAX_PIECE_CHARS).not.toBe(0);
    expect(countTextTokens(emoji, UNLIMITED, UNLIMITED)).toEqual({
      tokens: libraryCount(emoji),
      lowerBound: false,
      estimated: false,
      piecedPreTokens: 1,
    });
  });

  it('stops once over the budget, with a lower bound, and estimates past maxChars', () => {
    const logs = ORDINARY['log lines']!;
    const exact = libraryCount(logs);
    const stopped = countTextTokens(logs, 1000, UNLIMITED);
    expect(stopped.lowerBound).toBe(true);
    expect(stopped.tokens).toBeGreaterThan(1000);
    expect(stopped.tokens).toBeLessThan(exact);

    const estimated = countTextTokens(logs, UNLIMITED, 16_384);
    expect(estimated).toMatchObject({ lowerBound: false, estimated: true });
    expect(Math.abs(estimated.tokens - exact) / exact).toBeLessThan(0.05);

    // A run far past maxChars: only its first maxChars are tokenized, the rest is scaled.
    const run = countTextTokens('a'.repeat(1_048_576), UNLIMITED, 131_072);
    expect(run).toEqual({ tokens: 131_072, lowerBound: false, estimated: true, piecedPreTokens: 1 });
    // Over the budget within maxChars: a lower bound, not an estimate.
    expect(countTextTokens('a'.repeat(1_048_576), 10_000, 131_072)).toMatchObject({
      lowerBound: true,
      estimated: false,
    });
  });

  it('tells the model an estimated size as "about"', () => {
    const e = hostBudgetError({
      host: 'claude-code',
      title: 'Claude Code',
      unit: 'tokens',
      budget: 25_000,
      observed: 131_072,
      observedIsLowerBound: false,
      observedIsEstimate: true,
      tenant: 'default',
      tool: 'export',
      id: 3,
    });
    expect(e.error.message).toContain('is about 131,072 tokens');
    expect(e.error.data).toMatchObject({ observed: 131_072, observedIsEstimate: true });
  });
});

function hostBudgetError(violation: HostBudgetViolation) {
  return edgeError('answer_over_host_budget', { violation }, violation.id);
}
