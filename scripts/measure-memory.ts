// Measures what the memory formula of docs/operations.md ("Sizing memory") is made of, on the Node that
// runs this script: a real mcp-edge process in front of a scripted upstream that answers N calls at once
// with results of S bytes each, held by the edge all at the same time, the edge's RSS sampled
// throughout; and a stdio MCP server (server-filesystem) idle and after reading a large file, by PSS.
//
//   npm run measure:memory                       on this machine's Node
//   PATH=/path/to/node24/bin:$PATH npm run measure:memory     on another Node line
//
// It prints each run's figures and the factor that run implies; scripts/memory-formula.ts holds the
// figures the docs and the manifests are sized from, and test/reliability/memory-sizing.test.ts holds the
// formula to a smaller run of the same burst on every test run.
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { isRecord } from '../src/core/bytes.js';
import { asciiText } from '../src/demo/payloads.js';
import { MCP_POST_HEADERS } from '../test/support/handles.js';
import { type ChildHandle, REPO_ROOT, spawnNode, spawnTsx } from '../test/support/processes.js';
import { parseJsonBody, type RawUpstream, startRawUpstream } from '../test/support/raw-upstream.js';
import { EDGE_MEMORY, edgeMemoryBytes, MiB, nodeLine, STDIO_CHILD_MEMORY } from './memory-formula.js';

/** Which edge runs: the compiled CLI (what the image runs; `npm run build` first) or the sources through tsx. */
export type EdgeBuild = 'built' | 'source';

export interface BurstOptions {
  /** Results the upstream answers at once (N). */
  messages: number;
  /** Bytes of each result message (S). */
  messageBytes: number;
  framing: 'json' | 'sse';
  mode: 'enforce' | 'observe';
  edge: EdgeBuild;
  /** Calls each client makes one after another (default 1: one burst, all held at once). */
  rounds?: number;
  /** How long to wait for the edge to read every result before the last bytes are sent. */
  timeoutMs?: number;
}

export interface BurstResult {
  /** The edge's RSS after start and a few small calls, before the burst. */
  restingBytes: number;
  /** The edge's largest RSS during the burst (VmHWM after a reset, or the largest sample where the kernel refuses the reset). */
  peakBytes: number;
  /** What the edge held at once: every result, each within its ceiling. */
  inFlightBytes: number;
  /** The largest message the edge read, which its one join buffer grows to. */
  largestMessageBytes: number;
  /** The bytes each client received, in call order. */
  delivered: number[];
}

function statusKiB(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (match === null) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]);
}

/** Bytes the process has read through read(2) so far, sockets included (/proc/PID/io rchar). */
function bytesRead(pid: number): number {
  const match = /^rchar:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
  if (match === null) throw new Error(`no rchar in /proc/${pid}/io`);
  return Number(match[1]);
}

/** Resets VmHWM to the current RSS; false where the kernel refuses (then the samples decide the peak). */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(what: string, done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function startEdge(build: EdgeBuild, configFile: string): ChildHandle {
  const args = ['--config', configFile];
  return build === 'built'
    ? spawnNode([join(REPO_ROOT, 'dist/cli.js'), ...args])
    : spawnTsx('src/cli.ts', args);
}

/** One tools/call through the edge, its answer read to the end (and not kept): the status and the bytes received. */
async function call(url: string, id: number): Promise<{ status: number; bytes: number }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...MCP_POST_HEADERS, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'export_report' } }),
  });
  let bytes = 0;
  for await (const chunk of res.body ?? []) bytes += chunk.length;
  return { status: res.status, bytes };
}

/**
 * A result message of exactly `bytes` bytes for `id`, as the pieces the upstream writes: what comes
 * before the held-back end, and the end. The text is one shared buffer, so the upstream costs little.
 */
function resultPieces(id: unknown, bytes: number, filler: Buffer): { body: Buffer[]; end: string } {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`;
  const end = '"}]}}';
  const textBytes = bytes - head.length - end.length;
  if (textBytes < 0 || textBytes > filler.length) throw new Error(`no result of ${bytes} bytes`);
  return { body: [Buffer.from(head), filler.subarray(0, textBytes)], end };
}

/**
 * N calls answered at once with S-byte results; the upstream holds back each result's last bytes until the
 * edge has read everything before them from every connection (its rchar), so all N are held at the same time.
 */
export async function measureBurst(options: BurstOptions): Promise<BurstResult> {
  const { messages, messageBytes, framing, mode, edge: build } = options;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const filler = Buffer.alloc(messageBytes, 'a');
  // What the upstream answers now: small results while warming, then the burst's, held back at `gate`.
  let answer: { bytes: number; gate: Promise<unknown> } = { bytes: WARM_BYTES, gate: Promise.resolve() };
  let calls = 0;
  const upstream: RawUpstream = await startRawUpstream((req) => {
    const message = parseJsonBody(req);
    calls += 1;
    const { body, end } = resultPieces(isRecord(message) ? message.id : null, answer.bytes, filler);
    const until = { until: answer.gate };
    if (framing === 'json')
      return { status: 200, headers: { 'content-type': 'application/json' }, chunks: [...body, until, end] };
    return {
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
      chunks: ['event: message\ndata: ', ...body, until, `${end}\n\n`],
    };
  });
  const dir = await mkdtemp(join(tmpdir(), 'mcp-edge-memory-'));
  let edge: ChildHandle | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    const configFile = join(dir, 'edge.yaml');
    // The ceiling is above the results: each is held whole and delivered, the case the formula sizes for.
    const ceiling = messageBytes + 64 * 1024;
    await writeFile(
      configFile,
      [
        'listen: { host: 127.0.0.1, port: 0, path: /mcp }',
        `upstream: { url: ${upstream.url} }`,
        'metrics: { enabled: false }',
        'logging: { level: info }',
        `limits: { mode: ${mode}, hardMaxBytes: ${ceiling}, response: { maxMessageBytes: ${ceiling} } }`,
      ].join('\n'),
    );
    edge = startEdge(build, configFile);
    const serving = await edge.waitForLine(/mcp-edge serving (http:\/\/[^\s"]+)/, { timeoutMs: 60_000 });
    const url = serving[1] ?? '';
    // Warm: the code a call takes is loaded and compiled before the resting size is read.
    for (let i = 0; i < WARM_CALLS; i++) await call(url, i);
    const restingBytes = statusKiB(edge.pid, 'VmRSS') * 1024;

    let release: () => void = () => {};
    answer = { bytes: messageBytes, gate: new Promise<void>((resolve) => (release = resolve)) };
    calls = 0;
    const peakReset = resetPeak(edge.pid);
    let sampledKiB = statusKiB(edge.pid, 'VmRSS');
    const pid = edge.pid;
    const running = edge;
    sampler = setInterval(() => {
      if (running.exit() === undefined) sampledKiB = Math.max(sampledKiB, statusKiB(pid, 'VmRSS'));
    }, 20);
    const readBefore = bytesRead(pid);
    const rounds = options.rounds ?? 1;
    const answers = Promise.all(
      Array.from({ length: messages }, async (_, i) => {
        const first = await call(url, 1000 + i);
        for (let round = 1; round < rounds; round++) await call(url, 1000 + round * messages + i);
        return first;
      }),
    );
    // Everything but each result's last bytes, from every connection: all N are held now.
    const heldBack = messages * (messageBytes - RESULT_END_BYTES);
    await waitUntil(
      `the edge to read ${heldBack} bytes of ${messages} results`,
      () => {
        const exit = running.exit();
        if (exit !== undefined)
          throw new Error(`the edge exited (${JSON.stringify(exit)}): ${running.stderr().slice(-2000)}`);
        return calls >= messages && bytesRead(pid) - readBefore >= heldBack;
      },
      timeoutMs,
    );
    release();
    answer = { bytes: messageBytes, gate: Promise.resolve() };
    const delivered = (await answers).map((answered) => {
      if (answered.status !== 200) throw new Error(`a call was answered with HTTP ${answered.status}`);
      return answered.bytes;
    });
    clearInterval(sampler);
    sampledKiB = Math.max(sampledKiB, statusKiB(pid, 'VmRSS'));
    const peakKiB = peakReset ? Math.max(sampledKiB, statusKiB(pid, 'VmHWM')) : sampledKiB;
    return {
      restingBytes,
      peakBytes: peakKiB * 1024,
      inFlightBytes: messages * messageBytes,
      largestMessageBytes: messageBytes,
      delivered,
    };
  } finally {
    clearInterval(sampler);
    await edge?.stop();
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export interface StdioChildResult {
  /** PSS of the child after initialize and a tools/list. */
  idlePssBytes: number;
  /** PSS of the child after it answered read_text_file for the whole file. */
  afterReadPssBytes: number;
  /** The bytes of the result it answered. */
  resultBytes: number;
}

/** Proportional set size (/proc/PID/smaps_rollup Pss): what the process costs, shared pages split among their users. */
function pssBytes(pid: number): number {
  const match = /^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  if (match === null) throw new Error(`no Pss in /proc/${pid}/smaps_rollup`);
  return Number(match[1]) * 1024;
}

/**
 * server-filesystem, the server of deploy/stdio, on the Node that runs this script: its PSS idle, and after
 * reading a text file of `fileBytes` (what one session costs when it has served a large file).
 */
export async function measureStdioChild(fileBytes: number): Promise<StdioChildResult> {
  const dir = await mkdtemp(join(tmpdir(), 'mcp-edge-memory-stdio-'));
  const client = new Client({ name: 'measure-memory', version: '1' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js'), dir],
    stderr: 'ignore',
  });
  try {
    // One line of text: JSON escapes nothing, so the result (text and structuredContent) stays within the
    // SDK client's 10 MiB stdio read buffer.
    const file = join(dir, 'report.txt');
    await writeFile(file, asciiText(fileBytes));
    await client.connect(transport);
    await client.listTools();
    const pid = transport.pid;
    if (pid === null) throw new Error('the stdio server has no pid');
    const idlePssBytes = pssBytes(pid);
    const result = await client.callTool({ name: 'read_text_file', arguments: { path: file } }, undefined, {
      timeout: 300_000,
    });
    const afterReadPssBytes = pssBytes(pid);
    return { idlePssBytes, afterReadPssBytes, resultBytes: Buffer.byteLength(JSON.stringify(result)) };
  } finally {
    await client.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const WARM_BYTES = 64 * 1024;
const WARM_CALLS = 5;
const RESULT_END_BYTES = '"}]}}'.length;

/** The runs `npm run measure:memory` makes: [results at once, MiB each, rounds]. */
const RUNS: ReadonlyArray<readonly [number, number, number]> = [
  [1, 8, 1],
  [1, 31, 1],
  [4, 8, 1],
  [12, 8, 1],
  [12, 31, 1],
  [12, 8, 8],
  [12, 31, 4],
];

async function main(): Promise<void> {
  const node = nodeLine();
  const figures = EDGE_MEMORY[node];
  const edge: EdgeBuild = process.argv.includes('--source') ? 'source' : 'built';
  const write = (row: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(row)}\n`);
  write({ node: process.version, edge, stated: figures });
  for (const framing of ['json', 'sse'] as const)
    for (const [messages, mib, rounds] of RUNS) {
      const result = await measureBurst({
        messages,
        messageBytes: mib * MiB,
        framing,
        mode: 'enforce',
        edge,
        rounds,
      });
      const grown = result.peakBytes - result.restingBytes - result.largestMessageBytes;
      write({
        framing,
        messages,
        mib,
        rounds,
        restingMiB: +(result.restingBytes / MiB).toFixed(1),
        peakMiB: +(result.peakBytes / MiB).toFixed(1),
        formulaMiB: +(edgeMemoryBytes(node, result) / MiB).toFixed(1),
        // The factor this run alone implies, with the stated headroom.
        factor: +((grown - figures.headroomMiB * MiB) / result.inFlightBytes).toFixed(3),
      });
    }
  const child = await measureStdioChild(STDIO_CHILD_MEMORY.readFileBytes);
  write({
    stdioChild: STDIO_CHILD_MEMORY.server,
    idlePssMiB: +(child.idlePssBytes / MiB).toFixed(1),
    afterReadPssMiB: +(child.afterReadPssBytes / MiB).toFixed(1),
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
