// Walking a paginated listing (tools/list, prompts/list, resources/list, resources/templates/list) through
// every page, bounded by a page cap and the audit's deadline: a cursor that comes back, or pages that never
// end, stop the walk with the pages seen. Also the two contract probes: an invalid cursor, and a second walk.
import type { ByteSpan } from '../core/json-scan.js';
import { listedItemSpans } from './item-spans.js';
import type { Answer, AuditSession } from './session.js';

export interface Listing {
  method: string;
  /** The member of the result that holds the items. */
  key: string;
  /** What names an item, for comparing walks. */
  idField: string;
  /** The server capability that offers it. */
  capability: string;
}

export const LISTINGS: readonly Listing[] = [
  { method: 'tools/list', key: 'tools', idField: 'name', capability: 'tools' },
  { method: 'prompts/list', key: 'prompts', idField: 'name', capability: 'prompts' },
  { method: 'resources/list', key: 'resources', idField: 'uri', capability: 'resources' },
  {
    method: 'resources/templates/list',
    key: 'resourceTemplates',
    idField: 'uriTemplate',
    capability: 'resources',
  },
];

export interface ListedItem {
  value: unknown;
  /** Its exact bytes as sent. */
  bytes: Uint8Array;
  page: number;
}

export interface ListingPage {
  /** Bytes of the whole answer as sent. */
  bytes: number;
  items: number;
  nextCursor: string | undefined;
}

export type WalkStop = 'end' | 'cursor-cycle' | 'page-cap' | 'deadline' | 'error';

export interface ListingWalk {
  listing: Listing;
  pages: ListingPage[];
  items: ListedItem[];
  stop: WalkStop;
  /** For `error`: what the server answered. */
  error?: string;
}

/** Bounds of one audit: pages per walk, and the time left overall. */
export interface WalkBounds {
  maxPages: number;
  /** Milliseconds left before the audit's deadline. */
  remaining(): number;
}

function idOf(item: unknown, field: string): string | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const id = (item as Record<string, unknown>)[field];
  return typeof id === 'string' ? id : undefined;
}

export function itemIds(walk: ListingWalk): string[] {
  return walk.items.map((item) => idOf(item.value, walk.listing.idField) ?? '');
}

function pageOf(answer: Extract<Answer, { kind: 'result' }>, listing: Listing, page: number) {
  const values = Array.isArray(answer.result[listing.key]) ? (answer.result[listing.key] as unknown[]) : [];
  const spans: ByteSpan[] = listedItemSpans(answer.raw.bytes, listing.key) ?? [];
  const items: ListedItem[] = values.map((value, index) => {
    const span = spans.length === values.length ? spans[index] : undefined;
    // Without spans (a page the scan could not read) the item weighs its compact JSON.
    const bytes =
      span !== undefined
        ? answer.raw.bytes.subarray(span[0], span[1])
        : new TextEncoder().encode(JSON.stringify(value));
    return { value, bytes, page };
  });
  const next = answer.result.nextCursor;
  return { items, nextCursor: typeof next === 'string' ? next : undefined };
}

export async function walkListing(
  session: AuditSession,
  listing: Listing,
  bounds: WalkBounds,
): Promise<ListingWalk> {
  const walk: ListingWalk = { listing, pages: [], items: [], stop: 'end' };
  const cursors = new Set<string>();
  let cursor: string | undefined;
  for (;;) {
    if (walk.pages.length >= bounds.maxPages) return { ...walk, stop: 'page-cap' };
    const left = bounds.remaining();
    if (left <= 0) return { ...walk, stop: 'deadline' };
    const answer = await session.request(listing.method, cursor !== undefined ? { cursor } : undefined, left);
    if (answer.kind !== 'result') {
      if (bounds.remaining() <= 0) return { ...walk, stop: 'deadline' };
      const error =
        answer.kind === 'oversized'
          ? `a page of ${answer.totalBytes} bytes, over --max-message-bytes`
          : `${answer.code ?? 'no code'}: ${answer.message}`;
      return { ...walk, stop: 'error', error };
    }
    const page = pageOf(answer, listing, walk.pages.length);
    walk.items.push(...page.items);
    walk.pages.push({
      bytes: answer.raw.bytes.length,
      items: page.items.length,
      nextCursor: page.nextCursor,
    });
    if (page.nextCursor === undefined) return walk;
    if (cursors.has(page.nextCursor)) return { ...walk, stop: 'cursor-cycle' };
    cursors.add(page.nextCursor);
    cursor = page.nextCursor;
  }
}

/** A cursor no server issued: the spec asks for -32602 (invalid params) in answer. */
export const INVALID_CURSOR = 'mcp-edge-audit:not-a-cursor';

export type CursorProbe =
  | { answered: 'invalid-params' }
  | { answered: 'result'; items: number }
  | { answered: 'other-error'; code: number | undefined; message: string }
  | { answered: 'nothing' };

export async function probeInvalidCursor(
  session: AuditSession,
  listing: Listing,
  bounds: WalkBounds,
): Promise<CursorProbe> {
  const left = bounds.remaining();
  if (left <= 0) return { answered: 'nothing' };
  const answer = await session.request(listing.method, { cursor: INVALID_CURSOR }, left);
  if (answer.kind === 'result') {
    const items = answer.result[listing.key];
    return { answered: 'result', items: Array.isArray(items) ? items.length : 0 };
  }
  if (answer.kind === 'error' && answer.code === -32602) return { answered: 'invalid-params' };
  if (answer.kind === 'error' && answer.raw !== undefined)
    return { answered: 'other-error', code: answer.code, message: answer.message };
  return { answered: 'nothing' };
}
