// What the edge does with idle stdio children, those whose clients have nothing open at the edge. The
// sweep ends a child by itself: a session that sent no request after its initialize
// (upstream.stdio.idleTimeoutBeforeFirstRequest), a session whose client has left, seen as nothing of it
// open, no GET stream and no request in flight (idleTimeoutWithoutStream), and any child without traffic
// either way (idleTimeout). And at a process bound, an idle child gives up its place to a new one (giveWay).
// What applies is decided in src/core/stdio-room.ts; here are the timer, the stops and the log lines.
import type { Logger } from 'pino';
import type { StdioUpstreamConfig } from '../config/schema.js';
import { type QuietTimeouts, quietEnd, type Room } from '../core/stdio-room.js';
import type { StdioChild } from './stdio-child.js';
import type { StdioChildren } from './stdio-children.js';

/** Starts the sweep, if any timeout is on; the returned function stops it. */
export function startQuietSweep(
  children: StdioChildren,
  spec: StdioUpstreamConfig,
  log: Logger,
  program: string,
): () => void {
  const timeouts: QuietTimeouts = {
    idleTimeout: spec.idleTimeout,
    idleTimeoutBeforeFirstRequest: spec.idleTimeoutBeforeFirstRequest,
    idleTimeoutWithoutStream: spec.idleTimeoutWithoutStream,
  };
  const on = Object.values(timeouts).filter((ms) => ms > 0);
  if (on.length === 0) return () => {};
  // A child ends at most a quarter of its timeout late (and at most 5 s late).
  const everyMs = Math.min(5000, Math.max(50, Math.min(...on) / 4));
  const sweep = setInterval(() => endQuiet(children, timeouts, log, program), everyMs);
  sweep.unref();
  return () => clearInterval(sweep);
}

function endQuiet(children: StdioChildren, timeouts: QuietTimeouts, log: Logger, program: string): void {
  const now = Date.now();
  for (const child of [...children.all]) {
    const facts = children.quiet(child);
    if (!child.alive || facts === undefined) continue;
    const setting = quietEnd(facts, now, timeouts);
    if (setting === undefined) continue;
    const ms = timeouts[setting];
    const fields = { ...children.ownerOf(child), program, [setting]: ms };
    if (setting === 'idleTimeoutBeforeFirstRequest') {
      log.info(fields, 'stdio: a session that sent no request after initialize is ended');
      void child.stop(`no request since initialize for ${ms} ms (upstream.stdio.${setting})`);
    } else if (setting === 'idleTimeoutWithoutStream') {
      log.info(fields, 'stdio: a session whose client has left is ended');
      void child.stop(
        `its client has had no stream open and no request in flight for ${ms} ms (upstream.stdio.${setting})`,
      );
    } else {
      void child.stop(`no request for ${ms} ms (upstream.stdio.${setting})`);
    }
  }
}

/**
 * An idle child gives up its place to a new child of `tenant`: its session is found no more at once (its
 * client's next request gets 404, and it initializes again), and the place is held for the new child until
 * the idle one has exited, so the bounds hold throughout. Resolves once the new child may start.
 */
export async function giveWay(
  children: StdioChildren,
  tenant: string,
  room: Extract<Room<StdioChild>, { kind: 'evict' }>,
  log: Logger,
  program: string,
): Promise<void> {
  const { child, quietSince } = room.victim;
  const owner = children.ownerOf(child);
  if (owner?.session !== undefined) children.forgetSession(owner.session);
  children.reserve(tenant);
  const quietMs = Date.now() - quietSince;
  log.info(
    { ...owner, program, forTenant: tenant, bound: room.bound.setting, quietMs },
    'stdio: an idle session is ended to make room',
  );
  try {
    await child.stop(
      `its place was given to a new session at ${room.bound.setting} (its clients had nothing open for ${quietMs} ms)`,
    );
  } finally {
    children.release(tenant);
  }
}
