// A real nginx (Debian package `nginx`) on loopback as the load balancer in front of several edges, with
// its own temp prefix, config, pid file and logs: it never reads /etc/nginx, never writes /var/log, and is
// stopped by its own PID (never a system nginx or its service).

import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { type ChildHandle, spawnProgram, waitFor } from './processes.js';

/** $NGINX_BIN when set, else Debian's, else Homebrew's. */
export const NGINX_BIN =
  process.env.NGINX_BIN ||
  (['/usr/sbin', '/opt/homebrew/bin', '/usr/local/bin'].map((dir) => join(dir, 'nginx')).find(existsSync) ??
    '/usr/sbin/nginx');

export interface NginxOptions {
  /** host:port of each backend of the one upstream group. */
  backends: string[];
  /**
   * The lines of the upstream group before its servers: how nginx picks a backend
   * (`hash $http_mcp_session_id consistent;`).
   */
  balancing: string[];
  /** Lines at the http level (a `map` the balancing uses). */
  http?: string[];
}

/** One proxied request, from the access log. */
export interface ProxiedRequest {
  /** The backend nginx sent it to (host:port). */
  backend: string;
  status: number;
  method: string;
  /** The Mcp-Session-Id the client sent, and the one the answer carried. */
  sessionSent: string;
  sessionAnswered: string;
  /** The client's Authorization header. */
  authorization: string;
}

export interface RunningNginx {
  /** http://127.0.0.1:PORT */
  url: string;
  pid: number;
  /** Every request nginx has logged so far. */
  requests(): Promise<ProxiedRequest[]>;
  errorLog(): Promise<string>;
  close(): Promise<void>;
}

const FIELDS = [
  '$upstream_addr',
  '$status',
  '$request_method',
  '$http_mcp_session_id',
  '$upstream_http_mcp_session_id',
  '$http_authorization',
];

function configText(dir: string, port: number, options: NginxOptions): string {
  return [
    'daemon off;',
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')} notice;`,
    'events { worker_connections 256; }',
    'http {',
    `  log_format mcp '${FIELDS.map((field) => `${field}`).join('\\t')}';`,
    `  access_log ${join(dir, 'access.log')} mcp;`,
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
      (kind) => `  ${kind}_temp_path ${join(dir, kind)};`,
    ),
    ...(options.http ?? []).map((line) => `  ${line}`),
    '  upstream edges {',
    ...options.balancing.map((line) => `    ${line}`),
    ...options.backends.map((backend) => `    server ${backend};`),
    '  }',
    '  server {',
    `    listen 127.0.0.1:${port};`,
    '    location = /nginx-ready { access_log off; return 204; }',
    '    location / {',
    '      proxy_pass http://edges;',
    '      proxy_http_version 1.1;',
    '      proxy_set_header Connection "";',
    // SSE answers go to the client as they come.
    '      proxy_buffering off;',
    '      proxy_read_timeout 1h;',
    '    }',
    '  }',
    '}',
    '',
  ].join('\n');
}

function parseLine(line: string): ProxiedRequest {
  const [backend = '', status = '', method = '', sent = '', answered = '', authorization = ''] =
    line.split('\t');
  const value = (field: string) => (field === '-' ? '' : field);
  return {
    backend,
    status: Number(status),
    method,
    sessionSent: value(sent),
    sessionAnswered: value(answered),
    authorization: value(authorization),
  };
}

export async function startNginx(options: NginxOptions): Promise<RunningNginx> {
  const dir = await mkdtemp(join(tmpdir(), 'mcp-edge-nginx-'));
  // Started as root, nginx runs its worker as nobody, which must reach the temp paths.
  if (process.getuid?.() === 0) await chmod(dir, 0o755);
  const port = await freePort();
  const config = join(dir, 'nginx.conf');
  await writeFile(config, configText(dir, port, options));
  const handle: ChildHandle = spawnProgram(NGINX_BIN, [
    '-p',
    dir,
    '-c',
    config,
    '-e',
    join(dir, 'error.log'),
  ]);
  const errorLog = () => readFile(join(dir, 'error.log'), 'utf8').catch(() => '');
  const url = `http://127.0.0.1:${port}`;
  const up = await waitFor(() => handle.exit() === undefined && existsSync(join(dir, 'nginx.pid')), 20_000);
  const ready =
    up &&
    (await fetch(`${url}/nginx-ready`).then(
      (r) => r.status === 204,
      () => false,
    ));
  if (!ready) {
    await handle.stop();
    throw new Error(`nginx did not start:\n${await errorLog()}${handle.stderr()}`);
  }
  return {
    url,
    pid: handle.pid,
    async requests() {
      const text = await readFile(join(dir, 'access.log'), 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter((line) => line !== '')
        .map(parseLine);
    },
    errorLog,
    async close() {
      // SIGTERM: nginx's fast stop, its master ending its worker first (a SIGKILL of the master alone
      // would leave the worker running).
      await handle.stop({ signal: 'SIGTERM', timeoutMs: 20_000 });
      await rm(dir, { recursive: true, force: true });
    },
  };
}
