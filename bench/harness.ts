// The benchmark's processes: the upstream, the paths to it (proxies and mcp-edge builds), a Redis and an OTLP
// sink when a path needs them, each started by handle and stopped by it; and the facts of the machine.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { cpus, freemem, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, type Proc, sleep, startProcess, waitForHttp } from './proc.js';
import type { PathId } from './result-types.js';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const BUILT = join(REPO, 'dist', 'bench', 'bench');
export const EDGE_CLI = join(REPO, 'dist', 'cli.js');
export const NODE = process.execPath;
/** The stdio server of the edge-stdio path: the reference server-everything, spawned per session. */
const STDIO_SERVER = [
  NODE,
  join(REPO, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'),
  'stdio',
];

/** The Node proxies cpuProfDir profiles: those whose differences the targets and the cost notes are about. */
const PROFILED_PATHS: ReadonlySet<PathId> = new Set([
  'bare',
  'edge-baseline',
  'edge-enforce',
  'edge-traced',
  'edge-quota-memory',
  'edge-quota-redis',
]);

export interface HarnessOptions {
  /** A directory: profile the Node proxies of PROFILED_PATHS there (--cpu-prof). */
  cpuProfDir?: string | undefined;
  /** The dist/cli.js of another build of mcp-edge: path edge-baseline runs it. */
  baselineCli?: string | undefined;
  /** Node flags every mcp-edge path starts with (BENCH_EDGE_NODE_FLAGS, e.g. `--trace-gc`). */
  edgeNodeFlags?: readonly string[] | undefined;
}

export interface PathRun {
  id: PathId;
  /** mcp-edge only: where its output goes (with --trace-gc, its collections). */
  log?: string;
  url: string;
  proc: Proc | undefined;
  /** mcp-edge only: its Prometheus endpoint. */
  metricsUrl?: string;
  /** A quota path only: turns its rule on or off by a config reload (the quota filter stays). */
  setQuotaRule?: (on: boolean) => Promise<void>;
}

export function edgeYaml(options: {
  port: number;
  metricsPort: number;
  upstreamPort: number;
  mode: 'enforce' | 'observe';
  level: string;
  maxConnections: number;
  traced: boolean;
  /** A quota rule that never refuses, kept in this store. */
  quotaStore?: string | undefined;
  /** Without the rule (`rules: []`): the quota filter runs and charges nothing. */
  quotaRuleOff?: boolean;
  /** A stdio upstream: this server's argv, spawned per session, instead of the HTTP upstream. */
  stdioServer?: readonly string[] | undefined;
}): string {
  const rules = options.quotaRuleOff
    ? '  rules: []\n'
    : '  rules:\n    - { name: bench, window: 1m, requests: 1000000000, responseBytes: 1000GiB }\n';
  const quotas = options.quotaStore === undefined ? '' : `quotas:\n  store: ${options.quotaStore}\n${rules}`;
  const upstream =
    options.stdioServer !== undefined
      ? `  stdio: { command: ${JSON.stringify(options.stdioServer)}, cwd: ${JSON.stringify(REPO)}, maxProcesses: 256 }\n`
      : `  url: http://127.0.0.1:${options.upstreamPort}/mcp\n  maxConnections: ${options.maxConnections}\n`;
  return `listen: { host: 127.0.0.1, port: ${options.port}, path: /mcp }
upstream:
${upstream}metrics: { enabled: true, host: 127.0.0.1, port: ${options.metricsPort} }
logging: { level: ${options.level} }
limits:
  mode: ${options.mode}
  response: { maxMessageBytes: 4MiB }
  tools:
    big: { response: { maxMessageBytes: 16MiB } }
    mix: { response: { maxMessageBytes: 64KiB } }
    huge: { response: { maxMessageBytes: 4MiB } }
${options.traced ? 'telemetry: { traces: { exporter: otlp } }\n' : ''}
${quotas}`;
}

function nginxConf(prefix: string, port: number, upstreamPort: number): string {
  return `worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  upstream mcp { server 127.0.0.1:${upstreamPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location = /healthz { return 200 'ok'; }
    location /mcp {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 3600s;
      client_max_body_size 4m;
    }
  }
}
`;
}

export function nginxBinary(): string | undefined {
  for (const candidate of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) {
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

export class Harness {
  constructor(readonly options: HarnessOptions = {}) {}

  readonly work = mkdtempSync(join(tmpdir(), 'mcp-edge-bench-'));
  readonly procs = new Set<Proc>();
  upstreamPort = 0;

  log(name: string): string {
    return join(this.work, `${name}.log`);
  }

  track(proc: Proc): Proc {
    this.procs.add(proc);
    void proc.exited.then(() => this.procs.delete(proc));
    return proc;
  }

  async startUpstream(): Promise<void> {
    this.upstreamPort = await freePort();
    const proc = this.track(
      startProcess(
        'upstream',
        NODE,
        [join(BUILT, 'upstream.js'), String(this.upstreamPort)],
        this.log('upstream'),
      ),
    );
    await waitForHttp(`http://127.0.0.1:${this.upstreamPort}/healthz`, proc);
  }

  /** Starts a path; an mcp-edge path runs `build` (a dist/cli.js) when given, else its own build. */
  async startPath(id: PathId, maxConnections = 128, build?: string): Promise<PathRun> {
    if (id === 'direct') return { id, url: `http://127.0.0.1:${this.upstreamPort}/mcp`, proc: undefined };
    const port = await freePort();
    let proc: Proc;
    let metricsUrl: string | undefined;
    let log: string | undefined;
    let setQuotaRule: PathRun['setQuotaRule'];
    // BENCH_CPU_PROF profiles the Node proxies whose difference the targets are about (and the baseline build).
    const profile =
      this.options.cpuProfDir !== undefined && PROFILED_PATHS.has(id)
        ? [
            '--cpu-prof',
            '--cpu-prof-dir',
            this.options.cpuProfDir,
            '--cpu-prof-name',
            `${id}-${port}.cpuprofile`,
          ]
        : [];
    if (id === 'bare') {
      proc = startProcess(
        id,
        NODE,
        [
          ...profile,
          join(BUILT, 'bare-proxy.js'),
          String(port),
          `http://127.0.0.1:${this.upstreamPort}`,
          String(maxConnections),
        ],
        this.log(id),
      );
    } else if (id === 'node-undici') {
      proc = startProcess(
        id,
        NODE,
        [
          join(BUILT, 'undici-proxy.js'),
          String(port),
          `http://127.0.0.1:${this.upstreamPort}`,
          String(maxConnections),
        ],
        this.log(id),
      );
    } else if (id === 'nginx') {
      const binary = nginxBinary();
      if (binary === undefined) throw new Error('nginx is not installed');
      const prefix = mkdtempSync(join(this.work, 'nginx-'));
      writeFileSync(join(prefix, 'nginx.conf'), nginxConf(prefix, port, this.upstreamPort));
      proc = startProcess(
        id,
        binary,
        ['-p', prefix, '-c', join(prefix, 'nginx.conf'), '-g', 'daemon off;'],
        this.log(id),
      );
    } else {
      const file = join(this.work, `${id}-${port}.yaml`);
      const metricsPort = await freePort();
      metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
      const yaml = {
        port,
        metricsPort,
        upstreamPort: this.upstreamPort,
        mode: id === 'edge-observe' ? ('observe' as const) : ('enforce' as const),
        level: id === 'edge-enforce-info' ? 'info' : 'warn',
        maxConnections,
        traced: id === 'edge-traced' || id === 'edge-traced-unsampled',
        stdioServer: id === 'edge-stdio' ? STDIO_SERVER : undefined,
        quotaStore:
          id === 'edge-quota-memory'
            ? 'memory'
            : id === 'edge-quota-redis'
              ? await this.startRedis()
              : undefined,
      };
      writeFileSync(file, edgeYaml(yaml));
      if (yaml.quotaStore !== undefined) {
        const reloadsUrl = metricsUrl;
        let ruleOn = true;
        // A reload that changes nothing is not counted: only a change is waited for.
        setQuotaRule = async (on) => {
          if (on === ruleOn) return;
          ruleOn = on;
          const before = await reloadCounts(reloadsUrl);
          writeFileSync(file, edgeYaml({ ...yaml, quotaRuleOff: !on }));
          if (proc !== undefined) process.kill(proc.pid, 'SIGHUP');
          await reloaded(reloadsUrl, before);
        };
      }
      const cli = build ?? (id === 'edge-baseline' ? (this.options.baselineCli ?? EDGE_CLI) : EDGE_CLI);
      // Traced: every exchange sampled, or none (the sampler's other share: trace context only).
      const env =
        id === 'edge-traced' || id === 'edge-traced-unsampled'
          ? {
              ...process.env,
              OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${await this.otlpSink()}/v1/traces`,
              OTEL_TRACES_SAMPLER: id === 'edge-traced' ? 'always_on' : 'always_off',
            }
          : undefined;
      const flags = this.options.edgeNodeFlags ?? [];
      proc = startProcess(
        id,
        NODE,
        [...flags, ...profile, cli, '--config', file],
        this.log(`${id}-${port}`),
        env,
      );
      log = this.log(`${id}-${port}`);
    }
    this.track(proc);
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, proc);
    return {
      id,
      url: `http://127.0.0.1:${port}/mcp`,
      proc,
      ...(metricsUrl !== undefined ? { metricsUrl } : {}),
      ...(log !== undefined ? { log } : {}),
      ...(setQuotaRule !== undefined ? { setQuotaRule } : {}),
    };
  }

  #sink: Promise<string> | undefined;

  /** An OTLP/HTTP receiver that accepts every export (an empty protobuf answer), in this process. */
  otlpSink(): Promise<string> {
    this.#sink ??= new Promise((resolve) => {
      const server = createServer((req, res) => {
        req.resume();
        req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
      });
      server.listen(0, '127.0.0.1', () => {
        this.sinkServer = server;
        resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      });
    });
    return this.#sink;
  }

  sinkServer: Server | undefined;

  /** A redis-server of the bench's own on loopback (no persistence): its URL. */
  async startRedis(): Promise<string> {
    const port = await freePort();
    const dir = mkdtempSync(join(this.work, 'redis-'));
    const proc = this.track(
      startProcess(
        'redis',
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
        this.log('redis'),
      ),
    );
    let exited = false;
    void proc.exited.then(() => {
      exited = true;
    });
    const deadline = Date.now() + 20_000;
    while (!(await accepts(port))) {
      if (exited || Date.now() > deadline)
        throw new Error('redis-server did not start (is the redis-server package installed?)');
      await sleep(50);
    }
    return `redis://127.0.0.1:${port}/0`;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.procs].map((p) => p.stop()));
    this.sinkServer?.close();
  }
}

/** The sum of `family`'s series at `metricsUrl`, of those whose sample line holds `having` when given. */
export async function metricSum(metricsUrl: string, family: string, having?: string): Promise<number> {
  const res = await fetch(metricsUrl);
  const text = await res.text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${family}{`) && !line.startsWith(`${family} `)) continue;
    if (having === undefined || line.includes(having)) sum += Number(line.split(' ').pop());
  }
  return sum;
}
/** The edge's config reloads so far, by result. */
async function reloadCounts(metricsUrl: string): Promise<{ success: number; failure: number }> {
  const family = 'mcp_edge_config_reloads_total';
  return {
    success: await metricSum(metricsUrl, family, 'result="success"'),
    failure: await metricSum(metricsUrl, family, 'result="failure"'),
  };
}

/** Until the edge counts a successful reload past `before` (at most 10 s); a failed one throws. */
async function reloaded(metricsUrl: string, before: { success: number; failure: number }): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const now = await reloadCounts(metricsUrl);
    if (now.failure > before.failure) throw new Error(`a config reload failed at ${metricsUrl}`);
    if (now.success > before.success) return;
    if (Date.now() > deadline) throw new Error(`no config reload seen at ${metricsUrl}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export function machine(): Record<string, string | number> {
  const model =
    readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.*)$/m)?.[1] ?? cpus()[0]?.model ?? '';
  let free = '';
  try {
    free = execFileSync('free', ['-h'], { encoding: 'utf8' });
  } catch {
    free = `${(totalmem() / 2 ** 30).toFixed(1)} GiB total, ${(freemem() / 2 ** 30).toFixed(1)} GiB free`;
  }
  let nproc = cpus().length;
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {}
  return { nproc, cpu: model, node: process.version, free: free.trim(), nginx: nginxVersion() };
}

function nginxVersion(): string {
  const binary = nginxBinary();
  if (binary === undefined) return 'absent';
  try {
    return (
      execFileSync(binary, ['-v'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim() ||
      'present'
    );
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? 'present').trim();
  }
}
