// Judges a client's request body (already read, within the body ceiling) before it goes upstream:
// every message is measured and checked; one message over its ceiling refuses the body whole (413).
import { type EdgeHttpError, edgeRefusal, parseErrorRefusal, requestRefusal } from '../core/errors.js';
import { nestingDepth } from '../core/json-scan.js';
import { parseJsonRpcBody } from '../core/jsonrpc.js';
import { resolveLimits } from '../core/limits.js';
import type { JsonRpcId, LimitViolation, MessageSubject } from '../core/types.js';
import { type JudgeContext, judgeMessage } from './message-verdict.js';
import { PAGINATED_METHODS } from './pagination-guard.js';

/**
 * Deeper JSON than this is refused before anyone parses it: no MCP message comes near it, and recursive
 * parsers and validators upstream can be knocked over by it.
 */
export const MAX_JSON_DEPTH = 1000;

export type RequestBodyVerdict =
  | {
      ok: true;
      batch: boolean;
      /** Requests for paginated lists, for the pagination guard. */
      listings: { id: JsonRpcId; method: string; continues: boolean }[];
    }
  | { ok: false; refusal: EdgeHttpError };

function hasCursor(value: unknown): boolean {
  const params = (value as { params?: unknown }).params;
  return (
    typeof params === 'object' && params !== null && (params as { cursor?: unknown }).cursor !== undefined
  );
}

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

/** Violation of request.maxBatchMessages: a batch with more messages than its tenant allows. */
function batchViolation(ctx: Pick<JudgeContext, 'tenant'>, limit: number, observed: number): LimitViolation {
  return {
    limit: 'request.maxBatchMessages',
    direction: 'request',
    limitValue: limit,
    observedValue: observed,
    observedIsLowerBound: false,
    tenant: ctx.tenant,
    method: undefined,
    tool: undefined,
    id: null,
  };
}

/** A POST body that was read completely. */
export function judgeRequestBody(ctx: JudgeContext, bytes: Uint8Array): RequestBodyVerdict {
  const depth = nestingDepth(bytes, MAX_JSON_DEPTH);
  if (depth > MAX_JSON_DEPTH) {
    return {
      ok: false,
      refusal: edgeRefusal(
        400,
        'invalid_request',
        `Request body nests JSON more than ${MAX_JSON_DEPTH} levels deep; mcp-edge does not forward it`,
      ),
    };
  }
  // A batch is counted before any of its messages is parsed: 100,000 tiny messages are cheap to send.
  const batchLimit = resolveLimits(ctx.policy, { tenant: ctx.tenant }).request.maxBatchMessages.value;
  const parsed = parseJsonRpcBody(bytes, ctx.mode === 'enforce' ? batchLimit : null);
  if (!parsed.ok) {
    if ('batchMessages' in parsed && batchLimit !== null) {
      const v = batchViolation(ctx, batchLimit, parsed.batchMessages);
      ctx.observer.limitExceeded(v, 'rejected');
      return { ok: false, refusal: requestRefusal(v) };
    }
    return { ok: false, refusal: parseErrorRefusal(parsed.error) };
  }
  if (parsed.batch && batchLimit !== null && parsed.messages.length > batchLimit) {
    ctx.observer.limitExceeded(batchViolation(ctx, batchLimit, parsed.messages.length), 'observed');
  }
  if (parsed.messages.length === 0) {
    return {
      ok: false,
      refusal: edgeRefusal(400, 'invalid_request', 'Request body is an empty JSON-RPC batch'),
    };
  }
  const invalid = parsed.messages.find((m) => m.kind === 'invalid');
  if (invalid !== undefined) {
    return {
      ok: false,
      refusal: edgeRefusal(
        400,
        'invalid_request',
        'Request body holds a message that is not JSON-RPC 2.0 (it needs "jsonrpc":"2.0" and a method, result or error)',
        invalid.id ?? null,
      ),
    };
  }

  // A single message may have its own body ceiling (per method or tool); a batch counts whole under the tenant's.
  const single = parsed.batch ? undefined : parsed.messages[0];
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
    if (ctx.mode === 'enforce') return { ok: false, refusal: requestRefusal(v) };
  }

  const listings: { id: JsonRpcId; method: string; continues: boolean }[] = [];
  let refusal: EdgeHttpError | undefined;
  for (const message of parsed.messages) {
    const verdict = judgeMessage(ctx, message.bytes, message.value, message);
    if (verdict.action !== 'forward' && verdict.violation !== undefined && refusal === undefined)
      refusal = requestRefusal(verdict.violation);
    if (message.kind === 'request' && message.id !== undefined) {
      if (message.method !== undefined && PAGINATED_METHODS.has(message.method)) {
        listings.push({ id: message.id, method: message.method, continues: hasCursor(message.value) });
      }
    }
  }
  if (refusal !== undefined) return { ok: false, refusal };
  return { ok: true, batch: parsed.batch, listings };
}
