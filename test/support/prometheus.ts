// A real Prometheus server (Debian package `prometheus`) on loopback, with its own temp config and data dir.
// Started and stopped by its own child handle; it never touches a system Prometheus or its service.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

/**
 * Where the binaries are: $PROMETHEUS_BIN / $PROMTOOL_BIN when set, else the Debian package's /usr/bin,
 * else Homebrew's (/opt/homebrew/bin on Apple silicon, /usr/local/bin on Intel Macs).
 */
function binary(name: string, override: string | undefined): string {
  if (override !== undefined && override !== '') return override;
  const dirs = ['/usr/bin', '/opt/homebrew/bin', '/usr/local/bin'];
  return dirs.map((dir) => join(dir, name)).find((path) => existsSync(path)) ?? join('/usr/bin', name);
}

export const PROMETHEUS_BIN = binary('prometheus', process.env.PROMETHEUS_BIN);
export const PROMTOOL_BIN = binary('promtool', process.env.PROMTOOL_BIN);

/** Whether the binaries are installed (CI installs the Debian package when missing). */
export function prometheusInstalled(): boolean {
  return existsSync(PROMETHEUS_BIN) && existsSync(PROMTOOL_BIN);
}

export interface StartPrometheusOptions {
  /** host:port of each target. */
  scrapeTargets: string[];
  metricsPath: string;
  /** Scrape and rule evaluation interval. */
  scrapeIntervalMs: number;
  /** Absolute paths of rule files to load. */
  ruleFiles?: string[];
  /** Labels Prometheus attaches to every scraped series (what a ServiceMonitor adds: namespace, service, pod). */
  targetLabels?: Record<string, string>;
}

/** The `data` of a successful /api/v1/query answer. */
export interface QueryResult {
  resultType: 'vector' | 'matrix' | 'scalar' | 'string';
  result: unknown;
}

export interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RunningPrometheus {
  url: string;
  /** An instant query at the current time. Rejects with Prometheus' error text when the query does not parse or fails. */
  query(promql: string): Promise<QueryResult>;
  /** Any GET on the HTTP API (e.g. `/api/v1/series`, `/api/v1/rules`); resolves with `data`. */
  api(path: string, params?: Record<string, string | string[]>): Promise<unknown>;
  /** Polls `query` until it returns a non-empty result; rejects after timeoutMs with the last answer. */
  waitForSeries(promql: string, timeoutMs: number): Promise<QueryResult>;
  /** What Prometheus wrote to stderr (its log). */
  log(): string;
  close(): Promise<void>;
}

const execFileAsync = promisify(execFile);

/** Runs promtool with args; resolves with its output, rejects (with the output) on a non-zero exit. */
export async function promtool(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return execFileAsync(PROMTOOL_BIN, args, { timeout: 30_000 });
}

function seconds(ms: number): string {
  return `${Math.max(1, Math.round(ms / 1000))}s`;
}

function configText(opts: StartPrometheusOptions): string {
  // JSON is valid YAML; it saves quoting the paths and targets by hand.
  return JSON.stringify(
    {
      global: {
        scrape_interval: seconds(opts.scrapeIntervalMs),
        evaluation_interval: seconds(opts.scrapeIntervalMs),
      },
      rule_files: opts.ruleFiles ?? [],
      scrape_configs: [
        {
          job_name: 'mcp-edge',
          metrics_path: opts.metricsPath,
          scrape_timeout: seconds(opts.scrapeIntervalMs),
          static_configs: [{ targets: opts.scrapeTargets, labels: opts.targetLabels ?? {} }],
        },
      ],
    },
    null,
    2,
  );
}

function isEmpty(data: QueryResult): boolean {
  return Array.isArray(data.result) ? data.result.length === 0 : false;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function exitOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

export async function startPrometheus(opts: StartPrometheusOptions): Promise<RunningPrometheus> {
  const dir = await mkdtemp(join(tmpdir(), 'mcp-edge-prometheus-'));
  const configFile = join(dir, 'prometheus.yml');
  await writeFile(configFile, configText(opts));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (text: string) => {
    stderr += text;
  });
  const exited = exitOf(child);

  async function close(): Promise<void> {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
    }
    await rm(dir, { recursive: true, force: true });
  }

  async function api(path: string, params: Record<string, string | string[]> = {}): Promise<unknown> {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) {
      for (const item of Array.isArray(value) ? value : [value]) search.append(key, item);
    }
    const response = await fetch(`${url}${path}?${search}`);
    const body = (await response.json()) as {
      status: string;
      data?: unknown;
      error?: string;
      errorType?: string;
    };
    if (body.status !== 'success') {
      throw new Error(`Prometheus ${path} ${JSON.stringify(params)}: ${body.errorType}: ${body.error}`);
    }
    return body.data;
  }

  const query = async (promql: string) => (await api('/api/v1/query', { query: promql })) as QueryResult;

  async function waitForSeries(promql: string, timeoutMs: number): Promise<QueryResult> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const data = await query(promql);
      if (!isEmpty(data)) return data;
      if (Date.now() > deadline) {
        throw new Error(`no series for ${promql} within ${timeoutMs} ms: ${JSON.stringify(data)}`);
      }
      await sleep(250);
    }
  }

  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await close();
      throw new Error(`prometheus exited before it was ready:\n${stderr.slice(-4000)}`);
    }
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      await close();
      throw new Error(`prometheus was not ready within 20 s:\n${stderr.slice(-4000)}`);
    }
    await sleep(100);
  }

  return { url, query, api, waitForSeries, log: () => stderr, close };
}
