// What the edge's spans say, as plain values: names, attributes and status from what the exchange filter
// sees (the request's messages, each answer's fate, each measurement, the ending). Named per the
// OpenTelemetry semantic conventions for MCP (status Development, semantic-conventions 1.45: span
// "{mcp.method.name} {target}", target the tool or prompt, never the resource URI); the edge's own facts go
// under `mcp_edge.`. Never an argument or a result: only names, ids, sizes and verdicts.
import type { Attributes } from '@opentelemetry/api';
import { boundedIdText } from '../core/client-names.js';
import type { Outcome } from '../core/outcome.js';
import type { JsonRpcId, LimitViolation, MessageMeasurement } from '../core/types.js';
import type { HostBudgetObservation } from '../hosts/host-judge.js';
import type { JudgedMessage, MessageFate } from '../inspect/message-verdict.js';
import type { RequestMessage } from '../inspect/request-body.js';

// The attribute names, as @opentelemetry/semantic-conventions spells them (ATTR_*): written here so that
// nothing of OpenTelemetry loads while tracing is off, and because the MCP ones are only in its incubating
// entry (test/unit/mcp-spans.test.ts holds them equal to the package's).
const ATTR_CLIENT_ADDRESS = 'client.address';
const ATTR_ERROR_TYPE = 'error.type';
const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
const ATTR_NETWORK_TRANSPORT = 'network.transport';
const ATTR_URL_PATH = 'url.path';
export const STABLE = {
  clientAddress: ATTR_CLIENT_ADDRESS,
  errorType: ATTR_ERROR_TYPE,
  httpRequestMethod: ATTR_HTTP_REQUEST_METHOD,
  httpResponseStatusCode: ATTR_HTTP_RESPONSE_STATUS_CODE,
  networkTransport: ATTR_NETWORK_TRANSPORT,
  urlPath: ATTR_URL_PATH,
} as const;
export const MCP = {
  methodName: 'mcp.method.name',
  protocolVersion: 'mcp.protocol.version',
  sessionId: 'mcp.session.id',
  resourceUri: 'mcp.resource.uri',
  toolName: 'gen_ai.tool.name',
  promptName: 'gen_ai.prompt.name',
  operationName: 'gen_ai.operation.name',
  requestId: 'jsonrpc.request.id',
  responseStatusCode: 'rpc.response.status_code',
} as const;

/** What the edge knows of the exchange a request span belongs to. */
export interface ExchangeFacts {
  /** The MCP-Protocol-Version the client sent (none on an initialize). */
  protocolVersion: string | undefined;
  sessionId: string | undefined;
  /** tcp toward an HTTP upstream, pipe toward a stdio child. */
  transport: 'tcp' | 'pipe';
}

/**
 * Whether a protocol revision has sessions: the 2026-07-28 revision and later have none, so its exchanges
 * never carry mcp.session.id (a revision is a date, so they compare as text).
 */
export function revisionHasSessions(protocolVersion: string | undefined): boolean {
  return protocolVersion === undefined || protocolVersion < '2026-07-28';
}

/**
 * jsonrpc.request.id: the id as text, a long or unprintable one in its bounded form; none for a notification
 * or a null id (the conventions say so).
 */
export function requestIdText(id: JsonRpcId | undefined): string | undefined {
  if (id === undefined || id === null) return undefined;
  return boundedIdText(id);
}

/** The span of one message of the request: a request or notification the client sent (never a response). */
export function tracedMessage(message: RequestMessage): boolean {
  return (message.kind === 'request' || message.kind === 'notification') && message.method !== undefined;
}

/** "{mcp.method.name} {target}", the target a tool or prompt name (low cardinality), else the method alone. */
export function requestSpanName(message: RequestMessage): string {
  const method = message.method ?? 'unknown';
  const target = message.tool ?? message.prompt;
  return target !== undefined ? `${method} ${target}` : method;
}

/** The attributes a request span starts with. */
export function requestAttributes(message: RequestMessage, facts: ExchangeFacts): Attributes {
  const attributes: Attributes = {
    [MCP.methodName]: message.method ?? 'unknown',
    [ATTR_NETWORK_TRANSPORT]: facts.transport,
    'mcp_edge.request.bytes': message.bytes,
  };
  const id = requestIdText(message.id);
  if (id !== undefined) attributes[MCP.requestId] = id;
  if (message.tool !== undefined) {
    attributes[MCP.toolName] = message.tool;
    attributes[MCP.operationName] = 'execute_tool';
  }
  if (message.prompt !== undefined) attributes[MCP.promptName] = message.prompt;
  if (message.resourceUri !== undefined) attributes[MCP.resourceUri] = message.resourceUri;
  return addSessionAttributes(attributes, facts);
}

/** mcp.protocol.version, and mcp.session.id for a revision that has sessions. */
export function sessionAttributes(facts: ExchangeFacts): Attributes {
  return addSessionAttributes({}, facts);
}

/** Adds the session attributes to `attributes` (no object of their own): returns it. */
function addSessionAttributes(attributes: Attributes, facts: ExchangeFacts): Attributes {
  if (facts.protocolVersion !== undefined) attributes[MCP.protocolVersion] = facts.protocolVersion;
  if (facts.sessionId !== undefined && revisionHasSessions(facts.protocolVersion)) {
    attributes[MCP.sessionId] = facts.sessionId;
  }
  return attributes;
}

/** A measured answer: bytes per channel, duplicated bytes, estimated tokens. */
export function measurementAttributes(m: MessageMeasurement): Attributes {
  const attributes: Attributes = {
    'mcp_edge.response.bytes': m.envelopeBytes,
    'mcp_edge.response.estimated_tokens': m.estimatedTokens,
  };
  const channels = m.channels;
  if (channels !== undefined) {
    attributes['mcp_edge.response.content_bytes'] =
      channels.content_text +
      channels.content_image +
      channels.content_audio +
      channels.content_resource_link +
      channels.content_resource;
    attributes['mcp_edge.response.structured_content_bytes'] = channels.structured;
    attributes['mcp_edge.response.duplicated_bytes'] = m.duplicatedBytes;
  }
  return attributes;
}

/** The ceiling that applied to a message and its value (whether or not it was crossed). */
export function ceilingAttributes(limit: string, ceiling: number): Attributes {
  return { 'mcp_edge.ceiling.name': limit, 'mcp_edge.ceiling.value': ceiling };
}

/** A ceiling crossed: which, its value, what was observed (a lower bound when the edge stopped reading). */
export function violationAttributes(v: LimitViolation): Attributes {
  return {
    ...ceilingAttributes(v.limit, v.limitValue),
    'mcp_edge.observed': v.observedValue,
    'mcp_edge.observed_is_lower_bound': v.observedIsLowerBound,
  };
}

/** A tool result over the budget of the host that called. */
export function hostBudgetAttributes(o: HostBudgetObservation): Attributes {
  const attributes: Attributes = { 'mcp_edge.host': o.host };
  if (o.over !== undefined) {
    attributes['mcp_edge.host_budget.unit'] = o.over.unit;
    attributes['mcp_edge.host_budget.value'] = o.over.budget;
    attributes['mcp_edge.host_budget.observed'] = o.over.observed;
    attributes['mcp_edge.host_budget.action'] = o.over.action;
  }
  return attributes;
}

/** The verdict attribute's value: forwarded, replaced, refused (a request the edge dropped), observed_over. */
export function verdictOf(fate: MessageFate): string {
  return fate === 'dropped' ? 'refused' : fate;
}

/** A span's error status: the edge's or the server's words for what failed. */
export interface SpanError {
  message: string;
}

/** What an answer (or a dropped request) adds to its request span, and whether the span is an error. */
export function answerOutcome(j: JudgedMessage): { attributes: Attributes; error: SpanError | undefined } {
  const attributes: Attributes = {
    'mcp_edge.verdict': verdictOf(j.fate),
    'mcp_edge.response.delivered_bytes': j.deliveredBytes,
  };
  if (j.violation !== undefined) Object.assign(attributes, violationAttributes(j.violation));
  if (j.errorCode !== undefined) {
    attributes[MCP.responseStatusCode] = String(j.errorCode);
    attributes[ATTR_ERROR_TYPE] = String(j.errorCode);
  } else if (j.toolError === 'is_error') {
    attributes[ATTR_ERROR_TYPE] = 'tool_error';
  }
  if (j.fate === 'replaced' || j.fate === 'dropped') {
    const why =
      j.violation?.limit ??
      (j.ambiguous !== undefined ? `ambiguous key "${j.ambiguous.key}"` : 'host budget');
    return { attributes, error: { message: `mcp-edge ${verdictOf(j.fate)} it: ${why}` } };
  }
  if (attributes[ATTR_ERROR_TYPE] !== undefined) {
    return { attributes, error: { message: String(attributes[ATTR_ERROR_TYPE]) } };
  }
  return { attributes, error: undefined };
}

/**
 * Outcomes where the exchange was served as asked, or its end was nobody's failure (a client that left, the
 * edge's shutdown); every other outcome is one the edge or the upstream failed.
 */
const SERVED_OUTCOMES: ReadonlySet<Outcome> = new Set<Outcome>([
  'forwarded',
  'stream_complete',
  'client_closed',
  'shutdown',
]);

export function outcomeIsError(outcome: Outcome): boolean {
  return !SERVED_OUTCOMES.has(outcome);
}

/** The exchange span's name: the HTTP method and the route (the conventions' "{method} {route}"). */
export function exchangeSpanName(httpMethod: string, path: string): string {
  return `${httpMethod} ${path}`;
}

/** What the exchange span says once it ended. */
export interface ExchangeEnd {
  httpMethod: string;
  path: string;
  status: number;
  outcome: Outcome;
  tenant: string;
  host: string | undefined;
  requestBytes: number;
  responseBytes: number;
  clientAddress: string | undefined;
}

export function exchangeEndAttributes(end: ExchangeEnd): Attributes {
  const attributes: Attributes = {
    [ATTR_HTTP_REQUEST_METHOD]: end.httpMethod,
    [ATTR_URL_PATH]: end.path,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: end.status,
    'mcp_edge.outcome': end.outcome,
    'mcp_edge.tenant': end.tenant,
    'mcp_edge.request.bytes': end.requestBytes,
    'mcp_edge.response.bytes': end.responseBytes,
  };
  if (end.host !== undefined) attributes['mcp_edge.host'] = end.host;
  if (end.clientAddress !== undefined) attributes[ATTR_CLIENT_ADDRESS] = end.clientAddress;
  if (outcomeIsError(end.outcome)) attributes[ATTR_ERROR_TYPE] = end.outcome;
  return attributes;
}
