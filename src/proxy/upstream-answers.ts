// Answers the edge sends upstream on its own: the JSON-RPC error for a server-to-client request it dropped
// for its size, so the server does not wait forever for an answer that will never come.
import type { JsonRpcErrorMessage } from '../core/errors.js';
import { basicAuthorization, withoutCredentials } from '../core/url-credentials.js';
import type { EdgeContext } from './edge-context.js';
import type { Exchange } from './exchange.js';

export function answerUpstreamVia(
  ctx: Pick<EdgeContext, 'config' | 'log'>,
): (exchange: Exchange, messages: JsonRpcErrorMessage[]) => void {
  // fetch refuses a URL with credentials (and its error would name it): they go as Basic instead.
  const url = withoutCredentials(ctx.config.upstream.url);
  const authorization = basicAuthorization(ctx.config.upstream.url);
  return (exchange, messages) => {
    for (const message of messages) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      if (exchange.sessionId !== undefined) headers['mcp-session-id'] = exchange.sessionId;
      if (authorization !== undefined) headers.authorization = authorization;
      fetch(url, { method: 'POST', headers, body: JSON.stringify(message) })
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
