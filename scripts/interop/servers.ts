// The servers of the interop matrix and, for each, which of its tools, resources and prompts exercise
// each capability, with the check that the answer is right.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { weatherReport } from '../../src/demo/payloads.js';
import { closeHttpServer, startDemoServer } from '../../src/demo/server.js';
import { startV1Server } from '../../test/support/sdk-v1-server.js';
import { startV2Server } from '../../test/support/sdk-v2-server.js';
import { startServerEverything } from '../../test/support/server-everything.js';
import type { PromptResult, ResourceResult, ToolResult } from './clients.js';

export type ServerName = 'v1-stateful' | 'v1-stateless' | 'v1-json' | 'sdk-v2' | 'everything' | 'demo';

/** The size of the large tool result the matrix asks for (about 2 MiB). */
export const LARGE_BYTES = 2 * 1024 * 1024;

export interface RunningServer {
  url: string;
  close(): Promise<unknown>;
}

export interface ToolProbe {
  tool: string;
  args: Record<string, unknown>;
  /** Why the result is wrong, or undefined when it is right. */
  problem(result: ToolResult): string | undefined;
}

export interface ServerProfile {
  name: ServerName;
  label: string;
  start(): Promise<RunningServer>;
  text: ToolProbe;
  structured: ToolProbe;
  large: ToolProbe;
  progress: { tool: string; args: Record<string, unknown>; steps: number };
  resource?: { uri: string; problem(result: ResourceResult): string | undefined };
  prompt?: { name: string; args: Record<string, string>; problem(result: PromptResult): string | undefined };
}

function firstText(result: ToolResult): string | undefined {
  const block = result.content?.find((item) => item.type === 'text');
  return typeof block?.text === 'string' ? block.text : undefined;
}

function textProbe(tool: string, args: Record<string, unknown>, expected: string): ToolProbe {
  return {
    tool,
    args,
    problem: (result) =>
      firstText(result) === expected ? undefined : `text was ${JSON.stringify(firstText(result))}`,
  };
}

function structuredProbe(tool: string, args: Record<string, unknown>, expected: unknown): ToolProbe {
  return {
    tool,
    args,
    problem: (result) =>
      JSON.stringify(result.structuredContent) === JSON.stringify(expected)
        ? undefined
        : `structuredContent was ${JSON.stringify(result.structuredContent)?.slice(0, 200)}`,
  };
}

/** `sized` answers exactly `bytes` ASCII bytes of text. */
function sizedProbe(args: Record<string, unknown>): ToolProbe {
  return {
    tool: 'sized',
    args,
    problem: (result) => {
      const length = firstText(result)?.length;
      return length === LARGE_BYTES ? undefined : `text of ${length} bytes, not ${LARGE_BYTES}`;
    },
  };
}

const SDK_V1_PROFILE = {
  text: textProbe('echo', { text: 'interop hello' }, 'interop hello'),
  structured: structuredProbe('weather_report', { city: 'Oslo' }, weatherReport('Oslo')),
  large: sizedProbe({ bytes: LARGE_BYTES, channel: 'text' }),
  progress: { tool: 'slow_progress', args: { steps: 3, delayMs: 20 }, steps: 3 },
  resource: {
    uri: 'demo://readme',
    problem: (result: ResourceResult) =>
      result.contents[0]?.text?.startsWith('# mcp-edge demo server') ? undefined : 'unexpected readme text',
  },
  prompt: {
    name: 'summarize_report',
    args: { topic: 'interop' },
    problem: (result: PromptResult) =>
      JSON.stringify(result.messages).includes('Summarize the exported report about interop')
        ? undefined
        : 'prompt text not substituted',
  },
};

/**
 * An http server on 127.0.0.1 that serves `bytes` random bytes at /blob: server-everything's
 * gzip-file-as-resource fetches it and returns it gzipped and base64-encoded (random bytes do not
 * compress, so about 1.33 x the size comes back).
 */
export interface BlobServer {
  url: string;
  bytes: Buffer;
  close(): Promise<void>;
}

export async function startBlobServer(size: number): Promise<BlobServer> {
  const bytes = randomBytes(size);
  const server: Server = createServer((_req, res) => {
    // No kept-alive socket: server-everything's fetch would reuse one that this server's keep-alive timer
    // has just closed, and on a loaded machine a cell failed as "fetch failed" inside the tool's result.
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': bytes.length,
      connection: 'close',
    });
    res.end(bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/blob`, bytes, close: () => closeHttpServer(server) };
}

let gzipCalls = 0;

function gzipResourceProbe(blob: BlobServer): ToolProbe {
  return {
    tool: 'gzip-file-as-resource',
    args: {
      // server-everything keeps its session resources in one module-wide map keyed by URI (from this
      // name), shared by all sessions: a name of its own per call keeps concurrent sessions apart.
      get name() {
        gzipCalls += 1;
        return `interop-${gzipCalls}.bin.gz`;
      },
      data: blob.url,
      outputType: 'resource',
    },
    problem: (result) => {
      const resource = result.content?.find((item) => item.type === 'resource')?.resource as
        | { blob?: unknown }
        | undefined;
      if (typeof resource?.blob !== 'string') {
        return `no embedded resource blob in ${JSON.stringify(result).slice(0, 300)}`;
      }
      return gunzipSync(Buffer.from(resource.blob, 'base64')).equals(blob.bytes)
        ? undefined
        : 'the gunzipped blob differs from what was served';
    },
  };
}

/** The six servers; `blob` feeds server-everything's large result. */
export function serverProfiles(blob: BlobServer): ServerProfile[] {
  return [
    {
      name: 'v1-stateful',
      label: 'SDK v1 1.32, stateful (sessions, event store, SSE)',
      start: () => startV1Server({ mode: 'stateful' }),
      ...SDK_V1_PROFILE,
    },
    {
      name: 'v1-stateless',
      label: 'SDK v1 1.32, stateless',
      start: () => startV1Server({ mode: 'stateless' }),
      ...SDK_V1_PROFILE,
    },
    {
      name: 'v1-json',
      label: 'SDK v1 1.32, stateful with JSON responses',
      start: () => startV1Server({ mode: 'json' }),
      ...SDK_V1_PROFILE,
    },
    {
      name: 'sdk-v2',
      label: 'SDK v2 @modelcontextprotocol/server 2.4 (2026-07-28)',
      start: () => startV2Server(),
      text: SDK_V1_PROFILE.text,
      structured: SDK_V1_PROFILE.structured,
      large: sizedProbe({ bytes: LARGE_BYTES }),
      progress: SDK_V1_PROFILE.progress,
    },
    {
      name: 'everything',
      label: '@modelcontextprotocol/server-everything (streamableHttp)',
      start: () => startServerEverything(),
      text: textProbe('echo', { message: 'interop hello' }, 'Echo: interop hello'),
      structured: structuredProbe(
        'get-structured-content',
        { location: 'Chicago' },
        { temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 },
      ),
      large: gzipResourceProbe(blob),
      progress: { tool: 'trigger-long-running-operation', args: { duration: 0.3, steps: 3 }, steps: 3 },
      resource: {
        uri: 'demo://resource/static/document/instructions.md',
        problem: (result) => ((result.contents[0]?.text ?? '').length > 0 ? undefined : 'empty document'),
      },
      prompt: {
        name: 'simple-prompt',
        args: {},
        problem: (result) =>
          JSON.stringify(result.messages).includes('This is a simple prompt without arguments.')
            ? undefined
            : 'unexpected prompt',
      },
    },
    {
      name: 'demo',
      label: 'mcp-edge demo server (src/demo/server.ts)',
      start: () => startDemoServer(),
      ...SDK_V1_PROFILE,
    },
  ];
}

/** Random bytes whose gzip + base64 come back as about LARGE_BYTES. */
export const BLOB_BYTES = Math.round(LARGE_BYTES * 0.76);
