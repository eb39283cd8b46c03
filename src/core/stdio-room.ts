// When a stdio child ends without being asked, and whose place a new child may take at a process bound: plain
// functions over counts, times and facts, no clocks or processes (src/upstream/stdio-children.ts and
// stdio-idle.ts apply them; test/unit/stdio-room.test.ts). A client that leaves without a DELETE (the SDK v1
// client's close() sends none) is seen only as a session with nothing open: no GET stream, no request in
// flight. Such a session ends after upstream.stdio.idleTimeoutWithoutStream, and before that gives up its place
// to a new session at a bound, the one idle longest first. A session with anything open is never touched.
import type { ProcessBound } from './refusals/facts.js';

export interface ProcessLimits {
  maxProcesses: number;
  maxPerTenant: number;
}

/** Children counted now (alive or ending, and places promised to children about to start). */
export interface ProcessCounts {
  total: number;
  ofTenant: number;
}

/** A child whose client has nothing open at the edge and nothing in flight: it may give up its place. */
export interface IdleChild<C> {
  child: C;
  tenant: string;
  /** Since when nothing of its clients' has been open. */
  quietSince: number;
}

/** Room for one more child: there is, or there is once `victim` has ended, or there is none (`bound`). */
export type Room<C> =
  | { kind: 'free' }
  | { kind: 'evict'; victim: IdleChild<C>; bound: ProcessBound }
  | { kind: 'full'; bound: ProcessBound };

/** The bound one more child would cross, if any: all processes first, then the tenant's share. */
export function boundCrossed(limits: ProcessLimits, counts: ProcessCounts): ProcessBound | undefined {
  if (counts.total >= limits.maxProcesses)
    return { key: 'maxProcesses', limit: limits.maxProcesses, setting: 'upstream.stdio.maxProcesses' };
  if (counts.ofTenant >= limits.maxPerTenant)
    return {
      key: 'maxProcessesPerTenant',
      limit: limits.maxPerTenant,
      setting: 'upstream.stdio.maxProcessesPerTenant',
    };
  return undefined;
}

/**
 * Room for a new child of `tenant`. At a bound, the idle child quiet the longest gives up its place: one of
 * the tenant's own when the tenant is at its share (only that frees a place in both counts), any tenant's
 * when only maxProcesses is reached.
 */
export function roomFor<C>(
  tenant: string,
  limits: ProcessLimits,
  counts: ProcessCounts,
  idle: Iterable<IdleChild<C>>,
): Room<C> {
  const crossed = boundCrossed(limits, counts);
  if (crossed === undefined) return { kind: 'free' };
  const ownOnly = counts.ofTenant >= limits.maxPerTenant;
  let victim: IdleChild<C> | undefined;
  for (const candidate of idle) {
    if (ownOnly && candidate.tenant !== tenant) continue;
    if (victim === undefined || candidate.quietSince < victim.quietSince) victim = candidate;
  }
  if (victim === undefined) return { kind: 'full', bound: crossed };
  return { kind: 'evict', victim, bound: crossed };
}

/** What the sweep knows of a child. */
export interface ChildQuiet {
  /** A session's child; a tenant's shared child (no session) ends only at idleTimeout. */
  session: boolean;
  /** A request has come since the session's initialize. */
  used: boolean;
  /** Since when an unused session has been idle (its initialize's answer). */
  idleSince: number;
  /** Exchanges of its clients open at the edge now (POSTs not yet answered, its GET stream). */
  open: number;
  /** Calls whose clients wait for an answer. */
  inFlight: number;
  /** Since when nothing has been open (`open` fell to 0, or the child started). */
  quietSince: number;
  /** The last traffic either way. */
  lastActivity: number;
}

/** upstream.stdio's timeouts, in ms; 0 turns one off. */
export interface QuietTimeouts {
  idleTimeout: number;
  idleTimeoutBeforeFirstRequest: number;
  idleTimeoutWithoutStream: number;
}

/** Which timeout ends a child now (the setting's name), if any: none while a call of it is in flight. */
export function quietEnd(
  child: ChildQuiet,
  now: number,
  timeouts: QuietTimeouts,
): keyof QuietTimeouts | undefined {
  if (child.inFlight > 0) return undefined;
  const past = (since: number, ms: number) => ms > 0 && now - since >= ms;
  if (child.session && !child.used && past(child.idleSince, timeouts.idleTimeoutBeforeFirstRequest))
    return 'idleTimeoutBeforeFirstRequest';
  if (child.session && child.open === 0 && past(child.quietSince, timeouts.idleTimeoutWithoutStream))
    return 'idleTimeoutWithoutStream';
  if (past(child.lastActivity, timeouts.idleTimeout)) return 'idleTimeout';
  return undefined;
}
