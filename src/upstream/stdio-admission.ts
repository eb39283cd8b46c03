// The calls of one stdio child: which go now, which wait, and which call a message of the child's belongs
// to. A call whose request ids or progress tokens another call still holds (src/core/call-owners.ts) waits
// until they are answered, at most upstream.stdio.idWait, then is refused with a 409 that names the id. Ids
// are never rewritten, so this wait is what keeps two calls with one id (two clients that both number from
// 0) from receiving each other's answers.
import type { Logger } from 'pino';
import { CallOwners, type ClaimConflict } from '../core/call-owners.js';
import { idKey } from '../core/client-names.js';
import type { LineEnvelope } from '../core/stdio-lines.js';
import { keyText, progressTokenOf, type StdioCall } from './stdio-call.js';
import type { UndeliveredReason } from './upstream.js';

/** Where a child's message goes: a call, the session's GET stream, or no client (and why). */
export type Destination = { call: StdioCall } | { getStream: true } | { none: UndeliveredReason };

/** A call waiting for ids or tokens that another call holds, with its lines and its bound. */
interface Blocked {
  call: StdioCall;
  lines: Uint8Array[];
  timer: NodeJS.Timeout | undefined;
}

export interface AdmissionOptions {
  idWaitMs: number;
  /** A tenant's shared child (clients without a session): the refusal says another client holds the id. */
  shared: boolean;
  log: Logger;
  sessionId: string | undefined;
  program: string;
  /** Writes an admitted call's lines to the child. */
  write(lines: Uint8Array[]): void;
}

export class CallAdmission {
  /** Which call each id and progress token belongs to, until the child answers it. */
  readonly owners = new CallOwners<StdioCall>();
  /** In the order they came: admitted once free, refused past idWait. */
  private readonly blocked: Blocked[] = [];

  constructor(private readonly options: AdmissionOptions) {}

  /** Calls whose clients wait (those whose clients left do not keep the child from its idle timeout). */
  get inFlight(): number {
    return this.owners.liveCount + this.blocked.length;
  }

  /** Writes the call's lines now, or lets it wait for what another call holds. */
  start(call: StdioCall, lines: Uint8Array[]): void {
    if (this.conflictOf(call) === undefined) {
      this.admit(call, lines);
      return;
    }
    const entry: Blocked = { call, lines, timer: undefined };
    const waitMs = this.options.idWaitMs;
    if (waitMs <= 0) {
      this.refuse(entry, 0);
      return;
    }
    entry.timer = setTimeout(() => this.refuse(entry, waitMs), waitMs);
    entry.timer.unref();
    this.blocked.push(entry);
  }

  /** The call's client left: a waiting call is forgotten; an admitted one keeps its ids until answered. */
  abandon(call: StdioCall): void {
    const index = this.blocked.findIndex((entry) => entry.call === call);
    if (index >= 0) {
      clearTimeout(this.blocked[index]!.timer);
      this.blocked.splice(index, 1);
    }
    this.owners.abandon(call);
  }

  /** Calls whose ids and tokens are free now go, in the order they came. */
  admitWaiting(): void {
    for (let i = 0; i < this.blocked.length; ) {
      const entry = this.blocked[i]!;
      if (this.conflictOf(entry.call) !== undefined) {
        i++;
        continue;
      }
      this.blocked.splice(i, 1);
      clearTimeout(entry.timer);
      this.admit(entry.call, entry.lines);
    }
  }

  /**
   * Where a message goes: an answer to the call that claimed its id (the id is released), progress to the
   * call that named its token. In a session, anything else goes to the one call waiting, or to the GET
   * stream; on a shared child (several clients, no session) anything else could be any client's: to none.
   */
  destinationOf(envelope: LineEnvelope, bytes: Uint8Array | undefined): Destination {
    if (envelope.method === undefined && envelope.id !== undefined) {
      const owner = this.owners.answered(idKey(envelope.id));
      if (owner === undefined) return { none: 'no_owner' };
      return owner.abandoned ? { none: 'caller_gone' } : { call: owner.call };
    }
    if (envelope.method === 'notifications/progress' && bytes !== undefined) {
      const token = progressTokenOf(bytes);
      const owner = token === undefined ? undefined : this.owners.ownerOfToken(token);
      if (owner !== undefined) return owner.abandoned ? { none: 'caller_gone' } : { call: owner.call };
    }
    if (this.options.shared) return { none: 'no_owner' };
    if (this.owners.liveCount === 1) return { call: this.owners.liveCalls()[0]! };
    return { getStream: true };
  }

  /**
   * The call an answer whose id has not been read yet can only be for, in a session: the one call waiting
   * on one id, while no departed caller's answer may still come. Undefined on a shared child.
   */
  onlyPossibleAnswerer(): StdioCall | undefined {
    if (this.options.shared || this.owners.abandonedIds > 0 || this.owners.liveCount !== 1) return undefined;
    const [only] = this.owners.liveCalls();
    return only?.waiting.size === 1 ? only : undefined;
  }

  /** An answer streamed to onlyPossibleAnswerer() before its id was read has ended: its id is released. */
  answeredLate(call: StdioCall, envelope: LineEnvelope): void {
    if (envelope.method !== undefined || envelope.id === undefined) return;
    const key = idKey(envelope.id);
    if (this.owners.ownerOfId(key)?.call === call) this.owners.answered(key);
  }

  /** The child is gone: every claim is forgotten; the calls whose clients still wait, admitted or not. */
  clear(): StdioCall[] {
    const calls = this.owners.clear();
    for (const entry of this.blocked.splice(0)) {
      clearTimeout(entry.timer);
      calls.push(entry.call);
    }
    return calls;
  }

  private conflictOf(call: StdioCall): ClaimConflict | undefined {
    return this.owners.conflictOf(call.waiting.keys(), call.progressTokens);
  }

  private admit(call: StdioCall, lines: Uint8Array[]): void {
    this.owners.claim(call, call.waiting.keys(), call.progressTokens);
    this.options.write(lines);
  }

  private refuse(entry: Blocked, waitedMs: number): void {
    const index = this.blocked.indexOf(entry);
    if (index >= 0) this.blocked.splice(index, 1);
    const conflict = this.conflictOf(entry.call);
    if (conflict === undefined) {
      this.admit(entry.call, entry.lines);
      return;
    }
    const detail = conflictDetail(conflict, this.options.shared, waitedMs);
    this.options.log.warn(
      {
        session: this.options.sessionId,
        program: this.options.program,
        [conflict.kind === 'id' ? 'id' : 'progressToken']: keyText(conflict.key),
      },
      `stdio: a request waited for an id in use past upstream.stdio.idWait; refused`,
    );
    entry.call.refuse(detail);
  }
}

/** Why a call was refused: whose id or token it wanted, for how long, and what the client can do. */
function conflictDetail(conflict: ClaimConflict, shared: boolean, waitedMs: number): string {
  const holder = shared
    ? 'a request of another client of this tenant (clients without a session share one MCP server process)'
    : 'an earlier request of this session';
  return (
    `Request ${conflict.kind} ${keyText(conflict.key)} is in use by ${holder}, still unanswered after ${waitedMs} ms ` +
    '(upstream.stdio.idWait). mcp-edge never rewrites ids, so this request can go only once the MCP server has answered that one: retry it, or use ids and progress tokens no other client uses'
  );
}
