// `mcp-edge audit` run as a real child process, and the bytes a server sends for a request read without
// any MCP client (raw lines of a stdio child, raw SSE or JSON bodies over HTTP), to check audit against.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildHandle, spawnTsx } from './processes.js';

export interface AuditRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr as the bytes written. */
  bytes: { stdout: Buffer; stderr: Buffer };
  /** stdout parsed, when --json was given. */
  json: AuditJson;
}

export interface HostSizeJson {
  size: number;
  unit: string;
  budget: number;
  over: boolean;
  share: number;
  past?: string;
  atLeast?: boolean;
}

export interface AuditJson {
  server: { name: string; version: string; target: string };
  protocolVersion: string;
  catalog: {
    totalBytes: number;
    totalChars: number;
    totalTokens: number;
    tools: { name: string; bytes: number; chars: number; tokens: number; page: number }[];
    pages: { bytes: number; items: number; descriptorBytes: number }[];
    hosts: Record<string, HostSizeJson>;
  };
  listings: { method: string; pages: { bytes: number; items: number }[]; items: number; stop: string }[];
  calls: {
    line: number;
    method: string;
    tool?: string;
    bytes: number;
    channels: { content: number; structuredContent: number; blocks: Record<string, number> } | null;
    duplicatedBytes: number;
    isError: boolean;
    isErrorText?: string;
    error?: { code?: number; message: string };
    resourceLinks: { count: number; withSize: number; withMimeType: number };
    hosts: Record<string, HostSizeJson>;
  }[];
  findings: { code: string; message: string; fix: string; subject?: string }[];
}

const running = new Set<ChildHandle>();

/** Stops audits a failed test left running (afterEach). */
export async function stopAudits(): Promise<void> {
  for (const child of [...running]) await child.stop();
  running.clear();
}

export async function runAudit(args: string[]): Promise<AuditRun> {
  const child = spawnTsx('src/cli.ts', ['audit', ...args]);
  running.add(child);
  const exit = await child.exited;
  running.delete(child);
  const stdout = child.stdout();
  let json = undefined as unknown as AuditJson;
  if (args.includes('--json') && exit.code !== 2 && exit.code !== 3) {
    try {
      json = JSON.parse(stdout) as AuditJson;
    } catch {
      throw new Error(`audit printed no JSON (exit ${exit.code}):\n${stdout}\n${child.stderr()}`);
    }
  }
  return {
    code: exit.code,
    stdout,
    stderr: child.stderr(),
    bytes: { stdout: child.bytes('stdout'), stderr: child.bytes('stderr') },
    json,
  };
}

/** A calls file (JSON Lines) in a fresh temporary directory. */
export function callsFile(calls: readonly object[]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'mcp-edge-audit-')), 'calls.jsonl');
  writeFileSync(path, `${calls.map((c) => JSON.stringify(c)).join('\n')}\n`);
  return path;
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-test', version: '1' } },
};
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };

/** The exact line a stdio server writes in answer to `method` (id 2), after an initialize. */
export async function rawStdioAnswer(argv: string[], method: string, params: object = {}): Promise<Buffer> {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'ignore'] });
  try {
    let buffered = Buffer.alloc(0);
    const answer = new Promise<Buffer>((resolve, reject) => {
      child.once('exit', (code) =>
        reject(new Error(`the server exited (${code}) before answering ${method}`)),
      );
      child.stdout.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        for (let lf = buffered.indexOf(10); lf >= 0; lf = buffered.indexOf(10)) {
          const line = buffered.subarray(0, lf);
          buffered = buffered.subarray(lf + 1);
          if ((JSON.parse(line.toString('utf8')) as { id?: unknown }).id === 2) resolve(line);
        }
      });
    });
    child.stdin.write(`${JSON.stringify(INITIALIZE)}\n${JSON.stringify(INITIALIZED)}\n`);
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method, params })}\n`);
    return await answer;
  } finally {
    const exited = once(child, 'exit');
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited.catch(() => {});
  }
}

/** The data of the SSE event, or the JSON body, a Streamable HTTP server answers `method` (id 2) with. */
export async function rawHttpAnswer(url: string, method: string, params: object = {}): Promise<Buffer> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const post = async (message: object) => {
    const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(message) });
    return { response, body: Buffer.from(await response.arrayBuffer()) };
  };
  const init = await post(INITIALIZE);
  const session = init.response.headers.get('mcp-session-id');
  if (session !== null) headers['mcp-session-id'] = session;
  headers['mcp-protocol-version'] = '2025-11-25';
  await post(INITIALIZED);
  const { response, body } = await post({ jsonrpc: '2.0', id: 2, method, params });
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return body;
  // One event per answer here: its data lines joined, as an SSE client joins them.
  for (const event of body.toString('utf8').split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5));
    if (data.join('') !== '' && (JSON.parse(data.join('\n')) as { id?: unknown }).id === 2) {
      return Buffer.from(data.join('\n'), 'utf8');
    }
  }
  throw new Error(`no answer to ${method} in ${body.toString('utf8').slice(0, 500)}`);
}
