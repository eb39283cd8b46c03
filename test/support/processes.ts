// Child processes for CLI and peer tests: spawned by handle, output captured, stopped by that same handle.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/** The repository root (where node_modules and package.json are). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnOptions {
  /** Give the child a writable stdin (child.stdin); otherwise it reads nothing. */
  stdin?: boolean;
  /** Added to (and overriding) the parent's environment. */
  env?: Record<string, string | undefined>;
  /** Default: the repository root. */
  cwd?: string;
}

export interface ChildHandle {
  child: ChildProcess;
  pid: number;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Every byte written so far, as written (for tests of what reaches a terminal). */
  bytes(stream: 'stdout' | 'stderr'): Buffer;
  /** Resolves with the exit once the process has exited and all its output is read (never rejects). */
  exited: Promise<ChildExit>;
  /** The exit, or undefined while running. */
  exit(): ChildExit | undefined;
  /**
   * Resolves with the match of the first output line (already written or still to come) matching `pattern`.
   * Rejects when the process exits or `timeoutMs` passes first.
   */
  waitForLine(
    pattern: RegExp,
    opts?: { stream?: 'stdout' | 'stderr' | 'both'; timeoutMs?: number },
  ): Promise<RegExpMatchArray>;
  /** SIGTERM (or `signal`), then SIGKILL after `timeoutMs`; resolves with the exit. */
  stop(opts?: { signal?: NodeJS.Signals; timeoutMs?: number }): Promise<ChildExit>;
}

type StreamName = 'stdout' | 'stderr';

function describeOutput(out: Record<StreamName, string>): string {
  return `\n--- stdout ---\n${out.stdout.slice(-4000)}\n--- stderr ---\n${out.stderr.slice(-4000)}`;
}

/** Spawns `node ...args` with piped output. */
export function spawnNode(args: string[], opts: SpawnOptions = {}): ChildHandle {
  return spawnProgram(process.execPath, args, opts);
}

/** Spawns `program ...args` (a path, or a name looked up on PATH) with piped output, never through a shell. */
export function spawnProgram(program: string, args: string[], opts: SpawnOptions = {}): ChildHandle {
  const child = spawn(program, args, {
    cwd: opts.cwd ?? REPO_ROOT,
    env: { ...process.env, ...opts.env },
    stdio: [opts.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not spawn ${program} ${args.join(' ')}`);
  const output: Record<StreamName, string> = { stdout: '', stderr: '' };
  const raw: Record<StreamName, Buffer[]> = { stdout: [], stderr: [] };
  const lineListeners = new Set<(stream: StreamName) => void>();
  for (const stream of ['stdout', 'stderr'] as const) {
    const decoder = new StringDecoder('utf8');
    child[stream]?.on('data', (chunk: Buffer) => {
      raw[stream].push(chunk);
      output[stream] += decoder.write(chunk);
      for (const listener of lineListeners) listener(stream);
    });
    child[stream]?.on('end', () => {
      output[stream] += decoder.end();
    });
  }

  let exitInfo: ChildExit | undefined;
  child.once('exit', (code, signal) => {
    exitInfo = { code, signal };
  });
  // 'close', not 'exit': at 'exit' the pipes may still hold output the process wrote last (an error it
  // printed before exiting 1), and a caller reading stdout() once this resolves must see all of it.
  const exited = new Promise<ChildExit>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal }));
  });

  function findLine(pattern: RegExp, streams: StreamName[]): RegExpMatchArray | undefined {
    for (const stream of streams) {
      for (const line of output[stream].split(/\r?\n/)) {
        const match = line.match(pattern);
        if (match) return match;
      }
    }
    return undefined;
  }

  function waitForLine(
    pattern: RegExp,
    {
      stream = 'both',
      timeoutMs = 15_000,
    }: { stream?: 'stdout' | 'stderr' | 'both'; timeoutMs?: number } = {},
  ): Promise<RegExpMatchArray> {
    const streams: StreamName[] = stream === 'both' ? ['stdout', 'stderr'] : [stream];
    return new Promise((resolve, reject) => {
      const finish = (error: Error | undefined, match?: RegExpMatchArray) => {
        clearTimeout(timer);
        lineListeners.delete(check);
        if (match) resolve(match);
        else reject(error);
      };
      const check = () => {
        const match = findLine(pattern, streams);
        if (match) finish(undefined, match);
      };
      const timer = setTimeout(
        () =>
          finish(
            new Error(`no output line matched ${pattern} within ${timeoutMs} ms${describeOutput(output)}`),
          ),
        timeoutMs,
      );
      lineListeners.add(check);
      exited.then((info) => {
        check();
        finish(
          new Error(
            `process exited (${JSON.stringify(info)}) before a line matched ${pattern}${describeOutput(output)}`,
          ),
        );
      });
      check();
    });
  }

  async function stop({
    signal = 'SIGTERM',
    timeoutMs = 5000,
  }: {
    signal?: NodeJS.Signals;
    timeoutMs?: number;
  } = {}) {
    if (exitInfo) return exited;
    child.kill(signal);
    const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const info = await exited;
    clearTimeout(killer);
    return info;
  }

  return {
    child,
    pid: child.pid,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    bytes: (stream) => Buffer.concat(raw[stream]),
    exited,
    exit: () => exitInfo,
    waitForLine,
    stop,
  };
}

/** Spawns a TypeScript entry point with tsx as a loader (no npx wrapper: the pid is the script's own). */
export function spawnTsx(script: string, args: string[] = [], opts: SpawnOptions = {}): ChildHandle {
  return spawnNode(['--import', 'tsx', script, ...args], opts);
}

/** Whether a process with this pid exists (signal 0 probes without sending anything). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether a process with this pid runs (Linux): a zombie, killed and waiting for its parent (or init) to
 * reap it, does not, though signal 0 still reaches it.
 */
export function isProcessRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls `check` until it holds or `timeoutMs` passes: whether it held. */
export async function waitFor(check: () => boolean, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(25);
  }
  return check();
}

/**
 * A test bound for tests that start the CLI, derived from one start measured now: a CLI child starts as fast as
 * tsx compiles on this machine at this moment, so a loaded machine slows such tests without failing them.
 * Never under the suite's 30 s. Call it at a test file's top level and pass it to vi.setConfig, which applies
 * to the tests defined after it.
 */
export async function cliTestTimeout(): Promise<number> {
  const started = Date.now();
  await spawnTsx('src/cli.ts', ['--version']).exited;
  return Math.max(30_000, 15 * (Date.now() - started));
}
