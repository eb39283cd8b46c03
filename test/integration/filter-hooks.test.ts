// The exchange filter chain's hooks through a real edge: a filter that refuses a request before it goes
// upstream, one that sets a header on the upstream request, one that watches what became of each answer, and
// one that throws (logged under its name; the exchange goes on).
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { edgeAnswer } from '../../src/core/refusals/answers.js';
import type { JudgedMessage } from '../../src/inspect/message-verdict.js';
import type { ExchangeFilter } from '../../src/proxy/filters/exchange-filter.js';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { jsonReply, parseJsonBody, sseEvent, sseReply, startRawUpstream } from '../support/raw-upstream.js';
import { startTestEdge, testEdgeYaml } from '../support/start-edge.js';

const { track } = trackHandles();

const call = (id: number | string, tool: string) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: {} } });

/** An upstream that answers each tools/call with a text result of `size` characters for tool "big", else "ok". */
async function sizedUpstream(framing: 'json' | 'sse') {
  return startRawUpstream((req) => {
    const message = parseJsonBody(req) as { id: unknown; params: { name: string } };
    const text = message.params.name === 'big' ? 'x'.repeat(4096) : 'ok';
    const answer = { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text }] } };
    return framing === 'json' ? jsonReply(answer) : sseReply([sseEvent({ data: answer })]);
  });
}

describe('the request hook', () => {
  it('refuses an exchange before it goes upstream, with the request id and the answer headers (Retry-After)', async () => {
    const upstream = track(await sizedUpstream('json'));
    const seen: unknown[] = [];
    const quota: ExchangeFilter = {
      name: 'test-quota',
      request(_exchange, request) {
        seen.push({ batch: request.batch, bytes: request.bytes, messages: request.messages });
        const first = request.messages[0];
        if (first?.tool !== 'expensive') return undefined;
        // A filter names a refusal of the table and its facts; the table words it and sets its status.
        const used = { rule: 'test', window: '1m', measure: 'requests' as const, limit: 1, used: 1 };
        const facts = { ...used, retryAfterSeconds: 7, tenant: 'default', tool: first.tool };
        return edgeAnswer('quota_exceeded', { quota: facts }, first.id ?? null);
      },
    };
    const edge = track(await startTestEdge(upstream.url, '', { filters: [quota] }));

    const body = call('call-42', 'expensive');
    const refused = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('7');
    expect(await refused.json()).toMatchObject({
      id: 'call-42',
      error: {
        message: expect.stringContaining('Quota "test" is used up for tenant "default", tool "expensive"'),
        data: { reason: 'quota_exceeded', rule: 'test', retryAfterSeconds: 7, enforcedBy: 'mcp-edge' },
      },
    });
    expect(upstream.received).toHaveLength(0);
    expect(seen).toEqual([
      {
        batch: false,
        bytes: Buffer.byteLength(body),
        messages: [
          {
            kind: 'request',
            id: 'call-42',
            method: 'tools/call',
            tool: 'expensive',
            bytes: Buffer.byteLength(body),
            continues: false,
          },
        ],
      },
    ]);

    // Another tool goes through, and the refused exchange was logged with the refusal's outcome.
    const ok = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: call(2, 'cheap') });
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    expect(upstream.received).toHaveLength(1);
    const lines = edge.logs.filter((line) => line.msg === 'exchange');
    expect(lines.map((line) => [line.status, line.outcome])).toEqual([
      [429, 'refused'],
      [200, 'forwarded'],
    ]);
  });

  it('sees a batch whole, and may wait (a promise) before it lets the exchange on', async () => {
    const upstream = track(await startRawUpstream(() => jsonReply([{ jsonrpc: '2.0', id: 1, result: {} }])));
    const batches: { batch: boolean; ids: unknown[] }[] = [];
    const slow: ExchangeFilter = {
      name: 'test-slow',
      async request(_exchange, request) {
        await new Promise((resolve) => setImmediate(resolve));
        batches.push({ batch: request.batch, ids: request.messages.map((m) => m.id) });
        return undefined;
      },
    };
    const edge = track(await startTestEdge(upstream.url, '', { filters: [slow] }));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: `[${call(1, 'a')},${call(2, 'b')}]`,
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(batches).toEqual([{ batch: true, ids: [1, 2] }]);
    expect(upstream.received).toHaveLength(1);
  });
});

describe('the request-message hook: a rule that refuses one message of a batch', () => {
  /**
   * An embedding program's rule: no tools/call of the tool "forbidden"; the others go on. It refuses with a row
   * of the refusals table (a 403), as any rule does: the words are the table's.
   */
  const forbid: ExchangeFilter = {
    name: 'test-forbid',
    requestMessage: (_exchange, message) =>
      message.tool === 'forbidden'
        ? edgeAnswer('forbidden_host', { host: 'forbidden' }, message.id ?? null)
        : undefined,
  };
  const refusedWords = (
    JSON.parse(edgeAnswer('forbidden_host', { host: 'forbidden' }).body) as {
      error: { message: string };
    }
  ).error.message;
  const notification = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: {} });

  /** An upstream answering each request of a batch with a result naming its id, as JSON or as SSE events. */
  async function batchUpstream(framing: 'json' | 'sse', text = 'ok') {
    return startRawUpstream((req) => {
      const body = parseJsonBody(req) as { id?: unknown }[];
      const answers = body
        .filter((m) => m.id !== undefined)
        .map((m) => ({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text }] } }));
      if (answers.length === 0) return { status: 202 };
      return framing === 'json' ? jsonReply(answers) : sseReply(answers.map((data) => sseEvent({ data })));
    });
  }

  /** The JSON-RPC messages of an answer, whichever way it was framed. */
  async function messagesOf(
    res: Response,
  ): Promise<{ id: unknown; result?: unknown; error?: { message: string } }[]> {
    const text = await res.text();
    if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
    return text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice('data: '.length)));
  }

  for (const framing of ['json', 'sse'] as const) {
    it(`answers the refused request for its own id beside the upstream's answers to the others (${framing})`, async () => {
      const upstream = track(await batchUpstream(framing));
      const edge = track(await startTestEdge(upstream.url, '', { filters: [forbid] }));
      const res = await fetch(edge.url, {
        method: 'POST',
        headers: MCP_POST_HEADERS,
        body: `[${call(1, 'a')},${call(2, 'forbidden')},${call(3, 'b')}]`,
      });
      expect(res.status).toBe(200);
      const messages = await messagesOf(res);
      expect(messages.map((m) => m.id).sort()).toEqual([1, 2, 3]);
      expect(messages.find((m) => m.id === 2)?.error?.message).toBe(refusedWords);
      expect(messages.filter((m) => m.result !== undefined).map((m) => m.id)).toEqual([1, 3]);
      expect(upstream.received.map((r) => r.body.toString())).toEqual([`[${call(1, 'a')},${call(3, 'b')}]`]);
      expect(edge.logs.find((line) => line.msg === 'exchange')).toMatchObject({
        status: 200,
        outcome: 'forwarded',
      });
    });
  }

  it('answers the refused requests of a batch whose other messages the upstream takes without an answer', async () => {
    const upstream = track(await batchUpstream('json'));
    const edge = track(await startTestEdge(upstream.url, '', { filters: [forbid] }));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: `[${call('x', 'forbidden')},${notification}]`,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject([{ id: 'x', error: { message: refusedWords } }]);
    expect(upstream.received.map((r) => r.body.toString())).toEqual([`[${notification}]`]);
  });

  it('answers a batch refused in every message with every refusal, and forwards nothing', async () => {
    const upstream = track(await batchUpstream('json'));
    const edge = track(await startTestEdge(upstream.url, '', { filters: [forbid] }));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: `[${call(1, 'forbidden')},${call(2, 'forbidden')}]`,
    });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject([
      { id: 1, error: { message: refusedWords } },
      { id: 2, error: { message: refusedWords } },
    ]);
    expect(upstream.received).toHaveLength(0);
  });

  it('joins the refusals to an answer streamed on past every ceiling (observe mode) as one batch', async () => {
    const upstream = track(await batchUpstream('json', 'x'.repeat(4096)));
    const edge = track(
      await startTestEdge(upstream.url, 'limits: { mode: observe, response: { maxMessageBytes: 1KiB } }', {
        filters: [forbid],
      }),
    );
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: `[${call(1, 'a')},${call(2, 'forbidden')},${call(3, 'b')}]`,
    });
    // Streamed on as it came (no length known in advance), the edge's answer joined in front.
    expect(res.headers.get('content-length')).toBeNull();
    const messages = await messagesOf(res);
    expect(messages.map((m) => m.id)).toEqual([2, 1, 3]);
    expect(messages[0]?.error?.message).toBe(refusedWords);
  });

  it('spends no quota on the refused message: the quota is charged once every filter agreed', async () => {
    const upstream = track(await batchUpstream('json'));
    const edge = track(
      await startTestEdge(upstream.url, 'quotas:\n  rules:\n    - { name: calls, window: 1m, requests: 2 }', {
        filters: [forbid],
      }),
    );
    const batch = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: `[${call(1, 'forbidden')},${call(2, 'a')},${call(3, 'b')}]`,
    });
    expect(batch.status).toBe(200);
    await batch.arrayBuffer();
    const next = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: call(4, 'c') });
    expect(next.status).toBe(429);
    expect(await next.json()).toMatchObject({ error: { data: { rule: 'calls', limit: 2, used: 2 } } });
  });

  it('refuses the message a throwing rule judged with the edge failure, logged under its name', async () => {
    const upstream = track(await batchUpstream('json'));
    const broken: ExchangeFilter = {
      name: 'test-broken-rule',
      requestMessage: () => {
        throw new Error('rule bug');
      },
    };
    const edge = track(await startTestEdge(upstream.url, '', { filters: [broken] }));
    const res = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: call(9, 'a') });
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({ id: 9, error: { data: { reason: 'edge_failure' } } });
    expect(upstream.received).toHaveLength(0);
    expect(edge.logs.find((line) => line.filter === 'test-broken-rule')).toMatchObject({
      hook: 'requestMessage',
      level: 50,
    });
  });
});

describe('a header a filter sets on the upstream request', () => {
  it('reaches a real upstream in place of the client header of that name', async () => {
    const upstream = track(await sizedUpstream('json'));
    const clientTrace = '00-0af7651916cd43dd8448eb211c80319c-2222222222222222-01';
    const edgeSpan = 'b7ad6b7169203331';
    const tracing: ExchangeFilter = {
      name: 'test-trace',
      request(_exchange, request) {
        // The client's trace continues, with the edge's span as the upstream request's parent.
        const [version, traceId, , flags] = String(request.headers.traceparent).split('-');
        request.setUpstreamHeader('Traceparent', `${version}-${traceId}-${edgeSpan}-${flags}`);
        return undefined;
      },
    };
    const edge = track(await startTestEdge(upstream.url, '', { filters: [tracing] }));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: {
        ...MCP_POST_HEADERS,
        traceparent: clientTrace,
      },
      body: call(1, 'cheap'),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(upstream.received).toHaveLength(1);
    const headers = upstream.received[0]!.headers;
    expect(headers.traceparent).toBe(`00-0af7651916cd43dd8448eb211c80319c-${edgeSpan}-01`);
    // Sent once, whatever the client sent under that name.
    expect(
      upstream.received[0]!.rawHeaders.filter((name) => name.toLowerCase() === 'traceparent'),
    ).toHaveLength(1);
  });
});

describe('the response-message hook', () => {
  for (const framing of ['json', 'sse'] as const) {
    it(`sees forwarded and replaced answers (${framing}) with their bytes and the request each answers`, async () => {
      const upstream = track(await sizedUpstream(framing));
      const judged: JudgedMessage[] = [];
      const recorder: ExchangeFilter = {
        name: 'test-recorder',
        responseMessage: (_exchange, message) => void judged.push(message),
      };
      const edge = track(
        await startTestEdge(upstream.url, 'limits: { response: { maxMessageBytes: 1KiB } }', {
          filters: [recorder],
        }),
      );
      const small = await fetch(edge.url, {
        method: 'POST',
        headers: MCP_POST_HEADERS,
        body: call(1, 'small'),
      });
      const smallText = await small.text();
      const big = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: call(2, 'big') });
      const bigText = await big.text();
      expect(bigText).toContain('limit_exceeded');

      const smallAnswer = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        result: { content: [{ type: 'text', text: 'ok' }] },
      });
      const bigAnswerBytes = Buffer.byteLength(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          result: { content: [{ type: 'text', text: 'x'.repeat(4096) }] },
        }),
      );
      expect(judged).toHaveLength(2);
      expect(judged[0]).toMatchObject({
        kind: 'result',
        id: 1,
        subject: { method: 'tools/call', tool: 'small' },
        fate: 'forwarded',
        bytes: smallAnswer.length,
        deliveredBytes: smallAnswer.length,
        violation: undefined,
      });
      expect(smallText).toContain(smallAnswer);
      const replaced = judged[1]!;
      expect(replaced).toMatchObject({
        kind: 'result',
        id: 2,
        subject: { method: 'tools/call', tool: 'big' },
        fate: 'replaced',
        violation: { limit: 'response.maxMessageBytes', limitValue: 1024 },
      });
      // The answer held whole (JSON) is measured exactly; an SSE event is replaced as soon as it crosses the
      // ceiling, so its size is a lower bound there.
      if (replaced.bytesIsLowerBound) expect(replaced.bytes).toBeGreaterThan(1024);
      else expect(replaced.bytes).toBe(bigAnswerBytes);
      // What the client got in its place: the edge's error, exactly those bytes.
      const delivered = framing === 'json' ? bigText : bigText.split('data: ')[1]!.trim();
      expect(replaced.deliveredBytes).toBe(Buffer.byteLength(delivered));
    });
  }

  it('is told an answer over its ceiling in observe mode was forwarded as observed_over', async () => {
    const upstream = track(await sizedUpstream('json'));
    const fates: string[] = [];
    const recorder: ExchangeFilter = {
      name: 'test-recorder',
      responseMessage: (_exchange, message) => void fates.push(message.fate),
    };
    const edge = track(
      await startTestEdge(upstream.url, 'limits: { mode: observe, response: { maxMessageBytes: 1KiB } }', {
        filters: [recorder],
      }),
    );
    const res = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: call(3, 'big') });
    expect((await res.text()).length).toBeGreaterThan(4096);
    expect(fates).toEqual(['observed_over']);
  });
});

describe('a filter that throws', () => {
  it('is logged under its name and hook; the exchange is answered and counted as usual', async () => {
    const upstream = track(await sizedUpstream('sse'));
    const boom = () => {
      throw new Error('filter bug');
    };
    const broken: ExchangeFilter = {
      name: 'test-broken',
      admit: boom,
      request: boom,
      observe: () => [{ message: boom, limitExceeded: boom, unparsable: boom }],
      upstreamAnswered: boom,
      responseMessage: boom,
      streamOpened: boom,
      streamEvent: boom,
      end: boom,
    };
    const edge = track(await startTestEdge(upstream.url, '', { filters: [broken] }));
    const res = await fetch(edge.url, { method: 'POST', headers: MCP_POST_HEADERS, body: call(5, 'small') });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('"id":5');
    await expect.poll(() => edge.logs.filter((line) => line.msg === 'exchange')).toHaveLength(1);
    const failures = edge.logs.filter((line) => line.filter === 'test-broken');
    expect(new Set(failures.map((line) => line.hook))).toEqual(
      new Set([
        'admit',
        'request',
        'observe.message',
        'upstreamAnswered',
        'streamOpened',
        'streamEvent',
        'responseMessage',
        'end',
      ]),
    );
    expect(
      failures.every(
        (line) => line.level === 50 && (line.err as { message: string }).message === 'filter bug',
      ),
    ).toBe(true);
    // The edge's own filters ran: the exchange has its line, with its outcome.
    expect(edge.logs.find((line) => line.msg === 'exchange')).toMatchObject({
      status: 200,
      outcome: 'forwarded',
    });
  });
});

describe('the reload hook', () => {
  it('hands a filter the reloaded config; a reload that fails does not reach it', async () => {
    const upstream = track(await sizedUpstream('json'));
    const pages: number[] = [];
    const watcher: ExchangeFilter = {
      name: 'test-reload',
      reload: (config) => void pages.push(config.pagination.maxPagesPerListing),
    };
    const edge = track(
      await startTestEdge(upstream.url, 'pagination: { maxPagesPerListing: 10 }', {
        fromFile: true,
        filters: [watcher],
      }),
    );
    writeFileSync(edge.configFile!, testEdgeYaml(upstream.url, 'pagination: { maxPagesPerListing: 20 }'));
    // The file watcher may have reloaded it first: then this reload finds the file unchanged.
    expect(await edge.reload()).toMatchObject({ ok: true });
    writeFileSync(edge.configFile!, testEdgeYaml(upstream.url, 'pagination: { maxPagesPerListing: lots }'));
    expect(await edge.reload()).toMatchObject({ ok: false });
    expect(pages).toEqual([20]);
  });
});
