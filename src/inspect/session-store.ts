// Facts that outlive one HTTP exchange, per MCP session: the requests each side still waits on (answers
// can arrive on a GET or a resumed stream), the answers already sent (a resumed stream can replay them),
// the GET streams it holds open and the pages of each listing. A session is kept only once the upstream
// has accepted it (a 2xx answer for its id), so made-up session ids cost nothing; the whole store is
// bounded in sessions and in bytes, oldest session first.
import { AnsweredRequests } from './answered-requests.js';
import { type ByteTally, PendingRequests, type PendingRequestsLimits } from './pending-requests.js';

export interface SessionState {
  /** Requests the client sent towards the server (answered by the server). */
  toServer: PendingRequests;
  /** Requests the server sent towards the client (answered by the client). */
  toClient: PendingRequests;
  /** Answers the server sent in resumable events, and the events the edge replaced (replays are judged by them). */
  answered: AnsweredRequests;
  /** GET streams (standalone or resumed) of this session the edge relays now. */
  getStreams: number;
  /** Pages requested per listing method (the pagination guard). */
  pages: Map<string, number>;
  /** The host label its initialize's clientInfo named (src/hosts), for the session's later exchanges. */
  host: string | undefined;
  lastSeen: number;
}

export interface SessionStoreLimits {
  maxSessions: number;
  /** Bytes of remembered requests across all sessions. */
  maxBytes: number;
  /** Per session and direction. */
  pending: PendingRequestsLimits;
  /** Per session: answers already sent, kept for their replays (DEFAULT_ANSWERED_LIMITS when unset). */
  answered?: PendingRequestsLimits;
  /** A session not seen for this long is forgotten. */
  ttlMs: number;
}

/**
 * Answers kept per session for their replays: a resumption follows its break within seconds or minutes, and
 * the store sheds this history before it drops any session (trim).
 */
export const DEFAULT_ANSWERED_LIMITS: PendingRequestsLimits = {
  maxEntries: 256,
  maxBytes: 64 * 1024,
  ttlMs: 15 * 60 * 1000,
};

/** The defaults: 10,000 sessions, 64 MiB of remembered requests in all, 1,000 requests or 1 MiB per session and side. */
export const DEFAULT_SESSION_LIMITS: SessionStoreLimits = {
  maxSessions: 10_000,
  maxBytes: 64 * 1024 * 1024,
  pending: { maxEntries: 1_000, maxBytes: 1024 * 1024, ttlMs: 60 * 60 * 1000 },
  ttlMs: 60 * 60 * 1000,
};

/** Per session: its map slot, its pending and answered maps and the pages map (their entries are tallied apart). */
const SESSION_OVERHEAD_BYTES = 1024;

export class SessionStore {
  readonly #sessions = new Map<string, SessionState>();
  readonly #tally: ByteTally = { bytes: 0 };

  constructor(
    private readonly limits: SessionStoreLimits = DEFAULT_SESSION_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.#sessions.size;
  }

  /** Bytes the store is taken to hold: remembered requests plus a fixed cost per session. */
  get bytes(): number {
    return this.#tally.bytes + this.#sessions.size * SESSION_OVERHEAD_BYTES;
  }

  /** The session, if the upstream has accepted it and it is still kept. Never creates one. */
  known(sessionId: string): SessionState | undefined {
    const session = this.#sessions.get(sessionId);
    if (session === undefined) return undefined;
    if (this.now() - session.lastSeen > this.limits.ttlMs) {
      this.forget(sessionId);
      return undefined;
    }
    return session;
  }

  /** The upstream answered this session with a 2xx: keep it (or touch it), and return it. */
  accept(sessionId: string): SessionState {
    let session = this.#sessions.get(sessionId);
    if (session !== undefined) {
      this.#sessions.delete(sessionId);
    } else {
      session = {
        toServer: new PendingRequests(this.limits.pending, this.now, this.#tally),
        toClient: new PendingRequests(this.limits.pending, this.now, this.#tally),
        answered: new AnsweredRequests(
          this.limits.answered ?? DEFAULT_ANSWERED_LIMITS,
          this.now,
          this.#tally,
        ),
        getStreams: 0,
        pages: new Map(),
        host: undefined,
        lastSeen: 0,
      };
    }
    session.lastSeen = this.now();
    this.#sessions.set(sessionId, session);
    this.trim();
    return session;
  }

  forget(sessionId: string): void {
    const session = this.#sessions.get(sessionId);
    if (session === undefined) return;
    this.#sessions.delete(sessionId);
    session.toServer.clear();
    session.toClient.clear();
    session.answered.clear();
  }

  /**
   * Drops the least recently seen sessions while over a bound (call after remembering into a session). Over
   * the byte bound, the answers kept for replays go first, least recently seen session first.
   */
  trim(): void {
    const now = this.now();
    for (const session of this.#sessions.values()) {
      if (this.bytes <= this.limits.maxBytes) break;
      session.answered.clear();
    }
    for (const [id, session] of this.#sessions) {
      const over =
        this.#sessions.size > this.limits.maxSessions ||
        this.bytes > this.limits.maxBytes ||
        now - session.lastSeen > this.limits.ttlMs;
      if (!over || this.#sessions.size <= 1) break;
      this.forget(id);
    }
  }
}

/** The session holds `max` GET streams open already. */
export function getStreamsFull(session: SessionState, max: number): boolean {
  return session.getStreams >= max;
}

/**
 * One more GET stream for this session, within `max` at once: its release (idempotent), or undefined at the
 * bound. A client that resumes after every refusal cannot grow what one session holds open.
 */
export function openGetStream(session: SessionState, max: number): (() => void) | undefined {
  if (getStreamsFull(session, max)) return undefined;
  session.getStreams++;
  let open = true;
  return () => {
    if (!open) return;
    open = false;
    session.getStreams--;
  };
}
