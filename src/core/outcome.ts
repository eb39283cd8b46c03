// How an exchange ended: the one list the exchange log line, the `outcome` label of
// mcp_edge_requests_total and docs/operations.md all take. Each value says who ended the exchange.
export const OUTCOMES = [
  /** The upstream's answer reached the client whole, every message as the upstream sent it. */
  'forwarded',
  /** The answer reached the client, with at least one message replaced or dropped for a ceiling. */
  'response_replaced',
  /** The edge answered the request itself (a 4xx: a ceiling, bad input, Host/Origin, credentials). */
  'refused',
  /** A list request past pagination.maxPagesPerListing, answered by the edge. */
  'pagination_bound',
  /** A GET resuming a call's stream whose last answer the edge had replaced: answered 204 by the edge. */
  'stream_complete',
  /** The client went away before its answer was complete. */
  'client_closed',
  /** mcp-edge's shutdown ended the exchange (a GET stream, or a call past the grace period). */
  'shutdown',
  /** The upstream could not be reached (connection refused or reset before it answered). */
  'upstream_unreachable',
  /** The upstream did not answer, or went silent, for longer than its timeout. */
  'upstream_timeout',
  /** No upstream connection for calls came free within upstream.timeouts.queue: the request was not sent. */
  'upstream_capacity',
  /** The upstream's SSE stream broke off. */
  'upstream_stream_failed',
  /** The upstream's JSON body broke off. */
  'upstream_body_failed',
  /** An exception in mcp-edge's own code ended the exchange (a 500, or its connection closed); logged at error. */
  'edge_failure',
] as const;

export type Outcome = (typeof OUTCOMES)[number];
