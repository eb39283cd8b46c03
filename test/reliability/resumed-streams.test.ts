// Issue 23, item 1: per-tool ceilings and resumed SSE streams, with server-everything (it keeps an event
// store and replays on GET with Last-Event-ID), a real SDK v1 client, and a real edge on 127.0.0.1.
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectV1Client } from '../support/clients.js';
import { sample } from '../support/exposition.js';
import { initializeRaw, MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { handshakeReply, startRawUpstream } from '../support/raw-upstream.js';
import { startServerEverything } from '../support/server-everything.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

/** The 300-call setup of the issue runs with MCP_EDGE_RESUME_CALLS=300; 40 show the same leak every time. */
const CALLS = Number(process.env.MCP_EDGE_RESUME_CALLS ?? 40);
const MAX_GET_STREAMS = 4;
const CEILINGS = `
limits:
  response: { maxMessageBytes: 512KiB }
  tools:
    echo:
      response: { maxMessageBytes: 64KiB }
server:
  maxGetStreamsPerSession: ${MAX_GET_STREAMS}
`;

async function exposition(edge: TestEdge): Promise<string> {
  return (await fetch(edge.metricsUrl ?? '')).text();
}

async function streamsOpen(edge: TestEdge): Promise<number> {
  return sample(await exposition(edge), 'mcp_edge_sse_streams_active', { tenant: 'default' }) ?? 0;
}

/** Lines in server-everything's output saying a client resumed with Last-Event-ID there. */
function resumesAtServer(stdout: string): number {
  return stdout.split('\n').filter((l) => l.startsWith('Client reconnecting with Last-Event-ID')).length;
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('per-tool ceilings hold on resumed streams (issue 23, item 1)', () => {
  it(`an SDK v1 session calling echo with 70 KB ${CALLS} times: no result reaches the application, its streams stay within the bound`, async () => {
    const server = track(await startServerEverything());
    const edge = track(await startTestEdge(server.url, CEILINGS, { metrics: true }));
    const resumes: string[] = [];
    const observed: typeof fetch = (url, init) => {
      const lastEventId = new Headers(init?.headers).get('last-event-id');
      if (init?.method === 'GET' && lastEventId !== null) resumes.push(lastEventId);
      return fetch(url, init);
    };
    const { client } = track(await connectV1Client(edge.url, { fetch: observed }));
    const message = 'x'.repeat(70_000);
    let results = 0;
    let peak = 0;
    for (let i = 0; i < CALLS; i++) {
      const outcome = await client.callTool({ name: 'echo', arguments: { message } }).then(
        () => 'result',
        (err: unknown) => err,
      );
      if (outcome === 'result') results++;
      else {
        expect(outcome).toBeInstanceOf(McpError);
        expect((outcome as McpError).data).toMatchObject({ limit: 'response.maxMessageBytes', tool: 'echo' });
      }
      peak = Math.max(peak, await streamsOpen(edge));
    }
    // The v1 client resumes after each replaced answer (it counts only results as answers).
    await until(() => resumes.length >= CALLS, 'a resumption per replaced answer');
    peak = Math.max(peak, await streamsOpen(edge));
    console.log(
      `item 1, ${CALLS} calls: ${results} results reached the client, peak ${peak} SSE streams for the session`,
    );
    expect(results).toBe(0);
    expect(peak).toBeLessThanOrEqual(MAX_GET_STREAMS);
    // Each resumption named the replaced event, which ended its stream: the edge answered 204, the server saw none.
    const completed = async () =>
      sample(await exposition(edge), 'mcp_edge_requests_total', {
        http_method: 'GET',
        status: '204',
        outcome: 'stream_complete',
      }) ?? 0;
    await until(async () => (await completed()) >= CALLS, 'every resumption answered');
    expect(await completed()).toBe(resumes.length);
    expect(resumesAtServer(server.process.stdout())).toBe(0);
  }, 300_000);

  it('a replay on a GET stream (Last-Event-ID before the answer) is replaced like the first delivery, its event id kept', async () => {
    const server = track(await startServerEverything());
    const edge = track(await startTestEdge(server.url, CEILINGS));
    const { sessionId } = await initializeRaw(edge.url);
    const headers = { 'mcp-session-id': sessionId ?? '', 'mcp-protocol-version': '2025-11-25' };
    const call = await fetch(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'x'.repeat(70_000) } },
      }),
    });
    const first = await call.text();
    const [priming, answer] = [...first.matchAll(/^id: (.+)$/gm)].map((m) => m[1]);
    expect(first).toContain(`id: ${answer}\nevent: message\ndata: {"jsonrpc":"2.0","id":1,"error"`);

    // Resuming from the priming event: the server replays the 70 KB answer on the GET stream.
    const abort = new AbortController();
    const get = await fetch(edge.url, {
      method: 'GET',
      headers: { ...headers, accept: 'text/event-stream', 'last-event-id': priming ?? '' },
      signal: abort.signal,
    });
    expect(get.status).toBe(200);
    const reader = (get.body as ReadableStream<Uint8Array>).getReader();
    let replay = '';
    while (!replay.includes('\n\n')) {
      const { done, value } = await reader.read();
      if (done) break;
      replay += Buffer.from(value).toString();
    }
    abort.abort();
    const event = replay.slice(0, replay.indexOf('\n\n'));
    expect(event).toContain(`id: ${answer}\n`);
    const data: unknown = JSON.parse(event.slice(event.indexOf('data: ') + 6));
    expect(data).toMatchObject({
      id: 1,
      error: { code: -32603, data: { limit: 'response.maxMessageBytes', limitBytes: 65536, tool: 'echo' } },
    });
    expect(event.length).toBeLessThan(2_000);
  }, 60_000);

  it(`a client that resumes after every JSON-RPC error cannot hold more than maxGetStreamsPerSession streams`, async () => {
    // server-everything answers resources/read of an unknown URI with a JSON-RPC error; SDK v1 then resumes
    // the call's stream, and the server keeps each resumed stream open (nothing will ever end it).
    const server = track(await startServerEverything());
    const edge = track(await startTestEdge(server.url, CEILINGS, { metrics: true }));
    let resumes = 0;
    const refusals: number[] = [];
    const observed: typeof fetch = async (url, init) => {
      const resuming = init?.method === 'GET' && new Headers(init.headers).has('last-event-id');
      const res = await fetch(url, init);
      if (resuming) {
        resumes++;
        if (res.status !== 200) refusals.push(res.status);
      }
      return res;
    };
    const { client } = track(await connectV1Client(edge.url, { fetch: observed }));
    let peak = 0;
    const reads = MAX_GET_STREAMS * 3;
    for (let i = 1; i <= reads; i++) {
      await expect(client.readResource({ uri: `nope://${i}` })).rejects.toThrow(/not found/);
      // Each error is followed by the client's resumption; the next read waits for it (one stream each).
      await until(() => resumes >= i, `resumption ${i}`);
      peak = Math.max(peak, await streamsOpen(edge));
    }
    expect(peak).toBeLessThanOrEqual(MAX_GET_STREAMS);
    // The standalone GET stream and MAX_GET_STREAMS - 1 resumed ones are open; every later resumption got a 405.
    expect(refusals.length).toBe(reads - (MAX_GET_STREAMS - 1));
    expect(new Set(refusals)).toEqual(new Set([405]));
    expect(
      sample(await exposition(edge), 'mcp_edge_requests_total', {
        http_method: 'GET',
        status: '405',
        outcome: 'refused',
      }),
    ).toBe(refusals.length);
    expect(edge.logText()).toContain('server.maxGetStreamsPerSession');
    // The edge keeps serving the session.
    const listed = await client.listTools();
    expect(listed.tools.length).toBeGreaterThan(0);
  }, 120_000);

  it('risk: a healthy session of 14 calls counts no unparsable message (the priming events are not messages)', async () => {
    const server = track(await startServerEverything());
    const edge = track(await startTestEdge(server.url, '', { metrics: true }));
    const { client } = track(await connectV1Client(edge.url));
    for (let i = 0; i < 14; i++) await client.callTool({ name: 'echo', arguments: { message: `call ${i}` } });
    const text = await exposition(edge);
    // Every answer came after its priming event (an id and empty data), which was relayed as it came.
    expect(sample(text, 'mcp_edge_sse_events_total', { tenant: 'default' })).toBeGreaterThanOrEqual(28);
    expect(sample(text, 'mcp_edge_unparsable_messages_total', { tenant: 'default' }) ?? 0).toBe(0);
  }, 60_000);

  it('GETs sent at once past the bound: those the upstream answers while the session is full get the 405', async () => {
    // Each GET stream opens 300 ms after it is asked for, so all of them pass admission before any is open.
    const upstream = track(
      await startRawUpstream(async (req) => {
        const handshake = handshakeReply(req, { sessionId: 'only-session' });
        if (handshake !== undefined && req.method !== 'GET') return handshake;
        await new Promise((resolve) => setTimeout(resolve, 300));
        return {
          status: 200,
          headers: { 'content-type': 'text/event-stream', 'content-encoding': 'identity' },
          chunks: [': open\n\n', { delayMs: 60_000 }],
        };
      }),
    );
    const edge = track(
      await startTestEdge(upstream.url, 'server: { maxGetStreamsPerSession: 2 }', { metrics: true }),
    );
    const { sessionId } = await initializeRaw(edge.url);
    expect(sessionId).toBe('only-session');
    const abort = new AbortController();
    const gets = await Promise.all(
      Array.from({ length: 5 }, () =>
        fetch(edge.url, {
          method: 'GET',
          headers: { accept: 'text/event-stream', 'mcp-session-id': 'only-session' },
          signal: abort.signal,
        }),
      ),
    );
    const statuses = gets.map((res) => res.status).sort();
    expect(statuses).toEqual([200, 200, 405, 405, 405]);
    for (const res of gets.filter((r) => r.status === 405)) {
      expect(res.headers.get('content-encoding')).toBeNull();
      expect(await res.json()).toMatchObject({ error: { data: { reason: 'session_streams_exceeded' } } });
    }
    expect(await streamsOpen(edge)).toBe(2);
    abort.abort();
    // Closed streams give their slots back.
    await until(async () => (await streamsOpen(edge)) === 0, 'the streams closed');
    const again = await fetch(edge.url, {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': 'only-session' },
    });
    expect(again.status).toBe(200);
    await again.body?.cancel();
  }, 60_000);
});
