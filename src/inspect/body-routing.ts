// What a client's request body means for routing on a stdio child (src/upstream/stdio-upstream.ts): the
// progress tokens its requests name (progress is routed by them), and whether it answers the server's
// requests or cancels requests, which on a tenant's shared child no one can attribute to a client. Read
// from the body's scan when it is judged (request-body.ts), so the body is read once.

import { idKey } from '../core/client-names.js';
import type { ScannedMessage } from '../core/message-scan.js';

export interface BodyRouting {
  /** `params._meta.progressToken` of its requests, as idKeys. */
  progressTokens: Set<string>;
  /** It carries a JSON-RPC response (an answer to a request of the server's). */
  answersServer: boolean;
  /** The request ids its notifications/cancelled name, as idKeys. */
  cancelled: string[];
}

/** A body's routing facts, from its messages as judged (none of them invalid). */
export function bodyRouting(messages: readonly ScannedMessage[]): BodyRouting {
  const routing: BodyRouting = { progressTokens: new Set(), answersServer: false, cancelled: [] };
  for (const { classified, params } of messages) {
    if (classified.kind === 'result' || classified.kind === 'error') routing.answersServer = true;
    if (classified.method === 'notifications/cancelled') {
      const id = params?.requestId;
      routing.cancelled.push(typeof id === 'string' || typeof id === 'number' ? idKey(id) : '');
    }
    const token = params?.progressToken;
    if (typeof token === 'string' || typeof token === 'number') routing.progressTokens.add(idKey(token));
  }
  return routing;
}
