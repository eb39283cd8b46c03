// The pagination bound as an exchange filter: a listing request (one message, in a session the upstream
// accepted) is counted against pagination.maxPagesPerListing before it goes upstream, and refused past it.
import { edgeAnswer } from '../../core/refusals/answers.js';
import { PAGINATED_METHODS, pageOverBound } from '../../inspect/pagination-guard.js';
import type { ExchangeFilter } from './exchange-filter.js';

export function paginationBoundFilter(): ExchangeFilter {
  return {
    name: 'pagination-bound',
    request(exchange, request) {
      const listing = request.batch ? undefined : request.messages[0];
      if (listing === undefined || request.session === undefined || request.messages.length !== 1) return;
      const { kind, id, method } = listing;
      if (kind !== 'request' || id === undefined || method === undefined || !PAGINATED_METHODS.has(method))
        return;
      // The runtime the exchange started with: a reload applies to the exchanges after it.
      const bound = exchange.runtime.maxPagesPerListing;
      const page = pageOverBound(request.session.pages, { method, continues: listing.continues }, bound);
      return page === undefined
        ? undefined
        : edgeAnswer('pagination_bound', { method, page, maxPages: bound }, id);
    },
  };
}
