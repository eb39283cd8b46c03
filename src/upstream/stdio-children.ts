// The children of a stdio upstream: one per session, one sessionless child per tenant, and the bounds on how
// many there may be (upstream.stdio.maxProcesses, maxProcessesPerTenant). A child is counted from add to
// remove, in every view at once, and a place promised to a child that waits for an evicted one to end is
// counted from reserve to release, so the bounds hold while one process gives way to another. What of each
// child's clients is open at the edge (its POSTs, its GET stream) is counted here too: a child with nothing
// open is idle (src/core/stdio-room.ts decides what that allows).
import type { ProcessBound } from '../core/refusals/facts.js';
import { type ChildQuiet, type IdleChild, type Room, roomFor } from '../core/stdio-room.js';
import type { StdioChild } from './stdio-child.js';

export interface StdioSession {
  child: StdioChild;
  tenant: string;
  /**
   * Since when the session has been idle before its first request: its initialize's answer (its spawn until
   * then). upstream.stdio.idleTimeoutBeforeFirstRequest counts from here, so a server slow to start is not
   * ended the moment it has answered.
   */
  idleSince: number;
  /** A request has come since initialize: upstream.stdio.idleTimeoutBeforeFirstRequest no longer applies. */
  used: boolean;
}

/** One child, as the children count it. */
interface Entry {
  tenant: string;
  sessionId: string | undefined;
  session: StdioSession | undefined;
  /** Its clients' exchanges open now. */
  open: number;
  /** Since when none has been. */
  quietSince: number;
}

export class StdioChildren {
  readonly #entries = new Map<StdioChild, Entry>();
  readonly #byTenant = new Map<string, number>();
  readonly #sessions = new Map<string, StdioSession>();
  readonly #pools = new Map<string, StdioChild>();
  readonly #reserved = new Map<string, number>();
  #reservedTotal = 0;

  constructor(
    private readonly maxProcesses: number,
    private readonly maxPerTenant: number,
  ) {}

  /** Every child alive (or ending). */
  get all(): Iterable<StdioChild> {
    return this.#entries.keys();
  }

  /** The sessions open now, by id. */
  get sessions(): ReadonlyMap<string, StdioSession> {
    return this.#sessions;
  }

  /** Room for a new child of this tenant: free, once an idle child has ended, or none. */
  room(tenant: string): Room<StdioChild> {
    const counts = {
      total: this.#entries.size + this.#reservedTotal,
      ofTenant: (this.#byTenant.get(tenant) ?? 0) + (this.#reserved.get(tenant) ?? 0),
    };
    return roomFor(
      tenant,
      { maxProcesses: this.maxProcesses, maxPerTenant: this.maxPerTenant },
      counts,
      this.idle(),
    );
  }

  /** The bound a new child of this tenant would cross with no idle child to give way, if any. */
  boundFor(tenant: string): ProcessBound | undefined {
    const room = this.room(tenant);
    return room.kind === 'full' ? room.bound : undefined;
  }

  /** A place for a child of this tenant that waits for another to end: counted until released. */
  reserve(tenant: string): void {
    this.#reserved.set(tenant, (this.#reserved.get(tenant) ?? 0) + 1);
    this.#reservedTotal++;
  }

  release(tenant: string): void {
    const left = (this.#reserved.get(tenant) ?? 0) - 1;
    if (left > 0) this.#reserved.set(tenant, left);
    else this.#reserved.delete(tenant);
    this.#reservedTotal--;
  }

  /** A new child: a session's (sessionId), or its tenant's sessionless one. */
  add(child: StdioChild, tenant: string, sessionId: string | undefined): void {
    const now = Date.now();
    let session: StdioSession | undefined;
    if (sessionId !== undefined) {
      session = { child, tenant, idleSince: now, used: false };
      this.#sessions.set(sessionId, session);
    } else this.#pools.set(tenant, child);
    this.#entries.set(child, { tenant, sessionId, session, open: 0, quietSince: now });
    this.#byTenant.set(tenant, (this.#byTenant.get(tenant) ?? 0) + 1);
  }

  /** The child has exited: it is counted nowhere any more. */
  remove(child: StdioChild): void {
    const entry = this.#entries.get(child);
    if (entry === undefined) return;
    this.#entries.delete(child);
    const { tenant, sessionId } = entry;
    const left = (this.#byTenant.get(tenant) ?? 0) - 1;
    if (left > 0) this.#byTenant.set(tenant, left);
    else this.#byTenant.delete(tenant);
    if (sessionId !== undefined) {
      if (this.#sessions.get(sessionId)?.child === child) this.#sessions.delete(sessionId);
    } else if (this.#pools.get(tenant) === child) this.#pools.delete(tenant);
  }

  /** The session is over for its clients (DELETE, eviction) while its child still ends: it is found no more. */
  forgetSession(sessionId: string): void {
    this.#sessions.delete(sessionId);
  }

  /** Whose a child is: its tenant, and the session it serves, if one (for the log). */
  ownerOf(child: StdioChild): { tenant: string; session: string | undefined } | undefined {
    const entry = this.#entries.get(child);
    return entry === undefined ? undefined : { tenant: entry.tenant, session: entry.sessionId };
  }

  /** The child began an answer: a session not used yet is idle from now. */
  answered(child: StdioChild): void {
    const session = this.#entries.get(child)?.session;
    if (session !== undefined && !session.used) session.idleSince = Date.now();
  }

  /** An exchange of the child's clients (a POST, its GET stream) is open from now until `closed`. */
  opened(child: StdioChild): void {
    const entry = this.#entries.get(child);
    if (entry !== undefined) entry.open++;
  }

  closed(child: StdioChild): void {
    const entry = this.#entries.get(child);
    if (entry === undefined || entry.open === 0) return;
    if (--entry.open === 0) entry.quietSince = Date.now();
  }

  /** What the sweep decides a child's end by (src/core/stdio-room.ts: quietEnd). */
  quiet(child: StdioChild): ChildQuiet | undefined {
    const entry = this.#entries.get(child);
    if (entry === undefined) return undefined;
    return {
      session: entry.sessionId !== undefined,
      used: entry.session?.used ?? true,
      idleSince: entry.session?.idleSince ?? entry.quietSince,
      open: entry.open,
      inFlight: child.inFlight,
      quietSince: entry.quietSince,
      lastActivity: child.lastActivity,
    };
  }

  /** The tenant's sessionless child. */
  pool(tenant: string): StdioChild | undefined {
    return this.#pools.get(tenant);
  }

  /** Children that may give up their place: alive, nothing of their clients open, no call in flight. */
  private *idle(): Iterable<IdleChild<StdioChild>> {
    for (const [child, entry] of this.#entries) {
      if (child.alive && entry.open === 0 && child.inFlight === 0)
        yield { child, tenant: entry.tenant, quietSince: entry.quietSince };
    }
  }
}
