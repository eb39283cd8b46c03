// The memory quota store's keys shared per tenant, through a real edge and a real upstream: a tenant that
// names made-up tools under a per-tool rule fills its own share and is refused with a 429 of its own, while
// another tenant's calls are still counted and refused at 61 of a 60-per-minute rule (never forwarded uncounted).
import { describe, expect, it } from 'vitest';
import { MCP_POST_HEADERS, trackHandles } from '../support/handles.js';
import { jsonReply, parseJsonBody, startRawUpstream } from '../support/raw-upstream.js';
import { startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

interface Refusal {
  error: { message: string; data: Record<string, unknown> };
}

/** A raw upstream that answers every call with an empty result. */
async function answeringUpstream() {
  return startRawUpstream((req) => {
    const body = parseJsonBody(req) as { id?: unknown };
    return jsonReply({ jsonrpc: '2.0', id: body.id ?? null, result: { content: [] } });
  });
}

const EDGE_YAML = [
  'tenants: { alpha: {}, beta: {} }',
  'tenancy:',
  '  resolve:',
  '    - header: x-tenant-id',
  '      trustedProxies: [127.0.0.1/32, "::1/128"]',
  'quotas:',
  // Three tenants (alpha, beta and the default): 20 keys each.
  '  maxKeys: 60',
  '  onStoreError: allow',
  '  rules:',
  '    - { name: tool-calls, window: 1m, requests: 60, per: tenant+tool }',
].join('\n');

async function callTool(url: string, tenant: string, tool: string, id: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...MCP_POST_HEADERS, 'x-tenant-id': tenant },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: {} } }),
  });
  return { status: res.status, body: await res.text(), retryAfter: res.headers.get('retry-after') };
}

describe("each tenant's share of the memory store's keys", () => {
  it('refuses only the tenant that fills its share, and counts another tenant to 60 and refuses its 61st', async () => {
    const upstream = track(await answeringUpstream());
    const edge = track(await startTestEdge(upstream.url, EDGE_YAML));

    // alpha names a new tool with every call, until it is refused.
    let made = 0;
    let refused: Awaited<ReturnType<typeof callTool>> | undefined;
    while (made < 80 && refused === undefined) {
      const result = await callTool(edge.url, 'alpha', `made-up-${made}`, `a${made}`);
      if (result.status === 200) made++;
      else refused = result;
    }
    expect(made).toBe(20);
    expect(refused?.status).toBe(429);
    expect(Number(refused?.retryAfter)).toBeGreaterThanOrEqual(60);
    const alphaRefusal = JSON.parse(refused?.body ?? '{}') as Refusal;
    expect(alphaRefusal.error.data).toMatchObject({
      reason: 'quota_keys_exhausted',
      tenant: 'alpha',
      rule: 'tool-calls',
      keysPerTenant: 20,
      maxKeys: 60,
    });
    expect(alphaRefusal.error.message).toContain('Quotas cannot count more for tenant "alpha"');
    // Its tools named before still count.
    expect((await callTool(edge.url, 'alpha', 'made-up-0', 'again')).status).toBe(200);

    // beta is counted: 60 calls are forwarded, the 61st is refused for its budget.
    const statuses: number[] = [];
    let last = '';
    for (let i = 0; i < 61; i++) {
      const result = await callTool(edge.url, 'beta', 'search', `b${i}`);
      statuses.push(result.status);
      last = result.body;
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(60);
    expect(statuses[60]).toBe(429);
    expect((JSON.parse(last) as Refusal).error.data).toMatchObject({
      reason: 'quota_exceeded',
      tenant: 'beta',
      tool: 'search',
      limit: 60,
      used: 60,
    });
    const forwardedForBeta = upstream.received.filter((r) => r.headers['x-tenant-id'] === 'beta');
    expect(forwardedForBeta).toHaveLength(60);
    // No store error along the way: nothing went uncounted.
    expect(edge.logText()).not.toContain('the quota store did not answer');
  });
});
