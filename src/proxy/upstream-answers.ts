// Answers the edge sends upstream on its own: the JSON-RPC error for a server-to-client request it dropped
// for its size, so the server does not wait forever for an answer that will never come.
import type { JsonRpcErrorMessage } from '../core/errors.js';
import type { EdgeContext } from './edge-context.js';
import type { Exchange } from './exchange.js';

export function answerUpstreamVia(
  ctx: Pick<EdgeContext, 'config' | 'log'>,
): (exchange: Exchange, messages: JsonRpcErrorMessage[]) => void {
  return (exchange, messages) => {
    for (const message of messages) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      if (exchange.sessionId !== undefined) headers['mcp-session-id'] = exchange.sessionId;
      fetch(ctx.config.upstream.url, { method: 'POST', headers, body: JSON.stringify(message) })
        .then((res) => res.body?.cancel())
        .catch((err: unknown) =>
          ctx.log.warn(
            { err: String(err), tenant: exchange.tenant },
            'could not answer a dropped server request upstream',
          ),
        );
    }
  };
}
