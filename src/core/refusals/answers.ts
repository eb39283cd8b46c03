// Builds what the table (table.ts) says: a refusal as the whole HTTP answer, as one JSON-RPC error, or as
// the data of a notice; and the forms an error takes on its way (a tool's error result, an SSE event).
import type { Outcome } from '../outcome.js';
import type { JsonRpcId, LimitViolation } from '../types.js';
import type { RefusalFacts } from './facts.js';
import type { ErrorRow, Row } from './rows.js';
import { type AnswerName, type EndingName, type ErrorName, ROWS } from './table.js';

export interface JsonRpcErrorMessage {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data: Record<string, unknown> };
}

/**
 * An HTTP answer built by the edge itself: status, headers, a serialized body, and how an exchange answered
 * with it ends (the outcome is its row's in the table, never its sender's).
 */
export interface EdgeHttpError {
  status: number;
  headers: Record<string, string>;
  body: string;
  outcome: Outcome;
}

type Plain = string | number | Readonly<Record<string, string>>;

/** A row's value, fixed or of the refusal's facts. */
function rowValue<F, T extends Plain>(value: T | ((facts: F) => T), facts: F): T {
  return typeof value === 'function' ? value(facts) : value;
}

function errorRow<F>(row: Row<F>, name: string): ErrorRow<F> {
  if ('empty' in row) throw new Error(`refusal ${name} has no error body`);
  return row;
}

function dataOf<F>(row: ErrorRow<F>, facts: F): Record<string, unknown> {
  return { reason: rowValue(row.reason, facts), ...row.data?.(facts), enforcedBy: 'mcp-edge' };
}

function errorOf<F>(row: ErrorRow<F>, facts: F, id: JsonRpcId): JsonRpcErrorMessage {
  return {
    jsonrpc: '2.0',
    id: row.keepsId?.(facts) === false ? null : id,
    error: { code: row.code, message: row.message(facts), data: dataOf(row, facts) },
  };
}

/** A refusal's error data: its reason, the row's fields, and who enforced it (a notice carries it too). */
export function errorData<K extends ErrorName>(name: K, facts: RefusalFacts[K]): Record<string, unknown> {
  return dataOf(errorRow<RefusalFacts[K]>(ROWS[name], name), facts);
}

/** A refusal as one JSON-RPC error, for the request `id` (an id it may not carry becomes null). */
export function edgeError<K extends ErrorName>(
  name: K,
  facts: RefusalFacts[K],
  id: JsonRpcId,
): JsonRpcErrorMessage {
  return errorOf(errorRow<RefusalFacts[K]>(ROWS[name], name), facts, id);
}

/** A refusal as the whole HTTP answer: the status, headers and outcome of its row, its error as the body. */
export function edgeAnswer<K extends AnswerName>(
  name: K,
  facts: RefusalFacts[K],
  id: JsonRpcId = null,
): EdgeHttpError {
  const row: Row<RefusalFacts[K]> = ROWS[name];
  if (row.status === undefined || row.outcome === undefined) throw new Error(`refusal ${name} is no answer`);
  const headers = row.headers === undefined ? {} : rowValue(row.headers, facts);
  if ('empty' in row) return { status: row.status, headers: { ...headers }, body: '', outcome: row.outcome };
  return {
    status: rowValue(row.status, facts),
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(errorOf(row, facts, id)),
    outcome: row.outcome,
  };
}

/** The outcome of an exchange the edge ends with this refusal (its answer had begun). */
export function endingOutcome(name: EndingName): Outcome {
  const row = ROWS[name];
  if (row.outcome === undefined) throw new Error(`refusal ${name} names no outcome`);
  return row.outcome;
}

/** A request refused whole over a ceiling, for the id of the message that crossed it. */
export function ceilingRefusal(violation: LimitViolation): EdgeHttpError {
  return edgeAnswer('request_over_ceiling', { violation }, violation.id);
}

/** The JSON-RPC error that stands in for a message over a ceiling, by its direction. */
export function ceilingError(violation: LimitViolation): JsonRpcErrorMessage {
  const name = violation.direction === 'request' ? 'request_over_ceiling' : 'answer_over_ceiling';
  return edgeError(name, { violation }, violation.id);
}

/** limits.response.toolCallRefusal: how a refused answer to tools/call reaches the client. */
export type ToolCallRefusal = 'error' | 'result';

/** A tools/call answer the edge refused, worded as a tool's execution error: hosts show it to the model. */
export interface ToolErrorResultMessage {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: { resultType?: 'complete'; isError: true; content: [{ type: 'text'; text: string }] };
}

/** The first protocol revision whose results must say `resultType` (SDK v2 clients refuse one without). */
const RESULT_TYPE_FROM = '2026-07-28';

/** What the edge sends in place of an answer it refused: a JSON-RPC error, or (tools/call) a tool error result. */
export type AnswerReplacement = JsonRpcErrorMessage | ToolErrorResultMessage;

/**
 * A refused answer to tools/call in the form `form` asks: the error as it is, or (`result`) a result with
 * isError for the same id whose one text block is the error's message (it names the ceiling or budget, the
 * size and what to do); no structuredContent, so a tool's outputSchema does not apply (MCP: an error result
 * need not match it). `protocolVersion`: the exchange's revision; from 2026-07-28 the result says it is
 * complete (`resultType`).
 */
export function toolCallRefusal(
  error: JsonRpcErrorMessage,
  form: ToolCallRefusal,
  protocolVersion?: string,
): AnswerReplacement {
  if (form === 'error') return error;
  const content: [{ type: 'text'; text: string }] = [{ type: 'text', text: error.error.message }];
  return {
    jsonrpc: '2.0',
    id: error.id,
    result:
      protocolVersion !== undefined && protocolVersion >= RESULT_TYPE_FROM
        ? { resultType: 'complete', isError: true, content }
        : { isError: true, content },
  };
}

/** An SSE event that replaces an oversized one. Keeps the event id so a resuming client does not replay from before it. */
export function sseErrorEvent(message: JsonRpcErrorMessage | object, eventId?: string): string {
  const idLine = eventId !== undefined && !/[\r\n]/.test(eventId) ? `id: ${eventId}\n` : '';
  return `${idLine}event: message\ndata: ${JSON.stringify(message)}\n\n`;
}
