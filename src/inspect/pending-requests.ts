// Which request a response answers: JSON-RPC responses carry only an id, so the edge remembers the
// method and tool of each request it forwarded. Bounded in count, in bytes and in age, because a peer
// that sends long ids or never answers must not make the edge grow.
import type { JsonRpcId, MessageSubject } from '../core/types.js';

export function idKey(id: JsonRpcId): string {
  return typeof id === 'string' ? `s:${id}` : `n:${String(id)}`;
}

interface Entry {
  id: JsonRpcId;
  subject: MessageSubject;
  expiresAt: number;
  bytes: number;
}

/** What one remembered entry is taken to cost: its strings (two bytes a character, V8's worst case) plus a map slot. */
const ENTRY_OVERHEAD_BYTES = 160;

function entryBytes(key: string, id: JsonRpcId, subject: MessageSubject): number {
  const chars =
    key.length +
    (typeof id === 'string' ? id.length : 0) +
    (subject.method?.length ?? 0) +
    (subject.tool?.length ?? 0) +
    (subject.host?.length ?? 0);
  return ENTRY_OVERHEAD_BYTES + 2 * chars;
}

/** A byte count shared by many maps, so a registry can bound them all together. */
export interface ByteTally {
  bytes: number;
}

export interface PendingRequestsLimits {
  maxEntries: number;
  maxBytes: number;
  ttlMs: number;
}

/** An insertion-ordered map with caps on entries and bytes and a time-to-live; the oldest entries go first. */
export class PendingRequests {
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;

  constructor(
    private readonly limits: PendingRequestsLimits,
    private readonly now: () => number = Date.now,
    /** Also counts this map's bytes (a session registry's total). */
    private readonly tally?: ByteTally,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  /** Bytes the entries are taken to cost (see ENTRY_OVERHEAD_BYTES). */
  get bytes(): number {
    return this.#bytes;
  }

  remember(id: JsonRpcId, subject: MessageSubject): void {
    const key = idKey(id);
    this.#delete(key);
    const bytes = entryBytes(key, id, subject);
    // An entry larger than the whole budget is not kept: its answer goes unattributed, nothing else is lost.
    if (bytes > this.limits.maxBytes) return;
    this.#entries.set(key, { id, subject, expiresAt: this.now() + this.limits.ttlMs, bytes });
    this.#add(bytes);
    this.#evict();
  }

  /** The subject of the request with this id, removing it: a request is answered once. */
  take(id: JsonRpcId): MessageSubject | undefined {
    const key = idKey(id);
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#delete(key);
    return entry.expiresAt >= this.now() ? entry.subject : undefined;
  }

  peek(id: JsonRpcId): MessageSubject | undefined {
    const entry = this.#entries.get(idKey(id));
    return entry !== undefined && entry.expiresAt >= this.now() ? entry.subject : undefined;
  }

  /** Ids still waiting for an answer (oldest first). */
  ids(): JsonRpcId[] {
    return [...this.#entries.values()].map((entry) => entry.id);
  }

  /** Every entry, oldest first, with its subject (to hand them on to a session). */
  entries(): [JsonRpcId, MessageSubject][] {
    return [...this.#entries.values()].map((entry) => [entry.id, entry.subject]);
  }

  /** Forgets everything (the registry dropped this map): its bytes leave the shared tally. */
  clear(): void {
    this.#add(-this.#bytes);
    this.#entries.clear();
  }

  #add(bytes: number): void {
    this.#bytes += bytes;
    if (this.tally !== undefined) this.tally.bytes += bytes;
  }

  #delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#add(-entry.bytes);
  }

  #evict(): void {
    const now = this.now();
    const { maxEntries, maxBytes } = this.limits;
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= maxEntries && this.#bytes <= maxBytes && entry.expiresAt >= now) break;
      this.#delete(key);
    }
  }
}
