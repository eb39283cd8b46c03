// Processes for the benchmark: each started by handle, its output kept in a file, stopped by that handle;
// and the memory of a process as Linux reports it (/proc/PID/status).
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';

export interface Proc {
  name: string;
  pid: number;
  child: ChildProcess;
  exited: Promise<void>;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts `command args`, stdout and stderr appended to `logFile` (nothing is piped through this process). */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  logFile: string,
  env?: NodeJS.ProcessEnv,
): Proc {
  const fd = openSync(logFile, 'a');
  const child = spawn(command, args, { stdio: ['ignore', fd, fd], ...(env !== undefined ? { env } : {}) });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`could not start ${name}: ${command}`);
  let done = false;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      done = true;
      resolve();
    });
  });
  return {
    name,
    pid: child.pid,
    child,
    exited,
    async stop(graceMs = 5000) {
      if (done) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs a child to its end and returns its stdout (stderr goes to `logFile`); rejects on a non-zero exit or timeout. */
export function runToEnd(
  command: string,
  args: string[],
  logFile: string,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const fd = openSync(logFile, 'a');
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', fd] });
    closeSync(fd);
    let out = '';
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (text: string) => {
      out += text;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else
        reject(
          new Error(`${command} ${args.slice(0, 2).join(' ')} exited ${code ?? signal}; see ${logFile}`),
        );
    });
  });
}

/** A port free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', () => resolve(0));
    req.once('timeout', () => req.destroy());
    req.end();
  });
}

/** Waits until `url` answers (any HTTP status below 500), or throws after `timeoutMs`. */
export async function waitForHttp(url: string, proc: Proc, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void proc.exited.then(() => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${proc.name} exited before answering ${url}`);
    const status = await httpStatus(url);
    if (status > 0 && status < 500) return;
    await sleep(100);
  }
  throw new Error(`${proc.name} did not answer ${url} within ${timeoutMs} ms`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface MemoryStatus {
  rssKiB: number;
  /** Peak RSS since start or since the last resetPeak. */
  hwmKiB: number;
}

function statusField(status: string, field: string): number {
  const match = status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
  return match ? Number(match[1]) : 0;
}

/** The process's memory now, summed over it and its child processes (nginx: master and worker). */
export function memoryOf(pid: number): MemoryStatus {
  let rssKiB = 0;
  let hwmKiB = 0;
  for (const p of [pid, ...childrenOf(pid)]) {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      rssKiB += statusField(status, 'VmRSS');
      hwmKiB += statusField(status, 'VmHWM');
    } catch {
      // The process is gone: it holds no memory.
    }
  }
  return { rssKiB, hwmKiB };
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter((s) => s !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * CPU time (user + system, ms) used so far by the process and, unless `ownOnly`, its children that are still
 * running (nginx: master and worker; a stdio edge's children are servers, not the edge).
 */
export function cpuMsOf(pid: number, ownOnly = false): number {
  const tick = 10; // USER_HZ is 100 on Linux
  let ms = 0;
  for (const p of ownOnly ? [pid] : [pid, ...childrenOf(pid)]) {
    try {
      // Fields after the command name (which may hold spaces) start after the last ')'.
      const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      ms += (Number(fields[11]) + Number(fields[12])) * tick;
    } catch {
      // The process is gone.
    }
  }
  return ms;
}

/**
 * System CPU time (ms) and minor page faults so far (/proc/PID/stat stime, minflt) of the process and, unless
 * `ownOnly`, its children: what the kernel spends on a process apart from its syscalls' count, such as mapping
 * fresh pages for large allocations.
 */
export function kernelOf(pid: number, ownOnly = false): { sysMs: number; minorFaults: number } {
  const tick = 10; // USER_HZ is 100 on Linux
  let sysMs = 0;
  let minorFaults = 0;
  for (const p of ownOnly ? [pid] : [pid, ...childrenOf(pid)]) {
    try {
      const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      minorFaults += Number(fields[7]);
      sysMs += Number(fields[12]) * tick;
    } catch {
      // The process is gone.
    }
  }
  return { sysMs, minorFaults };
}

/**
 * Read and write system calls made so far (/proc/PID/io syscr, syscw: read(v) and write(v), which Node uses on
 * sockets; recv and send, which nginx uses, are not counted) by the process and, unless `ownOnly`, its children.
 */
export function ioOf(pid: number, ownOnly = false): { readCalls: number; writeCalls: number } {
  let readCalls = 0;
  let writeCalls = 0;
  for (const p of ownOnly ? [pid] : [pid, ...childrenOf(pid)]) {
    try {
      const io = readFileSync(`/proc/${p}/io`, 'utf8');
      readCalls += Number(/^syscr:\s+(\d+)/m.exec(io)?.[1] ?? 0);
      writeCalls += Number(/^syscw:\s+(\d+)/m.exec(io)?.[1] ?? 0);
    } catch {
      // The process is gone.
    }
  }
  return { readCalls, writeCalls };
}

/** Resets the peak RSS (VmHWM) of the process and its children; false where the kernel refuses. */
export function resetPeak(pid: number): boolean {
  let ok = true;
  for (const p of [pid, ...childrenOf(pid)]) {
    try {
      writeFileSync(`/proc/${p}/clear_refs`, '5');
    } catch {
      ok = false;
    }
  }
  return ok;
}

/** Polls RSS every `everyMs` until stopped; the peak is the larger of the polled maximum and VmHWM. */
export function sampleMemory(pid: number, everyMs = 100): { stop(): { peakKiB: number; lastKiB: number } } {
  let maxKiB = memoryOf(pid).rssKiB;
  let lastKiB = maxKiB;
  const timer = setInterval(() => {
    lastKiB = memoryOf(pid).rssKiB;
    if (lastKiB > maxKiB) maxKiB = lastKiB;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const now = memoryOf(pid);
      return { peakKiB: Math.max(maxKiB, now.hwmKiB, now.rssKiB), lastKiB: now.rssKiB || lastKiB };
    },
  };
}
