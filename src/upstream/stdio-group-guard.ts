// The process groups of this mcp-edge's stdio children, and what ends them when mcp-edge cannot: a
// watchdog (`/bin/sh`, in a session of its own) reads "+PGID GRACE_TICKS" and "-PGID" lines on a pipe from
// mcp-edge. When that pipe reaches EOF (mcp-edge exited in any way, SIGKILL included: the kernel closes
// its end), the watchdog sends SIGTERM to every group still listed and SIGKILL after the longest grace.
// A group is listed from its spawn until mcp-edge has ended it (stdio-process.ts), so the watchdog never
// signals a group id the kernel could have handed to an unrelated process: the last group is unlisted
// too before the pipe's EOF. There is one watchdog per mcp-edge process while it has groups listed; it exits
// as soon as the last is unlisted, having signalled nothing. (A session's DELETE is answered before its
// child has ended: its group is listed, and the watchdog runs, until the child and its group are gone.)
import { type ChildProcess, spawn } from 'node:child_process';
import type { Logger } from 'pino';

/** POSIX sh (dash's `kill` takes `-SIG -PGID`, not `--` or `-s`); $groups is " 1 2 3 ". */
const WATCHDOG_SCRIPT = `
groups=' '
ticks=0
while read -r entry grace; do
  case $entry in
    +*) groups="$groups\${entry#+} "; [ "$grace" -gt "$ticks" ] && ticks=$grace ;;
    -*) id=\${entry#-}; case $groups in *" $id "*) groups="\${groups%% $id *} \${groups#* $id }" ;; esac ;;
  esac
done
[ "$groups" = ' ' ] && exit 0
alive() { for g in $groups; do kill -0 -$g 2>/dev/null && return 0; done; return 1; }
for g in $groups; do kill -TERM -$g 2>/dev/null; done
i=0
while [ $i -lt $ticks ] && alive; do sleep 0.1; i=$((i + 1)); done
for g in $groups; do kill -KILL -$g 2>/dev/null; done
`;

/** Watchdogs started again after one ended while groups were listed, before mcp-edge gives up on them. */
const MAX_WATCHDOG_RESTARTS = 3;

class GroupGuard {
  private watchdog: ChildProcess | undefined;
  /** The groups listed, each with its grace in the watchdog's ticks of 0.1 s. */
  private readonly listed = new Map<number, number>();
  /** Groups being ended (their leader is gone, members may remain): close() waits for them. */
  private readonly ending = new Set<Promise<void>>();
  private unavailable = false;
  private restarts = 0;

  /** Lists a new group; at mcp-edge's death it gets SIGTERM, then SIGKILL after `graceMs`. */
  add(pgid: number, graceMs: number, log: Logger): void {
    const ticks = Math.max(1, Math.ceil(graceMs / 100));
    this.listed.set(pgid, ticks);
    if (this.unavailable) return;
    if (this.watchdog === undefined) this.watchdog = this.start(log);
    else this.watchdog.stdin?.write(`+${pgid} ${ticks}\n`);
  }

  /** The group is gone (mcp-edge ended it): the watchdog forgets it. */
  remove(pgid: number): void {
    if (!this.listed.delete(pgid)) return;
    const watchdog = this.watchdog;
    if (watchdog === undefined) return;
    // Unlisted before anything else: whatever the watchdog does next, it never signals this id again.
    watchdog.stdin?.write(`-${pgid}\n`);
    if (this.listed.size === 0) {
      // Nothing left to guard: EOF, and the watchdog exits with nothing to signal.
      this.watchdog = undefined;
      watchdog.stdin?.end();
    }
  }

  /** The watchdog's pid while one runs (tests check the process table by it). */
  get watchdogPid(): number | undefined {
    return this.watchdog?.pid;
  }

  /** Tracks a group being ended until it is. */
  track(ending: Promise<void>): void {
    this.ending.add(ending);
    void ending.finally(() => this.ending.delete(ending));
  }

  /** Resolves once every group being ended now is gone. */
  async settled(): Promise<void> {
    await Promise.all([...this.ending]);
  }

  /** A watchdog with every listed group; should it die while groups are listed, another takes its place. */
  private start(log: Logger): ChildProcess {
    const watchdog = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true, // its own session: a signal to mcp-edge's terminal or group does not reach it
      shell: false,
    });
    watchdog.once('error', (err: NodeJS.ErrnoException) => {
      this.unavailable = true;
      if (this.watchdog === watchdog) this.watchdog = undefined;
      log.warn(
        { err: err.code ?? err.message },
        'no /bin/sh for the stdio watchdog: children of an mcp-edge that is killed (SIGKILL) are not ended',
      );
    });
    watchdog.once('exit', (code, signal) => {
      if (this.watchdog !== watchdog || this.unavailable) return;
      this.watchdog = undefined;
      // Bounded: a watchdog that cannot run is not started again and again.
      this.unavailable = ++this.restarts > MAX_WATCHDOG_RESTARTS;
      log.warn(
        { code, signal, restarting: !this.unavailable },
        'the stdio watchdog ended while children run',
      );
      if (!this.unavailable && this.listed.size > 0) this.watchdog = this.start(log);
    });
    watchdog.stdin?.on('error', () => {}); // it is gone: its exit starts another
    watchdog.unref();
    (watchdog.stdin as { unref?: () => void } | null)?.unref?.();
    for (const [pgid, ticks] of this.listed) watchdog.stdin?.write(`+${pgid} ${ticks}\n`);
    return watchdog;
  }
}

/** One per mcp-edge process: what it protects against is that process's death. */
export const groupGuard = new GroupGuard();
