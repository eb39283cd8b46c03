// The bundled demo MCP server: a real SDK v1 server (McpServer + StreamableHTTPServerTransport on
// node:http) whose tools make every size concern of mcp-edge easy to trigger by hand.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  type EventId,
  type EventStore,
  StreamableHTTPServerTransport,
  type StreamId,
} from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export const DEMO_MCP_PATH = '/mcp';
export const MAX_SIZED_BYTES = 64 * 1024 * 1024;

const FILLER = 'The quick brown fox jumps over the lazy dog. ';

/** ASCII text of exactly `bytes` bytes (ASCII, so characters and UTF-8 bytes agree). */
export function asciiText(bytes: number): string {
  return FILLER.repeat(Math.ceil(bytes / FILLER.length)).slice(0, bytes);
}

/** CSV-looking report text of exactly `bytes` bytes, what an export tool typically returns. */
export function reportText(bytes: number): string {
  const header = 'row,region,product,units,revenue_usd\n';
  const lines = [header];
  let length = header.length;
  for (let row = 1; length < bytes; row += 1) {
    const line = `${row},region-${row % 17},product-${row % 101},${(row * 7) % 1000},${((row * 131) % 100000) / 100}\n`;
    lines.push(line);
    length += line.length;
  }
  return lines.join('').slice(0, bytes);
}

const UNICODE_SAMPLE =
  '漢字かなカナ한국어 — emoji 🚀🌍👩‍💻🇯🇵 — combining e\u0301 a\u0308 n\u0303 Z\u0351\u0352 — RTL עברית العربية\n';

export function unicodeText(repeat: number): string {
  return UNICODE_SAMPLE.repeat(repeat);
}

/** A small deterministic hash so the same city always gets the same weather. */
function cityHash(city: string): number {
  let hash = 2166136261;
  for (const char of city) {
    hash = Math.imul(hash ^ (char.codePointAt(0) ?? 0), 16777619) >>> 0;
  }
  return hash;
}

const CONDITIONS = [
  'sunny',
  'partly cloudy',
  'overcast',
  'light rain',
  'thunderstorms',
  'snow',
  'fog',
] as const;
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;

/** The shape of weather_report's structuredContent (its outputSchema). */
export const weatherSchema = z.object({
  city: z.string(),
  temperatureC: z.number(),
  conditions: z.string(),
  humidityPercent: z.number(),
  windKph: z.number(),
  forecast: z.array(
    z.object({ day: z.string(), highC: z.number(), lowC: z.number(), conditions: z.string() }),
  ),
});

export type WeatherReport = z.infer<typeof weatherSchema>;

export function weatherReport(city: string): WeatherReport {
  const hash = cityHash(city);
  const pick = (shift: number, size: number) => (hash >>> shift) % size;
  return {
    city,
    temperatureC: pick(0, 40) - 5,
    conditions: CONDITIONS[pick(3, CONDITIONS.length)] ?? 'sunny',
    humidityPercent: 20 + pick(7, 75),
    windKph: pick(11, 60),
    forecast: WEEKDAYS.map((day, index) => {
      const low = ((hash >>> index) % 25) - 5;
      return {
        day,
        highC: low + 4 + (index % 6),
        lowC: low,
        conditions: CONDITIONS[(hash + index) % CONDITIONS.length] ?? 'sunny',
      };
    }),
  };
}

const itemSchema = z.object({ id: z.number(), name: z.string(), tags: z.array(z.string()) });

export function listItems(count: number): Array<z.infer<typeof itemSchema>> {
  return Array.from({ length: count }, (_, index) => ({
    id: index + 1,
    name: `item-${index + 1}`,
    tags: [`group-${index % 10}`, index % 2 === 0 ? 'even' : 'odd'],
  }));
}

function textResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }] };
}

/** A tool result whose chosen channel(s) carry about `bytes` bytes of payload. */
export function sizedResult(bytes: number, channel: 'text' | 'structured' | 'both'): CallToolResult {
  if (channel === 'text') return textResult(asciiText(bytes));
  const structuredContent = { bytes, payload: asciiText(bytes) };
  const content: CallToolResult['content'] =
    channel === 'both' ? [{ type: 'text', text: JSON.stringify(structuredContent) }] : [];
  return { content, structuredContent };
}

/** Registers the demo tool set (shared by the demo server and the SDK v1 test fixtures). */
export function registerDemoTools(server: McpServer): void {
  server.registerTool(
    'echo',
    {
      description: 'Returns the given text unchanged as a single text block.',
      inputSchema: z.object({ text: z.string().describe('Text to echo back') }),
    },
    ({ text }) => textResult(text),
  );

  server.registerTool(
    'weather_report',
    {
      description:
        'A made-up weather report for a city, returned in BOTH channels: structuredContent and a text block ' +
        'holding the same JSON (the duplication a host that forwards both makes the model read twice).',
      inputSchema: z.object({ city: z.string().min(1).describe('City name') }),
      outputSchema: weatherSchema,
    },
    ({ city }) => {
      const report = weatherReport(city);
      return { content: [{ type: 'text', text: JSON.stringify(report) }], structuredContent: report };
    },
  );

  server.registerTool(
    'list_items',
    {
      description:
        'Returns `count` items in structuredContent ({items:[{id,name,tags}]}) plus a one-line text summary. ' +
        'Large counts make a large structured channel.',
      inputSchema: z.object({ count: z.number().int().min(1).max(100_000).describe('How many items') }),
      outputSchema: z.object({ items: z.array(itemSchema) }),
    },
    ({ count }) => ({
      content: [{ type: 'text', text: `Listed ${count} items.` }],
      structuredContent: { items: listItems(count) },
    }),
  );

  server.registerTool(
    'unicode_text',
    {
      description:
        'Text mixing CJK, emoji (including ZWJ sequences and flags), combining marks and right-to-left scripts, ' +
        'repeated `repeat` times: characters and UTF-8 bytes differ a lot here.',
      inputSchema: z.object({ repeat: z.number().int().min(1).max(100_000).default(1) }),
    },
    ({ repeat }) => textResult(unicodeText(repeat)),
  );

  server.registerTool(
    'sized',
    {
      description:
        'Returns a payload of about `bytes` bytes in the chosen channel: "text" (one text block), ' +
        '"structured" (structuredContent.payload) or "both" (structuredContent and a text block with its JSON). ' +
        'Use it to trip a response ceiling on purpose.',
      inputSchema: z.object({
        bytes: z.number().int().min(1).max(MAX_SIZED_BYTES).describe('Payload size in bytes (1 B to 64 MiB)'),
        channel: z.enum(['text', 'structured', 'both']).default('text'),
      }),
    },
    ({ bytes, channel }) => sizedResult(bytes, channel),
  );

  server.registerTool(
    'export_report',
    {
      description:
        'Exports a CSV report of about `bytes` bytes as one text block (the demo config gives this tool a larger ' +
        'response ceiling than the default).',
      inputSchema: z.object({ bytes: z.number().int().min(1).max(MAX_SIZED_BYTES) }),
    },
    ({ bytes }) => textResult(reportText(bytes)),
  );

  server.registerTool(
    'slow_progress',
    {
      description:
        'Works through `steps` steps, waiting `delayMs` between them, and sends notifications/progress for each ' +
        'step when the request carries a progressToken. Then returns a short text result.',
      inputSchema: z.object({
        steps: z.number().int().min(1).max(1000).default(5),
        delayMs: z.number().int().min(0).max(1000).default(100),
      }),
    },
    async ({ steps, delayMs }, extra) => {
      const progressToken = extra._meta?.progressToken;
      for (let step = 1; step <= steps; step += 1) {
        if (delayMs > 0) await sleep(delayMs, undefined, { signal: extra.signal });
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: step, total: steps, message: `step ${step} of ${steps}` },
          });
        }
      }
      return textResult(`Completed ${steps} steps.`);
    },
  );
}

/** One prompt and one resource, so prompts/get and resources/read have something to answer. */
export function registerDemoPromptAndResource(server: McpServer): void {
  server.registerPrompt(
    'summarize_report',
    {
      description: 'Asks the model to summarize an exported report about a topic.',
      argsSchema: { topic: z.string().describe('What the report is about') },
    },
    ({ topic }) => ({
      messages: [
        {
          role: 'user',
          content: { type: 'text', text: `Summarize the exported report about ${topic} in five bullets.` },
        },
      ],
    }),
  );

  server.registerResource(
    'demo_readme',
    'demo://readme',
    { description: 'What this demo server offers.', mimeType: 'text/markdown' },
    (uri) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: 'text/markdown',
          text: '# mcp-edge demo server\n\nTools: echo, weather_report, list_items, unicode_text, sized, export_report, slow_progress.\n',
        },
      ],
    }),
  );
}

/** A complete demo McpServer instance (one per session: an McpServer connects to one transport). */
export function createDemoMcpServer(name = 'mcp-edge-demo'): McpServer {
  const server = new McpServer({ name, version: '0.1.0' }, { capabilities: { logging: {} } });
  registerDemoTools(server);
  registerDemoPromptAndResource(server);
  return server;
}

/**
 * An in-memory event store for resumability, bounded so that a demo that sends many large
 * results does not keep them all: the oldest events are evicted past `maxEvents`.
 */
export class BoundedEventStore implements EventStore {
  private readonly events = new Map<EventId, { streamId: StreamId; message: JSONRPCMessage }>();
  private counter = 0;

  constructor(private readonly maxEvents = 1000) {}

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    this.counter += 1;
    const eventId = `${streamId}_${String(this.counter).padStart(10, '0')}`;
    this.events.set(eventId, { streamId, message });
    for (const oldest of this.events.keys()) {
      if (this.events.size <= this.maxEvents) break;
      this.events.delete(oldest);
    }
    return eventId;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.events.get(eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const streamId = this.events.get(lastEventId)?.streamId;
    if (streamId === undefined) return '';
    let after = false;
    for (const [eventId, event] of [...this.events]) {
      if (after && event.streamId === streamId) await send(eventId, event.message);
      if (eventId === lastEventId) after = true;
    }
    return streamId;
  }
}

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
