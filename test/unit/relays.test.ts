// The body reader and the response relays without Fastify: a node:http server on 127.0.0.1 hands its
// response to a relay, the upstream's body is a real stream the test writes, and the client reads the bytes.
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { type Exchange, runtimeOf, startExchange } from '../../src/exchange/exchange.js';
import { SessionStore } from '../../src/inspect/session-store.js';
import { type BodyDone, readBoundedBody } from '../../src/proxy/body-reader.js';
import { ClientResponse } from '../../src/proxy/client-response.js';
import type { EdgeError } from '../../src/proxy/edge-error.js';
import { filterChainOf } from '../../src/proxy/filters/chosen.js';
import { HeldBytes } from '../../src/proxy/held-bytes.js';
import { relayResponse, upstreamFailed } from '../../src/proxy/response-relay.js';
import { SilenceWatch } from '../../src/proxy/silence-watch.js';
import { UntrustedHeaderLog } from '../../src/tenancy/untrusted-header-log.js';
import { httpUpstream } from '../../src/upstream/http-upstream.js';

const { config } = parseConfigText(
  [
    'upstream: { url: http://127.0.0.1:9/mcp, timeouts: { body: 300ms, answerStream: 300ms } }',
    'limits: { request: { maxBodyBytes: 200 }, response: { maxMessageBytes: 300 } }',
  ].join('\n'),
  'edge.yaml',
  {},
);
const warnings: string[] = [];
const errors: string[] = [];
const log = {
  warn: (_fields: object, message: string) => warnings.push(message),
  error: (_fields: object, message: string) => errors.push(message),
};
const silentLogger = { warn() {}, info() {}, error() {}, debug() {}, child: () => silentLogger };

/** The edge's own filters (the ceilings among them), as createEdgeServer chooses them. */
const edgeFilters = filterChainOf({ config, metrics: undefined, log: silentLogger as never });

function context() {
  return {
    config,
    log: silentLogger as never,
    filters: edgeFilters,
    sessions: new SessionStore(),
    upstream: httpUpstream(config, silentLogger as never),
    answerSilence: new SilenceWatch(config.upstream.timeouts.answerStream),
    bodySilence: new SilenceWatch(config.upstream.timeouts.body),
    untrustedHeaders: new UntrustedHeaderLog(silentLogger as never),
    held: new HeldBytes(),
  };
}

const call = (id: number, tool = 'echo') =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: {} } });

/** A new exchange whose request body (a tools/call with `id`) went through the body reader. */
async function exchangeWithCall(ctx: ReturnType<typeof context>, id: number): Promise<Exchange> {
  const exchange = startExchange(runtimeOf(config), 'default', undefined, edgeFilters);
  const result = await readBody(ctx, exchange, { 'content-type': 'application/json' }, [call(id)]);
  expect(result.refusal).toBeUndefined();
  return exchange;
}

function readBody(
  ctx: ReturnType<typeof context>,
  exchange: Exchange,
  headers: Record<string, string>,
  chunks: Iterable<string> | Readable,
): Promise<{ refusal: EdgeError | undefined; body: Buffer | undefined }> {
  const payload = chunks instanceof Readable ? chunks : Readable.from([...chunks].map((c) => Buffer.from(c)));
  return new Promise((resolve) => {
    const done: BodyDone = (refusal, body) => resolve({ refusal, body });
    readBoundedBody(ctx, { method: 'POST', exchange, headers, sendContinue: undefined }, payload, done);
  });
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let port = 0;
/** What the next request to the test server does with its response. */
let onRequest: (res: import('node:http').ServerResponse, method: string) => void = () => {};

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    onRequest(res, req.method ?? 'POST');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function fetchAnswer(method = 'POST', onFirstBytes?: (res: IncomingMessage) => void): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path: '/mcp' }, (res) => {
      onFirstBytes?.(res);
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString() }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** Serves the next request by relaying `source` as the upstream's answer (status, content type). */
function relayNext(
  ctx: ReturnType<typeof context>,
  exchange: Exchange,
  source: Readable,
  status: number,
  contentType: string,
  /** `source` is object-mode MessageEvents (a stdio child's answer), not bytes. */
  messages = false,
): void {
  onRequest = (res, method) => {
    res.setHeader('content-type', contentType);
    const client = new ClientResponse(res, method, log, { beforeStart: () => (res.statusCode = status) });
    relayResponse(ctx, exchange, client, {
      statusCode: status,
      headers: { 'content-type': contentType },
      body: messages ? { kind: 'messages', events: source } : { kind: 'bytes', stream: source },
    });
  };
}

describe('the body reader', () => {
  it('reads a body within its ceiling, judges it, and remembers the call it carries', async () => {
    const ctx = context();
    const exchange = startExchange(runtimeOf(config), 'default', undefined, edgeFilters);
    const body = call(7);
    const result = await readBody(ctx, exchange, { 'content-type': 'application/json' }, [
      body.slice(0, 10),
      body.slice(10),
    ]);
    expect(result.refusal).toBeUndefined();
    expect(result.body?.toString()).toBe(body);
    expect(exchange.requestBytes).toBe(body.length);
    expect(exchange.pending.ids()).toEqual([7]);
  });

  it('refuses a declared length over the ceiling with a 413 before reading it', async () => {
    const ctx = context();
    const exchange = startExchange(runtimeOf(config), 'default', undefined, edgeFilters);
    const payload = new PassThrough();
    const result = await readBody(
      ctx,
      exchange,
      { 'content-type': 'application/json', 'content-length': '5000' },
      payload,
    );
    expect(result.refusal?.answer.status).toBe(413);
    expect(result.refusal?.answer.headers.connection).toBe('close');
    payload.destroy();
  });

  it('refuses a body that outgrows the ceiling while read, for the id it named first', async () => {
    const ctx = context();
    const exchange = startExchange(runtimeOf(config), 'default', undefined, edgeFilters);
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 42,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'x'.repeat(400) } },
    });
    const result = await readBody(ctx, exchange, { 'content-type': 'application/json' }, [
      big.slice(0, 100),
      big.slice(100),
    ]);
    expect(result.refusal?.answer.status).toBe(413);
    expect(JSON.parse(result.refusal?.answer.body ?? '{}')).toMatchObject({ id: 42 });
  });

  it('answers a body that breaks off with a 400, and a body that is not JSON with a 415', async () => {
    const ctx = context();
    const broken = new PassThrough();
    const pending = readBody(
      ctx,
      startExchange(runtimeOf(config), 'default', undefined, edgeFilters),
      { 'content-type': 'application/json' },
      broken,
    );
    broken.write('{"jsonrpc"');
    broken.destroy(new Error('aborted'));
    expect((await pending).refusal?.answer.status).toBe(400);
    const text = await readBody(
      ctx,
      startExchange(runtimeOf(config), 'default', undefined, edgeFilters),
      { 'content-type': 'text/plain' },
      ['hello'],
    );
    expect(text.refusal?.answer.status).toBe(415);
  });
});

describe('the JSON relay', () => {
  it('forwards a body within its ceiling byte for byte, with the upstream status', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 1);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'application/json');
    const answer = fetchAnswer();
    const body = '{"jsonrpc":"2.0","id":1,  "result":{"content":[{"type":"text","text":"é"}]}}';
    const bytes = Buffer.from(body);
    source.write(bytes.subarray(0, 30));
    source.end(bytes.subarray(30));
    const got = await answer;
    expect(got.status).toBe(200);
    expect(got.body).toBe(body);
    expect(Number(got.headers['content-length'])).toBe(bytes.length);
    expect(got.headers['content-type']).toBe('application/json');
  });

  it('replaces a body over its ceiling with the limit error for the id, and stops reading it', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 2);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'application/json');
    const answer = fetchAnswer();
    source.write(`{"jsonrpc":"2.0","id":2,"result":{"text":"${'y'.repeat(400)}`);
    const got = await answer;
    expect(got.status).toBe(200);
    const error = JSON.parse(got.body) as {
      id: number;
      error: { code: number; data: Record<string, unknown> };
    };
    expect(error.id).toBe(2);
    expect(error.error.data).toMatchObject({ observedBytesIsLowerBound: true });
    expect(source.destroyed).toBe(true);
  });

  it('answers a body that stalls with a 504 for the id', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 3);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'application/json');
    const answer = fetchAnswer();
    source.write('{"jsonrpc":"2.0","id":3,');
    const got = await answer;
    expect(got.status).toBe(504);
    expect(JSON.parse(got.body)).toMatchObject({ id: 3 });
    expect(exchange.outcome).toBe('upstream_timeout');
  });
});

describe('the JSON relay, over an answer made of messages', () => {
  it('forwards the one message byte for byte, its pieces joined', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 5);
    const events = new PassThrough({ objectMode: true });
    relayNext(ctx, exchange, events, 200, 'application/json', true);
    const answer = fetchAnswer();
    const message = '{"jsonrpc":"2.0","id":5,"result":{"text":"done"}}';
    events.write({ kind: 'piece', bytes: Buffer.from(message.slice(0, 9)), last: false });
    events.write({ kind: 'piece', bytes: Buffer.from(message.slice(9)), last: true });
    events.end();
    const got = await answer;
    expect(got.status).toBe(200);
    expect(got.body).toBe(message);
  });

  it('answers a message cut short by its source with an error for the id, as a body that broke off', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 6);
    const events = new PassThrough({ objectMode: true });
    relayNext(ctx, exchange, events, 200, 'application/json', true);
    const answer = fetchAnswer();
    events.write({ kind: 'piece', bytes: Buffer.from('{"jsonrpc":"2.0","id":6,'), last: false });
    events.write({ kind: 'cut', detail: 'the MCP server exited' });
    const got = await answer;
    expect(got.status).toBe(502);
    expect(JSON.parse(got.body)).toMatchObject({ id: 6, error: {} });
    expect(events.destroyed).toBe(true);
  });
});

describe('the SSE relay', () => {
  const event = (id: number, text: string) =>
    `event: message\ndata: {"jsonrpc":"2.0","id":${id},"result":{"text":"${text}"}}\n\n`;

  it('forwards events byte for byte and ends the stream with the upstream', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 4);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'text/event-stream');
    const answer = fetchAnswer();
    const progress =
      'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n';
    source.write(progress.slice(0, 7));
    source.write(progress.slice(7));
    source.end(event(4, 'done'));
    const got = await answer;
    expect(got.status).toBe(200);
    expect(got.body).toBe(progress + event(4, 'done'));
    // A stream that ended by itself is not ended again by a shutdown that reaches it before its response closed.
    exchange.shutdownEnding?.end();
    expect(exchange.outcome).toBeUndefined();
  });

  it('sends the headers of a stream that stays silent, so the client sees it open', async () => {
    const ctx = context();
    const exchange = startExchange(runtimeOf(config), 'default', undefined, edgeFilters);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'text/event-stream');
    let headersSeen = false;
    const answer = fetchAnswer('GET', () => {
      headersSeen = true;
      source.end();
    });
    const got = await answer;
    expect(headersSeen).toBe(true);
    expect(got.body).toBe('');
  });

  it('replaces an answer over its ceiling with an error event for its id', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 5);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'text/event-stream');
    const answer = fetchAnswer();
    // The first part of a large event: the rest has yet to come.
    source.write(event(5, 'z'.repeat(500)).slice(0, 400));
    const got = await answer;
    const data = got.body
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as { id: number; error?: { data: Record<string, unknown> } });
    expect(data).toHaveLength(1);
    expect(data[0]?.id).toBe(5);
    expect(data[0]?.error?.data).toMatchObject({ observedBytesIsLowerBound: true });
    // Nothing else waits on this call's stream: the rest of the event is not read, nor waited for.
    expect(source.destroyed).toBe(true);
    expect(exchange.outcome).toBeUndefined();
  });

  it('ends a stream that broke off well-formed, with an error for the request still waiting', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 6);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'text/event-stream');
    const answer = fetchAnswer();
    source.write('event: message\ndata: {"jsonrpc":"2.0","id":6,"res');
    setTimeout(() => source.destroy(new Error('socket hang up')), 20);
    const got = await answer;
    expect(got.body.endsWith('\n\n')).toBe(true);
    const last = got.body.trim().split('\n').pop() ?? '';
    expect(JSON.parse(last.slice('data: '.length))).toMatchObject({
      id: 6,
      error: { code: expect.any(Number) },
    });
    expect(exchange.outcome).toBe('upstream_stream_failed');
    expect(warnings).toContain('upstream SSE stream failed');
  });
});

describe('an exchange that shutdown ends', () => {
  const progressWithId =
    'id: e1\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n';

  /** The JSON-RPC messages of an SSE body, in order. */
  const messagesOf = (body: string) =>
    body
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>);

  it('a stream with event ids that broke off is left to the client, which resumes through the edge', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 11);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'text/event-stream');
    const answer = fetchAnswer();
    source.write(progressWithId);
    setTimeout(() => source.destroy(new Error('socket hang up')), 20);
    const got = await answer;
    expect(messagesOf(got.body)).toEqual([expect.objectContaining({ method: 'notifications/progress' })]);
    expect(exchange.outcome).toBe('upstream_stream_failed');
  });

  it('the same stream ended by shutdown gets the shutdown error for its id: no one resumes through an edge that exits', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 12);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'text/event-stream');
    const answer = fetchAnswer('POST', (res) => res.once('data', () => exchange.shutdownEnding?.end()));
    source.write(progressWithId);
    const got = await answer;
    const messages = messagesOf(got.body);
    expect(messages).toHaveLength(2);
    expect(messages[1]).toMatchObject({
      id: 12,
      error: { code: -32603, data: { reason: 'shutting_down', enforcedBy: 'mcp-edge' } },
    });
    expect(exchange.shutdownEnding?.stream).toBe(true);
    expect(exchange.outcome).toBe('shutdown');
    expect(source.destroyed).toBe(true);
  });

  it('a JSON answer still held is answered 503 with the shutdown error for its id', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 13);
    const source = new PassThrough();
    relayNext(ctx, exchange, source, 200, 'application/json');
    const answer = fetchAnswer();
    source.write('{"jsonrpc":"2.0","id":13,"result":{"te');
    // The relay holds the half answer: shutdown reaches it.
    while (ctx.held.total === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    exchange.shutdownEnding?.end();
    const got = await answer;
    expect(got.status).toBe(503);
    expect(got.headers.connection).toBe('close');
    expect(JSON.parse(got.body)).toMatchObject({
      id: 13,
      error: { code: -32603, data: { reason: 'shutting_down', enforcedBy: 'mcp-edge' } },
    });
    expect(exchange.shutdownEnding?.stream).toBe(false);
    expect(exchange.outcome).toBe('shutdown');
    expect(source.destroyed).toBe(true);
  });
});

describe('an upstream that could not answer', () => {
  it('gets the client a 502 for the id it waits on', async () => {
    const ctx = context();
    const exchange = await exchangeWithCall(ctx, 8);
    onRequest = (res, method) =>
      upstreamFailed(ctx, exchange, new ClientResponse(res, method, log), 'unreachable', 'ECONNREFUSED');
    const got = await fetchAnswer();
    expect(got.status).toBe(502);
    expect(JSON.parse(got.body)).toMatchObject({ id: 8 });
    expect(exchange.outcome).toBe('upstream_unreachable');
  });
});
