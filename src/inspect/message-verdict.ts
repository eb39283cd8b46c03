// The decision for one complete JSON-RPC message: forward it untouched, replace it whole with an error
// for the same id, or drop it (with a notice) when it has no id to answer; for a ceiling it crossed, or
// (from the upstream) a key a client may read otherwise than the edge. One place for that rule.
import { type Classified, classifyMessage } from '../core/jsonrpc.js';
import type { AmbiguousKey } from '../core/key-names.js';
import { resolveLimits } from '../core/limits.js';
import { estimateTokens, measureMessage, measureScannedMessage } from '../core/measure.js';
import { ambiguousKeyOf, type ScannedMessage } from '../core/message-scan.js';
import {
  type AnswerReplacement,
  ceilingError,
  edgeError,
  type JsonRpcErrorMessage,
  toolCallRefusal,
} from '../core/refusals/answers.js';
import { ambiguousMessageNotice, droppedMessageNotice } from '../core/refusals/notices.js';
import type {
  Direction,
  JsonRpcId,
  LimitMode,
  LimitPolicy,
  LimitViolation,
  MessageKind,
  MessageMeasurement,
  MessageSubject,
} from '../core/types.js';
import { type HostNaming, hostOfRequest } from '../hosts/host-identity.js';
import type { AnsweredRequests } from './answered-requests.js';
import type { InspectionObserver } from './observer.js';
import type { PendingRequests } from './pending-requests.js';
import { settleRequest } from './settled-requests.js';
import { describedTools, type ToolAnswerError, toolAnswerError } from './tool-answers.js';

/**
 * Everything needed to judge the messages of one exchange in one direction; from HostNaming, the host table and
 * tenant for host budgets (`hosts`) and, for requests, the host that sent them.
 */
export interface JudgeContext extends HostNaming {
  direction: Direction;
  tenant: string;
  policy: LimitPolicy;
  mode: LimitMode;
  observer: InspectionObserver;
  /** Requests this exchange forwarded, answered by messages in this direction. */
  answered: PendingRequests | undefined;
  /** The same for the whole session (GET and resumed streams), when there is a session. */
  answeredInSession: PendingRequests | undefined;
  /**
   * Responses in a session: answers the server already sent. An answer in an event with an id is kept here,
   * so a replay of it (a resumed or GET stream, where no request waits) meets the same ceiling.
   */
  answeredBefore?: AnsweredRequests | undefined;
  /** Where requests seen in this direction are remembered, so their answers can be attributed. */
  remember: ((id: JsonRpcId, subject: MessageSubject) => void) | undefined;
  /** The checks each message goes through, in order: the exchange's filters' (the ceilings filter's table). */
  checks: readonly MessageCheck[];
  /** The checks of an answer the ceilings let on, read whole (the host-budgets filter's); none when unset. */
  answerChecks?: readonly AnswerCheck[] | undefined;
  /** Told what became of each message judged in this direction (the filters' responseMessage hook). */
  judged?: ((message: JudgedMessage) => void) | undefined;
  /** The exchange's protocol revision (its MCP-Protocol-Version header): how an answer of the edge's own is shaped. */
  protocolVersion?: string | undefined;
}

/** What became of a judged message: as the upstream sent it, replaced by the edge's error, dropped with a notice, or forwarded over its ceiling in observe mode. */
export type MessageFate = 'forwarded' | 'replaced' | 'dropped' | 'observed_over';

/** One judged message and its fate, as the filters see it (never its content). */
export interface JudgedMessage {
  kind: MessageKind;
  id: JsonRpcId | undefined;
  /** What it is about: for an answer, the request it answers (method, tool). */
  subject: MessageSubject;
  fate: MessageFate;
  /** Its bytes as sent (a lower bound when it was too large to hold). */
  bytes: number;
  bytesIsLowerBound: boolean;
  /** The bytes the receiver got for it: `bytes` when forwarded, the edge's error when replaced, 0 when dropped. */
  deliveredBytes: number;
  /** The ceiling it crossed, if one did (undefined for a host budget's replacement). */
  violation: LimitViolation | undefined;
  /** The key that made it ambiguous, when that is why it was replaced or dropped. */
  ambiguous: AmbiguousKey | undefined;
  /** The JSON-RPC error code the receiver got for it: the edge's replacement's, or the sender's own error's. */
  errorCode: number | undefined;
  /** An answer to tools/call that is an error (a JSON-RPC error, or a result with isError: true). */
  toolError: ToolAnswerError | undefined;
}

export type Verdict =
  | {
      action: 'forward';
      /** Observe mode: the ceiling it crossed, counted but not enforced. */
      observedOver?: LimitViolation;
    }
  | {
      action: 'replace';
      /** A JSON-RPC error; for an answer to tools/call, a tool error result when toolCallRefusal asks. */
      replacement: AnswerReplacement;
      /** The request the replaced answer belonged to. */
      subject: MessageSubject;
      /**
       * The ceiling crossed; undefined for a tool result over its host's budget (hostBudgets: refuse) or a
       * message with an ambiguous key.
       */
      violation: LimitViolation | undefined;
    }
  | {
      action: 'drop';
      /** The ceiling crossed; undefined for a message with an ambiguous key. */
      violation: LimitViolation | undefined;
      /** A small warning for the receiving side, so the drop is never silent. */
      notice: object;
      /** For a dropped request: the error the sender gets for its id, so it does not wait forever. */
      answerToSender: JsonRpcErrorMessage | undefined;
    };

const FORWARD: Verdict = { action: 'forward' };

/**
 * What a message is about: its own method, or for an answer the request it answers. eventId: the SSE event
 * that carries it, if it has an id (the answer can then be replayed).
 */
function subjectFor(
  ctx: JudgeContext,
  kind: MessageKind,
  id: JsonRpcId | undefined,
  own: MessageSubject,
  eventId: string | undefined,
): MessageSubject {
  if ((kind === 'result' || kind === 'error') && id !== undefined) {
    // In a resumable event an answer is kept for its replays.
    const waited = settleRequest(ctx, id);
    if (waited === undefined)
      return ctx.answeredBefore?.replayOf(id, eventId) ?? { method: undefined, tool: undefined };
    if (eventId !== undefined) ctx.answeredBefore?.answered(id, waited);
    return waited;
  }
  return own;
}

/** What a check sees of one complete message: its kind and id, what it is about, and its size as sent. */
export interface CheckedMessage {
  kind: MessageKind;
  id: JsonRpcId | undefined;
  subject: MessageSubject;
  bytes: number;
  /** The message was too large to hold: `bytes` is a lower bound. */
  bytesIsLowerBound: boolean;
}

/** A check of one message: the ceiling it crossed, or undefined. A message is refused by the first that trips. */
export type MessageCheck = (ctx: JudgeContext, message: CheckedMessage) => LimitViolation | undefined;

/**
 * A check of a result from the upstream that its ceilings let on, read whole: its measurement and, on demand,
 * its value. Returns the error that replaces it (the check has reported what it saw to ctx.observer), or
 * undefined to let it on.
 */
export type AnswerCheck = (
  ctx: JudgeContext,
  subject: MessageSubject,
  id: JsonRpcId | undefined,
  measurement: MessageMeasurement,
  value: () => unknown,
) => JsonRpcErrorMessage | undefined;

/** request.maxMessageBytes / response.maxMessageBytes of the message's subject. */
export const messageSizeCheck: MessageCheck = (ctx, message) => {
  const limits = resolveLimits(ctx.policy, {
    tenant: ctx.tenant,
    method: message.subject.method,
    tool: message.subject.tool,
  });
  const limit = ctx.direction === 'request' ? 'request.maxMessageBytes' : 'response.maxMessageBytes';
  const ceiling =
    ctx.direction === 'request'
      ? limits.request.maxMessageBytes.value
      : limits.response.maxMessageBytes.value;
  if (ceiling === null) return undefined;
  ctx.observer.ceilingMeasured?.(ctx.direction, limit, ceiling, message.bytes, message.subject);
  if (message.bytes <= ceiling) return undefined;
  return {
    limit,
    direction: ctx.direction,
    limitValue: ceiling,
    observedValue: message.bytes,
    observedIsLowerBound: message.bytesIsLowerBound,
    tenant: ctx.tenant,
    method: message.subject.method,
    tool: message.subject.tool,
    id: message.id ?? null,
  };
};

/**
 * The answer that replaces a refused one: the refusal's error, or for tools/call the form
 * limits.response.toolCallRefusal gives its tenant and tool (every refusal of a tool's result goes through here).
 */
function replacementFor(
  ctx: JudgeContext,
  subject: MessageSubject,
  error: JsonRpcErrorMessage,
): AnswerReplacement {
  if (subject.method !== 'tools/call') return error;
  const limits = resolveLimits(ctx.policy, {
    tenant: ctx.tenant,
    method: subject.method,
    tool: subject.tool,
  });
  return toolCallRefusal(error, limits.response.toolCallRefusal.value, ctx.protocolVersion);
}

/** The first check the message trips, counted and turned into what happens to it (enforce) or forwarded (observe). */
function verdictFor(ctx: JudgeContext, message: CheckedMessage): Verdict {
  let violation: LimitViolation | undefined;
  for (const check of ctx.checks) {
    violation = check(ctx, message);
    if (violation !== undefined) break;
  }
  if (violation === undefined) return FORWARD;
  if (ctx.mode === 'observe') {
    ctx.observer.limitExceeded(violation, 'observed');
    return { action: 'forward', observedOver: violation };
  }
  ctx.observer.limitExceeded(violation, 'rejected');
  const { kind } = message;
  if (kind === 'notification' || kind === 'request') {
    const dropped = kind === 'request' ? 'request' : 'notification';
    return {
      action: 'drop',
      violation,
      notice: droppedMessageNotice(violation, dropped),
      answerToSender: kind === 'request' ? ceilingError(violation) : undefined,
    };
  }
  return {
    action: 'replace',
    replacement: replacementFor(ctx, message.subject, ceilingError(violation)),
    violation,
    subject: message.subject,
  };
}

/** The code of a JSON-RPC error message's value, when it is a number. */
function errorCodeOf(value: unknown): number | undefined {
  const code = (value as { error?: { code?: unknown } } | null)?.error?.code;
  return typeof code === 'number' ? code : undefined;
}

/** Tells the context's listener what became of a message (nothing is built when no one listens). */
function tellJudged(
  ctx: JudgeContext,
  message: CheckedMessage,
  verdict: Verdict,
  toolError: ToolAnswerError | undefined,
  value: () => unknown,
  ambiguous: AmbiguousKey | undefined,
): void {
  if (ctx.judged === undefined) return;
  let fate: MessageFate;
  let deliveredBytes: number;
  if (verdict.action === 'replace') {
    fate = 'replaced';
    deliveredBytes = Buffer.byteLength(JSON.stringify(verdict.replacement));
  } else if (verdict.action === 'drop') {
    fate = 'dropped';
    deliveredBytes = 0;
  } else {
    fate = verdict.observedOver !== undefined ? 'observed_over' : 'forwarded';
    deliveredBytes = message.bytes;
  }
  ctx.judged({
    kind: message.kind,
    id: message.id,
    subject: message.subject,
    fate,
    bytes: message.bytes,
    bytesIsLowerBound: message.bytesIsLowerBound,
    deliveredBytes,
    violation: verdict.action === 'forward' ? verdict.observedOver : verdict.violation,
    ambiguous: verdict.action === 'forward' ? undefined : ambiguous,
    // Only an error message is parsed for its code (rare); the edge's replacement carries its own (none for
    // a tool error result).
    errorCode:
      verdict.action === 'replace'
        ? 'error' in verdict.replacement
          ? verdict.replacement.error.code
          : undefined
        : message.kind === 'error'
          ? errorCodeOf(value())
          : undefined,
    toolError: message.subject.method === 'tools/call' ? toolError : undefined,
  });
}

function rememberRequest(
  ctx: JudgeContext,
  kind: MessageKind,
  id: JsonRpcId | undefined,
  own: MessageSubject,
): void {
  if (kind === 'request' && id !== undefined && ctx.remember !== undefined) ctx.remember(id, own);
}

/** The names in a tools/list result (`result.tools[].name`), skipping entries without a string name. */
function listedToolNames(value: unknown): string[] {
  const result = (value as { result?: { tools?: unknown } }).result;
  const tools = result?.tools;
  if (!Array.isArray(tools)) return [];
  const names: string[] = [];
  for (const tool of tools) {
    const name = (tool as { name?: unknown } | null)?.name;
    if (typeof name === 'string') names.push(name);
  }
  return names;
}

/**
 * Judge a complete message that was held in memory. `value` is its JSON.parse result; `c` its classification,
 * when the caller already has it (a message is classified once).
 */
export function judgeMessage(
  ctx: JudgeContext,
  bytes: Uint8Array,
  value: unknown,
  c: Classified = classifyMessage(value),
  eventId?: string,
): Verdict {
  return judgeHeld(
    ctx,
    c,
    bytes.length,
    (subject) => measureMessage(bytes, value, subject, c),
    () => value,
    () => value,
    toolAnswerError(c.kind, value),
    eventId,
    // Read as a client reads it (invalid UTF-8 decoded lossily): what the parse lost of its keys.
    ctx.direction === 'response' ? ambiguousKeyOf(bytes) : undefined,
  );
}

/** judgeMessage for a message read by scanMessage: measured from its bytes, parsed only where a rare step needs its value. */
export function judgeScannedMessage(ctx: JudgeContext, scan: ScannedMessage, eventId?: string): Verdict {
  const c = scan.classified;
  const toolError =
    c.kind === 'error' ? 'jsonrpc_error' : scan.result?.isError === true ? 'is_error' : undefined;
  return judgeHeld(
    ctx,
    c,
    scan.bytes.length,
    (subject) => measureScannedMessage(scan, subject),
    scan.value,
    // Only an initialize, or a request whose _meta carries clientInfo, names its client: no other is parsed,
    // and of the latter only the clientInfo entry.
    scan.namingValue,
    toolError,
    eventId,
    scan.ambiguous,
  );
}

/**
 * A message from the upstream with a key a client may read otherwise than the edge (ambiguous): whatever the
 * mode, it is not delivered as sent, as one over a ceiling is not: an answer is replaced by an error for
 * the id the edge read, a notification dropped with a notice, a server request dropped and answered.
 */
function ambiguousVerdict(c: Classified, subject: MessageSubject, a: AmbiguousKey): Verdict {
  if (c.kind === 'request' || c.kind === 'notification') {
    return {
      action: 'drop',
      violation: undefined,
      notice: ambiguousMessageNotice(a, c.kind, c.method),
      answerToSender:
        c.kind === 'request' ? edgeError('ambiguous_answer', { ambiguous: a }, c.id ?? null) : undefined,
    };
  }
  return {
    action: 'replace',
    replacement: edgeError('ambiguous_answer', { ambiguous: a }, c.id ?? null),
    violation: undefined,
    subject,
  };
}

function judgeHeld(
  ctx: JudgeContext,
  c: Classified,
  bytes: number,
  measure: (subject: MessageSubject) => MessageMeasurement,
  value: () => unknown,
  /** The value where it may name the client (a request), else undefined. */
  namingValue: () => unknown,
  toolError: ToolAnswerError | undefined,
  eventId: string | undefined,
  /** A key of the message another reader may read otherwise (judged in the response direction only). */
  ambiguous: AmbiguousKey | undefined,
): Verdict {
  const own: MessageSubject =
    ctx.direction === 'request'
      ? { method: c.method, tool: c.tool, host: hostOfRequest(ctx, namingValue, c.method) }
      : { method: c.method, tool: c.tool };
  const subject = subjectFor(ctx, c.kind, c.id, own, eventId);
  const measurement = measure(subject);
  ctx.observer.message(ctx.direction, measurement, subject);
  const answersToolCall = ctx.direction === 'response' && subject.method === 'tools/call';
  if (answersToolCall && (c.kind === 'result' || c.kind === 'error'))
    ctx.observer.toolAnswered?.(subject.tool, toolError);
  // The server's own answer to tools/list names its real tools (the metrics keep their labels).
  if (ctx.direction === 'response' && c.kind === 'result' && subject.method === 'tools/list') {
    const listing = value();
    ctx.observer.toolsListed?.(listedToolNames(listing));
    if (ctx.observer.toolsDescribed !== undefined) ctx.observer.toolsDescribed(describedTools(listing));
  }
  rememberRequest(ctx, c.kind, c.id, own);
  const checked: CheckedMessage = { kind: c.kind, id: c.id, subject, bytes, bytesIsLowerBound: false };
  // A request's ambiguity refused its body before it was judged (request-body.ts).
  const refusedKey = ctx.direction === 'response' ? ambiguous : undefined;
  if (refusedKey !== undefined) ctx.observer.ambiguous?.(ctx.direction, refusedKey);
  let verdict =
    refusedKey !== undefined ? ambiguousVerdict(c, subject, refusedKey) : verdictFor(ctx, checked);
  const answerChecks = ctx.answerChecks;
  if (verdict.action === 'forward' && c.kind === 'result' && ctx.direction === 'response' && answerChecks) {
    for (const check of answerChecks) {
      const refusal = check(ctx, subject, c.id, measurement, value);
      if (refusal === undefined) continue;
      verdict = {
        action: 'replace',
        replacement: replacementFor(ctx, subject, refusal),
        violation: undefined,
        subject,
      };
      break;
    }
  }
  tellJudged(ctx, checked, verdict, toolError, value, refusedKey);
  return verdict;
}

/** What a streaming scan of an oversized message could tell without holding it. */
export interface OversizedHead {
  id: JsonRpcId | undefined;
  method: string | undefined;
  hasResult: boolean;
  hasError: boolean;
}

function kindOfHead(head: OversizedHead): MessageKind {
  if (head.method !== undefined) return head.id === undefined ? 'notification' : 'request';
  if (head.hasResult) return 'result';
  if (head.hasError) return 'error';
  return 'invalid';
}

/**
 * Judge a message that was too large to hold: only its size and the members a streaming scan recovered
 * are known. A tools/call request's tool name is not recovered here (it is not needed: the request direction
 * refuses the whole body, and a server never sends tools/call).
 */
export function judgeOversized(
  ctx: JudgeContext,
  head: OversizedHead,
  observedBytes: number,
  lowerBound: boolean,
  eventId?: string,
): Verdict {
  let kind = kindOfHead(head);
  let id = head.id;
  // An answer whose id could not be recovered: if exactly one request is waiting on this exchange, it is that one.
  if (kind === 'invalid' || ((kind === 'result' || kind === 'error') && id === undefined)) {
    const waiting = ctx.answered?.ids() ?? [];
    if (waiting.length === 1 && head.method === undefined) {
      id = waiting[0];
      kind = 'result';
    }
  }
  const own: MessageSubject = { method: head.method, tool: undefined };
  const subject = subjectFor(ctx, kind, id, own, eventId);
  const measurement: MessageMeasurement = {
    envelopeBytes: observedBytes,
    kind,
    id,
    method: head.method,
    tool: undefined,
    channels: undefined,
    duplicatedBytes: 0,
    estimatedTokens: estimateTokens(observedBytes),
  };
  ctx.observer.message(ctx.direction, measurement, subject);
  rememberRequest(ctx, kind, id, own);
  const checked: CheckedMessage = { kind, id, subject, bytes: observedBytes, bytesIsLowerBound: lowerBound };
  const verdict = verdictFor(ctx, checked);
  tellJudged(ctx, checked, verdict, undefined, () => undefined, undefined);
  return verdict;
}
