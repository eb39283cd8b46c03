// A real MCP server built with @modelcontextprotocol/sdk 1.32 (McpServer + StreamableHTTPServerTransport
// on node:http), in each of the SDK's serving modes, with the demo tools plus a few test tools.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { asciiText } from '../../src/demo/payloads.js';
import {
  closeHttpServer,
  createStatefulHandler,
  listenOn,
  writeJsonRpcError,
} from '../../src/demo/server.js';
import { registerDemoPromptAndResource, registerDemoTools } from '../../src/demo/tools.js';
import { headerValue, type RecordedRequest, recordRequest } from './recorded-request.js';

/**
 * - `stateful`: sessions (Mcp-Session-Id) and an event store: SSE answers carry event ids, and for
 *   protocol 2025-11-25 an empty priming event comes first.
 * - `stateless`: `sessionIdGenerator: undefined`, a new server + transport per request; GET and DELETE get 405.
 * - `json`: stateful, but POSTs are answered with `application/json` (`enableJsonResponse: true`).
 */
export type V1ServerMode = 'stateful' | 'stateless' | 'json';

export interface V1ServerOptions {
  mode: V1ServerMode;
  /** Registers extra tools on every McpServer instance the fixture creates. */
  tools?: (server: McpServer) => void;
  /** SSE keep-alive comment interval in ms (SDK default 15000; 0 disables). */
  keepAliveMs?: number;
  /** `retry:` field of the priming event, in ms (stateful/json only). */
  retryInterval?: number;
}

export interface V1Server {
  /** `http://127.0.0.1:PORT/mcp` */
  url: string;
  mode: V1ServerMode;
  /** Every request the server received, in arrival order. */
  requests: RecordedRequest[];
  /** Session ids currently open (always empty in stateless mode). */
  sessionIds(): string[];
  /** True once a standalone GET stream of this session is open (false after `timeoutMs` without one). */
  getStreamOpen(sessionId: string | undefined, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** The open standalone GET streams, so `notify_on_get` can wait until the client has one. */
class GetStreams {
  private readonly open = new Set<{ sessionId: string | undefined; res: ServerResponse }>();

  track(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET') return;
    const entry = { sessionId: headerValue(req.headers, 'mcp-session-id'), res };
    this.open.add(entry);
    res.once('close', () => this.open.delete(entry));
  }

  /** True once a 200 SSE answer to a GET of this session has started (the transport registered the stream). */
  isOpen(sessionId: string | undefined): boolean {
    for (const { sessionId: id, res } of this.open) {
      if (id === sessionId && res.headersSent && res.statusCode === 200 && !res.writableEnded) return true;
    }
    return false;
  }

  async waitFor(sessionId: string | undefined, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.isOpen(sessionId)) {
      if (Date.now() >= deadline) return false;
      await sleep(10);
    }
    return true;
  }
}

/** Test-only tools: notifications unrelated to any request, and an oversized progress notification. */
function registerTestTools(server: McpServer, getStreams: GetStreams): void {
  server.registerTool(
    'notify_on_get',
    {
      description:
        'Sends a notifications/message (level info) and a notifications/resources/list_changed on the standalone ' +
        'GET stream (not related to this request), waiting up to 2 s for the client to open that stream.',
      inputSchema: z.object({ message: z.string().default('hello from the GET stream') }),
    },
    async ({ message }, extra) => {
      const streamOpen = await getStreams.waitFor(extra.sessionId, 2000);
      await server.sendLoggingMessage(
        { level: 'info', logger: 'notify_on_get', data: message },
        extra.sessionId,
      );
      server.sendResourceListChanged();
      return {
        content: [
          {
            type: 'text',
            text: streamOpen
              ? 'sent 2 notifications on the GET stream'
              : 'no GET stream was open; 2 notifications stored',
          },
        ],
      };
    },
  );

  server.registerTool(
    'big_progress',
    {
      description:
        'Sends ONE notifications/progress whose `message` is `bytes` long, then a small text result. ' +
        'Needs a progressToken (an SDK client sends one when the call has onprogress).',
      inputSchema: z.object({
        bytes: z
          .number()
          .int()
          .min(1)
          .max(64 * 1024 * 1024),
      }),
    },
    async ({ bytes }, extra) => {
      const progressToken = extra._meta?.progressToken;
      if (progressToken === undefined) {
        return { content: [{ type: 'text', text: 'big_progress needs a progressToken' }], isError: true };
      }
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken, progress: 1, total: 1, message: asciiText(bytes) },
      });
      return {
        content: [{ type: 'text', text: `sent a progress notification with a ${bytes}-byte message` }],
      };
    },
  );
}

function createFixtureServer(opts: V1ServerOptions, getStreams: GetStreams): McpServer {
  const server = new McpServer(
    { name: `sdk-v1-${opts.mode}`, version: '1.32.2' },
    { capabilities: { logging: {} } },
  );
  registerDemoTools(server);
  registerDemoPromptAndResource(server);
  registerTestTools(server, getStreams);
  opts.tools?.(server);
  return server;
}

/** Stateless serving: every POST gets a fresh server and transport that live as long as its response. */
function statelessHandler(createServer: () => McpServer, opts: V1ServerOptions) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'POST') return writeJsonRpcError(res, 405, -32000, 'Method not allowed.');
    const server = createServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      ...(opts.keepAliveMs === undefined ? {} : { keepAliveMs: opts.keepAliveMs }),
    });
    res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };
}

export async function startV1Server(opts: V1ServerOptions): Promise<V1Server> {
  const requests: RecordedRequest[] = [];
  const getStreams = new GetStreams();
  const createServer = () => createFixtureServer(opts, getStreams);
  const stateful =
    opts.mode === 'stateless'
      ? undefined
      : createStatefulHandler({
          createServer,
          enableJsonResponse: opts.mode === 'json',
          ...(opts.keepAliveMs === undefined ? {} : { keepAliveMs: opts.keepAliveMs }),
          ...(opts.retryInterval === undefined ? {} : { retryInterval: opts.retryInterval }),
        });
  const serve = stateful?.handle ?? statelessHandler(createServer, opts);
  const { server, url } = await listenOn(async (req, res) => {
    requests.push(recordRequest(req));
    getStreams.track(req, res);
    await serve(req, res);
  }, {});
  return {
    url,
    mode: opts.mode,
    requests,
    sessionIds: () => stateful?.sessionIds() ?? [],
    getStreamOpen: (sessionId, timeoutMs) => getStreams.waitFor(sessionId, timeoutMs),
    async close() {
      await stateful?.close();
      await closeHttpServer(server);
    },
  };
}
