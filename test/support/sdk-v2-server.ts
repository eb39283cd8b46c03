// A real MCP server built with the v2 SDK (@modelcontextprotocol/server 2.4): protocol 2026-07-28,
// no sessions, one server instance per request (createMcpHandler), Mcp-Method / Mcp-Name headers.
// 2025-era clients are served by the SDK's stateless legacy fallback on the same endpoint.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CallToolResult,
  createMcpHandler,
  type McpHttpHandler,
  McpServer,
  type PerRequestResponseMode,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { asciiText, weatherReport, weatherSchema } from '../../src/demo/payloads.js';
import { closeHttpServer, listenOn } from '../../src/demo/server.js';
import { nodeHandlerFor } from './fetch-to-node.js';
import type { RecordedRequest } from './recorded-request.js';

export interface V2RecordedRequest extends RecordedRequest {
  /** The raw request body bytes. */
  body: Buffer;
}

export interface V2ServerOptions {
  /** How modern exchanges are answered: `auto` (JSON unless the handler notifies first), `sse` or `json`. */
  responseMode?: PerRequestResponseMode;
  /** Registers more tools, prompts or resources on each server instance (a test's own). */
  extend?: (server: McpServer) => void;
}

export interface V2Server {
  /** `http://127.0.0.1:PORT/mcp` */
  url: string;
  /** Every request the server received, in arrival order, with its headers and body. */
  requests: V2RecordedRequest[];
  close(): Promise<void>;
}

function textResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }] };
}

/** echo, weather_report (both channels), sized, slow_progress: the same contracts as the demo tools. */
export function createV2McpServer(): McpServer {
  const server = new McpServer({ name: 'sdk-v2', version: '2.4.0' });

  server.registerTool(
    'echo',
    {
      description: 'Returns the given text unchanged as a single text block.',
      inputSchema: z.object({ text: z.string() }),
    },
    async ({ text }) => textResult(text),
  );

  server.registerTool(
    'weather_report',
    {
      description: 'A made-up weather report in structuredContent plus a text block with the same JSON.',
      inputSchema: z.object({ city: z.string().min(1) }),
      outputSchema: weatherSchema,
    },
    async ({ city }) => {
      const report = weatherReport(city);
      return { content: [{ type: 'text', text: JSON.stringify(report) }], structuredContent: report };
    },
  );

  server.registerTool(
    'sized',
    {
      description: 'Returns one text block of exactly `bytes` ASCII bytes.',
      inputSchema: z.object({
        bytes: z
          .number()
          .int()
          .min(1)
          .max(64 * 1024 * 1024),
      }),
    },
    async ({ bytes }) => textResult(asciiText(bytes)),
  );

  server.registerTool(
    'slow_progress',
    {
      description: 'Sends notifications/progress for each step when the request has a progressToken.',
      inputSchema: z.object({
        steps: z.number().int().min(1).max(1000),
        delayMs: z.number().int().min(0).max(1000),
      }),
    },
    async ({ steps, delayMs }, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      for (let step = 1; step <= steps; step += 1) {
        if (delayMs > 0) await sleep(delayMs, undefined, { signal: ctx.mcpReq.signal });
        if (progressToken !== undefined) {
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress: step, total: steps, message: `step ${step} of ${steps}` },
          });
        }
      }
      return textResult(`Completed ${steps} steps.`);
    },
  );

  return server;
}

export async function startV2Server(opts: V2ServerOptions = {}): Promise<V2Server> {
  const requests: V2RecordedRequest[] = [];
  const handler: McpHttpHandler = createMcpHandler(
    () => {
      const server = createV2McpServer();
      opts.extend?.(server);
      return server;
    },
    {
      responseMode: opts.responseMode ?? 'auto',
    },
  );
  const serve = nodeHandlerFor(handler.fetch, (req, body) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: { ...req.headers }, body });
  });
  const { server, url } = await listenOn(serve, {});
  return {
    url,
    requests,
    async close() {
      await handler.close();
      await closeHttpServer(server);
    },
  };
}
