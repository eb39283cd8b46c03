// The real MCP peers used by the proxy tests work on their own: SDK clients against SDK servers,
// server-everything, and the scripted raw upstream, with no proxy in between.
import {
  type CallToolResult,
  LoggingMessageNotificationSchema,
  type Progress,
  ResourceListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { weatherReport } from '../../src/demo/payloads.js';
import { startDemoServer } from '../../src/demo/server.js';
import { connectV1Client, connectV2Client } from '../support/clients.js';
import { isProcessAlive, spawnTsx } from '../support/processes.js';
import {
  handshakeReply,
  type RawUpstream,
  sseEvent,
  sseReply,
  startRawUpstream,
} from '../support/raw-upstream.js';
import { headerValue } from '../support/recorded-request.js';
import { startV1Server, type V1ServerMode } from '../support/sdk-v1-server.js';
import { startV2Server } from '../support/sdk-v2-server.js';
import { startServerEverything } from '../support/server-everything.js';

/** Every handle a test opens is closed after it, last opened first. */
const cleanups: Array<() => Promise<unknown>> = [];
function track<T extends { close(): Promise<unknown> }>(handle: T): T {
  cleanups.push(() => handle.close());
  return handle;
}
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

function textOf(result: CallToolResult): string {
  const block = result.content[0];
  return block?.type === 'text' ? block.text : '';
}

describe.each<V1ServerMode>(['stateful', 'stateless', 'json'])(
  'SDK v1 client -> SDK v1 server (%s)',
  (mode) => {
    it('initializes, lists the demo and test tools, and calls them', async () => {
      const server = track(await startV1Server({ mode }));
      const { client, sessionId } = track(await connectV1Client(server.url));

      expect(client.getServerVersion()?.name).toBe(`sdk-v1-${mode}`);
      if (mode === 'stateless') expect(sessionId()).toBeUndefined();
      else expect(server.sessionIds()).toEqual([sessionId()]);

      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(
        expect.arrayContaining([
          'echo',
          'weather_report',
          'sized',
          'slow_progress',
          'notify_on_get',
          'big_progress',
        ]),
      );

      const echoed = (await client.callTool({
        name: 'echo',
        arguments: { text: 'héllo 🌍' },
      })) as CallToolResult;
      expect(textOf(echoed)).toBe('héllo 🌍');

      const weather = (await client.callTool({
        name: 'weather_report',
        arguments: { city: 'Oslo' },
      })) as CallToolResult;
      expect(weather.structuredContent).toEqual(weatherReport('Oslo'));
      expect(textOf(weather)).toBe(JSON.stringify(weather.structuredContent));
    });

    it('delivers progress notifications to onprogress before the result (json mode drops them)', async () => {
      const server = track(await startV1Server({ mode }));
      const { client } = track(await connectV1Client(server.url));
      const progress: Progress[] = [];

      const result = (await client.callTool(
        { name: 'slow_progress', arguments: { steps: 3, delayMs: 10 } },
        undefined,
        {
          onprogress: (update) => progress.push(update),
        },
      )) as CallToolResult;

      expect(textOf(result)).toBe('Completed 3 steps.');
      if (mode === 'json') {
        // enableJsonResponse answers with one JSON body: the SDK drops notifications sent before the result.
        expect(progress).toEqual([]);
      } else {
        expect(progress.map((update) => update.progress)).toEqual([1, 2, 3]);
        expect(progress[2]?.message).toBe('step 3 of 3');
      }
    });
  },
);

describe('SDK v1 server fixture specifics', () => {
  it('stateful mode answers with SSE: a priming event, then the result with an event id', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const init = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    });
    expect(init.headers.get('content-type')).toBe('text/event-stream');
    expect(init.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/);
    const body = await init.text();
    expect(body).toMatch(
      /^id: \S+\ndata: \n\nevent: message\nid: \S+\ndata: \{.*"protocolVersion":"2025-11-25"/,
    );
  });

  it('DELETE ends a session; the old session id then gets 404', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const { transport, sessionId } = track(await connectV1Client(server.url));
    const ended = sessionId() ?? '';
    expect(server.sessionIds()).toEqual([ended]);

    await transport.terminateSession();

    expect(server.sessionIds()).toEqual([]);
    const stale = await fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': ended,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(stale.status).toBe(404);
  });

  it('json mode answers a POST with application/json', async () => {
    const server = track(await startV1Server({ mode: 'json' }));
    const { client } = track(await connectV1Client(server.url));
    await client.listTools();
    // The handshake and tools/list both went out as POSTs; json mode never answers those with SSE.
    const posts = server.requests.filter((request) => request.method === 'POST');
    expect(posts.length).toBeGreaterThanOrEqual(3);
    const answer = await fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': server.sessionIds()[0] ?? '',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }),
    });
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(await answer.json()).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
  });

  it('notify_on_get sends a log message and resources/list_changed on the standalone GET stream', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const { client } = track(await connectV1Client(server.url));
    const logged = new Promise<unknown>((resolve) => {
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) =>
        resolve(notification.params.data),
      );
    });
    const listChanged = new Promise<boolean>((resolve) => {
      client.setNotificationHandler(ResourceListChangedNotificationSchema, () => resolve(true));
    });

    const result = (await client.callTool({
      name: 'notify_on_get',
      arguments: { message: 'ping' },
    })) as CallToolResult;

    expect(textOf(result)).toBe('sent 2 notifications on the GET stream');
    expect(await logged).toBe('ping');
    expect(await listChanged).toBe(true);
    expect(server.requests.some((request) => request.method === 'GET')).toBe(true);
  });

  it('big_progress sends one progress notification whose message has the asked length', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const { client } = track(await connectV1Client(server.url));
    const messages: string[] = [];
    const result = (await client.callTool(
      { name: 'big_progress', arguments: { bytes: 200_000 } },
      undefined,
      {
        onprogress: (update) => messages.push(update.message ?? ''),
      },
    )) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(messages.map((message) => message.length)).toEqual([200_000]);
  });
});

describe('SDK v2 client -> SDK v2 server', () => {
  it('negotiates 2026-07-28, lists and calls tools, and sends Mcp-Method / Mcp-Name headers', async () => {
    const server = track(await startV2Server());
    const connected = track(await connectV2Client(server.url));
    expect(connected.protocolVersion()).toBe('2026-07-28');

    const { tools } = await connected.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'echo',
      'sized',
      'slow_progress',
      'weather_report',
    ]);

    const echoed = await connected.client.callTool({ name: 'echo', arguments: { text: 'v2 hello' } });
    expect(echoed.content[0]).toEqual({ type: 'text', text: 'v2 hello' });
    const weather = await connected.client.callTool({ name: 'weather_report', arguments: { city: 'Lima' } });
    expect(weather.structuredContent).toEqual(weatherReport('Lima'));

    const listRequest = server.requests.find(
      (request) => headerValue(request.headers, 'mcp-method') === 'tools/list',
    );
    expect(listRequest).toBeDefined();
    const callRequests = server.requests.filter(
      (request) => headerValue(request.headers, 'mcp-method') === 'tools/call',
    );
    expect(callRequests.map((request) => headerValue(request.headers, 'mcp-name'))).toEqual([
      'echo',
      'weather_report',
    ]);
    expect(headerValue(callRequests[0]?.headers ?? {}, 'mcp-protocol-version')).toBe('2026-07-28');
    expect(callRequests[0]?.body.toString('utf8')).toContain('"v2 hello"');
    // 2026-07-28 has no sessions.
    expect(server.requests.every((request) => request.headers['mcp-session-id'] === undefined)).toBe(true);
  });

  it('upgrades a call that reports progress to SSE and delivers the progress to onprogress', async () => {
    const server = track(await startV2Server());
    const contentTypes: string[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (new Headers(init?.headers).get('mcp-method') === 'tools/call') {
        contentTypes.push(response.headers.get('content-type') ?? '');
      }
      return response;
    };
    const { client } = track(await connectV2Client(server.url, { fetch: recordingFetch }));
    const steps: number[] = [];
    const result = await client.callTool(
      { name: 'slow_progress', arguments: { steps: 2, delayMs: 5 } },
      { onprogress: (update) => steps.push(update.progress) },
    );
    expect(result.content[0]).toEqual({ type: 'text', text: 'Completed 2 steps.' });
    expect(steps).toEqual([1, 2]);
    expect(contentTypes).toEqual(['text/event-stream']);
  });

  it('serves a 2025-era SDK v1 client through its stateless legacy fallback', async () => {
    const server = track(await startV2Server());
    const { client } = track(await connectV1Client(server.url));
    const echoed = (await client.callTool({ name: 'echo', arguments: { text: 'legacy' } })) as CallToolResult;
    expect(textOf(echoed)).toBe('legacy');
  });
});

describe('SDK v1 client -> demo server', () => {
  it('serves tools, a prompt and a resource, and trips nothing by itself on a 2 MiB result', async () => {
    const demo = track(await startDemoServer({}));
    expect(demo.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const { client } = track(await connectV1Client(demo.url));

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'echo',
      'export_report',
      'list_items',
      'sized',
      'slow_progress',
      'unicode_text',
      'weather_report',
    ]);
    expect(tools.every((tool) => (tool.description ?? '').length > 20)).toBe(true);

    const sized = (await client.callTool({
      name: 'sized',
      arguments: { bytes: 2 * 1024 * 1024, channel: 'structured' },
    })) as CallToolResult;
    expect((sized.structuredContent as { payload: string }).payload).toHaveLength(2 * 1024 * 1024);

    const items = (await client.callTool({
      name: 'list_items',
      arguments: { count: 1000 },
    })) as CallToolResult;
    expect((items.structuredContent as { items: unknown[] }).items).toHaveLength(1000);

    const unicode = (await client.callTool({
      name: 'unicode_text',
      arguments: { repeat: 2 },
    })) as CallToolResult;
    expect(textOf(unicode)).toContain('🚀');

    const report = (await client.callTool({
      name: 'export_report',
      arguments: { bytes: 5000 },
    })) as CallToolResult;
    expect(Buffer.byteLength(textOf(report))).toBe(5000);

    const prompt = await client.getPrompt({ name: 'summarize_report', arguments: { topic: 'sales' } });
    expect(JSON.stringify(prompt.messages)).toContain('sales');
    const resource = await client.readResource({ uri: 'demo://readme' });
    expect(resource.contents[0]?.uri).toBe('demo://readme');
  });
});

describe('demo upstream entry point (src/demo/upstream.ts)', () => {
  it('prints its URL, serves MCP, and exits 0 on SIGTERM with a client still connected', async () => {
    const child = spawnTsx('src/demo/upstream.ts', ['--port', '0']);
    cleanups.push(() => child.stop());
    const [, url] = await child.waitForLine(/listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
    const { client } = track(await connectV1Client(url ?? ''));
    const echoed = (await client.callTool({ name: 'echo', arguments: { text: 'cli' } })) as CallToolResult;
    expect(textOf(echoed)).toBe('cli');

    expect(await child.stop({ signal: 'SIGTERM' })).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain('Received SIGTERM');
  });
});

describe('server-everything', () => {
  it('starts on loopback, lists its tools to an SDK v1 client, and close() ends the process', async () => {
    const everything = await startServerEverything();
    cleanups.push(() => everything.close());
    expect(isProcessAlive(everything.pid)).toBe(true);

    const { client, close } = await connectV1Client(everything.url);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['echo', 'get-structured-content']),
    );
    await close();

    const exit = await everything.close();
    expect(exit.code === 0 || exit.signal === 'SIGTERM').toBe(true);
    expect(isProcessAlive(everything.pid)).toBe(false);
  });
});

describe('raw upstream', () => {
  it('writes exactly the scripted bytes, chunk by chunk, and records the request body', async () => {
    const script = [
      sseEvent({ data: 'a\nb', id: '1' }, '\r\n'),
      { delayMs: 20 },
      ': comment\r',
      'data: {}\r\r',
    ];
    const upstream: RawUpstream = track(await startRawUpstream(() => sseReply(script)));

    const response = await fetch(upstream.url, { method: 'POST', body: '{"x":1}' });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(await response.text()).toBe('id: 1\r\ndata: a\r\ndata: b\r\n\r\n: comment\rdata: {}\r\r');
    expect(upstream.received).toHaveLength(1);
    expect(upstream.received[0]?.body.toString('utf8')).toBe('{"x":1}');
    expect(upstream.received[0]?.method).toBe('POST');
  });

  it('can cut a stream mid-event', async () => {
    const upstream = track(
      await startRawUpstream(() => sseReply(['event: message\ndata: {"jsonrpc"'], { destroyAfter: true })),
    );
    const response = await fetch(upstream.url, { method: 'POST', body: '{}' });
    await expect(response.text()).rejects.toThrow();
  });

  it('stalls a body mid-way, and close() still returns at once', async () => {
    const upstream = await startRawUpstream(() =>
      sseReply([': first\n\n', { delayMs: 60_000 }, 'data: never\n\n']),
    );
    cleanups.push(() => upstream.close());
    const response = await fetch(upstream.url, { method: 'GET' });
    const reader = response.body?.getReader();
    const first = await reader?.read();
    expect(new TextDecoder().decode(first?.value)).toBe(': first\n\n');

    const started = Date.now();
    await upstream.close();
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(reader?.read()).rejects.toThrow();
  });

  it('answers the MCP handshake so an SDK client can connect, then runs the script', async () => {
    const upstream = track(
      await startRawUpstream(
        (req) =>
          handshakeReply(req) ??
          sseReply([
            sseEvent({ event: 'message', data: { jsonrpc: '2.0', id: 1, result: { tools: [] } } }, '\r\n'),
          ]),
      ),
    );
    const { client } = track(await connectV1Client(upstream.url));
    expect(await client.listTools()).toEqual({ tools: [] });
  });
});
