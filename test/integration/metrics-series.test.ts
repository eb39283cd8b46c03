// What the series switches save, measured from a real scrape: a real edge in front of an SDK server with 12
// tools, 3 tenants each listing the tools and calling each once, scraped with each setting of
// metrics.tokenHistograms and metrics.toolLabels. The figures docs/operations.md gives ("Series and what
// they cost") must be these.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectV1Client } from '../support/clients.js';
import { startV1Server, type V1Server } from '../support/sdk-v1-server.js';
import { startTestEdge } from '../support/start-edge.js';

const TOOLS = Array.from({ length: 12 }, (_, i) => `tool_${String(i + 1).padStart(2, '0')}`);
const TENANTS = ['acme', 'beta', 'gamma'];
const TENANCY = `
tenancy:
  resolve:
    - header: x-tenant-id
      trustedProxies: [127.0.0.0/8]
tenants: { acme: {}, beta: {}, gamma: {} }
`;

const TOKENS_OFF = 'tokenHistograms: false';
const TOOLS_NONE = 'toolLabels: none';
const BOTH = 'tokenHistograms: false, toolLabels: none';
/** Each setting as docs/operations.md names it, and the keys it adds under `metrics:`. */
const SETTINGS = {
  default: undefined,
  [TOKENS_OFF]: TOKENS_OFF,
  [TOOLS_NONE]: TOOLS_NONE,
  'toolLabels: [tool_01, tool_02]': 'toolLabels: [tool_01, tool_02]',
  [BOTH]: BOTH,
} as const;
type Setting = keyof typeof SETTINGS;

let server: V1Server | undefined;
const seriesCount = new Map<Setting, number>();

/** mcp-edge's series in a scrape: every sample line of an mcp_edge_ family. */
function edgeSeries(text: string): string[] {
  return text.split('\n').filter((line) => line.startsWith('mcp_edge_'));
}

async function measure(setting: Setting): Promise<number> {
  const extra = SETTINGS[setting];
  if (server === undefined) throw new Error('no server');
  const edge = await startTestEdge(server.url, TENANCY, { metrics: extra ?? true });
  try {
    for (const tenant of TENANTS) {
      const client = await connectV1Client(edge.url, { headers: { 'x-tenant-id': tenant } });
      try {
        await client.client.listTools();
        for (const name of TOOLS) await client.client.callTool({ name, arguments: { q: tenant } });
      } finally {
        await client.close();
      }
    }
    const text = await (await fetch(edge.metricsUrl ?? '')).text();
    return edgeSeries(text).length;
  } finally {
    await edge.stop();
  }
}

beforeAll(async () => {
  server = await startV1Server({
    mode: 'stateful',
    tools: (s) => {
      for (const name of TOOLS)
        s.registerTool(
          name,
          { description: `Tool ${name}.`, inputSchema: z.object({ q: z.string() }) },
          async () => ({
            content: [{ type: 'text', text: 'r'.repeat(2_000) }],
          }),
        );
    },
  });
  for (const setting of Object.keys(SETTINGS) as Setting[]) seriesCount.set(setting, await measure(setting));
}, 120_000);

afterAll(async () => {
  await server?.close();
});

/** The rows of docs/operations.md's switch table: setting -> [series saved, saved per tool per tenant]. */
function documentedRows(): Map<string, [number, number]> {
  const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('\n### Series and what they cost\n'));
  const rows = new Map<string, [number, number]>();
  for (const match of section.matchAll(/^\| `([^`|]*)` \| ([\d,]+) \| ([\d.]+) \|/gm)) {
    rows.set(match[1] ?? '', [Number((match[2] ?? '').replaceAll(',', '')), Number(match[3])]);
  }
  return rows;
}

describe('the series switches, measured on a real scrape', () => {
  it('each switch cuts the series; both together cut the most', () => {
    const all = seriesCount.get('default') ?? 0;
    expect(all).toBeGreaterThan(TOOLS.length * TENANTS.length * 50);
    for (const setting of Object.keys(SETTINGS) as Setting[])
      if (setting !== 'default') expect(seriesCount.get(setting), setting).toBeLessThan(all);
    expect(seriesCount.get(BOTH)).toBeLessThan(
      Math.min(seriesCount.get(TOKENS_OFF) ?? 0, seriesCount.get(TOOLS_NONE) ?? 0),
    );
  });

  it('docs/operations.md gives the series each setting saves, as measured', () => {
    const all = seriesCount.get('default') ?? 0;
    const pairs = TOOLS.length * TENANTS.length;
    const measured = Object.fromEntries(
      [...seriesCount]
        .filter(([setting]) => setting !== 'default')
        .map(([setting, count]) => [setting, [all - count, Math.round(((all - count) / pairs) * 10) / 10]]),
    );
    expect(Object.fromEntries(documentedRows())).toEqual(measured);
  });
});
