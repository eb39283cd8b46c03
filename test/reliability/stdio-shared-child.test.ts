// Clients without a session (protocol 2026-07-28) share one stdio child per tenant. No client ever receives,
// answers or cancels a message that belongs to another client's request: an id stays claimed until the
// child answers it, a child's message goes only where its id or progress token says, and a client waiting
// for an id another holds gets a clear refusal within upstream.stdio.idWait. Real SDK v2 clients (both
// number their requests from 0), the scripted stdio server (test/fixtures/stdio-scripted-server.ts), and raw
// POSTs for what an attacker sends by hand.
import { describe, expect, it } from 'vitest';
import { connectV2Client, textOf } from '../support/clients.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { waitFor } from '../support/processes.js';
import {
  STDIO_SERVERS,
  type StdioTestEdge,
  startStdioEdge,
  undeliveredCount,
} from '../support/stdio-edge.js';

const { track } = trackHandles();

/** The scripted server's stderr lines, as the edge logged them. */
function stderrLines(edge: StdioTestEdge): string[] {
  return edge.logs.flatMap((record) => (typeof record.stderr === 'string' ? [record.stderr] : []));
}

/** Waits for the scripted server to say a line starting with `prefix`; returns the rest of it. */
async function serverSaid(edge: StdioTestEdge, prefix: string): Promise<string> {
  let found: string | undefined;
  await waitFor(() => {
    found = stderrLines(edge).find((line) => line.startsWith(prefix));
    return found !== undefined;
  });
  if (found === undefined) throw new Error(`the scripted server never said "${prefix}"`);
  return found.slice(prefix.length);
}

/** A POST without a session, as a client speaking 2026-07-28 sends it: its method (and tool) in headers too. */
function rawPost(
  edge: StdioTestEdge,
  message: { method?: string; params?: Record<string, unknown>; [member: string]: unknown },
): Promise<Response> {
  const tool = message.method === 'tools/call' ? message.params?.name : undefined;
  return fetch(edge.url, {
    method: 'POST',
    headers: {
      ...MCP_POST_HEADERS,
      'mcp-protocol-version': '2026-07-28',
      ...(message.method !== undefined ? { 'mcp-method': message.method } : {}),
      ...(typeof tool === 'string' ? { 'mcp-name': tool } : {}),
    },
    body: JSON.stringify(message),
  });
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

describe('stdio upstream: clients without a session on one shared child', () => {
  it("an abandoned call's id stays claimed: its late answer reaches no other client, whose own answer comes", async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.scripted, { metrics: true }));
    const a = track(await connectV2Client(edge.url, { name: 'a' }));
    const b = track(await connectV2Client(edge.url, { name: 'b' }));
    expect(a.protocolVersion()).toBe('2026-07-28');
    const abort = new AbortController();
    const abandoned = a.client
      .callTool({ name: 'slow_echo', arguments: { text: 'for-A', ms: 1500 } }, { signal: abort.signal })
      .catch((err: unknown) => err);
    const idA = await serverSaid(edge, 'started ');
    abort.abort();
    await abandoned;
    // B numbers from 0 as A does: its call has A's id while the child still works on A's.
    const answer = await b.client.callTool({ name: 'slow_echo', arguments: { text: 'for-B', ms: 2000 } });
    expect(stderrLines(edge).filter((line) => line.startsWith('started '))).toEqual([
      `started ${idA}`,
      `started ${idA}`,
    ]);
    expect(textOf(answer)).toBe('for-B');
    const dropped = edge.logs.find((record) => record.reason === 'caller_gone');
    expect(dropped).toMatchObject({ message: `an answer for id ${JSON.parse(idA)}` });
    expect(await undeliveredCount(edge, 'caller_gone')).toBe(1);
  });

  it("a notification the child sends after B's call ended does not reach A's stream", async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.scripted, { metrics: true }));
    // What reached A, as bytes: whatever its SDK then does with a log message.
    const receivedByA: Promise<string>[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      receivedByA.push(response.clone().text());
      return response;
    };
    const a = track(await connectV2Client(edge.url, { name: 'a', fetch: recordingFetch }));
    const b = track(await connectV2Client(edge.url, { name: 'b' }));
    // One call first, so that B's next id is not A's (which would wait for A's answer).
    await b.client.callTool({ name: 'echo', arguments: { text: 'warm-up' } });
    const callA = a.client.callTool({ name: 'slow_echo', arguments: { text: 'A', ms: 1500 } });
    await serverSaid(edge, 'started ');
    expect(textOf(await b.client.callTool({ name: 'late_notify', arguments: { text: 'for-B' } }))).toBe(
      'notifying soon',
    );
    await serverSaid(edge, 'notified');
    // The notification was written before A's answer: A's stream would carry it before the answer.
    expect(textOf(await callA)).toBe('A');
    const bytesA = (await Promise.all(receivedByA)).join('');
    expect(bytesA).toContain('"A"');
    expect(bytesA).not.toContain('for-B');
    expect(edge.logs.find((record) => record.reason === 'no_owner')).toMatchObject({
      message: 'notifications/message',
    });
    expect(await undeliveredCount(edge, 'no_owner')).toBe(1);
  });

  it('a progress token in use by another client is not shared: each client gets only its own progress', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.scripted));
    const a = track(await connectV2Client(edge.url, { name: 'a' }));
    const progressA: number[] = [];
    const callA = a.client.callTool(
      { name: 'progress', arguments: { steps: 8, ms: 60 } },
      { onprogress: (p) => progressA.push(p.progress) },
    );
    const idA = JSON.parse(await serverSaid(edge, 'progress ')) as number;
    // The SDK client's token is its request id; B names the same token on a request of another id.
    const b = await rawPost(edge, {
      jsonrpc: '2.0',
      id: 'b-1',
      method: 'tools/call',
      params: { name: 'progress', arguments: { steps: 8, ms: 10 }, _meta: { ...META, progressToken: idA } },
    });
    const bodyB = await b.text();
    expect(textOf(await callA)).toBe('progressed 8');
    expect(progressA).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // B went once A's token was free, and got its own eight.
    expect(b.status).toBe(200);
    expect(bodyB.match(/notifications\/progress/g)).toHaveLength(8);
    expect(bodyB).toContain('progressed 8');
  });

  it("no client can answer the child's sampling request for another client's call", async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.scripted, { metrics: true }));
    const a = track(await connectV2Client(edge.url, { name: 'a' }));
    const callA = a.client.callTool({ name: 'ask', arguments: {} });
    const asked = await serverSaid(edge, 'asked ');
    const injected = await rawPost(edge, {
      jsonrpc: '2.0',
      id: asked,
      result: { role: 'assistant', model: 'x', content: { type: 'text', text: 'INJECTED-BY-B' } },
    });
    const resultA = textOf(await callA);
    expect(resultA).not.toContain('INJECTED-BY-B');
    // The child's request belongs to no client it can be told by: the edge answered it for the child.
    expect(resultA).toContain('sampling failed: mcp-edge: no client can take this request');
    expect(injected.status).toBe(400);
    expect(((await injected.json()) as { error: { message: string } }).error.message).toContain(
      'answers a request of the MCP server, but it carries no Mcp-Session-Id',
    );
    expect(await undeliveredCount(edge, 'no_owner')).toBe(1);
  });

  it("no client can cancel another client's call with notifications/cancelled", async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.scripted));
    const a = track(await connectV2Client(edge.url, { name: 'a' }));
    const callA = a.client.callTool({ name: 'slow_echo', arguments: { text: 'A-finished', ms: 1000 } });
    const idA = JSON.parse(await serverSaid(edge, 'started ')) as number;
    const cancel = await rawPost(edge, {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: idA, reason: 'B says so', _meta: META },
    });
    expect(textOf(await callA)).toBe('A-finished');
    expect(cancel.status).toBe(400);
  });

  it('a client whose id another client holds gets a clear refusal within upstream.stdio.idWait, not a wait for its timeout', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.scripted, { stdioYaml: '    idWait: 300ms' }));
    const a = track(await connectV2Client(edge.url, { name: 'a' }));
    const b = track(await connectV2Client(edge.url, { name: 'b' }));
    let aSettled = false;
    const callsA = Promise.all(
      Array.from({ length: 31 }, (_, i) =>
        a.client.callTool({ name: 'slow_echo', arguments: { text: `a${i}`, ms: 4000 } }),
      ),
    ).finally(() => {
      aSettled = true;
    });
    await waitFor(() => stderrLines(edge).filter((line) => line.startsWith('started ')).length === 31);
    const refused = await b.client
      .callTool({ name: 'echo', arguments: { text: 'B' } })
      .catch((err: unknown) => err);
    expect(aSettled).toBe(false);
    expect(refused).toBeInstanceOf(Error);
    expect(String((refused as Error).message)).toMatch(
      /Request id 0 is in use by a request of another client of this tenant.*upstream\.stdio\.idWait/,
    );
    expect((await callsA).map(textOf)).toEqual(Array.from({ length: 31 }, (_, i) => `a${i}`));
    // Once A's ids are answered, B's next call goes.
    expect(textOf(await b.client.callTool({ name: 'echo', arguments: { text: 'B' } }))).toBe('B');
  });
});
