// Which host sent a request: the client it names in the request itself, in its session's initialize, or in
// its User-Agent, as a label of the host table.
import type { HostJudgeContext } from './host-judge.js';
import { clientIdentityOf } from './host-table.js';

/** What naming a request's host needs: the host table, the exchange's host so far, where an initialize notes it. */
export interface HostNaming {
  hosts?: HostJudgeContext | undefined;
  /** The host label of the exchange's client (its session's initialize, else its User-Agent). */
  host?: string | undefined;
  /** An initialize named the client; the session keeps its host once the upstream accepts it. */
  noteHost?: ((host: string) => void) | undefined;
}

/**
 * The host label of a request: its own `_meta["io.modelcontextprotocol/clientInfo"]` (protocol 2026-07-28
 * has no initialize), an initialize's clientInfo (noted for the session), else the exchange's host. The value
 * is read only when the table has hosts (a request is parsed only when it may name its client).
 */
export function hostOfRequest(
  ctx: HostNaming,
  value: () => unknown,
  method: string | undefined,
): string | undefined {
  if (ctx.hosts === undefined) return undefined;
  const identity = clientIdentityOf(value(), method);
  if (identity === undefined) return ctx.host;
  const host = ctx.hosts.hosts.hostOf(identity.name);
  if (method === 'initialize') ctx.noteHost?.(host);
  return host;
}
