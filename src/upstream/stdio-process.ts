// One stdio MCP server as an operating-system process: spawned from an argv (never a shell) in a process
// group of its own, its stderr logged (bounded), and ended by SIGTERM to the group, then SIGKILL after the
// grace. What its stdout carries is stdio-child.ts's concern.
import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { StdioUpstreamConfig } from '../config/schema.js';
import { stdioProgramName } from './stdio-command.js';
import { StderrLog } from './stdio-stderr.js';

export interface StdioProcessOptions {
  spec: StdioUpstreamConfig;
  env: Record<string, string>;
  log: Logger;
  /** The session the process serves (for the log), or undefined for a tenant's sessionless pool. */
  sessionId: string | undefined;
  onStdout(chunk: Buffer): void;
  /** The process is running (the command was found and could be executed). */
  onSpawn(): void;
  /** It is gone, or never started (`startFailed`): `detail` says how, for the calls that waited on it. */
  onEnd(detail: string): void;
}

export class StdioProcess {
  readonly program: string;
  private readonly proc: ChildProcess;
  private readonly exitPromise: Promise<void>;
  private ended = false;
  /** Why it could not be started (a bad command), if so. */
  startFailed: string | undefined;

  constructor(private readonly options: StdioProcessOptions) {
    const { spec } = options;
    this.program = stdioProgramName(spec.command[0] ?? '');
    // Its own process group, so SIGTERM/SIGKILL reach what it started too (npx runs the server as a grandchild).
    this.proc = spawn(spec.command[0] ?? '', spec.command.slice(1), {
      env: options.env,
      ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      shell: false,
    });
    const stderr = new StderrLog(options.log, { session: options.sessionId, program: this.program });
    this.proc.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    this.proc.stdout?.on('data', (chunk: Buffer) => options.onStdout(chunk));
    this.proc.stdin?.on('error', () => {}); // EPIPE once the child is gone: its exit tells the calls.
    this.proc.once('spawn', () => options.onSpawn());
    this.exitPromise = new Promise((resolve) => {
      this.proc.once('error', (err: NodeJS.ErrnoException) => {
        this.startFailed = `could not start "${this.program}": ${err.code ?? err.message}`;
        options.log.error(
          { session: options.sessionId, program: this.program, err: err.message },
          this.startFailed,
        );
        this.end(this.startFailed);
        resolve();
      });
      this.proc.once('exit', (code, signal) => {
        stderr.flush();
        this.end(
          signal !== null
            ? `the MCP server (${this.program}) was ended by ${signal}`
            : `the MCP server (${this.program}) exited with code ${code}`,
        );
        resolve();
      });
    });
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** Its stdin while it can still be written to. */
  get stdin(): Writable | undefined {
    const stdin = this.proc.stdin;
    return stdin === null || stdin.destroyed || this.ended ? undefined : stdin;
  }

  /** A slow client holds the child's output (its writes block), not the edge's memory. */
  pauseOutput(): void {
    this.proc.stdout?.pause();
  }

  resumeOutput(): void {
    this.proc.stdout?.resume();
  }

  /** stdin closed, SIGTERM to its process group, SIGKILL after the grace; resolves once it is gone. */
  async stop(reason: string): Promise<void> {
    if (!this.ended && this.proc.pid !== undefined) {
      this.options.log.info(
        { session: this.options.sessionId, program: this.program, reason },
        'ending a stdio MCP server',
      );
      this.proc.stdin?.end();
      this.signal('SIGTERM');
      const timer = setTimeout(() => this.signal('SIGKILL'), this.options.spec.killGrace || 1);
      await this.exitPromise;
      clearTimeout(timer);
    }
    // The group may outlive the leader (a grandchild that ignores SIGTERM): nothing of it stays behind.
    this.signal('SIGKILL');
  }

  private end(detail: string): void {
    if (this.ended) return;
    this.ended = true;
    this.options.onEnd(detail);
  }

  private signal(signal: NodeJS.Signals): void {
    const pid = this.proc.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // Already gone.
    }
  }
}
