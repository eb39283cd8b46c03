// Answers the server already sent in a session, kept after the answer. A resumable stream (SSE with event
// ids) can deliver an answer again: a client that resumes with Last-Event-ID gets a replay, on a GET stream
// where no request waits. The ceiling that applied to the request applies to every delivery of its answer,
// so a replay is judged by what is remembered here; and a resumption of a call's stream whose last answer
// the edge replaced has nothing left to deliver. Bounded in entries, bytes and age like the pending maps.
import { idKey } from '../core/client-names.js';
import type { JsonRpcId, MessageSubject } from '../core/types.js';
import {
  BoundedEntries,
  type ByteTally,
  entryBytes,
  type PendingRequestsLimits,
} from './pending-requests.js';

/** An SSE event that carried an answer and that the edge replaced. */
export interface ReplacedEvent {
  /** The request it answered. */
  subject: MessageSubject;
  /** Nothing else waited on its stream: a call's stream that can carry nothing after it. */
  endedItsStream: boolean;
}

export class AnsweredRequests {
  /** By JSON-RPC id: the request each answer (delivered in an event with an id) belonged to. */
  readonly #byId: BoundedEntries<MessageSubject>;
  /** By SSE event id: the events the edge replaced. */
  readonly #replaced: BoundedEntries<ReplacedEvent>;

  constructor(limits: PendingRequestsLimits, now: () => number = Date.now, tally?: ByteTally) {
    this.#byId = new BoundedEntries(limits, now, tally);
    this.#replaced = new BoundedEntries(limits, now, tally);
  }

  /** Bytes the entries are taken to cost. */
  get bytes(): number {
    return this.#byId.bytes + this.#replaced.bytes;
  }

  /** The server answered the request with this id in a resumable event: a replay of it is judged by its subject. */
  answered(id: JsonRpcId, subject: MessageSubject): void {
    const key = idKey(id);
    this.#byId.set(key, subject, entryBytes(key, id, subject));
  }

  /** The edge replaced the event with this id, an answer to a request about `subject`. */
  replaced(eventId: string, subject: MessageSubject, endedItsStream: boolean): void {
    // A replay replaced again keeps what the first delivery knew of its stream.
    const known = this.#replaced.get(eventId);
    const event = { subject, endedItsStream: endedItsStream || known?.endedItsStream === true };
    this.#replaced.set(eventId, event, entryBytes(eventId, undefined, subject));
  }

  /** What a delivery of the answer with this id (and event id, if any) is about, when it is a replay. */
  replayOf(id: JsonRpcId, eventId: string | undefined): MessageSubject | undefined {
    const event = eventId !== undefined ? this.#replaced.get(eventId) : undefined;
    return event?.subject ?? this.#byId.get(idKey(id));
  }

  replacedEvent(eventId: string): ReplacedEvent | undefined {
    return this.#replaced.get(eventId);
  }

  /** Forgets everything: its bytes leave the shared tally. */
  clear(): void {
    this.#byId.clear();
    this.#replaced.clear();
  }
}
