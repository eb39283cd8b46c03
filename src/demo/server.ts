// The bundled demo MCP server: a real SDK v1 server (McpServer + StreamableHTTPServerTransport on
// node:http) whose tools (tools.ts, over payloads.ts) make every size concern of mcp-edge easy to trigger
// by hand. This file is its HTTP side: sessions, the listener, and closing them.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { BoundedEventStore } from './event-store.js';
import { createDemoMcpServer } from './tools.js';

export const DEMO_MCP_PATH = '/mcp';

export function writeJsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

export interface StatefulHandlerOptions {
  /** Builds the McpServer for a new session. */
  createServer: () => McpServer;
  /** `true`: answer POSTs with application/json instead of SSE. */
  enableJsonResponse?: boolean;
  /** SSE keep-alive comment interval (SDK default 15 s; 0 disables). */
  keepAliveMs?: number;
  /** `retry:` field of the priming event, in ms. */
  retryInterval?: number;
}

export interface StatefulHandler {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  sessionIds(): string[];
  close(): Promise<void>;
}

/**
 * Serves stateful Streamable HTTP: one McpServer + transport (+ event store) per session,
 * created by a session-less POST (the transport itself refuses anything but `initialize` there),
 * routed by Mcp-Session-Id afterwards, and removed on DELETE.
 */
export function createStatefulHandler(options: StatefulHandlerOptions): StatefulHandler {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>();

  async function openSession(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const server = options.createServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      eventStore: new BoundedEventStore(),
      enableJsonResponse: options.enableJsonResponse ?? false,
      ...(options.keepAliveMs === undefined ? {} : { keepAliveMs: options.keepAliveMs }),
      ...(options.retryInterval === undefined ? {} : { retryInterval: options.retryInterval }),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, { transport, server });
      },
      onsessionclosed: (sessionId) => {
        sessions.delete(sessionId);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      void server.close();
    };
    await server.connect(transport);
    await transport.handleRequest(req, res);
    // A session-less POST that was not a valid initialize leaves no session: drop its transport.
    if (transport.sessionId === undefined) await transport.close();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sessionHeader = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
    if (sessionId === undefined) {
      if (req.method === 'POST') return openSession(req, res);
      return writeJsonRpcError(res, 400, -32600, 'Bad Request: Mcp-Session-Id header is required');
    }
    const session = sessions.get(sessionId);
    if (session === undefined) return writeJsonRpcError(res, 404, -32001, 'Session not found');
    await session.transport.handleRequest(req, res);
  }

  return {
    handle,
    sessionIds: () => [...sessions.keys()],
    async close() {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.allSettled(open.map(({ transport }) => transport.close()));
    },
  };
}

export type NodeRequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * Starts a node:http server on host:port (default 127.0.0.1, ephemeral) that hands `path` (default
 * `/mcp`) to `handler` and answers 404 elsewhere, unless `anyPath` hands it every path.
 */
export async function listenOn(
  handler: NodeRequestHandler,
  opts: { host?: string; port?: number; path?: string; anyPath?: boolean },
): Promise<{ server: Server; url: string }> {
  const host = opts.host ?? '127.0.0.1';
  const path = opts.path ?? DEMO_MCP_PATH;
  const server = createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (pathname !== path && opts.anyPath !== true) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
      return;
    }
    handler(req, res).catch((error: unknown) => {
      writeJsonRpcError(
        res,
        500,
        -32603,
        `Internal error: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  return { server, url: `http://${hostInUrl}:${port}${path}` };
}

/** Stops accepting, ends open (SSE) connections, and resolves when the server is closed. */
export function closeHttpServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export interface DemoServer {
  url: string;
  close(): Promise<void>;
}

export async function startDemoServer(opts: { host?: string; port?: number } = {}): Promise<DemoServer> {
  const sessions = createStatefulHandler({ createServer: () => createDemoMcpServer() });
  const { server, url } = await listenOn(sessions.handle, opts);
  return {
    url,
    async close() {
      await sessions.close();
      await closeHttpServer(server);
    },
  };
}
