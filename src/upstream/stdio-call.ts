// What a stdio child's calls are made of: the call a POST waits as, and the few messages and bounds the
// child's routing uses (stdio-child.ts).
import { PassThrough } from 'node:stream';
import { idKey } from '../core/client-names.js';
import { edgeError } from '../core/refusals/answers.js';
import { undeliveredWhy } from '../core/refusals/wording.js';
import type { LineEnvelope } from '../core/stdio-lines.js';
import type { JsonRpcId } from '../core/types.js';
import type { UndeliveredReason } from './upstream.js';

/** Bytes the edge lets wait on a child's stdin (one request is always let through): a child that stops reading cannot grow the edge. */
export const STDIN_BACKLOG_BYTES = 8 * 1024 * 1024;

/**
 * Ids whose callers left that a child may leave unanswered: they stay claimed (src/core/call-owners.ts), so
 * past this many the child is replaced rather than the edge's memory grown or an id given to another call.
 */
export const MAX_ABANDONED = 1024;

/** A stream of MessageEvents (src/upstream/upstream.ts): what a call's answer, or a session's GET stream, carries. */
export function messageStream(): PassThrough {
  return new PassThrough({ objectMode: true });
}

/** One POST exchange waiting on the child: its requests' ids, and how its answer starts. */
export interface StdioCall {
  /** Ids (idKey) still unanswered. */
  readonly waiting: Map<string, JsonRpcId>;
  readonly progressTokens: ReadonlySet<string>;
  /** Enforce or observe: an oversized line whose id came last can only be forwarded whole in enforce mode. */
  readonly enforce: boolean;
  /** Starts the answer: its messages go on `events`; `firstIsAnswer` says whether the first is an answer. */
  open(events: PassThrough, firstIsAnswer: boolean): void;
  /** The child could not be started or reached: a 502/504 of the edge (only before open). */
  fail(kind: 'unreachable' | 'timeout', detail: string): void;
  /** Its id or progress token stayed claimed by another call past upstream.stdio.idWait: a 409 (only before open). */
  refuse(detail: string): void;
  answer?: { stream: PassThrough };
}

/** The progress token of a notifications/progress line (small: it was held whole). */
export function progressTokenOf(bytes: Uint8Array): string | undefined {
  try {
    const token = (
      JSON.parse(Buffer.from(bytes).toString('utf8')) as { params?: { progressToken?: unknown } }
    ).params?.progressToken;
    return typeof token === 'string' || typeof token === 'number' ? idKey(token) : undefined;
  } catch {
    return undefined;
  }
}

/** The child's answer to a request of its own that no client can take: it does not wait. */
export function undeliveredRequestAnswer(id: JsonRpcId, reason: UndeliveredReason): Buffer {
  return Buffer.from(JSON.stringify(edgeError('undelivered_request', { reason }, id)));
}

/** What a message the edge drops is, and why (for the log). A line that is not JSON-RPC has no reason. */
export function undeliverable(
  envelope: LineEnvelope,
  reason: UndeliveredReason | undefined,
): { what: string; why: string } {
  const isAnswer = envelope.method === undefined && envelope.id !== undefined;
  return {
    what: envelope.method ?? (isAnswer ? `an answer for id ${String(envelope.id)}` : 'a line'),
    why:
      reason === undefined
        ? 'the stdio MCP server wrote a line that is not a JSON-RPC message; dropped'
        : `the stdio MCP server sent a message that mcp-edge delivers to no client: ${undeliveredWhy(reason)}; dropped`,
  };
}

/** An idKey as the id or token looked on the wire (for messages). */
export function keyText(key: string): string {
  return key.startsWith('s:') ? JSON.stringify(key.slice(2)) : key.slice(2);
}

/** Observe mode, for an oversized line whose id came last while several calls waited: it was not held. */
export function lostOversizedAnswer(id: JsonRpcId, totalBytes: number): Buffer {
  return Buffer.from(JSON.stringify(edgeError('answer_line_too_large', { totalBytes }, id)));
}
