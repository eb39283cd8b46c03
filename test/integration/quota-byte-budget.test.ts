// The byte-budget contract through real edges and a real upstream answering 100 KB: whatever the concurrency,
// the batching or the number of replicas, the bytes delivered in a window never exceed the budget plus one
// answer (responseBytes), and the bytes forwarded never exceed the budget plus one request (requestBytes).
import { describe, expect, it } from 'vitest';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { jsonReply, parseJsonBody, type RawRequest, startRawUpstream } from '../support/raw-upstream.js';
import { startRedis } from '../support/redis.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

/** What each call answers: a text of this many characters (its JSON-RPC message is a little longer). */
const ANSWER_TEXT = 100_000;
const BUDGET = 200_000;
/** What one call sends: arguments of this many characters. */
const REQUEST_TEXT = 100_000;

interface Rpc {
  id?: unknown;
  method?: string;
  result?: unknown;
  error?: unknown;
}

/**
 * A raw upstream that answers each tools/call (alone or in a batch) with 100 KB of text, 150 ms after it
 * arrives, so that concurrent calls are all in flight together.
 */
async function hundredKbUpstream() {
  return startRawUpstream(async (req) => {
    const body = parseJsonBody(req);
    const answer = (m: Rpc) => ({
      jsonrpc: '2.0',
      id: m.id ?? null,
      result: { content: [{ type: 'text', text: 'x'.repeat(ANSWER_TEXT) }] },
    });
    const reply = jsonReply(Array.isArray(body) ? (body as Rpc[]).map(answer) : answer(body as Rpc));
    return { ...reply, chunks: [{ delayMs: 150 }, ...(reply.chunks ?? [])] };
  });
}

const call = (id: string, text = 'hi') => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'fetch', arguments: { text } },
});

/** Posts `body`; returns the HTTP status and the bytes of each result the client got (as serialized JSON). */
async function post(url: string, body: unknown): Promise<{ status: number; answers: number[] }> {
  const res = await fetch(url, { method: 'POST', headers: MCP_POST_HEADERS, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, answers: [] };
  const parsed = JSON.parse(text) as Rpc | Rpc[];
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  return {
    status: res.status,
    answers: messages.filter((m) => m.result !== undefined).map((m) => Buffer.byteLength(JSON.stringify(m))),
  };
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

/** The bytes of the tools/call messages the upstream received. */
function forwardedCallBytes(received: readonly RawRequest[]): number {
  let bytes = 0;
  for (const request of received) {
    const body = parseJsonBody(request);
    for (const message of (Array.isArray(body) ? body : [body]) as Rpc[])
      if (message?.method === 'tools/call') bytes += Buffer.byteLength(JSON.stringify(message));
  }
  return bytes;
}

/** Figures the closing note quotes. */
function report(what: string, figures: Record<string, unknown>): void {
  process.stdout.write(`[byte budget] ${what}: ${JSON.stringify(figures)}\n`);
}

const rule = (measure: 'responseBytes' | 'requestBytes', store = 'memory') =>
  `quotas:\n  store: ${store}\n  storeTimeout: 2s\n  rules:\n    - { name: bytes, window: 1m, ${measure}: 200KB }`;

/** 20 calls at once, spread over `edges` in turn: the bytes delivered, and the statuses. */
async function concurrentCalls(edges: readonly TestEdge[], text?: string) {
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => post(edges[i % edges.length]!.url, call(`c${i}`, text))),
  );
  return {
    delivered: sum(results.flatMap((r) => r.answers)),
    answered: results.filter((r) => r.status === 200).length,
    refused: results.filter((r) => r.status === 429).length,
    other: results.filter((r) => r.status !== 200 && r.status !== 429).length,
  };
}

/** One batch of 30 calls. */
async function batchOfThirty(edge: TestEdge, text?: string) {
  const result = await post(
    edge.url,
    Array.from({ length: 30 }, (_, i) => call(`b${i}`, text)),
  );
  return { status: result.status, delivered: sum(result.answers), answered: result.answers.length };
}

/** The most bytes the contract lets through: the budget and one answer (or request). */
const BOUND = BUDGET + ANSWER_TEXT + 200;

describe('responseBytes: 200KB, answers of 100 KB', () => {
  it('a batch of 30 calls delivers at most the budget plus one answer: refused whole, the budget left whole', async () => {
    const upstream = track(await hundredKbUpstream());
    const edge = track(await startTestEdge(upstream.url, rule('responseBytes')));
    const batch = await batchOfThirty(edge);
    const after = await post(edge.url, call('after'));
    report('memory store, batch of 30, responseBytes 200KB', { batch, after: after.status });
    expect(batch.delivered).toBeLessThanOrEqual(BOUND);
    // Its 30 answers could take 30 ceilings: refused whole, and nothing of it was charged.
    expect(batch.status).toBe(429);
    expect(after.status).toBe(200);
  });

  it('20 concurrent calls deliver at most the budget plus one answer, and so do the calls after them', async () => {
    const upstream = track(await hundredKbUpstream());
    const edge = track(await startTestEdge(upstream.url, rule('responseBytes')));
    const concurrent = await concurrentCalls([edge]);
    // One after another until refused: the budget is used, never passed by more than one answer.
    let after = 0;
    let status = 200;
    for (let i = 0; i < 5 && status === 200; i++) {
      const result = await post(edge.url, call(`after${i}`));
      status = result.status;
      after += sum(result.answers);
    }
    report('memory store, 20 concurrent, responseBytes 200KB', { concurrent, after });
    expect(concurrent.delivered).toBeLessThanOrEqual(BOUND);
    expect(concurrent.answered).toBeGreaterThanOrEqual(1);
    expect(concurrent.other).toBe(0);
    expect(status).toBe(429);
    expect(concurrent.delivered + after).toBeLessThanOrEqual(BOUND);
    expect(concurrent.delivered + after).toBeGreaterThanOrEqual(BUDGET);
  });

  it("with the tool's answers held to 110KB, two calls run at once, in a batch or concurrent, and no third", async () => {
    const upstream = track(await hundredKbUpstream());
    const yaml = `${rule('responseBytes')}\nlimits:\n  tools:\n    fetch: { response: { maxMessageBytes: 110KB } }`;
    const batchEdge = track(await startTestEdge(upstream.url, yaml));
    const two = await post(batchEdge.url, [call('b0'), call('b1')]);
    const third = await post(batchEdge.url, call('b2'));
    const concurrentEdge = track(await startTestEdge(upstream.url, yaml));
    const concurrent = await concurrentCalls([concurrentEdge]);
    report('memory store, answers held to 110KB, responseBytes 200KB', {
      batchOfTwo: { status: two.status, delivered: sum(two.answers) },
      third: third.status,
      concurrent,
    });
    expect(two.status).toBe(200);
    expect(two.answers).toHaveLength(2);
    expect(third.status).toBe(429);
    // Two reservations of 110KB: the second crosses the budget; a third would not fit before both settle, and
    // after they do, 200 KB are delivered.
    expect(concurrent.answered).toBe(2);
    expect(concurrent.delivered).toBeLessThanOrEqual(BOUND);
  });

  it('two edges sharing one Redis hold the same bound for a batch and for 20 concurrent calls spread over both', async () => {
    const redis = track(await startRedis());
    const upstream = track(await hundredKbUpstream());
    const yaml = rule('responseBytes', redis.url);
    const edges = [
      track(await startTestEdge(upstream.url, yaml)),
      track(await startTestEdge(upstream.url, yaml)),
    ];
    const batch = await batchOfThirty(edges[0]!);
    const concurrent = await concurrentCalls(edges);
    report('2 edges, 1 Redis, responseBytes 200KB', { batch, concurrent });
    expect(batch.delivered + concurrent.delivered).toBeLessThanOrEqual(BOUND);
    expect(batch.status).toBe(429);
    expect(concurrent.answered).toBeGreaterThanOrEqual(1);
    expect(concurrent.other).toBe(0);
  });
});

describe('requestBytes: 200KB, calls of 100 KB', () => {
  it('a batch of 30 calls, then 20 concurrent calls, forward at most the budget plus one request', async () => {
    const upstream = track(await hundredKbUpstream());
    const edge = track(await startTestEdge(upstream.url, rule('requestBytes')));
    const text = 'y'.repeat(REQUEST_TEXT);
    const batch = await batchOfThirty(edge, text);
    const concurrent = await concurrentCalls([edge], text);
    const forwarded = forwardedCallBytes(upstream.received);
    report('memory store, requestBytes 200KB', { batch: batch.status, concurrent, forwarded });
    expect(batch.status).toBe(429);
    expect(forwarded).toBeLessThanOrEqual(BOUND);
    expect(forwarded).toBeGreaterThan(0);
    expect(concurrent.other).toBe(0);
  });

  it('two edges sharing one Redis hold the same bound', async () => {
    const redis = track(await startRedis());
    const upstream = track(await hundredKbUpstream());
    const yaml = rule('requestBytes', redis.url);
    const edges = [
      track(await startTestEdge(upstream.url, yaml)),
      track(await startTestEdge(upstream.url, yaml)),
    ];
    const text = 'y'.repeat(REQUEST_TEXT);
    const batch = await batchOfThirty(edges[0]!, text);
    const concurrent = await concurrentCalls(edges, text);
    const forwarded = forwardedCallBytes(upstream.received);
    report('2 edges, 1 Redis, requestBytes 200KB', { batch: batch.status, concurrent, forwarded });
    expect(batch.status).toBe(429);
    expect(forwarded).toBeLessThanOrEqual(BOUND);
    expect(forwarded).toBeGreaterThan(0);
    expect(concurrent.other).toBe(0);
  });
});
