// The upstream seam: the shell takes any Upstream. A second kind, written here in a few lines over fetch,
// plugs in without touching the relays: its answers are measured and judged like the HTTP upstream's.
import { Readable } from 'node:stream';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { createEdgeServer } from '../../src/proxy/edge-server.js';
import { createLogger } from '../../src/run.js';
import type { Upstream } from '../../src/upstream/upstream.js';
import { connectV1Client } from '../support/clients.js';
import { trackHandles } from '../support/handles.js';
import { startV1Server } from '../support/sdk-v1-server.js';

const { track } = trackHandles();

/** An upstream reached with fetch: POST, GET and DELETE on the endpoint go to `target`, answers are streamed back. */
function fetchUpstream(target: string): Upstream & { exchanges: number } {
  const self: Upstream & { exchanges: number } = {
    label: 'fetch-upstream',
    publicName: 'fetch-upstream',
    exchanges: 0,
    handle(call) {
      self.exchanges++;
      const { method, headers: clientHeaders, body } = call.request;
      const headers: Record<string, string> = {};
      for (const name of ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version']) {
        const value = clientHeaders[name];
        if (typeof value === 'string') headers[name] = value;
      }
      fetch(target, { method, headers, ...(method === 'POST' ? { body } : {}) }).then(
        (res) => {
          const responseHeaders: Record<string, string> = {};
          res.headers.forEach((value, name) => {
            if (name !== 'content-length' && name !== 'transfer-encoding') responseHeaders[name] = value;
          });
          const stream = res.body ? Readable.fromWeb(res.body as never) : Readable.from([]);
          call.deliver({ statusCode: res.status, headers: responseHeaders, body: { kind: 'bytes', stream } });
        },
        (err: unknown) => call.fail('unreachable', String(err)),
      );
    },
    send() {},
    ready: async () => true,
  };
  return self;
}

describe('the upstream seam', () => {
  it('a second kind of upstream plugs in, and its oversized answer is refused by the same relay', async () => {
    const server = track(await startV1Server({ mode: 'json' }));
    const yaml = [
      'listen: { host: 127.0.0.1, port: 0, path: /mcp }',
      `upstream: { url: ${server.url} }`,
      'metrics: { enabled: false }',
      'limits: { response: { maxMessageBytes: 64KiB } }',
    ].join('\n');
    const { config } = parseConfigText(yaml, 'seam.yaml', {});
    const upstream = fetchUpstream(server.url);
    const edge = await createEdgeServer(config, { logger: createLogger('silent'), upstream });
    track({ close: () => edge.close() });
    const url = `${await edge.listen()}/mcp`;
    const { client } = track(await connectV1Client(url));
    const small = await client.callTool({ name: 'sized', arguments: { bytes: 1024 } });
    expect(JSON.stringify(small).length).toBeGreaterThan(1024);
    const refused = await client
      .callTool({ name: 'sized', arguments: { bytes: 100 * 1024 } })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).data).toMatchObject({ limit: 'response.maxMessageBytes', tool: 'sized' });
    expect(upstream.exchanges).toBeGreaterThanOrEqual(3);
  });
});
