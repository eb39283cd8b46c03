// The span names and attributes of src/telemetry/mcp-spans.ts, against the semantic conventions as the
// OpenTelemetry package spells them.
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_NETWORK_TRANSPORT,
  ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROMPT_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_RESOURCE_URI,
  ATTR_MCP_SESSION_ID,
  ATTR_RPC_RESPONSE_STATUS_CODE,
} from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import { OUTCOMES } from '../../src/core/outcome.js';
import type { JudgedMessage } from '../../src/inspect/message-verdict.js';
import type { RequestMessage } from '../../src/inspect/request-body.js';
import {
  answerOutcome,
  type ExchangeFacts,
  exchangeEndAttributes,
  MCP,
  measurementAttributes,
  outcomeIsError,
  requestAttributes,
  requestIdText,
  requestSpanName,
  revisionHasSessions,
  STABLE,
  tracedMessage,
} from '../../src/telemetry/mcp-spans.js';

const request = (over: Partial<RequestMessage>): RequestMessage => ({
  kind: 'request',
  id: 7,
  method: 'tools/call',
  tool: undefined,
  prompt: undefined,
  resourceUri: undefined,
  bytes: 120,
  continues: false,
  ...over,
});

const facts: ExchangeFacts = { protocolVersion: '2025-11-25', sessionId: 's-1', transport: 'tcp' };

const judged = (over: Partial<JudgedMessage>): JudgedMessage => ({
  kind: 'result',
  id: 7,
  subject: { method: 'tools/call', tool: 'export' },
  fate: 'forwarded',
  bytes: 300,
  bytesIsLowerBound: false,
  deliveredBytes: 300,
  violation: undefined,
  ambiguous: undefined,
  errorCode: undefined,
  toolError: undefined,
  ...over,
});

describe('attribute names', () => {
  it("are the semantic-conventions package's own", () => {
    expect(MCP).toEqual({
      methodName: ATTR_MCP_METHOD_NAME,
      protocolVersion: ATTR_MCP_PROTOCOL_VERSION,
      sessionId: ATTR_MCP_SESSION_ID,
      resourceUri: ATTR_MCP_RESOURCE_URI,
      toolName: ATTR_GEN_AI_TOOL_NAME,
      promptName: ATTR_GEN_AI_PROMPT_NAME,
      operationName: ATTR_GEN_AI_OPERATION_NAME,
      requestId: ATTR_JSONRPC_REQUEST_ID,
      responseStatusCode: ATTR_RPC_RESPONSE_STATUS_CODE,
    });
    expect(STABLE).toEqual({
      clientAddress: ATTR_CLIENT_ADDRESS,
      errorType: ATTR_ERROR_TYPE,
      httpRequestMethod: ATTR_HTTP_REQUEST_METHOD,
      httpResponseStatusCode: ATTR_HTTP_RESPONSE_STATUS_CODE,
      networkTransport: ATTR_NETWORK_TRANSPORT,
      urlPath: ATTR_URL_PATH,
    });
  });
});

describe('request spans', () => {
  it('are named "{method} {target}", the target a tool or prompt, never a resource URI', () => {
    expect(requestSpanName(request({ tool: 'export' }))).toBe('tools/call export');
    expect(requestSpanName(request({ method: 'prompts/get', prompt: 'summarize' }))).toBe(
      'prompts/get summarize',
    );
    expect(requestSpanName(request({ method: 'resources/read', resourceUri: 'file:///a' }))).toBe(
      'resources/read',
    );
  });

  it('are made for requests and notifications, not for the responses a client sends', () => {
    expect(tracedMessage(request({}))).toBe(true);
    expect(tracedMessage(request({ kind: 'notification', id: undefined }))).toBe(true);
    expect(tracedMessage(request({ kind: 'result', method: undefined }))).toBe(false);
  });

  it("carry the conventions' attributes; a tool call is an execute_tool operation", () => {
    expect(requestAttributes(request({ tool: 'export' }), facts)).toEqual({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'export',
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': '7',
      'mcp.protocol.version': '2025-11-25',
      'mcp.session.id': 's-1',
      'network.transport': 'tcp',
      'mcp_edge.request.bytes': 120,
    });
  });

  it('have no mcp.session.id from the sessionless revision 2026-07-28 on', () => {
    expect(revisionHasSessions('2025-11-25')).toBe(true);
    expect(revisionHasSessions('2026-07-28')).toBe(false);
    const modern = requestAttributes(request({}), { ...facts, protocolVersion: '2026-07-28' });
    expect(modern['mcp.session.id']).toBeUndefined();
    expect(modern['mcp.protocol.version']).toBe('2026-07-28');
  });

  it('keep no jsonrpc.request.id for a null or absent id', () => {
    expect(requestIdText(null)).toBeUndefined();
    expect(requestIdText(undefined)).toBeUndefined();
    expect(requestIdText('x')).toBe('x');
  });
});

describe('answers', () => {
  it('a forwarded result: the verdict, no error', () => {
    expect(answerOutcome(judged({}))).toEqual({
      attributes: { 'mcp_edge.verdict': 'forwarded', 'mcp_edge.response.delivered_bytes': 300 },
      error: undefined,
    });
  });

  it('a result with isError: error.type tool_error', () => {
    const { attributes, error } = answerOutcome(judged({ toolError: 'is_error' }));
    expect(attributes['error.type']).toBe('tool_error');
    expect(error).toEqual({ message: 'tool_error' });
  });

  it('a JSON-RPC error: its code as rpc.response.status_code and error.type', () => {
    const { attributes } = answerOutcome(
      judged({ kind: 'error', errorCode: -32602, toolError: 'jsonrpc_error' }),
    );
    expect(attributes).toMatchObject({ 'rpc.response.status_code': '-32602', 'error.type': '-32602' });
  });

  it("a replaced answer: an error naming the ceiling, with the ceiling's value and the size observed", () => {
    const { attributes, error } = answerOutcome(
      judged({
        fate: 'replaced',
        deliveredBytes: 250,
        errorCode: -32001,
        violation: {
          limit: 'response.maxMessageBytes',
          direction: 'response',
          limitValue: 4096,
          observedValue: 4097,
          observedIsLowerBound: true,
          tenant: 'default',
          method: 'tools/call',
          tool: 'export',
          id: 7,
        },
      }),
    );
    expect(error).toEqual({ message: 'mcp-edge replaced it: response.maxMessageBytes' });
    expect(attributes).toMatchObject({
      'mcp_edge.verdict': 'replaced',
      'mcp_edge.ceiling.name': 'response.maxMessageBytes',
      'mcp_edge.ceiling.value': 4096,
      'mcp_edge.observed': 4097,
      'mcp_edge.observed_is_lower_bound': true,
    });
  });

  it('channel bytes: content and structuredContent apart, with the duplicated bytes', () => {
    expect(
      measurementAttributes({
        envelopeBytes: 500,
        kind: 'result',
        id: 7,
        method: undefined,
        tool: undefined,
        channels: {
          content_text: 100,
          content_image: 10,
          content_audio: 0,
          content_resource_link: 0,
          content_resource: 0,
          structured: 90,
        },
        duplicatedBytes: 90,
        estimatedTokens: 125,
      }),
    ).toEqual({
      'mcp_edge.response.bytes': 500,
      'mcp_edge.response.estimated_tokens': 125,
      'mcp_edge.response.content_bytes': 110,
      'mcp_edge.response.structured_content_bytes': 90,
      'mcp_edge.response.duplicated_bytes': 90,
    });
  });
});

describe('exchange spans', () => {
  it('an outcome the edge or the upstream failed is an error; a client that left is not', () => {
    const failures = OUTCOMES.filter(outcomeIsError);
    expect(failures).toContain('response_replaced');
    expect(failures).toContain('upstream_timeout');
    expect(failures).not.toContain('forwarded');
    expect(failures).not.toContain('client_closed');
    expect(failures).not.toContain('shutdown');
  });

  it("say the HTTP side and the edge's facts", () => {
    expect(
      exchangeEndAttributes({
        httpMethod: 'POST',
        path: '/mcp',
        status: 413,
        outcome: 'refused',
        tenant: 'acme',
        host: 'claude-code',
        requestBytes: 9000,
        responseBytes: 300,
        clientAddress: '127.0.0.1',
      }),
    ).toEqual({
      'http.request.method': 'POST',
      'url.path': '/mcp',
      'http.response.status_code': 413,
      'mcp_edge.outcome': 'refused',
      'mcp_edge.tenant': 'acme',
      'mcp_edge.host': 'claude-code',
      'mcp_edge.request.bytes': 9000,
      'mcp_edge.response.bytes': 300,
      'client.address': '127.0.0.1',
      'error.type': 'refused',
    });
  });
});
