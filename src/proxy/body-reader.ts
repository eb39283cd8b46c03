// The one place a request body is read: never past the ceiling that can apply to it, judged whole before
// anything goes upstream. A client that sent `Expect: 100-continue` gets its 100 only once the edge knows
// it will read the body, so a body over its ceiling gets the 413 instead.

import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { EnvelopeHeadScanner } from '../core/envelope-head.js';
import { EXCHANGE_FAILED, type Guard, guardWith } from '../core/guard.js';
import { headerValue, isJson } from '../core/headers.js';
import { ceilingRefusal, edgeAnswer } from '../core/refusals/answers.js';
import type { JsonRpcId, MessageSubject } from '../core/types.js';
import { type Exchange, holdBounds, judgeContext } from '../exchange/exchange.js';
import { bodyViolation, judgeRequestBody } from '../inspect/request-body.js';
import type { EdgeContext } from './edge-context.js';
import { EdgeError } from './edge-error.js';
import type { Hold } from './held-bytes.js';
import { endedByEdge } from './local-reply.js';

/** How much of a refused body is read and dropped (never held) so the client sees the 413. */
const DISCARD_MAX_BYTES = 8 * 1024 * 1024;
const DISCARD_GRACE_MS = 2_000;

/**
 * After a refusal, the rest of a body is read and thrown away for a short while, so the client can
 * receive the answer instead of a connection reset; then the connection is closed.
 */
export function discardRest(payload: Readable, guard: Guard): void {
  let discarded = 0;
  const close = guard(() => payload.destroy());
  const timer = setTimeout(close, DISCARD_GRACE_MS);
  timer.unref();
  payload.on(
    'data',
    guard((chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > DISCARD_MAX_BYTES) close();
    }),
  );
  payload.on('error', () => {});
  payload.once('close', () => clearTimeout(timer));
  payload.resume();
}

const UNKNOWN_SUBJECT: MessageSubject = { method: undefined, tool: undefined };

/**
 * A body refused before it was read whole: no method or tool is known yet (headers that name one are the
 * client's claim, not the body: the header check compares them once the body is read).
 */
function refuseBody(
  exchange: Exchange,
  ceiling: number,
  observed: number,
  lowerBound: boolean,
  id: JsonRpcId | undefined,
): EdgeError {
  const v = bodyViolation(exchange, ceiling, observed, lowerBound, UNKNOWN_SUBJECT, id);
  exchange.observer.limitExceeded(v, 'rejected');
  const answer = ceilingRefusal(v);
  // The rest of the body is not read: the connection cannot be reused.
  answer.headers.connection = 'close';
  return new EdgeError(answer);
}

/** Checks what the headers say about a body before a byte of it is read. */
function refusalByHeaders(request: BodyRequest): EdgeError | undefined {
  // The transport carries JSON-RPC as application/json; anything else is not the upstream's to parse.
  const contentType = headerValue(request.headers, 'content-type');
  if (!isJson(contentType)) {
    return new EdgeError(edgeAnswer('unsupported_content_type', { contentType }));
  }
  const coding = headerValue(request.headers, 'content-encoding');
  if (coding !== undefined && coding.toLowerCase() !== 'identity') {
    return new EdgeError(edgeAnswer('unsupported_content_encoding', { coding }));
  }
  return undefined;
}

/** The body, or the refusal that answers the request instead. Called once. */
export type BodyDone = (refusal: EdgeError | undefined, body: Buffer | undefined) => void;

/** Reads up to `ceiling` bytes (null: no ceiling); past it, refuses with the id recovered from the start. */
function readUpTo(
  payload: Readable,
  ceiling: number | null,
  onOver: (size: number, id: JsonRpcId | undefined) => EdgeError,
  settle: BodyDone,
  guard: Guard,
  hold: Hold | undefined,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const onData = guard((chunk: Buffer) => {
    size += chunk.length;
    chunks.push(chunk);
    hold?.set(size);
    if (ceiling === null || size <= ceiling) return;
    // Stop holding here: the id is recovered only if it came early in the body.
    payload.off('data', onData);
    payload.off('end', onEnd);
    discardRest(payload, guard);
    const scanner = new EnvelopeHeadScanner();
    for (const c of chunks) scanner.push(c);
    settle(onOver(size, scanner.snapshot().id), undefined);
  });
  const onEnd = guard(() =>
    settle(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)),
  );
  payload.on('data', onData);
  payload.once('end', onEnd);
  payload.once(
    'error',
    guard((err: Error) => {
      // A broken body (bad chunk framing, a client that left) is the client's, never an edge failure.
      settle(new EdgeError(edgeAnswer('unreadable_body', { detail: err.message })), undefined);
    }),
  );
}

/** What the body reader looks at: the exchange (undefined off the MCP endpoint) and the request's headers. */
export interface BodyRequest {
  /** The HTTP method: for any but a POST, an empty body is no body. */
  method: string;
  exchange: Exchange | undefined;
  headers: IncomingHttpHeaders;
  /** Sends `100 Continue` to a client that asked for it; called once the body will be read. */
  sendContinue: (() => void) | undefined;
}

/**
 * Reads and judges a request body; `done` gets it, or the refusal to answer with. No promise: this runs for
 * every request.
 */
export function readBoundedBody(
  ctx: Pick<EdgeContext, 'sessions' | 'log'> & Partial<Pick<EdgeContext, 'held'>>,
  request: BodyRequest,
  payload: Readable,
  answer: BodyDone,
): void {
  const exchange = request.exchange;
  let answered = false;
  // Counted in mcp_edge_held_bytes while it is read, let go however reading ends (what the upstream's send
  // holds after is undici's).
  const hold = ctx.held?.hold();
  const done: BodyDone = (refusal, body) => {
    if (answered) return;
    answered = true;
    hold?.release();
    answer(refusal, body);
  };
  // The body's listeners and timer run outside Fastify's try/catch: what they throw is this request's 500
  // (or, once it has its answer, its connection closed), never the process's end.
  const guard = guardWith((err) => {
    ctx.log.error({ err }, EXCHANGE_FAILED);
    if (!answered) {
      done(new EdgeError(edgeAnswer('edge_failure', {})), undefined);
      return;
    }
    if (exchange !== undefined) endedByEdge(exchange, 'edge_failure');
    payload.destroy();
  });
  // Not the MCP endpoint (a 404 follows): the body is not read, let alone forwarded.
  if (exchange === undefined) {
    discardRest(payload, guard);
    done(undefined, Buffer.alloc(0));
    return;
  }
  const refusal = refusalByHeaders(request);
  if (refusal !== undefined) {
    discardRest(payload, guard);
    done(refusal, undefined);
    return;
  }
  // The largest body ceiling any method or tool of the tenant has: the body's own applies once it is read
  // (judgeRequestBody), whatever its headers name.
  const ceiling = holdBounds(exchange.runtime, exchange.tenant).requestBody;
  const enforced = exchange.mode === 'enforce' ? ceiling : null;
  const declared = Number(headerValue(request.headers, 'content-length') ?? Number.NaN);
  if (enforced !== null && Number.isFinite(declared) && declared > enforced) {
    discardRest(payload, guard);
    done(refuseBody(exchange, enforced, declared, false, undefined), undefined);
    return;
  }
  // The edge meets the client's expectation itself: the upstream gets a whole body and no Expect header.
  request.sendContinue?.();
  readUpTo(
    payload,
    enforced,
    (size, id) => refuseBody(exchange, enforced ?? 0, size, true, id),
    (refused, body) => {
      if (body === undefined) done(refused, undefined);
      // A DELETE has no body: one sent with a content-type and nothing after it (the Python SDK's client puts
      // its POST headers on every request) is none, not an empty JSON-RPC body.
      else if (body.length === 0 && request.method !== 'POST') done(undefined, body);
      else done(judgedBody(ctx, exchange, body), body);
    },
    guard,
    hold,
  );
}

/**
 * Judges a whole body: undefined when it may go on (the filters' request hook is asked next, request-filters.ts),
 * else the refusal.
 */
function judgedBody(
  ctx: Pick<EdgeContext, 'sessions'>,
  exchange: Exchange,
  body: Buffer,
): EdgeError | undefined {
  exchange.requestBytes = body.length;
  const verdict = judgeRequestBody(judgeContext(exchange, 'request', ctx.sessions), body);
  if (!verdict.ok) return new EdgeError(verdict.refusal);
  exchange.bodyRouting = verdict.routing;
  exchange.request = { messages: verdict.messages, batch: verdict.batch, read: verdict.read };
  return undefined;
}
