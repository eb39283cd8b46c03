// Which request a response answers: JSON-RPC responses carry only an id, so the edge remembers the
// method and tool of each request it forwarded. Bounded in count, in bytes and in age, because a peer
// that sends long ids or never answers must not make the edge grow.
import { idKey } from '../core/client-names.js';
import type { JsonRpcId, MessageSubject } from '../core/types.js';

/** What one remembered entry is taken to cost: its strings (two bytes a character, V8's worst case) plus a map slot. */
const ENTRY_OVERHEAD_BYTES = 160;

/** The bytes an entry is taken to cost: its key, its string id and its subject's strings. */
export function entryBytes(key: string, id: JsonRpcId | undefined, subject: MessageSubject): number {
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

interface Slot<V> {
  value: V;
  expiresAt: number;
  bytes: number;
}

/**
 * An insertion-ordered map with caps on entries and bytes and a time-to-live; the oldest entries go first.
 * Every map the edge keeps about a session's messages is one of these.
 */
export class BoundedEntries<V> {
  readonly #slots = new Map<string, Slot<V>>();
  #bytes = 0;

  constructor(
    private readonly limits: PendingRequestsLimits,
    private readonly now: () => number = Date.now,
    /** Also counts this map's bytes (a session registry's total). */
    private readonly tally?: ByteTally,
  ) {}

  get size(): number {
    return this.#slots.size;
  }

  /** Bytes the entries are taken to cost (see entryBytes). */
  get bytes(): number {
    return this.#bytes;
  }

  set(key: string, value: V, bytes: number): void {
    this.delete(key);
    // An entry larger than the whole budget is not kept: it goes unattributed, nothing else is lost.
    if (bytes > this.limits.maxBytes) return;
    this.#slots.set(key, { value, expiresAt: this.now() + this.limits.ttlMs, bytes });
    this.#add(bytes);
    this.#evict();
  }

  /** The live value under key, left in place. */
  get(key: string): V | undefined {
    const slot = this.#slots.get(key);
    return slot !== undefined && slot.expiresAt >= this.now() ? slot.value : undefined;
  }

  /** The live value under key, removed. */
  take(key: string): V | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    this.delete(key);
    return slot.expiresAt >= this.now() ? slot.value : undefined;
  }

  delete(key: string): void {
    const slot = this.#slots.get(key);
    if (slot === undefined) return;
    this.#slots.delete(key);
    this.#add(-slot.bytes);
  }

  /** Every value, oldest first. */
  values(): V[] {
    return [...this.#slots.values()].map((slot) => slot.value);
  }

  /** Forgets everything (the registry dropped this map): its bytes leave the shared tally. */
  clear(): void {
    this.#add(-this.#bytes);
    this.#slots.clear();
  }

  #add(bytes: number): void {
    this.#bytes += bytes;
    if (this.tally !== undefined) this.tally.bytes += bytes;
  }

  #evict(): void {
    const now = this.now();
    const { maxEntries, maxBytes } = this.limits;
    for (const [key, slot] of this.#slots) {
      if (this.#slots.size <= maxEntries && this.#bytes <= maxBytes && slot.expiresAt >= now) break;
      this.delete(key);
    }
  }
}

interface Entry {
  id: JsonRpcId;
  subject: MessageSubject;
}

/** Requests waiting for their answers, by id: what each answer is about. */
export class PendingRequests {
  readonly #entries: BoundedEntries<Entry>;

  constructor(limits: PendingRequestsLimits, now: () => number = Date.now, tally?: ByteTally) {
    this.#entries = new BoundedEntries(limits, now, tally);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Bytes the entries are taken to cost (see entryBytes). */
  get bytes(): number {
    return this.#entries.bytes;
  }

  remember(id: JsonRpcId, subject: MessageSubject): void {
    const key = idKey(id);
    this.#entries.set(key, { id, subject }, entryBytes(key, id, subject));
  }

  /** The subject of the request with this id, removing it: a request is answered once. */
  take(id: JsonRpcId): MessageSubject | undefined {
    return this.#entries.take(idKey(id))?.subject;
  }

  peek(id: JsonRpcId): MessageSubject | undefined {
    return this.#entries.get(idKey(id))?.subject;
  }

  /** Ids still waiting for an answer (oldest first). */
  ids(): JsonRpcId[] {
    return this.#entries.values().map((entry) => entry.id);
  }

  /** Every entry, oldest first, with its subject (to hand them on to a session). */
  entries(): [JsonRpcId, MessageSubject][] {
    return this.#entries.values().map((entry) => [entry.id, entry.subject]);
  }

  /** Forgets everything (the registry dropped this map): its bytes leave the shared tally. */
  clear(): void {
    this.#entries.clear();
  }
}
