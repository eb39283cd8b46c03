// One exchange never ends the process (issue 23, item 2): a Host no URL can carry is a 400 at admission,
// whatever the edge's own code throws while serving one exchange ends that exchange only (answered, or its
// connection closed, and logged at error level), and the edge keeps serving the others.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { createEdgeServer } from '../../src/proxy/edge-server.js';
import { createLogger } from '../../src/run.js';
import { READINESS_PING } from '../../src/upstream/http-readiness.js';
import type { Upstream } from '../../src/upstream/upstream.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { spawnTsx } from '../support/processes.js';
import { rawRequest } from '../support/raw-http.js';
import { jsonReply, type RawRequest, startRawUpstream } from '../support/raw-upstream.js';
import { capturedLog, startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

const PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
const JSON_TYPE = { 'content-type': 'application/json' };
const SSE_TYPE = { 'content-type': 'text/event-stream' };

/** A POST of `PING` with exactly this Host, over a raw socket (no client library would send these Hosts). */
function postWithHost(url: string, host: string, extra = '') {
  return rawRequest(
    url,
    [
      `POST /mcp HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\n${extra}Content-Length: ${PING.length}\r\n` +
        `Connection: close\r\n\r\n${PING}`,
    ],
    // The edge closes the connection once it has answered; this is only the bound on a loaded machine.
    30_000,
  );
}

/** An OAuth-protected MCP server: 401 with a challenge unless the request carries a token. */
function protectedUpstream(req: RawRequest) {
  if (req.headers.authorization === undefined) {
    return {
      status: 401,
      headers: {
        'content-type': 'application/json',
        // The edge rewrites this URL (on the upstream's origin) to its own: the code that threw on a bad Host.
        'www-authenticate': `Bearer resource_metadata="http://${req.headers.host}/.well-known/oauth-protected-resource/mcp"`,
      },
      chunks: ['{"error":"invalid_token"}'],
    };
  }
  return jsonReply({ jsonrpc: '2.0', id: 1, result: {} });
}

describe('a Host no URL can carry', () => {
  it('is a 400 at admission, never reaches the upstream, and the edge process (the CLI, default config) serves on', async () => {
    const upstream = track(await startRawUpstream(protectedUpstream));
    // The CLI's defaults: OAuth discovery on, no server.publicUrl, no server.allowedHosts.
    const edge = spawnTsx('src/cli.ts', ['--upstream', upstream.url, '--port', '0', '--metrics-port', '0']);
    track({ stop: () => edge.stop() });
    // Starting a CLI process takes seconds on a loaded machine: the wait is for the line, not a clock.
    const [, url] = await edge.waitForLine(/mcp-edge serving (http:\/\/[^"\s]+)/, { timeoutMs: 90_000 });
    const port = new URL(url!).port;

    for (const badHost of ['a:99999', '[1.2.3.4]', '127.0.0.1:65536']) {
      const refused = await postWithHost(url!, badHost);
      expect(refused.status, `${badHost}\n${edge.stderr()}`).toBe(400);
      const body = JSON.parse(refused.response.slice(refused.response.indexOf('\r\n\r\n') + 4));
      expect(body).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, data: { reason: 'invalid_request', enforcedBy: 'mcp-edge' } },
      });
      expect(body.error.message).toContain(`Host "${badHost}" is not a valid host[:port]`);
    }
    // The edge's own readiness ping at start (src/upstream/http-readiness.ts) is not a client's request.
    expect(upstream.received.filter((r) => r.body.toString() !== READINESS_PING)).toHaveLength(0);

    // The same edge still answers: the upstream's challenge, rewritten to name the edge, then the call.
    const challenged = await postWithHost(url!, `127.0.0.1:${port}`);
    expect(challenged.status).toBe(401);
    expect(challenged.response).toContain(
      `resource_metadata="http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp"`,
    );
    const answered = await postWithHost(url!, `127.0.0.1:${port}`, 'Authorization: Bearer t\r\n');
    expect(answered.status).toBe(200);
    expect(answered.response).toContain('"result":{}');
    expect(edge.exit()).toBeUndefined();
    expect(edge.stderr()).not.toContain('Invalid URL');
  }, 180_000);
});

describe('an exception while serving one exchange', () => {
  /**
   * An upstream of another kind (the seam of src/upstream/upstream.ts) with two defects: on `x-defect: header`
   * it hands the shell a header value node:http refuses (it throws when the edge writes the status line); on
   * `x-defect: chunk` its SSE stream yields, after a first event, a chunk that is not bytes (the SSE framer
   * throws in the stream's 'data' listener). Anything else is answered normally.
   */
  function defectiveUpstream(): Upstream & { released: Readable[]; pushDefect(): void } {
    const released: Readable[] = [];
    let streaming: Readable | undefined;
    return {
      label: 'defective',
      publicName: 'defective',
      released,
      pushDefect: () => streaming?.push({ not: 'bytes' }),
      send() {},
      ready: async () => true,
      handle(call) {
        const defect = call.request.headers['x-defect'];
        if (defect === 'header') {
          const stream = Readable.from([Buffer.from('{"jsonrpc":"2.0","id":1,"result":{}}')]);
          released.push(stream);
          const headers = { 'content-type': 'application/json', 'x-trace': 'a\u0001b' };
          call.deliver({ statusCode: 200, headers, body: { kind: 'bytes', stream } });
        } else if (defect === 'chunk') {
          // The defect comes once the client has the first event (pushDefect).
          streaming = new Readable({ objectMode: true, read() {} });
          streaming.push(
            Buffer.from('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/x"}\n\n'),
          );
          call.deliver({ statusCode: 200, headers: SSE_TYPE, body: { kind: 'bytes', stream: streaming } });
        } else {
          const stream = Readable.from([Buffer.from('{"jsonrpc":"2.0","id":1,"result":{}}')]);
          call.deliver({ statusCode: 200, headers: JSON_TYPE, body: { kind: 'bytes', stream } });
        }
      },
    };
  }

  it('ends that exchange (a 500, or its connection closed), is logged at error level, and the edge serves on', async () => {
    const { config } = parseConfigText(
      'listen: { host: 127.0.0.1, port: 0, path: /mcp }\nupstream: { url: http://127.0.0.1:9/mcp }\nmetrics: { enabled: false }',
      'defects.yaml',
      {},
    );
    const upstream = defectiveUpstream();
    const log = capturedLog();
    const edge = await createEdgeServer(config, { logger: createLogger('info', log.sink), upstream });
    track({ close: () => edge.close() });
    const url = `${await edge.listen()}/mcp`;
    const post = (defect?: string) =>
      fetch(url, {
        method: 'POST',
        headers: { ...MCP_POST_HEADERS, ...(defect !== undefined ? { 'x-defect': defect } : {}) },
        body: PING,
      });

    // Nothing was sent yet: the client gets the edge's 500, and what the upstream handed over is let go.
    const failed = await post('header');
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({
      jsonrpc: '2.0',
      error: { code: -32603, data: { reason: 'edge_failure', enforcedBy: 'mcp-edge' } },
    });
    expect(failed.headers.get('x-trace')).toBeNull();
    expect(upstream.released[0]?.destroyed).toBe(true);

    // The answer had begun: it cannot be completed well-formed, so its connection closes.
    const cut = await post('chunk');
    expect(cut.status).toBe(200);
    const reader = cut.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('notifications/x');
    upstream.pushDefect();
    const drain = async () => {
      while (!(await reader.read()).done) {}
    };
    await expect(drain()).rejects.toThrow('terminated');

    const fine = await post();
    expect(fine.status).toBe(200);
    expect(await fine.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });

    const errors = log.records().filter((line) => line.level === 50);
    expect(errors.map((line) => line.msg)).toEqual([
      'mcp-edge failed while serving an exchange; it ends here, the edge serves on',
      'mcp-edge failed while serving an exchange; it ends here, the edge serves on',
    ]);
    expect(errors.map((line) => (line.err as { code?: string }).code)).toEqual([
      'ERR_INVALID_CHAR',
      'ERR_INVALID_ARG_TYPE',
    ]);
    const outcomes = log
      .records()
      .filter((line) => line.msg === 'exchange')
      .map((line) => [line.status, line.outcome]);
    expect(outcomes).toEqual([
      [500, 'edge_failure'],
      [200, 'edge_failure'],
      [200, 'forwarded'],
    ]);
  });
});

describe('protected-resource metadata nested thousands deep', () => {
  it('gets a bounded, clear 502 instead of a 500 from re-serializing it, and the edge serves on', async () => {
    const deep = `{"resource":"http://upstream/mcp","x":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    const upstream = track(
      await startRawUpstream((req) =>
        req.url.startsWith('/.well-known/oauth-protected-resource')
          ? jsonReply(req.url.endsWith('?depth=deep') ? deep : '{"resource":"http://upstream/mcp"}')
          : jsonReply({ jsonrpc: '2.0', id: 1, result: {} }),
      ),
    );
    const edge = track(await startTestEdge(upstream.url, 'server: { exposeUpstreamErrors: true }'));
    const metadataUrl = `${new URL(edge.url).origin}/.well-known/oauth-protected-resource/mcp`;

    const refused = await fetch(`${metadataUrl}?depth=deep`);
    expect(refused.status).toBe(502);
    expect(await refused.json()).toMatchObject({
      error: {
        message: expect.stringContaining('the protected-resource metadata is nested deeper than 64 levels'),
        data: { reason: 'upstream_failed', enforcedBy: 'mcp-edge' },
      },
    });
    const plain = await fetch(metadataUrl);
    expect(await plain.json()).toEqual({ resource: `${new URL(edge.url).origin}/mcp` });
  });
});
