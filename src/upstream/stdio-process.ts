// One stdio MCP server as an operating-system process: spawned from an argv (never a shell) in a process
// group of its own, its stderr logged (bounded), and ended by SIGTERM to the group, then SIGKILL after the
// grace. The group is ended whenever its leader is gone, however it went (stop(), its own exit, a crash):
// what it started does not outlive it. If mcp-edge itself dies, the watchdog of stdio-group-guard.ts ends
// the group. What its stdout carries is stdio-child.ts's concern.
import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { StdioUpstreamConfig } from '../config/schema.js';
import { stdioProgramName } from './stdio-command.js';
import { groupGuard } from './stdio-group-guard.js';
import { LogLimit, StderrLog } from './stdio-stderr.js';

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

/** How often a group that outlived its leader is looked at while it has its grace. */
const GROUP_POLL_MS = 50;

/** Whether any process is left in the group (signal 0 probes without sending anything). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class StdioProcess {
  readonly program: string;
  private readonly proc: ChildProcess;
  private readonly exitPromise: Promise<void>;
  private ended = false;
  /** The edge asked it to end (stop()): its exit is expected, not a warning. */
  private stopAsked = false;
  /** When the group was first sent SIGTERM: SIGKILL follows killGrace after it. */
  private termSentAt: number | undefined;
  private groupEnded: Promise<void> | undefined;
  /** Why it could not be started (a bad command), if so. */
  startFailed: string | undefined;
  /** The warnings for its stdout lines that are dropped (not JSON-RPC, or for no one): bounded as stderr is. */
  readonly droppedLineLog: LogLimit;

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
    this.droppedLineLog = new LogLimit(
      options.log,
      { session: options.sessionId, program: this.program },
      'stdio MCP server stdout: warnings for dropped lines',
    );
    this.proc.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    this.proc.stdout?.on('data', (chunk: Buffer) => options.onStdout(chunk));
    this.proc.stdin?.on('error', () => {}); // EPIPE once the child is gone: its exit tells the calls.
    this.proc.once('spawn', () => {
      options.log.info(
        { session: options.sessionId, program: this.program, pid: this.proc.pid },
        'stdio MCP server started',
      );
      options.onSpawn();
    });
    if (this.proc.pid !== undefined) groupGuard.add(this.proc.pid, spec.killGrace, options.log);
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
        this.droppedLineLog.summarize();
        this.logExit(code, signal);
        this.end(
          signal !== null
            ? `the MCP server (${this.program}) was ended by ${signal}`
            : `the MCP server (${this.program}) exited with code ${code}`,
        );
        // The leader is gone, so is its group: a grandchild it left behind is not forgotten.
        void this.endGroup();
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

  /** stdin closed, SIGTERM to its process group, SIGKILL after the grace; resolves once all of it is gone. */
  async stop(reason: string): Promise<void> {
    if (!this.ended && this.proc.pid !== undefined) {
      this.stopAsked = true;
      this.options.log.info(
        { session: this.options.sessionId, program: this.program, reason },
        'ending a stdio MCP server',
      );
      this.proc.stdin?.end();
      this.termSentAt ??= Date.now();
      this.signal('SIGTERM');
      const timer = setTimeout(() => this.signal('SIGKILL'), this.options.spec.killGrace || 1);
      await this.exitPromise;
      clearTimeout(timer);
    }
    await this.endGroup();
  }

  /** The leader is gone: what is left of its group gets SIGTERM, then SIGKILL at killGrace after the first SIGTERM. */
  private endGroup(): Promise<void> {
    if (this.groupEnded === undefined) {
      this.groupEnded = this.reapGroup();
      groupGuard.track(this.groupEnded);
    }
    return this.groupEnded;
  }

  private async reapGroup(): Promise<void> {
    const pgid = this.proc.pid;
    if (pgid === undefined) return;
    if (this.termSentAt === undefined && groupAlive(pgid)) {
      this.options.log.info(
        { session: this.options.sessionId, program: this.program, pgid },
        'the stdio MCP server exited and left processes in its group: ending them',
      );
      this.termSentAt = Date.now();
      this.signal('SIGTERM');
    }
    const deadline = (this.termSentAt ?? Date.now()) + this.options.spec.killGrace;
    while (Date.now() < deadline && groupAlive(pgid)) await sleep(GROUP_POLL_MS);
    // Nothing of it stays behind (a grandchild that ignores SIGTERM); an empty group's id is not signalled.
    if (groupAlive(pgid)) this.signal('SIGKILL');
    groupGuard.remove(pgid);
  }

  /** Its end, logged once: at info when the edge asked for it, at warn when it ended by itself. */
  private logExit(code: number | null, signal: NodeJS.Signals | null): void {
    const fields = {
      session: this.options.sessionId,
      program: this.program,
      pid: this.proc.pid,
      exitCode: code,
      signal,
      askedByEdge: this.stopAsked,
    };
    if (this.stopAsked) this.options.log.info(fields, 'stdio MCP server exited');
    else this.options.log.warn(fields, 'stdio MCP server exited without being asked to');
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
