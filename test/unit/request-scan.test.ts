// Request bodies are read by the scan: the differential check against how they were read before, decoded and
// parsed whole (parseJsonRpcBody + judgeMessage, and JSON.parse for the stdio routing facts): the same verdict,
// the same records, the same routing, for any body, valid or damaged.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isRecord, startsWithBom } from '../../src/core/bytes.js';
import { idKey } from '../../src/core/client-names.js';
import { splitTopLevel } from '../../src/core/json-scan.js';
import { parseJsonRpcBody } from '../../src/core/jsonrpc.js';
import { resolveLimits } from '../../src/core/limits.js';
import { ceilingRefusal, edgeAnswer } from '../../src/core/refusals/answers.js';
import type { LimitMode, LimitPolicy, LimitViolation } from '../../src/core/types.js';
import { type JudgeContext, judgeMessage } from '../../src/inspect/message-verdict.js';
import { PAGINATED_METHODS } from '../../src/inspect/pagination-guard.js';
import { judgeRequestBody } from '../../src/inspect/request-body.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';
import { damagedJson, jsonValue, rpcId } from '../support/json-samples.js';
import { recordingObserver } from '../support/recording-observer.js';

function recordingContext(mode: LimitMode, ceiling: number): { ctx: JudgeContext; log: unknown[] } {
  const log: unknown[] = [];
  const observer = recordingObserver(log);
  const policy: LimitPolicy = {
    defaults: {
      request: { maxMessageBytes: ceiling, maxBatchMessages: 3, maxBodyBytes: ceiling * 4 },
      tools: { big: { request: { maxMessageBytes: ceiling * 2 } } },
    },
    tenants: {},
  };
  const ctx: JudgeContext = {
    direction: 'request',
    tenant: 'default',
    policy,
    mode,
    observer,
    answered: undefined,
    answeredInSession: undefined,
    remember: (id, subject) => log.push({ remembered: id, subject }),
    checks: CEILING_CHECKS,
  };
  return { ctx, log };
}

/** What a verdict says, comparably: the refusal as sent, or what goes on with the body. */
type Outcome =
  | { ok: false; status: number; body: string }
  | { ok: true; batch: boolean; listings: unknown[]; routing: unknown };

function routingByParsing(body: Uint8Array): unknown {
  const parsed: unknown = JSON.parse(Buffer.from(body).toString('utf8'));
  const tokens = new Set<string>();
  let answersServer = false;
  const cancelled: string[] = [];
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    if (!isRecord(message)) continue;
    if (message.method === undefined && (Object.hasOwn(message, 'result') || Object.hasOwn(message, 'error')))
      answersServer = true;
    if (message.method === 'notifications/cancelled') {
      const id = isRecord(message.params) ? message.params.requestId : undefined;
      cancelled.push(typeof id === 'string' || typeof id === 'number' ? idKey(id) : '');
    }
    const meta =
      isRecord(message.params) && isRecord(message.params._meta) ? message.params._meta : undefined;
    const token = meta?.progressToken;
    if (typeof token === 'string' || typeof token === 'number') tokens.add(idKey(token));
  }
  return { progressTokens: [...tokens].sort(), answersServer, cancelled };
}

function batchViolation(ctx: JudgeContext, limit: number, observed: number): LimitViolation {
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

/** How a request body was judged before it was scanned: decoded and parsed whole. */
function judgedByParsing(ctx: JudgeContext, bytes: Uint8Array): Outcome {
  const refused = (r: { status: number; body: string }): Outcome => ({
    ok: false,
    status: r.status,
    body: r.body,
  });
  const batchLimit = resolveLimits(ctx.policy, { tenant: ctx.tenant }).request.maxBatchMessages.value;
  // The parse counted a batch from its structure (after a BOM was refused) before reading its elements.
  const split = splitTopLevel(bytes);
  if (ctx.mode === 'enforce' && batchLimit !== null && !startsWithBom(bytes) && split.ok && split.batch) {
    if (split.spans.length > batchLimit) {
      const v = batchViolation(ctx, batchLimit, split.spans.length);
      ctx.observer.limitExceeded(v, 'rejected');
      return refused(ceilingRefusal(v));
    }
  }
  const parsed = parseJsonRpcBody(bytes);
  if (!parsed.ok) return refused(edgeAnswer('not_json', { detail: parsed.error }));
  if (parsed.batch && batchLimit !== null && parsed.messages.length > batchLimit)
    ctx.observer.limitExceeded(batchViolation(ctx, batchLimit, parsed.messages.length), 'observed');
  if (parsed.messages.length === 0) return refused(edgeAnswer('empty_batch', {}));
  const invalid = parsed.messages.find((m) => m.kind === 'invalid');
  if (invalid !== undefined) return refused(edgeAnswer('not_json_rpc', {}, invalid.id ?? null));
  const single = parsed.batch ? undefined : parsed.messages[0];
  const bodyLimit = resolveLimits(ctx.policy, {
    tenant: ctx.tenant,
    method: single?.method,
    tool: single?.tool,
  }).request.maxBodyBytes.value;
  if (bodyLimit !== null && bytes.length > bodyLimit) {
    const v: LimitViolation = {
      limit: 'request.maxBodyBytes',
      direction: 'request',
      limitValue: bodyLimit,
      observedValue: bytes.length,
      observedIsLowerBound: false,
      tenant: ctx.tenant,
      method: single?.method,
      tool: single?.tool,
      id: single?.id ?? null,
    };
    ctx.observer.limitExceeded(v, ctx.mode === 'observe' ? 'observed' : 'rejected');
    if (ctx.mode === 'enforce') return refused(ceilingRefusal(v));
  }
  const listings: unknown[] = [];
  let refusal: Outcome | undefined;
  for (const message of parsed.messages) {
    const verdict = judgeMessage(ctx, message.bytes, message.value, message);
    if (verdict.action !== 'forward' && verdict.violation !== undefined && refusal === undefined)
      refusal = refused(ceilingRefusal(verdict.violation));
    const params = isRecord(message.value) ? message.value.params : undefined;
    // The listings the pagination bound counts: the four paginated methods (a mutated "esources/list" is none).
    if (message.kind === 'request' && message.id !== undefined && PAGINATED_METHODS.has(message.method ?? ''))
      listings.push({
        id: message.id,
        method: message.method,
        continues: isRecord(params) && params.cursor !== undefined,
      });
  }
  return refusal ?? { ok: true, batch: parsed.batch, listings, routing: routingByParsing(bytes) };
}

function judgedByScanning(ctx: JudgeContext, bytes: Uint8Array): Outcome {
  const verdict = judgeRequestBody(ctx, bytes);
  if (!verdict.ok) return { ok: false, status: verdict.refusal.status, body: verdict.refusal.body };
  const { progressTokens, answersServer, cancelled } = verdict.routing;
  return {
    ok: true,
    batch: verdict.batch,
    listings: verdict.messages
      .filter((m) => m.kind === 'request' && m.id !== undefined && PAGINATED_METHODS.has(m.method ?? ''))
      .map(({ id, method, continues }) => ({ id, method, continues })),
    routing: { progressTokens: [...progressTokens].sort(), answersServer, cancelled },
  };
}

const token = fc.oneof(rpcId, jsonValue(1));
const meta = fc.record({ progressToken: token, other: jsonValue(1) }, { requiredKeys: [] });

const requestMessage = fc.oneof(
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id: rpcId,
    method: fc.constantFrom('tools/call', 'tools/list', 'resources/list', 'prompts/list', 'ping'),
    params: fc.oneof(
      fc.record(
        {
          name: fc.oneof(fc.constantFrom('big', 'small'), jsonValue(1)),
          arguments: jsonValue(2),
          cursor: fc.oneof(fc.string(), jsonValue(1)),
          _meta: fc.oneof(meta, jsonValue(1)),
        },
        { requiredKeys: [] },
      ),
      jsonValue(1),
    ),
  }),
  fc.record(
    {
      jsonrpc: fc.constant('2.0'),
      method: fc.constantFrom('notifications/cancelled', 'notifications/progress'),
      params: fc.oneof(
        fc.record({ requestId: token, reason: fc.string() }, { requiredKeys: [] }),
        jsonValue(1),
      ),
    },
    { requiredKeys: ['jsonrpc', 'method'] },
  ),
  fc.record({ jsonrpc: fc.constant('2.0'), id: rpcId, result: jsonValue(2) }),
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id: rpcId,
    error: fc.record({ code: fc.integer(), message: fc.string() }),
  }),
  fc.record(
    {
      jsonrpc: fc.constantFrom('2.0', '1.0'),
      id: fc.oneof(rpcId, jsonValue(1)),
      method: jsonValue(1),
      result: jsonValue(1),
    },
    { requiredKeys: [] },
  ),
);

const requestBody = damagedJson(requestMessage, 5);

describe('request bodies judged from their bytes, against decoding and parsing them', () => {
  it('property: any body, valid or not: the same verdict, the same records, the same routing facts', () => {
    fc.assert(
      fc.property(
        requestBody,
        fc.constantFrom<LimitMode>('enforce', 'observe'),
        fc.integer({ min: 20, max: 400 }),
        (body, mode, ceiling) => {
          const scanned = recordingContext(mode, ceiling);
          const parsed = recordingContext(mode, ceiling);
          expect(judgedByScanning(scanned.ctx, body)).toEqual(judgedByParsing(parsed.ctx, body));
          expect(scanned.log).toEqual(parsed.log);
        },
      ),
      { numRuns: 3000 },
    );
  });
});
