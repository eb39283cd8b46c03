// `npm run bench`, stdio section (issue 14): mcp-edge's stdio upstream side by side with supergateway
// (npm, stdio -> stateful Streamable HTTP) wrapping the same stdio server in the same run: small-call
// throughput and the gateway's CPU per call, RSS per idle session, and a 1 GiB line against a 4 MiB ceiling.
// Each gateway runs in its own process on 127.0.0.1; the load comes from this process over keep-alive HTTP.
//
//   node dist/bench/bench/stdio.js [--json]     (after npm run build && tsc -p bench/tsconfig.json)
// Settings (environment): BENCH_STDIO_ROUNDS (3), BENCH_STDIO_SECONDS (5), BENCH_STDIO_CONCURRENCY (8),
// BENCH_STDIO_SESSIONS (100), BENCH_STDIO_HUGE (1: run the 1 GiB line; 0 skips it).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, type Proc, resetPeak, sleep, startProcess, waitForHttp } from './proc.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const NODE = process.execPath;
const EDGE_CLI = join(REPO, 'dist', 'cli.js');
const SUPERGATEWAY = join(REPO, 'node_modules', 'supergateway', 'dist', 'index.js');
const LOOPBACK = join(REPO, 'test', 'support', 'bind-loopback.cjs');
const EVERYTHING = [
  NODE,
  join(REPO, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'),
  'stdio',
];
const FIXTURE = [NODE, '--import', 'tsx', join(REPO, 'test/fixtures/stdio-v1-server.ts')];
const MiB = 1024 * 1024;

function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value >= 0 && process.env[name] !== undefined ? value : fallback;
}

const SETTINGS = {
  rounds: envNumber('BENCH_STDIO_ROUNDS', 3),
  seconds: envNumber('BENCH_STDIO_SECONDS', 5),
  concurrency: envNumber('BENCH_STDIO_CONCURRENCY', 8),
  sessions: envNumber('BENCH_STDIO_SESSIONS', 100),
  idleSettleMs: envNumber('BENCH_STDIO_SETTLE_MS', 8000),
  huge: envNumber('BENCH_STDIO_HUGE', 1) > 0,
};

type GatewayId = 'mcp-edge' | 'supergateway';

interface Gateway {
  id: GatewayId;
  url: string;
  proc: Proc;
}

/** Own RSS and CPU of one process (its children, the stdio servers, are counted apart). */
function ownStatus(pid: number): { rssKiB: number; hwmKiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM') };
}

function ownCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const work = mkdtempSync(join(tmpdir(), 'mcp-edge-bench-stdio-'));

async function startGateway(id: GatewayId, server: string[], ceilingMiB: number): Promise<Gateway> {
  const port = await freePort();
  let proc: Proc;
  if (id === 'mcp-edge') {
    const config = join(work, `edge-${port}.yaml`);
    writeFileSync(
      config,
      [
        `listen: { host: 127.0.0.1, port: ${port}, path: /mcp }`,
        `upstream: { stdio: { command: ${JSON.stringify(server)}, cwd: ${JSON.stringify(REPO)}, maxProcesses: 256 } }`,
        'metrics: { enabled: false }',
        'logging: { level: warn }',
        `limits: { response: { maxMessageBytes: ${ceilingMiB}MiB } }`,
      ].join('\n'),
    );
    proc = startProcess(id, NODE, [EDGE_CLI, '--config', config], join(work, `${id}.log`));
  } else {
    const command = server.map((arg) => `'${arg}'`).join(' ');
    proc = startProcess(
      id,
      NODE,
      [
        '--require',
        LOOPBACK,
        SUPERGATEWAY,
        '--stdio',
        command,
        '--outputTransport',
        'streamableHttp',
        '--stateful',
        '--port',
        String(port),
        '--healthEndpoint',
        '/healthz',
        '--logLevel',
        'none',
      ],
      join(work, `${id}.log`),
    );
  }
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, proc);
  return { id, url: `http://127.0.0.1:${port}/mcp`, proc };
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

interface Answer {
  status: number;
  sessionId: string | undefined;
  /** The first 64 KiB or so. */
  body: string;
  bytes: number;
}

function post(url: string, body: string, sessionId: string | undefined, timeoutMs = 30_000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(sessionId !== undefined
            ? { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }
            : {}),
        },
      },
      (res) => {
        // Only the head of a body is kept (a 1 GiB answer must not cost this process 1 GiB); all of it is counted.
        const chunks: Buffer[] = [];
        let kept = 0;
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (kept < 64 * 1024) {
            chunks.push(chunk);
            kept += chunk.length;
          }
        });
        res.on('end', () => {
          clearTimeout(deadline);
          const header = res.headers['mcp-session-id'];
          resolve({
            status: res.statusCode ?? 0,
            sessionId: typeof header === 'string' ? header : undefined,
            body: Buffer.concat(chunks).toString('utf8'),
            bytes,
          });
        });
        res.on('error', reject);
      },
    );
    const deadline = setTimeout(
      () => req.destroy(new Error(`no whole answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    req.on('error', (err) => {
      clearTimeout(deadline);
      reject(err);
    });
    req.end(body);
  });
}

async function openSession(url: string): Promise<string> {
  const init = await post(
    url,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      },
    }),
    undefined,
  );
  if (init.sessionId === undefined) throw new Error(`no session: ${init.status} ${init.body.slice(0, 200)}`);
  await post(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), init.sessionId);
  return init.sessionId;
}

let nextId = 1;
function echoCall(): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: nextId++,
    method: 'tools/call',
    params: { name: 'echo', arguments: { message: 'x'.repeat(100) } },
  });
}

interface LoadRow {
  gateway: GatewayId;
  callsPerSecond: number;
  gatewayCpuMsPerCall: number;
  errors: number;
}

async function load(gateway: Gateway, seconds: number, concurrency: number): Promise<LoadRow> {
  const session = await openSession(gateway.url);
  for (let i = 0; i < 200; i++) await post(gateway.url, echoCall(), session);
  let calls = 0;
  let errors = 0;
  const cpuBefore = ownCpuMs(gateway.proc.pid);
  const started = process.hrtime.bigint();
  const deadline = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline) {
        const answer = await post(gateway.url, echoCall(), session).catch(() => undefined);
        if (answer?.status === 200 && answer.body.includes('Echo: ')) calls++;
        else errors++;
      }
    }),
  );
  const elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
  const cpuMs = ownCpuMs(gateway.proc.pid) - cpuBefore;
  return {
    gateway: gateway.id,
    callsPerSecond: calls / elapsedS,
    gatewayCpuMsPerCall: cpuMs / Math.max(1, calls),
    errors,
  };
}

interface IdleRow {
  gateway: GatewayId;
  sessions: number;
  /** The least-squares slope of the gateway's RSS over the checkpoints: what one more session costs. */
  gatewayRssKiBPerSession: number;
  gatewayRssMiBBefore: number;
  gatewayRssMiBAfter: number;
  /** [sessions open, gateway RSS KiB] at each checkpoint. */
  checkpoints: [number, number][];
}

/** Sessions opened (and kept) before the first checkpoint: code paths compiled, startup garbage collected. */
const IDLE_WARM_SESSIONS = 10;
const IDLE_CHECKPOINTS = 5;

function slope(points: readonly [number, number][]): number {
  const n = points.length;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - meanX) * (y - meanY);
    den += (x - meanX) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/**
 * What an idle session costs the gateway: RSS at checkpoints while sessions are opened and kept, after a
 * warm-up, and the slope through them. A fresh process's RSS first falls as its startup garbage is collected,
 * so a plain after-minus-before over a few sessions is mostly noise (it came out negative on both sides).
 */
async function idleSessions(gateway: Gateway, count: number): Promise<IdleRow> {
  let open = 0;
  const openUpTo = async (target: number) => {
    for (; open < target; open++) await openSession(gateway.url);
  };
  await openUpTo(IDLE_WARM_SESSIONS);
  const checkpoints: [number, number][] = [];
  for (let k = 0; k < IDLE_CHECKPOINTS; k++) {
    await openUpTo(IDLE_WARM_SESSIONS + Math.round((count * k) / (IDLE_CHECKPOINTS - 1)));
    await sleep(SETTINGS.idleSettleMs);
    checkpoints.push([open, ownStatus(gateway.proc.pid).rssKiB]);
    process.stderr.write(`  ${gateway.id}: ${open} sessions, RSS ${checkpoints.at(-1)![1]} KiB\n`);
  }
  return {
    gateway: gateway.id,
    sessions: count,
    gatewayRssKiBPerSession: slope(checkpoints),
    gatewayRssMiBBefore: checkpoints[0]![1] / 1024,
    gatewayRssMiBAfter: checkpoints[checkpoints.length - 1]![1] / 1024,
    checkpoints,
  };
}

interface HugeRow {
  gateway: GatewayId;
  outcome: string;
  seconds: number;
  gatewayRssMiBBefore: number;
  gatewayPeakRssMiB: number;
}

async function hugeLine(gateway: Gateway): Promise<HugeRow> {
  const session = await openSession(gateway.url);
  const warm = {
    jsonrpc: '2.0',
    id: 'warm',
    method: 'tools/call',
    params: { name: 'echo', arguments: { text: 'w' } },
  };
  await post(gateway.url, JSON.stringify(warm), session);
  const before = ownStatus(gateway.proc.pid).rssKiB;
  resetPeak(gateway.proc.pid);
  let peak = before;
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, ownStatus(gateway.proc.pid).rssKiB);
    } catch {
      // The gateway died (out of memory): its last sample stands.
    }
  }, 20);
  const started = Date.now();
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 'huge',
    method: 'tools/call',
    params: { name: 'huge_line', arguments: { bytes: 1024 * MiB } },
  });
  let outcome: string;
  try {
    const answer = await post(gateway.url, body, session, 90_000);
    const reason = /"reason":"([a-z_]+)"/.exec(answer.body.slice(0, 4096))?.[1];
    outcome =
      reason !== undefined
        ? `HTTP ${answer.status}, JSON-RPC error ${reason}`
        : `HTTP ${answer.status}, ${(answer.bytes / MiB).toFixed(0)} MiB forwarded`;
  } catch (err) {
    outcome = `failed: ${err instanceof Error ? err.message : String(err)}`;
  }
  const seconds = (Date.now() - started) / 1000;
  clearInterval(sampler);
  try {
    const now = ownStatus(gateway.proc.pid);
    peak = Math.max(peak, now.hwmKiB, now.rssKiB);
  } catch {
    outcome += ' (the gateway exited)';
  }
  return {
    gateway: gateway.id,
    outcome,
    seconds,
    gatewayRssMiBBefore: before / 1024,
    gatewayPeakRssMiB: peak / 1024,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export interface StdioBench {
  settings: typeof SETTINGS;
  load: {
    gateway: GatewayId;
    callsPerSecond: number;
    gatewayCpuMsPerCall: number;
    errors: number;
    rounds: LoadRow[];
  }[];
  idle: IdleRow[];
  huge: HugeRow[];
  text: string;
}

async function main(): Promise<void> {
  const ids: GatewayId[] = ['mcp-edge', 'supergateway'];
  const rounds: LoadRow[] = [];
  const idle: IdleRow[] = [];
  const huge: HugeRow[] = [];
  try {
    for (let round = 0; round < SETTINGS.rounds; round++) {
      // Alternate which goes first, so a busy moment of the machine weighs on both alike.
      for (const id of round % 2 === 0 ? ids : [...ids].reverse()) {
        process.stderr.write(`stdio load: ${id}, round ${round + 1}\n`);
        const gateway = await startGateway(id, EVERYTHING, 4);
        try {
          rounds.push(await load(gateway, SETTINGS.seconds, SETTINGS.concurrency));
        } finally {
          await gateway.proc.stop();
        }
      }
    }
    for (const id of ids) {
      process.stderr.write(`stdio idle sessions: ${id}\n`);
      const gateway = await startGateway(id, EVERYTHING, 4);
      try {
        idle.push(await idleSessions(gateway, SETTINGS.sessions));
      } finally {
        await gateway.proc.stop(10_000);
      }
    }
    if (SETTINGS.huge) {
      for (const id of ids) {
        process.stderr.write(`stdio 1 GiB line: ${id}\n`);
        const gateway = await startGateway(id, FIXTURE, 4);
        try {
          huge.push(await hugeLine(gateway));
        } finally {
          await gateway.proc.stop();
        }
      }
    }
  } finally {
    agent.destroy();
  }
  const loadRows = ids.map((gateway) => {
    const mine = rounds.filter((r) => r.gateway === gateway);
    return {
      gateway,
      callsPerSecond: median(mine.map((r) => r.callsPerSecond)),
      gatewayCpuMsPerCall: median(mine.map((r) => r.gatewayCpuMsPerCall)),
      errors: mine.reduce((sum, r) => sum + r.errors, 0),
      rounds: mine,
    };
  });
  const lines = [
    `stdio upstream vs supergateway 4.0.0 (both stateful, one server-everything child per session; medians of ${SETTINGS.rounds} rounds, ${SETTINGS.seconds} s, c=${SETTINGS.concurrency})`,
    ...loadRows.map(
      (r) =>
        `  small call (echo)  ${r.gateway.padEnd(12)}  ${r.callsPerSecond.toFixed(0).padStart(6)} calls/s  ${r.gatewayCpuMsPerCall.toFixed(3)} ms gateway CPU/call  errors ${r.errors}`,
    ),
    ...idle.map(
      (r) =>
        `  idle sessions      ${r.gateway.padEnd(12)}  ${r.gatewayRssKiBPerSession.toFixed(0).padStart(6)} KiB gateway RSS/session (slope over ${r.sessions} sessions after ${IDLE_WARM_SESSIONS}: ${r.gatewayRssMiBBefore.toFixed(1)} -> ${r.gatewayRssMiBAfter.toFixed(1)} MiB; children apart)`,
    ),
    ...huge.map(
      (r) =>
        `  1 GiB line, 4 MiB  ${r.gateway.padEnd(12)}  ${r.outcome} after ${r.seconds.toFixed(1)} s; gateway RSS ${r.gatewayRssMiBBefore.toFixed(1)} -> peak ${r.gatewayPeakRssMiB.toFixed(1)} MiB`,
    ),
  ];
  const result: StdioBench = { settings: SETTINGS, load: loadRows, idle, huge, text: lines.join('\n') };
  rmSync(work, { recursive: true, force: true });
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(result)}\n`);
  else process.stdout.write(`${result.text}\n`);
}

void main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
