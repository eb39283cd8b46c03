// limits.response.toolCallRefusal: result. An oversized tools/call answer reaches SDK v1 and v2 clients as a
// tool result with isError (what MCP has hosts show the model), for the same id, naming the ceiling, the size
// and what to do; every other method's oversized answer is still a JSON-RPC error; and the refusal is counted
// and logged exactly as the error form's is.
import { ProtocolError } from '@modelcontextprotocol/client';
import { type CallToolResult, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectV1Client, connectV2Client } from '../support/clients.js';
import { initializeRaw, MCP_POST_HEADERS, rejectionOf, trackHandles } from '../support/handles.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startV2Server } from '../support/sdk-v2-server.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

const { track } = trackHandles();
const KiB = 1024;

/** 64 KiB answers; tools/list held to 512 bytes so that its answer is refused too. */
function limitsYaml(form: 'error' | 'result'): string {
  return `limits:\n  response: { maxMessageBytes: 64KiB, toolCallRefusal: ${form} }\n  methods: { tools/list: { response: { maxMessageBytes: 512 } } }`;
}

/** What a model must read in the refusal: the ceiling, the size, and what to ask for instead. */
function expectActionableText(text: string, tool: string): void {
  expect(text).toMatch(
    new RegExp(
      `^Response message \\(tools/call "${tool}"\\) is at least [\\d,]+ bytes \\([\\d.]+ KiB\\), over the response\\.maxMessageBytes limit of 65,536 bytes \\(64\\.0 KiB\\) set by the mcp-edge operator for tenant "default"; mcp-edge replaced the answer whole\\. `,
    ),
  );
  expect(text).toContain('narrower arguments');
  expect(text).toContain('one page at a time');
  expect(text).toContain('a resource link');
}

function expectToolErrorResult(result: CallToolResult, tool: string): void {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  expect(result.content).toHaveLength(1);
  const [block] = result.content;
  expect(block?.type).toBe('text');
  expectActionableText(block?.type === 'text' ? block.text : '', tool);
}

describe('toolCallRefusal: result, seen by SDK clients', () => {
  for (const mode of ['stateful', 'json'] as const) {
    it(`SDK v1 client, SDK v1 server answering with ${mode === 'json' ? 'JSON' : 'SSE'}: an isError result for tools/call, an error for tools/list`, async () => {
      const server = track(await startV1Server({ mode }));
      const edge = track(await startTestEdge(server.url, limitsYaml('result')));
      const { client } = track(await connectV1Client(edge.url));
      const result = (await client.callTool({
        name: 'sized',
        arguments: { bytes: 100 * KiB },
      })) as CallToolResult;
      expectToolErrorResult(result, 'sized');
      const listing = (await rejectionOf(client.listTools())) as McpError;
      expect(listing).toBeInstanceOf(McpError);
      expect(listing.code).toBe(-32603);
      expect(listing.data).toMatchObject({ reason: 'limit_exceeded', method: 'tools/list', limitBytes: 512 });
      expect(listing.message).toContain(
        'the mcp-edge operator can raise response.maxMessageBytes for tools/list',
      );
      // The session goes on.
      const ok = (await client.callTool({
        name: 'echo',
        arguments: { text: 'still here' },
      })) as CallToolResult;
      expect(JSON.stringify(ok.content)).toContain('still here');
    });
  }

  for (const responseMode of ['json', 'sse'] as const) {
    it(`SDK v2 client, SDK v2 server answering with ${responseMode.toUpperCase()} (2026-07-28): the same`, async () => {
      const server = track(await startV2Server({ responseMode }));
      const edge = track(await startTestEdge(server.url, limitsYaml('result')));
      const { client } = track(await connectV2Client(edge.url));
      const result = (await client.callTool({
        name: 'sized',
        arguments: { bytes: 100 * KiB },
      })) as CallToolResult;
      expectToolErrorResult(result, 'sized');
      const listing = (await rejectionOf(client.listTools())) as ProtocolError;
      expect(listing).toBeInstanceOf(ProtocolError);
      expect(listing.code).toBe(-32603);
      expect(listing.data).toMatchObject({ reason: 'limit_exceeded', method: 'tools/list' });
    });
  }

  it("a host-budget refusal (hostBudgets.action: refuse) takes the same form: Claude Code's 25,000 tokens", async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(
        server.url,
        'limits: { response: { maxMessageBytes: 1MiB, toolCallRefusal: result } }\nhostBudgets: { action: refuse }',
      ),
    );
    const { client } = track(await connectV1Client(edge.url, { name: 'claude-code' }));
    const result = (await client.callTool({
      name: 'sized',
      arguments: { bytes: 400 * KiB },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    const [block] = result.content;
    expect(block?.type === 'text' ? block.text : '').toMatch(
      /^The result of tool "sized" is at least [\d,]+ tokens, over the 25,000-token budget of Claude Code, the host that called it; .* Call the tool again with narrower arguments/,
    );
  });

  it('the default form is the JSON-RPC error, and its message says what to do', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(server.url, limitsYaml('error').replace(', toolCallRefusal: error', '')),
    );
    const { client } = track(await connectV1Client(edge.url));
    const err = (await rejectionOf(
      client.callTool({ name: 'sized', arguments: { bytes: 100 * KiB } }),
    )) as McpError;
    expect(err).toBeInstanceOf(McpError);
    expect(err.code).toBe(-32603);
    expect(err.data).toMatchObject({ reason: 'limit_exceeded', tool: 'sized' });
    expectActionableText(err.message.replace(/^MCP error -32603: /, ''), 'sized');
  });
});

/** A raw tools/call through the edge: the answer's JSON-RPC message, from a JSON body or its SSE event. */
async function rawCall(edge: TestEdge, id: number): Promise<Record<string, unknown>> {
  const { sessionId } = await initializeRaw(edge.url);
  const res = await fetch(edge.url, {
    method: 'POST',
    headers: {
      ...MCP_POST_HEADERS,
      'mcp-protocol-version': '2025-11-25',
      ...(sessionId !== null ? { 'mcp-session-id': sessionId } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'sized', arguments: { bytes: 100 * KiB } },
    }),
  });
  const text = await res.text();
  const data = res.headers.get('content-type')?.startsWith('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data: ') && line.length > 'data: '.length)
        .map((line) => line.slice('data: '.length))
        .at(-1)
    : text;
  return JSON.parse(data ?? 'null') as Record<string, unknown>;
}

describe('toolCallRefusal: result, on the wire', () => {
  for (const mode of ['json', 'stateful'] as const) {
    it(`replaces the answer whole with exactly {jsonrpc, id, result: {isError, content}} (${mode === 'json' ? 'JSON' : 'SSE'})`, async () => {
      const server = track(await startV1Server({ mode }));
      const edge = track(await startTestEdge(server.url, limitsYaml('result')));
      const answer = await rawCall(edge, 7);
      expect(Object.keys(answer).sort()).toEqual(['id', 'jsonrpc', 'result']);
      expect(answer.id).toBe(7);
      const result = answer.result as Record<string, unknown>;
      expect(Object.keys(result).sort()).toEqual(['content', 'isError']);
      expect(result.isError).toBe(true);
      const content = result.content as { type: string; text: string }[];
      expect(content.map((block) => Object.keys(block).sort())).toEqual([['text', 'type']]);
      expectActionableText(content[0]?.text ?? '', 'sized');
    });
  }

  it('counts, logs and ends the exchange as the error form does', async () => {
    const server = track(await startV1Server({ mode: 'json' }));
    const seen = [];
    for (const form of ['error', 'result'] as const) {
      const edge = track(await startTestEdge(server.url, limitsYaml(form), { metrics: true }));
      await rawCall(edge, 3);
      const metrics = await (await fetch(edge.metricsUrl ?? '')).text();
      const counted = metrics
        .split('\n')
        .filter((line) => line.startsWith('mcp_edge_limit_exceeded_total{'))
        .map((line) => line.replace(/upstream="[^"]*",?/, ''));
      const line = edge.logs.find(
        (record) => record.msg === 'exchange' && (record.rpc as string[]).includes('tools/call'),
      );
      const { outcome, status, violations, tools } = line ?? {};
      seen.push({ counted, outcome, status, violations, tools });
    }
    expect(seen[0]?.counted).toHaveLength(1);
    expect(seen[0]?.counted[0]).toContain('action="rejected"');
    expect(seen[0]?.violations).toBeDefined();
    expect(seen[1]).toEqual(seen[0]);
  });
});
