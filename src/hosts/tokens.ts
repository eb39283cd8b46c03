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

/** Past this many characters per budgeted token, only a prefix is counted first (bounds the cost of huge results). */
const PREFIX_CHARS_PER_TOKEN = 16;

/**
 * Tokens in `text`. A text far longer than the budget is counted on a prefix first: when the prefix alone is
 * over the budget, that count is returned as a lower bound, so a 1 MiB result costs a bounded count.
 */
export function countTextTokens(text: string, budget: number): TokenCount {
  const prefixChars = budget * PREFIX_CHARS_PER_TOKEN;
  if (text.length > prefixChars) {
    const prefix = tokenCounter()(text.slice(0, prefixChars), AS_TEXT);
    if (prefix > budget) return { tokens: prefix, lowerBound: true };
  }
  return { tokens: tokenCounter()(text, AS_TEXT), lowerBound: false };
}
