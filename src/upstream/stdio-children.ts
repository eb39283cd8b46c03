// The children of a stdio upstream: one per session, one sessionless child per tenant, and the bounds on how
// many there may be (upstream.stdio.maxProcesses, maxProcessesPerTenant). A child is counted from add to
// remove, in every view at once.
import type { ProcessBound } from '../core/errors.js';
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

export class StdioChildren {
  readonly #all = new Set<StdioChild>();
  readonly #byTenant = new Map<string, Set<StdioChild>>();
  readonly #sessions = new Map<string, StdioSession>();
  readonly #pools = new Map<string, StdioChild>();
  readonly #sessionOf = new Map<StdioChild, StdioSession>();

  constructor(
    private readonly maxProcesses: number,
    private readonly maxPerTenant: number,
  ) {}

  /** Every child alive. */
  get all(): ReadonlySet<StdioChild> {
    return this.#all;
  }

  /** The sessions open now, by id. */
  get sessions(): ReadonlyMap<string, StdioSession> {
    return this.#sessions;
  }

  /** The bound a new child of this tenant would cross, if any. */
  boundFor(tenant: string): ProcessBound | undefined {
    if (this.#all.size >= this.maxProcesses)
      return { key: 'maxProcesses', limit: this.maxProcesses, setting: 'upstream.stdio.maxProcesses' };
    if ((this.#byTenant.get(tenant)?.size ?? 0) >= this.maxPerTenant)
      return {
        key: 'maxProcessesPerTenant',
        limit: this.maxPerTenant,
        setting: 'upstream.stdio.maxProcessesPerTenant',
      };
    return undefined;
  }

  /** A new child: a session's (sessionId), or its tenant's sessionless one. */
  add(child: StdioChild, tenant: string, sessionId: string | undefined): void {
    this.#all.add(child);
    let ofTenant = this.#byTenant.get(tenant);
    if (ofTenant === undefined) {
      ofTenant = new Set();
      this.#byTenant.set(tenant, ofTenant);
    }
    ofTenant.add(child);
    if (sessionId !== undefined) {
      const session: StdioSession = { child, tenant, idleSince: Date.now(), used: false };
      this.#sessions.set(sessionId, session);
      this.#sessionOf.set(child, session);
    } else this.#pools.set(tenant, child);
  }

  /** The child has exited: it is counted nowhere any more. */
  remove(child: StdioChild, tenant: string, sessionId: string | undefined): void {
    this.#all.delete(child);
    const ofTenant = this.#byTenant.get(tenant);
    ofTenant?.delete(child);
    if (ofTenant?.size === 0) this.#byTenant.delete(tenant);
    this.#sessionOf.delete(child);
    if (sessionId !== undefined) {
      if (this.#sessions.get(sessionId)?.child === child) this.#sessions.delete(sessionId);
    } else if (this.#pools.get(tenant) === child) this.#pools.delete(tenant);
  }

  /** The session is over for its clients (DELETE) while its child still ends: it is found no more. */
  forgetSession(sessionId: string): void {
    this.#sessions.delete(sessionId);
  }

  /** The child began an answer: a session not used yet is idle from now. */
  answered(child: StdioChild): void {
    const session = this.#sessionOf.get(child);
    if (session !== undefined && !session.used) session.idleSince = Date.now();
  }

  /** The tenant's sessionless child. */
  pool(tenant: string): StdioChild | undefined {
    return this.#pools.get(tenant);
  }
}
