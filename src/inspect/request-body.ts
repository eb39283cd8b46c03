// Judges a client's request body (already read, within the body ceiling) before it goes upstream: read by
// the same scan as a response (message-scan.ts); every message is measured and checked; one message over
// its ceiling, or one with a key an upstream may read otherwise (ambiguous), refuses the body whole.
// JSON.parse only words the error for a body that is not JSON.
import { boundedName, boundedUri } from '../core/client-names.js';
import { type Classified, parseJsonRpcBody } from '../core/jsonrpc.js';
import { resolveLimits } from '../core/limits.js';
import { type ScannedMessage, scanJsonRpcBody } from '../core/message-scan.js';
import { ceilingRefusal, type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';
import type { JsonRpcId, LimitName, LimitViolation, MessageKind, MessageSubject } from '../core/types.js';
import { type BodyRouting, bodyRouting } from './body-routing.js';
import { type JudgeContext, judgeScannedMessage } from './message-verdict.js';

/** One message of a request body as the filters see it (src/proxy/filters): never its arguments. */
export interface RequestMessage {
  kind: MessageKind;
  id: JsonRpcId | undefined;
  method: string | undefined;
  /** The tool of a tools/call. Method, tool, prompt and URI: their bounded forms (core/client-names.ts). */
  tool: string | undefined;
  /** The prompt of a prompts/get (params.name). */
  prompt: string | undefined;
  /** The resource of a resources/read, subscribe or unsubscribe (params.uri). */
  resourceUri: string | undefined;
  /** Its bytes as the client sent them. */
  bytes: number;
  /** It carries params.cursor: the next page of a listing. */
  continues: boolean;
}

export type RequestBodyVerdict =
  | {
      ok: true;
      batch: boolean;
      /** Its messages in order, each judged within its ceilings. */
      messages: RequestMessage[];
      /** The same messages as read (their bytes), in the same order. */
      read: ScannedMessage[];
      /** What a stdio upstream routes by. */
      routing: BodyRouting;
    }
  | { ok: false; refusal: EdgeHttpError };

/** Violation of request.maxBodyBytes, for a body refused by its Content-Length or cut off at the ceiling. */
export function bodyViolation(
  ctx: Pick<JudgeContext, 'tenant'>,
  limitBytes: number,
  observedBytes: number,
  lowerBound: boolean,
  hint: MessageSubject,
  id: JsonRpcId | undefined,
): LimitViolation {
  return {
    limit: 'request.maxBodyBytes',
    direction: 'request',
    limitValue: limitBytes,
    observedValue: observedBytes,
    observedIsLowerBound: lowerBound,
    tenant: ctx.tenant,
    method: hint.method,
    tool: hint.tool,
    id: id ?? null,
  };
}

/** Violation of a ceiling of the whole body that no one method or tool sets (request.maxBatchMessages, request.maxJsonDepth). */
function bodyWideViolation(
  ctx: Pick<JudgeContext, 'tenant'>,
  limit: LimitName,
  limitValue: number,
  observed: number,
  single?: Classified | undefined,
): LimitViolation {
  return {
    limit,
    direction: 'request',
    limitValue,
    observedValue: observed,
    observedIsLowerBound: false,
    tenant: ctx.tenant,
    method: single?.method,
    tool: single?.tool,
    id: single?.id ?? null,
  };
}

/** A body that the scan does not read: JSON.parse words why (not UTF-8, not JSON, empty). */
function unreadableBody(bytes: Uint8Array): EdgeHttpError {
  const parsed = parseJsonRpcBody(bytes);
  return edgeAnswer('not_json', { detail: parsed.ok ? undefined : parsed.error });
}

/**
 * Why the body's messages cannot be judged, if they cannot: none at all, a key the edge reads that an upstream
 * may read otherwise (ambiguous), or a message that is not JSON-RPC. Asked before any message is judged (and
 * so remembered, counted or charged).
 */
function malformedMessages(messages: readonly ScannedMessage[]): EdgeHttpError | undefined {
  if (messages.length === 0) {
    return edgeAnswer('empty_batch', {});
  }
  const ambiguous = messages.find((m) => m.ambiguous !== undefined);
  if (ambiguous?.ambiguous !== undefined) {
    return edgeAnswer(
      'ambiguous_request',
      { ambiguous: ambiguous.ambiguous },
      ambiguous.classified.id ?? null,
    );
  }
  const invalid = messages.find((m) => m.classified.kind === 'invalid');
  if (invalid === undefined) return undefined;
  return edgeAnswer('not_json_rpc', {}, invalid.classified.id ?? null);
}

/** A POST body that was read completely. */
export function judgeRequestBody(ctx: JudgeContext, bytes: Uint8Array): RequestBodyVerdict {
  const tenantLimits = resolveLimits(ctx.policy, { tenant: ctx.tenant }).request;
  // A batch is counted before any of its messages is read: 100,000 tiny messages are cheap to send.
  const batchLimit = tenantLimits.maxBatchMessages.value;
  const scanned = scanJsonRpcBody(bytes, ctx.mode === 'enforce' ? batchLimit : null);
  if (scanned === undefined) return { ok: false, refusal: unreadableBody(bytes) };
  if ('batchMessages' in scanned) {
    const v = bodyWideViolation(ctx, 'request.maxBatchMessages', batchLimit ?? 0, scanned.batchMessages);
    ctx.observer.limitExceeded(v, 'rejected');
    return { ok: false, refusal: ceilingRefusal(v) };
  }
  // One message's id, method and tool go into the error; a batch's are not one.
  const single = scanned.batch ? undefined : scanned.messages[0]?.classified;
  const depthLimit = tenantLimits.maxJsonDepth.value;
  if (depthLimit !== null && scanned.depth > depthLimit) {
    const v = bodyWideViolation(ctx, 'request.maxJsonDepth', depthLimit, scanned.depth, single);
    ctx.observer.limitExceeded(v, ctx.mode === 'observe' ? 'observed' : 'rejected');
    if (ctx.mode === 'enforce') return { ok: false, refusal: ceilingRefusal(v) };
  }
  const { messages } = scanned;
  if (scanned.batch && batchLimit !== null && messages.length > batchLimit) {
    ctx.observer.limitExceeded(
      bodyWideViolation(ctx, 'request.maxBatchMessages', batchLimit, messages.length),
      'observed',
    );
  }
  const malformed = malformedMessages(messages);
  if (malformed !== undefined) return { ok: false, refusal: malformed };

  // A single message may have its own body ceiling (per method or tool); a batch counts whole under the tenant's.
  const bodyLimit = resolveLimits(ctx.policy, {
    tenant: ctx.tenant,
    method: single?.method,
    tool: single?.tool,
  }).request.maxBodyBytes.value;
  if (bodyLimit !== null && bytes.length > bodyLimit) {
    const v = bodyViolation(
      ctx,
      bodyLimit,
      bytes.length,
      false,
      { method: single?.method, tool: single?.tool },
      single?.id,
    );
    ctx.observer.limitExceeded(v, ctx.mode === 'observe' ? 'observed' : 'rejected');
    if (ctx.mode === 'enforce') return { ok: false, refusal: ceilingRefusal(v) };
  }

  const judged: RequestMessage[] = [];
  let refusal: EdgeHttpError | undefined;
  for (const message of messages) {
    const verdict = judgeScannedMessage(ctx, message);
    if (verdict.action !== 'forward' && verdict.violation !== undefined && refusal === undefined)
      refusal = ceilingRefusal(verdict.violation);
    const { kind, id, method, tool } = message.classified;
    const params = message.params;
    judged.push({
      kind,
      id,
      method,
      tool,
      prompt:
        method === 'prompts/get' && typeof params?.name === 'string' ? boundedName(params.name) : undefined,
      resourceUri:
        method?.startsWith('resources/') === true && typeof params?.uri === 'string'
          ? boundedUri(params.uri)
          : undefined,
      bytes: message.bytes.length,
      continues: message.params?.hasCursor === true,
    });
  }
  if (refusal !== undefined) return { ok: false, refusal };
  return { ok: true, batch: scanned.batch, messages: judged, read: messages, routing: bodyRouting(messages) };
}
