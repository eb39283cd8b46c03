// Quotas through real edges with the memory store: a real SDK client refused with the 429 contract and
// allowed again after the window, a batch refused whole, observe mode, hot reload under traffic, and a stdio
// upstream under the same rules.
import { writeFileSync } from 'node:fs';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { edgeAnswer } from '../../src/core/refusals/answers.js';
import type { ExchangeFilter } from '../../src/proxy/filters/exchange-filter.js';
import { connectV1Client, connectV2Client } from '../support/clients.js';
import { sample } from '../support/exposition.js';
import { MCP_POST_HEADERS, rejectionOf, trackHandles } from '../support/handles.js';
import { jsonReply, parseJsonBody, startRawUpstream } from '../support/raw-upstream.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge, testEdgeYaml } from '../support/start-edge.js';
import { STDIO_SERVERS, startStdioEdge } from '../support/stdio-edge.js';

const { track, defer } = trackHandles();

interface QuotaErrorBody {
  id: unknown;
  error: { code: number; message: string; data: Record<string, unknown> };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A raw upstream that answers every request (and each message of a batch) with an empty result. */
async function answeringUpstream() {
  return startRawUpstream((req) => {
    const body = parseJsonBody(req);
    const answer = (m: { id?: unknown }) => ({ jsonrpc: '2.0', id: m.id ?? null, result: {} });
    return jsonReply(Array.isArray(body) ? body.map(answer) : answer(body as { id?: unknown }));
  });
}

/** How a message reads inside the JSON body an SDK client's error carries (quotes escaped). */
const inBody = (text: string) => JSON.stringify(text).slice(1, -1);

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { ...MCP_POST_HEADERS, ...headers }, body: JSON.stringify(body) });
const ping = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'ping' });

async function metricValue(
  metricsUrl: string | undefined,
  name: string,
  labels: Record<string, string>,
): Promise<number> {
  return sample(await (await fetch(metricsUrl ?? '')).text(), name, labels) ?? 0;
}

const BYTE_RULE = [
  'quotas:',
  '  rules:',
  '    - { name: sized-bytes, window: 2s, responseBytes: 20KiB, tools: [sized], per: tenant+tool }',
].join('\n');

describe('a per-tool byte quota seen by real SDK clients', () => {
  it('delivers the answer that crosses the budget whole, refuses the next call with the 429 contract and Retry-After, and allows it after the window', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, BYTE_RULE, { metrics: true }));
    const { client } = track(await connectV1Client(edge.url));

    const first = await client.callTool({ name: 'sized', arguments: { bytes: 15_000 } });
    const second = await client.callTool({ name: 'sized', arguments: { bytes: 15_000 } });
    expect(JSON.stringify(first).length).toBeGreaterThan(15_000);
    // Crosses the budget: delivered whole, never cut.
    expect(JSON.stringify(second).length).toBeGreaterThan(15_000);
    // Another tool is not under the rule.
    expect(JSON.stringify(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toContain(
      'hi',
    );

    const err = await rejectionOf(client.callTool({ name: 'sized', arguments: { bytes: 10 } }));
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(429);
    expect((err as Error).message).toContain(
      inBody('Quota "sized-bytes" is used up for tenant "default", tool "sized"'),
    );

    // The raw contract, the same refusal as a client without an SDK sees it.
    const raw = await post(
      edge.url,
      {
        jsonrpc: '2.0',
        id: 'q-1',
        method: 'tools/call',
        params: { name: 'sized', arguments: { bytes: 10 } },
      },
      { 'mcp-session-id': (await connectV1Client(edge.url).then(track)).sessionId() ?? '' },
    );
    expect(raw.status).toBe(429);
    const retryAfter = Number(raw.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3);
    const body = (await raw.json()) as QuotaErrorBody;
    expect(body.id).toBe('q-1');
    expect(body.error.code).toBe(-32600);
    expect(body.error.data).toMatchObject({
      reason: 'quota_exceeded',
      rule: 'sized-bytes',
      window: '2s',
      limit: 20 * 1024,
      retryAfterSeconds: retryAfter,
      tenant: 'default',
      tool: 'sized',
      enforcedBy: 'mcp-edge',
    });
    expect(body.error.data.used).toBeGreaterThan(30_000);
    expect(
      await metricValue(edge.metricsUrl, 'mcp_edge_quota_exceeded_total', {
        rule: 'sized-bytes',
        tenant: 'default',
        action: 'refused',
      }),
    ).toBe(2);

    await sleep(retryAfter * 1000);
    const again = await client.callTool({ name: 'sized', arguments: { bytes: 100 } });
    expect(JSON.stringify(again).length).toBeGreaterThan(100);
  });

  it('an SDK v2 client shows the quota message as it shows a ceiling refusal', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(
      await startTestEdge(server.url, 'quotas:\n  rules:\n    - { name: calls, window: 10s, requests: 3 }'),
    );
    const { client } = track(await connectV2Client(edge.url));
    let err: unknown;
    for (let i = 0; i < 5 && err === undefined; i++) {
      err = await client.callTool({ name: 'echo', arguments: { text: `${i}` } }).then(
        () => undefined,
        (e: unknown) => e,
      );
    }
    expect((err as Error).message).toContain(
      inBody('Quota "calls" is used up for tenant "default": 3 of 3 requests'),
    );
  });
});

describe('a request quota through a raw client', () => {
  it('admits a batch whole or refuses it whole, before it reaches the upstream', async () => {
    const upstream = track(await answeringUpstream());
    const edge = track(
      await startTestEdge(upstream.url, 'quotas:\n  rules:\n    - { name: calls, window: 10s, requests: 5 }'),
    );
    expect((await post(edge.url, [ping(1), ping(2), ping(3)])).status).toBe(200);
    const refused = await post(edge.url, [ping(4), ping(5), ping(6)]);
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as QuotaErrorBody;
    expect(body.id).toBeNull();
    expect(body.error.data).toMatchObject({ rule: 'calls', limit: 5, used: 3 });
    expect(upstream.received.filter((r) => r.method === 'POST')).toHaveLength(1);
    // Two still fit.
    expect((await post(edge.url, [ping(7), ping(8)])).status).toBe(200);
    const single = await post(edge.url, ping('last'));
    expect(single.status).toBe(429);
    expect(((await single.json()) as QuotaErrorBody).id).toBe('last');
  });

  it('spends nothing for a request that a filter after the quotas refuses', async () => {
    const upstream = track(await answeringUpstream());
    // An embedding program's rule, in the chain after the quota filter: it refuses pings named "forbidden".
    const forbid: ExchangeFilter = {
      name: 'test-forbid',
      request: (_exchange, request) =>
        request.messages[0]?.id === 'forbidden'
          ? edgeAnswer('forbidden_host', { host: 'forbidden' })
          : undefined,
    };
    const edge = track(
      await startTestEdge(upstream.url, 'quotas:\n  rules:\n    - { name: calls, window: 1m, requests: 2 }', {
        filters: [forbid],
      }),
    );
    for (let i = 0; i < 3; i++) expect((await post(edge.url, ping('forbidden'))).status).toBe(403);
    // The refused requests reached no one and cost nothing: the budget of two is whole.
    expect((await post(edge.url, ping(1))).status).toBe(200);
    expect((await post(edge.url, ping(2))).status).toBe(200);
    expect((await post(edge.url, ping(3))).status).toBe(429);
    expect(upstream.received.filter((r) => r.method === 'POST')).toHaveLength(2);
  });

  it('observe mode forwards everything and counts what would have been refused', async () => {
    const upstream = track(await answeringUpstream());
    const edge = track(
      await startTestEdge(
        upstream.url,
        'limits: { mode: observe }\nquotas:\n  rules:\n    - { name: calls, window: 10s, requests: 2 }',
        { metrics: true },
      ),
    );
    for (let i = 0; i < 5; i++) expect((await post(edge.url, ping(i))).status).toBe(200);
    expect(upstream.received.filter((r) => r.method === 'POST')).toHaveLength(5);
    expect(
      await metricValue(edge.metricsUrl, 'mcp_edge_quota_exceeded_total', {
        rule: 'calls',
        tenant: 'default',
        action: 'observed',
      }),
    ).toBe(3);
    expect(
      await metricValue(edge.metricsUrl, 'mcp_edge_quota_used_ratio', { rule: 'calls', tenant: 'default' }),
    ).toBe(2.5);
  });

  it("a rule's used ratio is its nearest limit: requests used up show 1 beside bytes barely used", async () => {
    const upstream = track(await answeringUpstream());
    const edge = track(
      await startTestEdge(
        upstream.url,
        'quotas:\n  rules:\n    - { name: calls, window: 1m, requests: 2, responseBytes: 1GiB }',
        { metrics: true },
      ),
    );
    for (let i = 0; i < 2; i++) expect((await post(edge.url, ping(i))).status).toBe(200);
    expect(
      await metricValue(edge.metricsUrl, 'mcp_edge_quota_used_ratio', { rule: 'calls', tenant: 'default' }),
    ).toBe(1);
  });

  it('a hot reload adds, changes and removes rules under traffic', async () => {
    const upstream = track(await answeringUpstream());
    const rules = (lines: string[]) => `quotas:\n  rules: [${lines.join(', ')}]`;
    const edge = track(
      await startTestEdge(upstream.url, rules(['{ name: calls, window: 10s, requests: 1000 }']), {
        fromFile: true,
      }),
    );
    const rewrite = async (yaml: string) => {
      writeFileSync(edge.configFile ?? '', testEdgeYaml(upstream.url, yaml));
      const result = await edge.reload();
      expect(result, JSON.stringify(result)).toMatchObject({ ok: true, restartRequired: [] });
    };
    // Traffic goes on all along: every answer is a 200 or a quota's 429, never anything else.
    let running = true;
    const statuses: number[] = [];
    const traffic = (async () => {
      let id = 0;
      while (running) statuses.push((await post(edge.url, ping(`t${id++}`))).status);
    })();
    defer(async () => {
      running = false;
      await traffic;
    });
    const statusOf = async () => (await post(edge.url, ping('probe'))).status;

    await sleep(200);
    expect(await statusOf()).toBe(200);
    // Added: a byte rule small enough that traffic uses it up.
    await rewrite(
      rules([
        '{ name: calls, window: 10s, requests: 1000 }',
        '{ name: body-bytes, window: 10s, requestBytes: 1KiB }',
      ]),
    );
    // Traffic (and the probes) use it up.
    let status = 200;
    for (let i = 0; i < 200 && status === 200; i++) status = await statusOf();
    expect(status).toBe(429);
    // Changed: its budget raised far past what traffic sends in the window.
    await rewrite(
      rules([
        '{ name: calls, window: 10s, requests: 1000 }',
        '{ name: body-bytes, window: 10s, requestBytes: 100MiB }',
      ]),
    );
    expect(await statusOf()).toBe(200);
    // Changed the other way, then removed: refused, then admitted again.
    await rewrite(rules(['{ name: calls, window: 10s, requests: 1 }']));
    expect(await statusOf()).toBe(429);
    await rewrite(rules([]));
    expect(await statusOf()).toBe(200);
    running = false;
    await traffic;
    expect(new Set(statuses)).toEqual(new Set([200, 429]));
  });
});

describe('a stdio upstream under the same rules', () => {
  it('refuses past the request quota with the same contract', async () => {
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.v1Fixture, {
        yaml: 'quotas:\n  rules:\n    - { name: calls, window: 10s, requests: 4 }',
      }),
    );
    const { client } = track(await connectV1Client(edge.url));
    // initialize was the first request; three calls fit.
    for (const text of ['a', 'b', 'c']) await client.callTool({ name: 'echo', arguments: { text } });
    const err = await rejectionOf(client.callTool({ name: 'echo', arguments: { text: 'd' } }));
    expect((err as StreamableHTTPError).code).toBe(429);
    expect((err as Error).message).toContain(
      inBody('Quota "calls" is used up for tenant "default": 4 of 4 requests per 10s'),
    );
  });
});
