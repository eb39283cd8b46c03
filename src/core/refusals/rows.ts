// The shape of a row of the refusals table (table.ts), the JSON-RPC codes its errors carry, and the parts
// rows share. No status or outcome is chosen here: those are the table's.
import type { Outcome } from '../outcome.js';
import type { RefusalFacts } from './facts.js';

/** A request refused whole (it never reached the upstream). */
export const CODE_REQUEST_REFUSED = -32600;
/** JSON-RPC's parse error: the body is not JSON. */
export const CODE_PARSE_ERROR = -32700;
/** A response (or upstream exchange) that could not be delivered. Outside -32000..-32099 on purpose: the SDKs use that range. */
export const CODE_RESPONSE_UNDELIVERABLE = -32603;
/** MCP's HeaderMismatch (protocol revision 2026-07-28, SEP-2243): a request's headers disagree with its body. */
export const CODE_HEADER_MISMATCH = -32020;

type Of<F, T> = T | ((facts: F) => T);

/** A refusal with a JSON-RPC error body. */
export interface ErrorRow<F> {
  /** `data.reason`: what clients and dashboards key on (several refusals share one; it never changes). */
  readonly reason: Of<F, string>;
  readonly code: number;
  readonly message: (facts: F) => string;
  /** The error's data between `reason` and `enforcedBy`. */
  readonly data?: (facts: F) => Record<string, unknown>;
  /** Its status when it is the whole HTTP answer (none: it only ever stands inside an answer). */
  readonly status?: Of<F, number>;
  /** Headers beside content-type when it is the whole answer. */
  readonly headers?: Of<F, Readonly<Record<string, string>>>;
  /** How an exchange the edge answers or ends with it ended. */
  readonly outcome?: Outcome;
  /** False when it may not carry the request's id (the id itself is what it refuses). */
  readonly keepsId?: (facts: F) => boolean;
}

/** An answer without a body: only a status, its headers and an outcome. */
export interface EmptyRow<F> {
  readonly empty: true;
  readonly status: number;
  readonly headers: Of<F, Readonly<Record<string, string>>>;
  readonly outcome: Outcome;
}

export type Row<F> = ErrorRow<F> | EmptyRow<F>;

/** An answer that was lost: `detail` is in its message and its data. */
export function lost<F>(detail: (facts: F) => string) {
  return {
    reason: 'upstream_failed',
    code: CODE_RESPONSE_UNDELIVERABLE,
    message: (f: F) => `The response was lost: ${detail(f)}`,
    data: (f: F) => ({ detail: detail(f) }),
  };
}
type Diagnosed = RefusalFacts['upstream_failed'];

/** The upstream's failure: a stable sentence; its address and the socket error only when the operator asks. */
export function upstreamFailure(summary: string) {
  return {
    code: CODE_RESPONSE_UNDELIVERABLE,
    message: (f: Diagnosed) => (f.diagnostic !== undefined ? `${summary}: ${f.diagnostic.detail}` : summary),
    data: (f: Diagnosed) => ({ ...f.diagnostic }),
  };
}
