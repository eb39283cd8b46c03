// The log of tenant headers from peers not trusted to send them (ignored, and counted in
// mcp_edge_untrusted_tenant_header_total): the first of each peer per window is logged at info, so an
// operator learns which client or proxy to fix without a line per request. Memory is bounded: past
// maxPeers peers in one window, further peers are only counted, and the count is logged when the window ends.
import type { Logger } from 'pino';

export interface UntrustedHeaderLogOptions {
  windowMs?: number;
  maxPeers?: number;
  now?: () => number;
}

export const UNTRUSTED_HEADER_WINDOW_MS = 60_000;
export const UNTRUSTED_HEADER_MAX_PEERS = 1_000;

export const UNTRUSTED_HEADER_MESSAGE =
  'a tenant header from a peer not in its trustedProxies was ignored (the first from this peer this minute)';

export class UntrustedHeaderLog {
  readonly #windowMs: number;
  readonly #maxPeers: number;
  readonly #now: () => number;
  #windowStart = Number.NEGATIVE_INFINITY;
  readonly #seen = new Set<string>();
  #unlogged = 0;

  constructor(
    private readonly log: Logger,
    options: UntrustedHeaderLogOptions = {},
  ) {
    this.#windowMs = options.windowMs ?? UNTRUSTED_HEADER_WINDOW_MS;
    this.#maxPeers = options.maxPeers ?? UNTRUSTED_HEADER_MAX_PEERS;
    this.#now = options.now ?? Date.now;
  }

  /** A request from `peer` carried a tenant header that was ignored. */
  note(peer: string | undefined): void {
    const now = this.#now();
    if (now - this.#windowStart >= this.#windowMs) this.#newWindow(now);
    const key = peer ?? 'unknown';
    if (this.#seen.has(key)) return;
    if (this.#seen.size >= this.#maxPeers) {
      this.#unlogged++;
      return;
    }
    this.#seen.add(key);
    this.log.info({ peer: key }, UNTRUSTED_HEADER_MESSAGE);
  }

  /** How many peers are remembered now (bounded by maxPeers). */
  get peers(): number {
    return this.#seen.size;
  }

  #newWindow(now: number): void {
    if (this.#unlogged > 0) {
      this.log.info(
        { peersNotLogged: this.#unlogged, maxPeers: this.#maxPeers },
        'tenant headers from untrusted peers: more peers than are logged per minute sent one',
      );
    }
    this.#seen.clear();
    this.#unlogged = 0;
    this.#windowStart = now;
  }
}
