// Collection pagination is the server's contract; the edge never pages or rewrites. It only counts the
// pages of one listing per session, so a server whose nextCursor never ends (or cycles) cannot keep a
// client paging forever (the same finding as a client-side page cap, made at the edge).

/** The list methods MCP paginates with cursors. */
export const PAGINATED_METHODS: ReadonlySet<string> = new Set([
  'tools/list',
  'resources/list',
  'resources/templates/list',
  'prompts/list',
]);

export interface ListingRequest {
  method: string;
  /** True when the request carries params.cursor (a next page), false for a first page. */
  continues: boolean;
}

/**
 * Counts this request's page in `pages` (one session's listings, keyed by method: at most the four
 * PAGINATED_METHODS); returns the page number if it is past the bound, else undefined.
 */
export function pageOverBound(
  pages: Map<string, number>,
  request: ListingRequest,
  maxPagesPerListing: number,
): number | undefined {
  const page = request.continues ? (pages.get(request.method) ?? 1) + 1 : 1;
  pages.set(request.method, page);
  return page > maxPagesPerListing ? page : undefined;
}
