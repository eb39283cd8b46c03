// A tool result measured as one host would see it: on the channels that host shows the model, in its unit.
// The raw channel bytes (already measured for every message) bound every unit from above, so a result well
// within every budget is never decoded, serialized or tokenized: small calls pay a comparison.
import { isRecord } from '../core/bytes.js';
import { estimateTokens } from '../core/measure.js';
import type { ResultChannels } from '../core/types.js';
import type { HostBudget, HostChannels, HostProfile, HostUnit } from './profiles.js';
import { countTextTokens, DEFAULT_MAX_TOKENIZED_CHARS } from './tokens.js';

export interface BudgetSize {
  unit: HostUnit;
  limit: number;
  observed: number;
  /**
   * Not measured exactly: the result was far within the budget (an upper bound from raw bytes, tokens as
   * bytes / 4), or it is longer than hostBudgets.maxTokenizedCharacters (tokens extrapolated from that many).
   */
  estimated: boolean;
  /** Only part of the result was counted; the real size is at least `observed`. */
  lowerBound: boolean;
}

export interface HostResultSize {
  /** One per budget of the profile. */
  sizes: BudgetSize[];
  /** The largest observed/limit over the budgets (the histogram's value). */
  share: number;
  /** The first budget the result is over, if any. */
  over: BudgetSize | undefined;
}

/** Measured exactly only above this share of a budget; below it the raw-byte bound is recorded. */
export const EXACT_FROM_SHARE = 0.5;

function rawBound(channels: ResultChannels, which: HostChannels): number {
  const content = channels.content_text + channels.content_resource;
  switch (which) {
    case 'content':
      return content;
    case 'structured':
      return channels.structured;
    case 'both':
      return content + channels.structured;
    default:
      return channels.structured > 0 ? channels.structured : content;
  }
}

/** An upper bound of the unit from raw JSON bytes: a token, a character and a line break each take at least a byte as sent (`\n` two). */
function boundInUnit(unit: HostUnit, rawBytes: number): number {
  return unit === 'lines' ? Math.floor(rawBytes / 2) + 1 : rawBytes;
}

/** The text blocks and embedded text resources of `content`, one block a line. */
function contentText(result: Record<string, unknown>): string {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const texts: string[] = [];
  for (const block of blocks) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else if (block.type === 'resource' && isRecord(block.resource) && typeof block.resource.text === 'string')
      texts.push(block.resource.text);
  }
  return texts.join('\n');
}

function structuredText(result: Record<string, unknown>): string | undefined {
  const value = result.structuredContent;
  return value === undefined || value === null ? undefined : JSON.stringify(value);
}

/** What the host shows the model, as one text. */
export function hostVisibleText(result: Record<string, unknown>, which: HostChannels): string {
  switch (which) {
    case 'content':
      return contentText(result);
    case 'structured':
      return structuredText(result) ?? '';
    case 'both': {
      const structured = structuredText(result);
      const content = contentText(result);
      return structured === undefined ? content : `${content}\n${structured}`;
    }
    default:
      return structuredText(result) ?? contentText(result);
  }
}

function lineCount(text: string): number {
  if (text.length === 0) return 0;
  let lines = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
  return lines;
}

/** `text` measured exactly in the budget's unit (tokens counted up to just past the limit). */
export function exactSize(text: string, budget: HostBudget, maxTokenizedChars: number): BudgetSize {
  const { unit, limit } = budget;
  let observed: number;
  let lowerBound = false;
  let estimated = false;
  switch (unit) {
    case 'tokens': {
      const count = countTextTokens(text, limit, maxTokenizedChars);
      observed = count.tokens;
      lowerBound = count.lowerBound;
      estimated = count.estimated;
      break;
    }
    case 'characters':
      observed = text.length;
      break;
    case 'bytes':
      observed = Buffer.byteLength(text, 'utf8');
      break;
    default:
      observed = lineCount(text);
  }
  // One literal, its fields named: a spread of a shared base took V8's slow clone path.
  return { unit, limit, estimated, lowerBound, observed };
}

/**
 * The result's size against each budget of `profile`. `channels` are its raw channel bytes (measure.ts);
 * `result` is the parsed `result` member, or how to get it: it is read only when the raw bound is near a budget.
 * `maxTokenizedChars` (hostBudgets.maxTokenizedCharacters) bounds the characters counted in tokens. `exact`
 * measures even a result far within every budget (`mcp-edge audit`: one call, not every call of a proxy).
 */
export function measureForHost(
  profile: HostProfile,
  result: Record<string, unknown> | (() => Record<string, unknown>),
  channels: ResultChannels,
  maxTokenizedChars: number = DEFAULT_MAX_TOKENIZED_CHARS,
  exact = false,
): HostResultSize {
  const raw = rawBound(channels, profile.channels);
  const farWithin =
    !exact && profile.budgets.every((b) => boundInUnit(b.unit, raw) <= b.limit * EXACT_FROM_SHARE);
  let sizes: BudgetSize[];
  if (farWithin) {
    sizes = profile.budgets.map((b) => ({
      unit: b.unit,
      limit: b.limit,
      // Tokens as the edge's usual rough estimate (bytes / 4, estimateTokens); other units as their bound.
      observed: b.unit === 'tokens' ? estimateTokens(raw) : boundInUnit(b.unit, raw),
      estimated: true,
      lowerBound: false,
    }));
  } else {
    const text = hostVisibleText(typeof result === 'function' ? result() : result, profile.channels);
    sizes = profile.budgets.map((b) => exactSize(text, b, maxTokenizedChars));
  }
  let share = 0;
  let over: BudgetSize | undefined;
  for (const size of sizes) {
    share = Math.max(share, size.observed / size.limit);
    if (over === undefined && size.observed > size.limit) over = size;
  }
  return { sizes, share, over };
}
