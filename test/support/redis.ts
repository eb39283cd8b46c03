// A real Redis server (Debian package `redis-server`) on loopback, with its own temp directory and no
// persistence unless asked. Started and stopped by its own child handle (never a system Redis or its service); a
// test may kill it and start it again on the same port, as a Redis that crashed and came back (empty, or with
// what its append-only file kept).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

/** $REDIS_SERVER_BIN when set, else the Debian package's, else Homebrew's. */
export const REDIS_SERVER_BIN =
  process.env.REDIS_SERVER_BIN ||
  (['/usr/bin', '/opt/homebrew/bin', '/usr/local/bin']
    .map((dir) => join(dir, 'redis-server'))
    .find(existsSync) ??
    '/usr/bin/redis-server');

export interface RunningRedis {
  /** redis://127.0.0.1:PORT/0 */
  url: string;
  port: number;
  /** Sends one command (RESP) and resolves with the raw reply text. */
  command(...args: string[]): Promise<string>;
  /** Kills the server (SIGKILL: a crash) and waits for its exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port: empty, unless started persistent (then as its append-only file kept it). */
  restart(): Promise<void>;
  log(): string;
  close(): Promise<void>;
}

function exitOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One RESP command on a fresh connection; resolves with the first reply's raw text. */
function sendCommand(port: number, args: readonly string[], timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`redis ${args[0]} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
    });
    socket.on('data', (text: string) => {
      reply += text;
      if (reply.endsWith('\r\n')) {
        clearTimeout(timer);
        socket.end();
        resolve(reply);
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** `persistent`: every write goes to an append-only file before it is answered, and a restart reads it back. */
export async function startRedis(options: { persistent?: boolean } = {}): Promise<RunningRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'mcp-edge-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  let output = '';

  async function start(): Promise<void> {
    const started = spawn(
      REDIS_SERVER_BIN,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        options.persistent === true ? 'yes' : 'no',
        '--appendfsync',
        'always',
        '--protected-mode',
        'yes',
        '--enable-debug-command',
        'local',
      ],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = started;
    for (const stream of [started.stdout, started.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', (text: string) => {
        output += text;
      });
    }
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (started.exitCode !== null || started.signalCode !== null)
        throw new Error(`redis-server exited before it was ready:\n${output.slice(-4000)}`);
      const pong = await sendCommand(port, ['PING'], 1000).catch(() => '');
      if (pong.startsWith('+PONG')) return;
      if (Date.now() > deadline)
        throw new Error(`redis-server was not ready within 20 s:\n${output.slice(-4000)}`);
      await sleep(50);
    }
  }

  async function kill(): Promise<void> {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = exitOf(running);
    running.kill('SIGKILL');
    await exited;
  }

  await start();
  return {
    url: `redis://127.0.0.1:${port}/0`,
    port,
    command: (...args) => sendCommand(port, args),
    kill,
    restart: start,
    log: () => output,
    async close() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
