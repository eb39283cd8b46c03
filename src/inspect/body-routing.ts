// What a client's request body means for routing on a stdio child (src/upstream/stdio-upstream.ts): the
// progress tokens its requests name (progress is routed by them), and whether it answers the server's
// requests or cancels requests, which on a tenant's shared child no one can attribute to a client.

import { isRecord } from '../core/bytes.js';
import { idKey } from './pending-requests.js';

export interface BodyRouting {
  /** `params._meta.progressToken` of its requests, as idKeys. */
  progressTokens: Set<string>;
  /** It carries a JSON-RPC response (an answer to a request of the server's). */
  answersServer: boolean;
  /** The request ids its notifications/cancelled name, as idKeys. */
  cancelled: string[];
}

const MARKERS = ['"progressToken"', '"result"', '"error"', 'notifications/cancelled'];

/** Reads a body the body reader has judged already; one it cannot read routes nothing. */
export function bodyRouting(body: Buffer): BodyRouting {
  const routing: BodyRouting = { progressTokens: new Set(), answersServer: false, cancelled: [] };
  if (!MARKERS.some((marker) => body.includes(marker))) return routing;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return routing;
  }
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    if (!isRecord(message)) continue;
    if (message.method === undefined && (Object.hasOwn(message, 'result') || Object.hasOwn(message, 'error')))
      routing.answersServer = true;
    if (message.method === 'notifications/cancelled') {
      const id = isRecord(message.params) ? message.params.requestId : undefined;
      routing.cancelled.push(typeof id === 'string' || typeof id === 'number' ? idKey(id) : '');
    }
    const meta =
      isRecord(message.params) && isRecord(message.params._meta) ? message.params._meta : undefined;
    const token = meta?.progressToken;
    if (typeof token === 'string' || typeof token === 'number') routing.progressTokens.add(idKey(token));
  }
  return routing;
}
