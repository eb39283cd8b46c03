// Token counts for host budgets counted in tokens: the one place the edge tokenizes. gpt-tokenizer's
// o200k_base: pure JavaScript (Node 20 to 24, no WebAssembly), the fastest of the candidates measured
// (docs/limits.md, "Counting tokens"). Claude's own current tokenizer is not published; every count here is
// the edge's measurement, named as such.
//
// Its BPE merge is quadratic in the length of one pre-token (a run of letters, of punctuation, of spaces), so
// one long run would hold the event loop for seconds. Every BPE call here gets at most MAX_PIECE_CHARS
// characters, and at most `maxChars` characters of a result are counted: the CPU one result costs is linear in
// min(its length, maxChars) with a fixed constant, whatever the text (docs/limits.md, "What counting costs").
import { createRequire } from 'node:module';

type CountTokens = (text: string, options: { disallowedSpecial: Set<string> }) => number;

interface Tokenizer {
  count: CountTokens;
  /** o200k_base's pre-token pattern (global), the one the library splits text with before BPE. */
  preTokens: RegExp;
}

/** The most characters (UTF-16 units) one BPE call gets: a longer pre-token is counted in pieces of this size. */
export const MAX_PIECE_CHARS = 256;

/** Pre-tokens are handed to the library in slices of about this many characters (and the budget checked after each). */
const SLICE_CHARS = 4096;

/**
 * The library's memo of pre-token encodings. Its default (100,000 entries) times the largest entry a piece can
 * make (MAX_PIECE_CHARS characters of key, up to 3 tokens a character) is hundreds of MB; this bounds it to tens.
 */
const MERGE_CACHE_ENTRIES = 8192;

/** hostBudgets.maxTokenizedCharacters when the config does not set it. */
export const DEFAULT_MAX_TOKENIZED_CHARS = 131_072;

/**
 * Loaded on the first result that needs a token count (one over half a token budget): the encoder's
 * tables take about 67 MB of memory and 150 ms to load, which an edge whose callers never send such a
 * result never pays. Synchronous (its CommonJS build), so a verdict never waits on a promise.
 */
let loaded: Tokenizer | undefined;
function tokenizer(): Tokenizer {
  if (loaded === undefined) {
    const require = createRequire(import.meta.url);
    const encoding = require('gpt-tokenizer/encoding/o200k_base') as {
      countTokens: CountTokens;
      setMergeCacheSize: (entries: number) => void;
    };
    const params = require('gpt-tokenizer/encodingParams/constants') as { O200K_TOKEN_SPLIT_REGEX: RegExp };
    encoding.setMergeCacheSize(MERGE_CACHE_ENTRIES);
    loaded = { count: encoding.countTokens, preTokens: params.O200K_TOKEN_SPLIT_REGEX };
  }
  return loaded;
}

/** Text is counted as text: `<|endoftext|>` in a tool result is not a special token to anyone reading it. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

export interface TokenCount {
  tokens: number;
  /** Counting stopped once over the budget: the count of the whole text is at least `tokens`. */
  lowerBound: boolean;
  /** The text is longer than `maxChars` and within the budget there: `tokens` is extrapolated from the part counted. */
  estimated: boolean;
  /** Pre-tokens longer than MAX_PIECE_CHARS, counted in pieces (the count may differ from the library's own there). */
  piecedPreTokens: number;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Tokens in `text`, counted in order and stopped as soon as they are over `budget` (then a lower bound).
 * Exactly gpt-tokenizer's count when no pre-token is longer than MAX_PIECE_CHARS; a longer one is counted as
 * its pieces. Past `maxChars` characters nothing more is counted: a text still within the budget there gets
 * an estimate, the tokens counted scaled by its length over the characters counted.
 */
export function countTextTokens(text: string, budget: number, maxChars: number): TokenCount {
  const { count, preTokens: pattern } = tokenizer();
  const whole = text.length <= maxChars;
  const head = whole ? text : text.slice(0, maxChars);
  let tokens = 0;
  let counted = 0; // head[0, counted) is counted
  let piecedPreTokens = 0;
  /** Ordinary pre-tokens, head[counted, to), in one call: the library splits them as it would the whole text. */
  const add = (to: number) => {
    if (to > counted) tokens += count(head.slice(counted, to), AS_TEXT);
    counted = to;
  };
  /** A long pre-token, head[counted, to), in pieces of at most MAX_PIECE_CHARS; no surrogate pair is cut. */
  const addPieces = (to: number) => {
    piecedPreTokens++;
    while (counted < to && tokens <= budget) {
      let next = Math.min(counted + MAX_PIECE_CHARS, to);
      if (next < to && isHighSurrogate(head.charCodeAt(next - 1))) next--;
      tokens += count(head.slice(counted, next), AS_TEXT);
      counted = next;
    }
  };
  // A copy: a global RegExp carries its position, and this walk must not share it with the library's.
  const preTokens = new RegExp(pattern.source, pattern.flags);
  for (let m = preTokens.exec(head); m !== null && tokens <= budget; m = preTokens.exec(head)) {
    const start = m.index;
    const end = start + m[0].length;
    const long = end - start > MAX_PIECE_CHARS;
    if (end === head.length && !whole) {
      // Cut by maxChars: this pre-token may go on past the cut, so only its whole pieces before it count.
      add(start);
      if (long && tokens <= budget) {
        let piecesEnd = start + Math.floor((end - start) / MAX_PIECE_CHARS) * MAX_PIECE_CHARS;
        if (isHighSurrogate(head.charCodeAt(piecesEnd - 1))) piecesEnd--;
        addPieces(piecesEnd);
      }
      break;
    }
    if (long) {
      add(start);
      if (tokens <= budget) addPieces(end);
    } else if (end - counted >= SLICE_CHARS || end === head.length) add(end);
  }
  if (tokens > budget)
    return { tokens, lowerBound: counted < text.length, estimated: false, piecedPreTokens };
  if (whole) {
    add(text.length);
    return { tokens, lowerBound: false, estimated: false, piecedPreTokens };
  }
  const scaled = counted > 0 ? Math.ceil((tokens * text.length) / counted) : Math.ceil(text.length / 4);
  return { tokens: scaled, lowerBound: false, estimated: true, piecedPreTokens };
}
