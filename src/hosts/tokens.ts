// Token counts for host budgets counted in tokens. gpt-tokenizer's o200k_base: pure JavaScript (Node 20 to 24,
// no WebAssembly), the fastest of the candidates measured (docs/limits.md, "Counting tokens"). Claude's own
// current tokenizer is not published; every count here is the edge's measurement, named as such.
import { createRequire } from 'node:module';

type CountTokens = (text: string, options: { disallowedSpecial: Set<string> }) => number;

/**
 * Loaded on the first result that needs a token count (one over half a token budget): the encoder's
 * tables take about 67 MB of memory and 150 ms to load, which an edge whose callers never send such a
 * result never pays. Synchronous (its CommonJS build), so a verdict never waits on a promise.
 */
let countTokens: CountTokens | undefined;
function tokenCounter(): CountTokens {
  countTokens ??= (
    createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as { countTokens: CountTokens }
  ).countTokens;
  return countTokens;
}

/** Text is counted as text: `<|endoftext|>` in a tool result is not a special token to anyone reading it. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

export interface TokenCount {
  tokens: number;
  /** Only a prefix was counted (the result is far over the budget): the real count is at least `tokens`. */
  lowerBound: boolean;
}

/** The first prefix counted: 4 characters per budgeted token (English prose and JSON run at about 3 to 4). */
const FIRST_PREFIX_CHARS_PER_TOKEN = 4;

/**
 * Tokens in `text`. A text longer than the budget could fill is counted on growing prefixes (4, 8, 16, ...
 * characters per budgeted token): once a prefix alone is over the budget, that count is returned as a lower
 * bound. A 1 MiB result then costs about one count of 100,000 characters for a 25,000-token budget, and a
 * text that tokenizes unusually densely costs at most about twice one full count.
 */
export function countTextTokens(text: string, budget: number): TokenCount {
  const count = tokenCounter();
  for (let chars = budget * FIRST_PREFIX_CHARS_PER_TOKEN; chars < text.length; chars *= 2) {
    const prefix = count(text.slice(0, chars), AS_TEXT);
    if (prefix > budget) return { tokens: prefix, lowerBound: true };
  }
  return { tokens: count(text, AS_TEXT), lowerBound: false };
}
