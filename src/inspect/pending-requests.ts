// Which request a response answers: JSON-RPC responses carry only an id, so the edge remembers the
// method and tool of each request it forwarded, per HTTP exchange and per session. Bounded in count
// and age, because a peer that never answers must not make the edge grow.
import type { JsonRpcId, MessageSubject } from '../core/types.js';

export function idKey(id: JsonRpcId): string {
  return typeof id === 'string' ? `s:${id}` : `n:${String(id)}`;
}

interface Entry {
  id: JsonRpcId;
  subject: MessageSubject;
  expiresAt: number;
}

/** An insertion-ordered map with a size cap and a time-to-live; the oldest entries go first. */
export class PendingRequests {
  readonly #entries = new Map<string, Entry>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  remember(id: JsonRpcId, subject: MessageSubject): void {
    const key = idKey(id);
    this.#entries.delete(key);
    this.#entries.set(key, { id, subject, expiresAt: this.now() + this.ttlMs });
    this.#evict();
  }

  /** The subject of the request with this id, removing it: a request is answered once. */
  take(id: JsonRpcId): MessageSubject | undefined {
    const key = idKey(id);
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
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

  #evict(): void {
    const now = this.now();
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && entry.expiresAt >= now) break;
      this.#entries.delete(key);
    }
  }
}

/** Per-session memory of requests in both directions, for answers that arrive on GET or resumed streams. */
export class SessionRegistry {
  readonly #sessions = new Map<
    string,
    { toServer: PendingRequests; toClient: PendingRequests; lastSeen: number }
  >();

  constructor(
    private readonly options: { maxSessions: number; maxPendingPerSession: number; ttlMs: number },
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.#sessions.size;
  }

  /** Requests the client sent towards the server in this session (answered by the server). */
  toServer(sessionId: string): PendingRequests {
    return this.#session(sessionId).toServer;
  }

  /** Requests the server sent towards the client in this session (answered by the client). */
  toClient(sessionId: string): PendingRequests {
    return this.#session(sessionId).toClient;
  }

  forget(sessionId: string): void {
    this.#sessions.delete(sessionId);
  }

  #session(sessionId: string) {
    const now = this.now();
    let session = this.#sessions.get(sessionId);
    if (session !== undefined) {
      this.#sessions.delete(sessionId);
    } else {
      const { maxPendingPerSession, ttlMs } = this.options;
      session = {
        toServer: new PendingRequests(maxPendingPerSession, ttlMs, this.now),
        toClient: new PendingRequests(maxPendingPerSession, ttlMs, this.now),
        lastSeen: now,
      };
    }
    session.lastSeen = now;
    this.#sessions.set(sessionId, session);
    for (const [key, s] of this.#sessions) {
      if (this.#sessions.size <= this.options.maxSessions && now - s.lastSeen <= this.options.ttlMs) break;
      this.#sessions.delete(key);
    }
    return session;
  }
}
