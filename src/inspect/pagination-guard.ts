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

/** Pages requested per (session, method) listing; bounded in sessions, oldest forgotten first. */
export class PaginationGuard {
  readonly #pages = new Map<string, number>();

  constructor(private readonly maxListings = 10_000) {}

  /** Counts this request's page; returns the page number if it is past the bound, else undefined. */
  overBound(sessionId: string, request: ListingRequest, maxPagesPerListing: number): number | undefined {
    const key = `${sessionId}\u0000${request.method}`;
    const page = request.continues ? (this.#pages.get(key) ?? 1) + 1 : 1;
    this.#pages.delete(key);
    this.#pages.set(key, page);
    if (this.#pages.size > this.maxListings) {
      const oldest = this.#pages.keys().next().value;
      if (oldest !== undefined) this.#pages.delete(oldest);
    }
    return page > maxPagesPerListing ? page : undefined;
  }
}
