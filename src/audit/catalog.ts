// The catalog's weight: each tool's descriptor as the server sent it (bytes, characters, tokens), the
// listing per page, and for each host the share of its budget the catalog takes in every conversation.
import type { HostProfile } from '../hosts/profiles.js';
import { type BudgetSize, exactSize } from '../hosts/result-size.js';
import { countTextTokens } from '../hosts/tokens.js';
import type { ListingWalk } from './listing.js';

export interface ToolWeight {
  name: string;
  bytes: number;
  chars: number;
  /** Counted with the edge's tokenizer (o200k_base), as host budgets in tokens are. */
  tokens: number;
  page: number;
  /** The host whose budget this descriptor takes the largest share of. */
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
  totalBytes: number;
  totalChars: number;
  totalTokens: number;
  pages: { bytes: number; items: number; descriptorBytes: number }[];
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

/** `text` against every budget of `profile`. */
export function textShare(
  profile: HostProfile,
  text: string,
  maxTokenizedChars: number,
): HostShare | undefined {
  return shareOf(profile.budgets.map((budget) => exactSize(text, budget, maxTokenizedChars)));
}

function strictestShare(
  profiles: readonly HostProfile[],
  text: string,
  maxTokenizedChars: number,
): ToolWeight['strictest'] {
  let strictest: ToolWeight['strictest'];
  for (const profile of profiles) {
    const share = textShare(profile, text, maxTokenizedChars);
    if (share !== undefined && (strictest === undefined || share.share > strictest.share)) {
      const { size, unit, budget } = share;
      strictest = { host: profile.name, size, unit, budget, share: share.share };
    }
  }
  return strictest;
}

export function catalogWeight(
  walk: ListingWalk | undefined,
  profiles: readonly HostProfile[],
  maxTokenizedChars: number,
): CatalogWeight {
  const tools: ToolWeight[] = [];
  const texts: string[] = [];
  for (const item of walk?.items ?? []) {
    const text = utf8.decode(item.bytes);
    texts.push(text);
    const descriptor =
      typeof item.value === 'object' && item.value !== null ? (item.value as Record<string, unknown>) : {};
    tools.push({
      name: typeof descriptor.name === 'string' ? descriptor.name : '',
      bytes: item.bytes.length,
      chars: text.length,
      tokens: countTextTokens(text, Number.POSITIVE_INFINITY, maxTokenizedChars).tokens,
      page: item.page,
      strictest: strictestShare(profiles, text, maxTokenizedChars),
      descriptor,
    });
  }
  const pages = (walk?.pages ?? []).map((page, index) => ({
    bytes: page.bytes,
    items: page.items,
    descriptorBytes: tools.filter((t) => t.page === index).reduce((sum, t) => sum + t.bytes, 0),
  }));
  const catalogText = texts.join('\n');
  const hosts: Record<string, HostShare> = {};
  for (const profile of profiles) {
    const share = textShare(profile, catalogText, maxTokenizedChars);
    if (share !== undefined) hosts[profile.name] = share;
  }
  return {
    tools: [...tools].sort((a, b) => b.bytes - a.bytes || a.name.localeCompare(b.name)),
    totalBytes: tools.reduce((sum, t) => sum + t.bytes, 0),
    totalChars: tools.reduce((sum, t) => sum + t.chars, 0),
    totalTokens: tools.reduce((sum, t) => sum + t.tokens, 0),
    pages,
    hosts,
  };
}
