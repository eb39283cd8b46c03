// The clients of the interop matrix, behind one small interface: SDK v1 (1.32), SDK v2 (2.4) and the
// MCP Inspector CLI (2.12, one process per call).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProtocolError } from '@modelcontextprotocol/client';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { connectV1Client, connectV2Client } from '../../test/support/clients.js';
import { spawnNode } from '../../test/support/processes.js';

export type ClientName = 'sdk-v1' | 'sdk-v2' | 'inspector-cli';

/** The part of a tool result the matrix looks at. */
export interface ToolResult {
  content?: Array<Record<string, unknown>>;
  structuredContent?: unknown;
  isError?: boolean;
}

export interface ResourceResult {
  contents: Array<{ uri?: string; text?: string; blob?: string }>;
}

export interface PromptResult {
  messages: Array<{ role?: string; content?: Record<string, unknown> }>;
}

/** One client connected (initialized) to one URL. */
export interface ClientSession {
  listTools(): Promise<string[]>;
  callTool(name: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** Undefined when the client cannot report progress (the Inspector CLI prints only the result). */
  callToolWithProgress?(
    name: string,
    args: Record<string, unknown>,
  ): Promise<{ result: ToolResult; progress: number[] }>;
  readResource(uri: string): Promise<ResourceResult>;
  getPrompt(name: string, args: Record<string, string>): Promise<PromptResult>;
  close(): Promise<void>;
}

export interface ClientDriver {
  name: ClientName;
  label: string;
  /**
   * Resolves once initialize is done; rejects when it fails. `verify: false` lets a client that
   * connects anew for every call (the CLI) skip its separate initialize check.
   */
  connect(url: string, opts?: { verify?: boolean }): Promise<ClientSession>;
  /** Whether the session's calls may run at once (the CLI's calls are separate processes). */
  concurrentCalls: boolean;
  /** How long one call may take, waiting included. */
  callTimeoutMs: number;
}

/** A JSON-RPC error as a caller sees it. */
export class CallError extends Error {
  constructor(
    message: string,
    readonly code: number | undefined,
    readonly data: unknown,
  ) {
    super(message);
  }
}

/** Normalizes what an SDK call threw: protocol errors keep their code and data. */
export function callErrorOf(error: unknown): CallError {
  if (error instanceof CallError) return error;
  if (error instanceof McpError || error instanceof ProtocolError) {
    return new CallError(error.message, error.code, error.data);
  }
  return new CallError(error instanceof Error ? error.message : String(error), undefined, undefined);
}

async function sdkCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw callErrorOf(error);
  }
}

/**
 * A connection per request for the SDK clients, never a kept-alive one. An idle socket is closed by the
 * server's keep-alive timer and trusted by the client's own: on a loaded machine the two timers drift apart,
 * and a request sent on a socket the server has just closed fails as "fetch failed" (seen in a direct cell).
 * With no idle socket there is no timer left to race.
 */
const FRESH_CONNECTIONS = new Agent({ pipelining: 0 });
const freshConnectionFetch: typeof fetch = async (url, init) =>
  (await undiciFetch(url as string | URL, {
    ...(init as Parameters<typeof undiciFetch>[1]),
    dispatcher: FRESH_CONNECTIONS,
  })) as unknown as Response;

const v1Driver: ClientDriver = {
  name: 'sdk-v1',
  label: '@modelcontextprotocol/sdk 1.32 Client',
  concurrentCalls: false,
  callTimeoutMs: 30_000,
  async connect(url) {
    const { client, close } = await sdkCall(() =>
      connectV1Client(url, { name: 'interop-matrix-v1', fetch: freshConnectionFetch }),
    );
    return {
      listTools: () => sdkCall(async () => (await client.listTools()).tools.map((tool) => tool.name)),
      callTool: (name, args) =>
        sdkCall(async () => (await client.callTool({ name, arguments: args })) as ToolResult),
      callToolWithProgress: (name, args) =>
        sdkCall(async () => {
          const progress: number[] = [];
          const result = (await client.callTool({ name, arguments: args }, undefined, {
            onprogress: (update) => progress.push(update.progress),
          })) as ToolResult;
          return { result, progress };
        }),
      readResource: (uri) => sdkCall(async () => (await client.readResource({ uri })) as ResourceResult),
      getPrompt: (name, args) =>
        sdkCall(async () => (await client.getPrompt({ name, arguments: args })) as PromptResult),
      close,
    };
  },
};

const v2Driver: ClientDriver = {
  name: 'sdk-v2',
  label: '@modelcontextprotocol/client 2.4 Client',
  concurrentCalls: false,
  callTimeoutMs: 30_000,
  async connect(url) {
    const { client, close } = await sdkCall(() =>
      connectV2Client(url, { name: 'interop-matrix-v2', fetch: freshConnectionFetch }),
    );
    return {
      listTools: () => sdkCall(async () => (await client.listTools()).tools.map((tool) => tool.name)),
      callTool: (name, args) =>
        sdkCall(async () => (await client.callTool({ name, arguments: args })) as ToolResult),
      callToolWithProgress: (name, args) =>
        sdkCall(async () => {
          const progress: number[] = [];
          const result = (await client.callTool(
            { name, arguments: args },
            { onprogress: (update) => progress.push(update.progress) },
          )) as ToolResult;
          return { result, progress };
        }),
      readResource: (uri) => sdkCall(async () => (await client.readResource({ uri })) as ResourceResult),
      getPrompt: (name, args) =>
        sdkCall(async () => (await client.getPrompt({ name, arguments: args })) as PromptResult),
      close,
    };
  },
};

const INSPECTOR_LAUNCHER = fileURLToPath(
  new URL(
    '../../node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
    import.meta.url,
  ),
);

/** `MCP error -32603: ...` is how the CLI prints a JSON-RPC error (it prints no `data`). */
const MCP_ERROR_CODE = /MCP error (-?\d+)/;

/**
 * The CLI reports a failed call as `{"error":{"code":"error","message":...}}` on stderr and exits 1: the
 * message is the JSON-RPC error's message, its code and data are not printed. The code is known only
 * when the message itself names it (SDK v1 servers write `MCP error -32602: ...`).
 */
function inspectorError(stdout: string, stderr: string, exitCode: number | null): CallError {
  const output = `${stderr}\n${stdout}`.trim();
  let message = output.slice(0, 500) || `inspector exited with ${exitCode}`;
  for (const line of output.split('\n')) {
    try {
      const parsed = JSON.parse(line) as { error?: { message?: unknown } };
      if (typeof parsed.error?.message === 'string') message = parsed.error.message;
    } catch {
      // Not the CLI's JSON error line.
    }
  }
  const codeMatch = MCP_ERROR_CODE.exec(message);
  return new CallError(message, codeMatch === null ? undefined : Number(codeMatch[1]), undefined);
}

const INSPECTOR_PROCESS_TIMEOUT_MS = 30_000;

/** At most this many CLI processes at once: each takes about a second of CPU to start. */
const MAX_INSPECTOR_PROCESSES = 4;
let runningInspectors = 0;
const waitingInspectors: Array<() => void> = [];

async function inspectorSlot<T>(run: () => Promise<T>): Promise<T> {
  if (runningInspectors >= MAX_INSPECTOR_PROCESSES) {
    await new Promise<void>((resolve) => waitingInspectors.push(resolve));
  }
  runningInspectors += 1;
  try {
    return await run();
  } finally {
    runningInspectors -= 1;
    waitingInspectors.shift()?.();
  }
}

/** Its own HOME: the CLI keeps a catalog and storage under ~/.mcp-inspector. */
function runInspector(home: string, url: string, args: string[]): Promise<unknown> {
  return inspectorSlot(() => runInspectorNow(home, url, args));
}

async function runInspectorNow(home: string, url: string, args: string[]): Promise<unknown> {
  const child = spawnNode([INSPECTOR_LAUNCHER, '--cli', url, '--transport', 'http', ...args], {
    env: { HOME: home, MCP_CATALOG_PATH: join(home, 'mcp.json') },
  });
  const timer = setTimeout(() => void child.stop(), INSPECTOR_PROCESS_TIMEOUT_MS);
  const exit = await child.exited;
  clearTimeout(timer);
  if (exit.code !== 0) throw inspectorError(child.stdout(), child.stderr(), exit.code);
  try {
    return JSON.parse(child.stdout()) as unknown;
  } catch {
    throw new CallError(`inspector printed no JSON: ${child.stdout().slice(0, 300)}`, undefined, undefined);
  }
}

function keyValueArgs(flag: string, args: Record<string, string>): string[] {
  const pairs = Object.entries(args).map(([key, value]) => `${key}=${value}`);
  return pairs.length === 0 ? [] : [flag, ...pairs];
}

const inspectorDriver: ClientDriver = {
  name: 'inspector-cli',
  label: '@modelcontextprotocol/inspector 2.12 --cli',
  concurrentCalls: true,
  // Calls queue for a process slot; each process is stopped after INSPECTOR_PROCESS_TIMEOUT_MS.
  callTimeoutMs: 180_000,
  async connect(url, opts) {
    const home = await mkdtemp(join(tmpdir(), 'mcp-edge-inspector-'));
    const run = (args: string[]) => runInspector(home, url, args);
    const listTools = async () => {
      const result = (await run(['--method', 'tools/list'])) as { tools?: Array<{ name: string }> };
      return (result.tools ?? []).map((tool) => tool.name);
    };
    // Every CLI call initializes a new connection; the tools/list call stands for initialize here.
    const listed = opts?.verify === false ? undefined : listTools();
    try {
      await listed;
    } catch (error) {
      await rm(home, { recursive: true, force: true });
      throw error;
    }
    return {
      listTools: () => listed ?? listTools(),
      callTool: async (name, args) =>
        (await run([
          '--method',
          'tools/call',
          '--tool-name',
          name,
          '--tool-args-json',
          JSON.stringify(args),
        ])) as ToolResult,
      readResource: async (uri) =>
        (await run(['--method', 'resources/read', '--uri', uri])) as ResourceResult,
      getPrompt: async (name, args) =>
        (await run([
          '--method',
          'prompts/get',
          '--prompt-name',
          name,
          ...keyValueArgs('--prompt-args', args),
        ])) as PromptResult,
      close: () => rm(home, { recursive: true, force: true }),
    };
  },
};

export const CLIENT_DRIVERS: readonly ClientDriver[] = [v1Driver, v2Driver, inspectorDriver];
