// How the stdio upstream frames a call's answer, seen with raw HTTP: an SSE stream by default (as the MCP
// SDK's Streamable HTTP server answers), a JSON body with upstream.stdio.jsonResponse or for a client whose
// Accept does not take SSE; in every case the child's line is what the client receives, byte for byte.
import { describe, expect, it } from 'vitest';
import { initializeRaw, MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { STDIO_SERVERS, type StdioEdgeOptions, startStdioEdge } from '../support/stdio-edge.js';

const { track } = trackHandles();

/** One call in a fresh session: its status, content type and body as received. */
async function oneCall(options: StdioEdgeOptions, accept: string) {
  const edge = track(await startStdioEdge(STDIO_SERVERS.v1Fixture, options));
  const { sessionId } = await initializeRaw(edge.url, '2025-06-18');
  const headers = { ...MCP_POST_HEADERS, accept, 'mcp-session-id': sessionId! };
  const res = await fetch(edge.url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'byte for byte' } },
    }),
  });
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}

// What the SDK's stdio transport writes for that answer: JSON.stringify of the result, then a newline.
const CHILD_LINE = JSON.stringify({
  result: { content: [{ type: 'text', text: 'byte for byte' }] },
  jsonrpc: '2.0',
  id: 7,
});

describe('stdio upstream: how a call is answered', () => {
  it('by default, as an SSE stream whose one event carries the child line as written', async () => {
    const answer = await oneCall({}, 'application/json, text/event-stream');
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('text/event-stream');
    expect(answer.body).toBe(`data: ${CHILD_LINE}\n\n`);
  });

  it('with upstream.stdio.jsonResponse, as a JSON body that is the child line as written', async () => {
    const answer = await oneCall(
      { stdioYaml: '    jsonResponse: true' },
      'application/json, text/event-stream',
    );
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('application/json');
    expect(answer.body).toBe(CHILD_LINE);
  });

  it('to a client whose Accept does not take SSE, as a JSON body even by default', async () => {
    const answer = await oneCall({}, 'application/json');
    expect(answer.type).toBe('application/json');
    expect(answer.body).toBe(CHILD_LINE);
  });
});
