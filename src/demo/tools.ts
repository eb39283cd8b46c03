// The demo MCP server's tools, prompt and resource, registered on an SDK v1 McpServer; each tool makes one
// size concern of mcp-edge easy to trigger by hand.
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import {
  itemSchema,
  listItems,
  MAX_SIZED_BYTES,
  reportText,
  sizedResult,
  textResult,
  unicodeText,
  weatherReport,
  weatherSchema,
} from './payloads.js';

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
