// The catalog's weight: each tool's descriptor as the server sent it (bytes, characters, tokens, lines), the
// listing per page, and for each host with a catalog budget (HostProfile.catalog) the share of it the
// catalog takes in every conversation. Result budgets (HostProfile.budgets) judge tool results only (calls.ts).
import type { HostProfile } from '../hosts/profiles.js';
import type { BudgetSize } from '../hosts/result-size.js';
import { countTextTokens } from '../hosts/tokens.js';
import type { ListingWalk } from './listing.js';

export interface ToolWeight {
  name: string;
  bytes: number;
  chars: number;
  /** Counted with the edge's tokenizer (o200k_base), as host budgets in tokens are. */
  tokens: number;
  lines: number;
  page: number;
  /** The host whose catalog budget this descriptor takes the largest share of. */
  strictest:
    | { host: string; size: number; unit: BudgetSize['unit']; budget: number; share: number }
    | undefined;
  descriptor: Record<string, unknown>;
}

/** A size against one host's budget: the budget that decides (the one over, else the fullest). */
export interface HostShare {
  size: number;
  unit: BudgetSize['unit'];
  budget: number;
  share: number;
  over: boolean;
  /** Counting stopped past the budget: the size is at least this. */
  atLeast?: true;
  /** Tokens extrapolated past hostBudgets.maxTokenizedCharacters. */
  estimated?: true;
  /** Every budget of the host, when it has more than one. */
  budgets?: { size: number; unit: BudgetSize['unit']; budget: number; over: boolean }[];
}

export interface CatalogWeight {
  tools: ToolWeight[];
  /**
   * The catalog's size in each unit: the sum over its tools' descriptors, each as the server sent it. One
   * measure: the same sums are what each host's catalog budget is judged by.
   */
  totalBytes: number;
  totalChars: number;
  totalTokens: number;
  totalLines: number;
  pages: { bytes: number; items: number; descriptorBytes: number }[];
  /** The catalog against each catalog budget: only hosts that have one. */
  hosts: Record<string, HostShare>;
}

const utf8 = new TextDecoder('utf-8');

/** The deciding size of several budgets, in the shape audit reports. */
export function shareOf(sizes: readonly BudgetSize[]): HostShare | undefined {
  let decider: BudgetSize | undefined;
  let best = -1;
  for (const size of sizes) {
    const share = size.observed / size.limit;
    const over = size.observed > size.limit;
    const deciderOver = decider !== undefined && decider.observed > decider.limit;
    if (decider === undefined || (over && !deciderOver) || (over === deciderOver && share > best)) {
      decider = size;
      best = share;
    }
  }
  if (decider === undefined) return undefined;
  return {
    size: decider.observed,
    unit: decider.unit,
    budget: decider.limit,
    share: decider.observed / decider.limit,
    over: decider.observed > decider.limit,
    ...(decider.lowerBound ? { atLeast: true as const } : {}),
    ...(decider.estimated ? { estimated: true as const } : {}),
    ...(sizes.length > 1
      ? {
          budgets: sizes.map((s) => ({
            size: s.observed,
            unit: s.unit,
            budget: s.limit,
            over: s.observed > s.limit,
          })),
        }
      : {}),
  };
}

/** A size in each unit, and whether its tokens were extrapolated (hostBudgets.maxTokenizedCharacters). */
interface Sizes extends Record<BudgetSize['unit'], number> {
  estimated: boolean;
}

function lineCount(text: string): number {
  return text === '' ? 0 : text.split('\n').length;
}

function sizesOf(text: string, bytes: number, maxTokenizedChars: number): Sizes {
  const count = countTextTokens(text, Number.POSITIVE_INFINITY, maxTokenizedChars);
  return {
    bytes,
    characters: text.length,
    tokens: count.tokens,
    lines: lineCount(text),
    estimated: count.estimated,
  };
}

/** `sizes` against each catalog budget of `profile` (none: the host has no catalog budget). */
function catalogShare(profile: HostProfile, sizes: Sizes): HostShare | undefined {
  return shareOf(
    (profile.catalog?.budgets ?? []).map((budget) => ({
      unit: budget.unit,
      limit: budget.limit,
      observed: sizes[budget.unit],
      estimated: sizes.estimated && budget.unit === 'tokens',
      lowerBound: false,
    })),
  );
}

function strictestShare(profiles: readonly HostProfile[], sizes: Sizes): ToolWeight['strictest'] {
  let strictest: ToolWeight['strictest'];
  for (const profile of profiles) {
    const share = catalogShare(profile, sizes);
    if (share !== undefined && (strictest === undefined || share.share > strictest.share)) {
      const { size, unit, budget } = share;
      strictest = { host: profile.name, size, unit, budget, share: share.share };
    }
  }
  return strictest;
}

/**
 * The catalog's weight: each descriptor as sent, in every unit, and the whole (the sum of its descriptors)
 * against the catalog budget of each host that has one. A host's budgets for tool results never judge it.
 */
export function catalogWeight(
  walk: ListingWalk | undefined,
  profiles: readonly HostProfile[],
  maxTokenizedChars: number,
): CatalogWeight {
  const tools: ToolWeight[] = [];
  const total: Sizes = { bytes: 0, characters: 0, tokens: 0, lines: 0, estimated: false };
  for (const item of walk?.items ?? []) {
    const text = utf8.decode(item.bytes);
    const sizes = sizesOf(text, item.bytes.length, maxTokenizedChars);
    for (const unit of ['bytes', 'characters', 'tokens', 'lines'] as const) total[unit] += sizes[unit];
    total.estimated ||= sizes.estimated;
    const descriptor =
      typeof item.value === 'object' && item.value !== null ? (item.value as Record<string, unknown>) : {};
    tools.push({
      name: typeof descriptor.name === 'string' ? descriptor.name : '',
      bytes: sizes.bytes,
      chars: sizes.characters,
      tokens: sizes.tokens,
      lines: sizes.lines,
      page: item.page,
      strictest: strictestShare(profiles, sizes),
      descriptor,
    });
  }
  const pages = (walk?.pages ?? []).map((page, index) => ({
    bytes: page.bytes,
    items: page.items,
    descriptorBytes: tools.filter((t) => t.page === index).reduce((sum, t) => sum + t.bytes, 0),
  }));
  const hosts: Record<string, HostShare> = {};
  for (const profile of profiles) {
    const share = catalogShare(profile, total);
    if (share !== undefined) hosts[profile.name] = share;
  }
  return {
    tools: [...tools].sort((a, b) => b.bytes - a.bytes || a.name.localeCompare(b.name)),
    totalBytes: total.bytes,
    totalChars: total.characters,
    totalTokens: total.tokens,
    totalLines: total.lines,
    pages,
    hosts,
  };
}
