// Calls the demo MCP server (usually through mcp-edge) with the SDK v1 client and prints what came back:
//   npx tsx examples/call-demo.ts [URL] [METRICS_URL]
//   (defaults http://127.0.0.1:8080/mcp and http://127.0.0.1:9464/metrics, what `npm start` serves)
// One call returns more than 1 MiB and one sends more than 1 MiB, so a proxy with 1 MiB ceilings
// answers them with its JSON-RPC errors: their code, message and data are printed, and mcp-edge's
// refusal counter before and after the calls.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, McpError } from '@modelcontextprotocol/sdk/types.js';
import { limitExceededCount, REFUSAL_QUERY } from '../src/demo/refusal.js';

const MiB = 1024 * 1024;
const url = process.argv[2] ?? 'http://127.0.0.1:8080/mcp';
const metricsUrl = process.argv[3] ?? 'http://127.0.0.1:9464/metrics';

interface DemoCall {
  label: string;
  name: string;
  arguments: Record<string, unknown>;
}

const CALLS: DemoCall[] = [
  { label: 'echo', name: 'echo', arguments: { text: 'hello through the edge' } },
  { label: 'weather_report (both channels)', name: 'weather_report', arguments: { city: 'Lisbon' } },
  { label: 'list_items x 2000', name: 'list_items', arguments: { count: 2000 } },
  { label: 'sized 1.5 MiB response (over a 1 MiB ceiling)', name: 'sized', arguments: { bytes: 1.5 * MiB } },
  {
    label: 'export_report 1.5 MiB (its own larger ceiling)',
    name: 'export_report',
    arguments: { bytes: 1.5 * MiB },
  },
  { label: 'echo with a 1.5 MiB request', name: 'echo', arguments: { text: 'x'.repeat(1.5 * MiB) } },
];

function formatBytes(bytes: number): string {
  if (bytes >= MiB) return `${(bytes / MiB).toFixed(2)} MiB`;
  return bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${bytes} B`;
}

function describeResult(result: CallToolResult): string {
  const parts = result.content.map((block) =>
    block.type === 'text' ? `text ${formatBytes(Buffer.byteLength(block.text))}` : block.type,
  );
  if (result.structuredContent !== undefined) {
    parts.push(
      `structuredContent ${formatBytes(Buffer.byteLength(JSON.stringify(result.structuredContent)))}`,
    );
  }
  const first = result.content[0];
  const preview = first?.type === 'text' ? ` | "${first.text.slice(0, 60).replaceAll('\n', ' ')}"` : '';
  return `${result.isError ? 'tool error' : 'ok'}: ${parts.join(', ') || 'empty'}${preview}`;
}

function describeJsonRpcError(code: unknown, message: unknown, data: unknown): string {
  return `JSON-RPC error ${String(code)}: ${String(message)}\n    data: ${JSON.stringify(data)}`;
}

/** The JSON-RPC error in an HTTP error's body (the SDK puts the body text in its message), if there is one. */
function jsonRpcErrorIn(text: string): { code: unknown; message: unknown; data: unknown } | undefined {
  const start = text.indexOf('{');
  if (start < 0) return undefined;
  try {
    const body: unknown = JSON.parse(text.slice(start));
    const error = (body as { error?: unknown } | null)?.error;
    if (typeof error !== 'object' || error === null) return undefined;
    const { code, message, data } = error as Record<string, unknown>;
    return { code, message, data };
  } catch {
    return undefined;
  }
}

/** The whole error: its code, its complete message and its data, never cut short. */
function describeError(error: unknown): string {
  if (error instanceof McpError) return describeJsonRpcError(error.code, error.message, error.data);
  if (error instanceof StreamableHTTPError) {
    const rpc = jsonRpcErrorIn(error.message);
    return rpc === undefined
      ? `HTTP error ${error.code}: ${error.message}`
      : `HTTP error ${error.code}: ${describeJsonRpcError(rpc.code, rpc.message, rpc.data)}`;
  }
  return `failed: ${error instanceof Error ? error.message : String(error)}`;
}

/** mcp-edge's count of refused responses, or why it could not be read (the demo runs on without it). */
async function refusals(): Promise<string> {
  try {
    const response = await fetch(metricsUrl);
    if (!response.ok) return `not readable (HTTP ${response.status} from ${metricsUrl})`;
    return String(limitExceededCount(await response.text(), { direction: 'response', action: 'rejected' }));
  } catch (error) {
    return `not readable (${metricsUrl}: ${error instanceof Error ? error.message : String(error)})`;
  }
}

async function main(): Promise<void> {
  const before = await refusals();
  const client = new Client({ name: 'mcp-edge-call-demo', version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  console.log(`connected to ${url} (${client.getServerVersion()?.name ?? 'unknown server'})`);

  const { tools } = await client.listTools();
  console.log(`tools: ${tools.map((tool) => tool.name).join(', ')}`);

  for (const call of CALLS) {
    try {
      const result = (await client.callTool({ name: call.name, arguments: call.arguments }, undefined, {
        timeout: 30_000,
      })) as CallToolResult;
      console.log(`- ${call.label}: ${describeResult(result)}`);
    } catch (error) {
      console.log(`- ${call.label}: ${describeError(error)}`);
    }
  }
  await transport.terminateSession().catch(() => {});
  await client.close();
  console.log(`${REFUSAL_QUERY} at ${metricsUrl}: before ${before}, after ${await refusals()}`);
}

main().catch((error: unknown) => {
  console.error(`call-demo: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
