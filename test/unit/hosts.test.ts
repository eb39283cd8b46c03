// Host recognition, the hostBudgets action, and a tool result measured as each host sees it.
import { describe, expect, it } from 'vitest';
import { emptyChannels } from '../../src/core/measure.js';
import { edgeError } from '../../src/core/refusals/answers.js';
import type { HostBudgetViolation } from '../../src/core/refusals/facts.js';
import { clientIdentityOf, HostTable, userAgentProduct } from '../../src/hosts/host-table.js';
import { BUILTIN_HOST_PROFILES } from '../../src/hosts/profiles.js';
import { measureForHost } from '../../src/hosts/result-size.js';

const profile = (name: string) => BUILTIN_HOST_PROFILES.find((p) => p.name === name)!;

describe('which host is calling', () => {
  it('reads clientInfo from initialize, from _meta on any request, and the User-Agent product', () => {
    expect(
      clientIdentityOf({ params: { clientInfo: { name: 'claude-code', version: '2.1' } } }, 'initialize'),
    ).toEqual({
      name: 'claude-code',
      version: '2.1',
    });
    // clientInfo outside initialize is not an identity; _meta is.
    expect(clientIdentityOf({ params: { clientInfo: { name: 'x' } } }, 'tools/call')).toBeUndefined();
    expect(
      clientIdentityOf(
        { params: { _meta: { 'io.modelcontextprotocol/clientInfo': { name: 'gemini-cli' } } } },
        'tools/call',
      ),
    ).toEqual({ name: 'gemini-cli', version: undefined });
    expect(userAgentProduct('claude-code/2.1.0 (external, cli)')).toBe('claude-code');
    expect(userAgentProduct(undefined)).toBeUndefined();
  });

  it('maps names to profiles by pattern, configured hosts first, unknown ones to other', () => {
    const table = new HostTable({ 'my-agent': { match: ['acme-*'], budgets: { characters: 1000 } } });
    expect(table.hostOf('claude-code')).toBe('claude-code');
    expect(table.hostOf('Claude Code')).toBe('claude-code');
    expect(table.hostOf('gemini-cli-mcp-client')).toBe('gemini-cli');
    expect(table.hostOf('codex-mcp-client')).toBe('codex');
    expect(table.hostOf('acme-bot')).toBe('my-agent');
    expect(table.hostOf('something-else')).toBe('other');
    expect(table.hostOf(undefined)).toBe('other');
    expect(table.labels()).toEqual([
      'my-agent',
      'claude-code',
      'gemini-cli',
      'codex',
      'claude-desktop',
      'other',
    ]);
  });

  it('overrides a built-in budget and names where it came from', () => {
    const table = new HostTable({ 'claude-code': { budgets: { tokens: 50_000 } } });
    const p = table.profile('claude-code')!;
    expect(p.budgets).toEqual([{ unit: 'tokens', limit: 50_000 }]);
    expect(p.channels).toBe('structured_else_content');
    expect(p.source).toMatch(/^hosts\.claude-code in the mcp-edge config/);
  });

  it('resolves hostBudgets.action: tenant tool > tenant > tool > default', () => {
    const table = new HostTable(
      {},
      {
        action: 'observe',
        tools: { big: { action: 'refuse' } },
        tenants: { acme: { action: 'refuse', tools: { big: { action: 'observe' } } } },
      },
    );
    expect(table.action('default', 'small')).toEqual({ action: 'observe', source: 'hostBudgets.action' });
    expect(table.action('default', 'big').action).toBe('refuse');
    expect(table.action('acme', 'small').action).toBe('refuse');
    expect(table.action('acme', 'big')).toEqual({
      action: 'observe',
      source: 'hostBudgets.tenants.acme.tools.big.action',
    });
  });
});

describe('a result in the host unit', () => {
  const structured = { rows: Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `row ${i}` })) };
  const text = 'short summary';
  const result = { content: [{ type: 'text', text }], structuredContent: structured };
  const channels = {
    ...emptyChannels(),
    content_text: 40,
    structured: JSON.stringify(structured).length,
  };

  it('measures the channels each host shows: structured for Claude Code, content for Gemini CLI', () => {
    const claude = measureForHost(profile('claude-code'), result, channels);
    expect(claude.sizes[0]!.estimated).toBe(false);
    expect(claude.over?.unit).toBe('tokens');
    const gemini = measureForHost(profile('gemini-cli'), result, channels);
    // Gemini CLI shows the text block only: 13 characters, far within 40,000 (an upper bound, not measured).
    expect(gemini.over).toBeUndefined();
    expect(gemini.sizes[0]!.estimated).toBe(true);
    expect(gemini.share).toBeLessThan(0.01);
  });

  it('counts Codex lines and bytes exactly past half a budget', () => {
    const lines = Array.from({ length: 300 }, (_, i) => `line ${i}`).join('\n');
    const r = { content: [{ type: 'text', text: lines }] };
    const size = measureForHost(profile('codex'), r, { ...emptyChannels(), content_text: lines.length + 30 });
    expect(size.sizes.map((s) => [s.unit, s.observed, s.estimated])).toEqual([
      ['bytes', Buffer.byteLength(lines), false],
      ['lines', 300, false],
    ]);
    expect(size.over?.unit).toBe('lines');
  });

  it('never tokenizes a small result: the raw bytes bound it', () => {
    const r = { content: [{ type: 'text', text: 'hello' }] };
    const size = measureForHost(profile('claude-code'), r, { ...emptyChannels(), content_text: 35 });
    expect(size.sizes[0]).toMatchObject({ estimated: true, observed: 9 });
  });

  it('counts a special-token string as text and a huge result on a prefix, as a lower bound', () => {
    const special = measureForHost(
      profile('claude-code'),
      { content: [{ type: 'text', text: '<|endoftext|>'.repeat(20_000) }] },
      {
        ...emptyChannels(),
        content_text: 260_040,
      },
    );
    expect(special.over).toBeDefined();
    const words = Array.from({ length: 120_000 }, (_, i) => `w${i}`).join(' ');
    const huge = measureForHost(
      profile('claude-code'),
      { content: [{ type: 'text', text: words }] },
      {
        ...emptyChannels(),
        content_text: words.length + 30,
      },
    );
    expect(huge.over?.lowerBound).toBe(true);
    expect(huge.over!.observed).toBeGreaterThan(25_000);
  });
});

describe('the refusal the model reads', () => {
  it('names the host, its budget, the size, and what to do', () => {
    const e = hostBudgetError({
      host: 'gemini-cli',
      title: 'Gemini CLI',
      unit: 'characters',
      budget: 40_000,
      observed: 61_234,
      observedIsLowerBound: false,
      tenant: 'acme',
      tool: 'search_logs',
      id: 7,
    });
    expect(e.id).toBe(7);
    expect(e.error.code).toBe(-32603);
    expect(e.error.message).toBe(
      'The result of tool "search_logs" is 61,234 characters, over the 40,000-character budget of Gemini CLI, the host that called it; mcp-edge replaced it whole (set by the mcp-edge operator for tenant "acme") rather than let the host cut it. Call the tool again with narrower arguments (a filter, fewer fields, a smaller limit) or with its pagination parameters (cursor, page, offset) to get the result in parts.',
    );
    expect(e.error.data).toMatchObject({
      reason: 'host_budget_exceeded',
      host: 'gemini-cli',
      budget: 40_000,
      enforcedBy: 'mcp-edge',
    });
  });
});

describe('tool answers and descriptors', () => {
  it('tells isError results and JSON-RPC errors apart from plain results', async () => {
    const { toolAnswerError } = await import('../../src/inspect/tool-answers.js');
    expect(toolAnswerError('result', { result: { content: [], isError: true } })).toBe('is_error');
    expect(toolAnswerError('result', { result: { content: [], isError: false } })).toBeUndefined();
    expect(toolAnswerError('error', { error: { code: -32602, message: 'no such tool' } })).toBe(
      'jsonrpc_error',
    );
  });

  it('weighs each named descriptor of a tools/list page as compact UTF-8 JSON', async () => {
    const { describedTools } = await import('../../src/inspect/tool-answers.js');
    const tool = { name: 'météo', description: 'Prévisions', inputSchema: { type: 'object' } };
    expect(describedTools({ result: { tools: [tool, { description: 'no name' }] } })).toEqual([
      { name: 'météo', bytes: Buffer.byteLength(JSON.stringify(tool)) },
    ]);
    expect(describedTools({ result: {} })).toEqual([]);
  });
});

describe('catalog weight across pages', () => {
  it('sums every page of a listing, a tool listed again replacing its own weight', async () => {
    const { createEdgeMetrics } = await import('../../src/metrics/edge-metrics.js');
    const metrics = createEdgeMetrics({ upstream: 'http://127.0.0.1:3000/mcp', collectDefault: false });
    const observer = metrics.observerFor('acme');
    const tools = metrics.toolObserverFor('acme');
    observer.toolsListed?.(['a', 'b']);
    tools.toolsDescribed?.([
      { name: 'a', bytes: 100 },
      { name: 'b', bytes: 200 },
    ]);
    observer.toolsListed?.(['c']);
    tools.toolsDescribed?.([{ name: 'c', bytes: 50 }]);
    // The first page again, with a heavier `a`: the catalog is the latest weight of each tool.
    tools.toolsDescribed?.([{ name: 'a', bytes: 120 }]);
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'mcp_edge_tool_catalog_bytes{tenant="acme",upstream="http://127.0.0.1:3000/mcp"} 370',
    );
    expect(text).toContain(
      'mcp_edge_tool_catalog_tools{tenant="acme",upstream="http://127.0.0.1:3000/mcp"} 3',
    );
    expect(text).toContain(
      'mcp_edge_tool_descriptor_bytes{tenant="acme",tool="a",upstream="http://127.0.0.1:3000/mcp"} 120',
    );
  });
});

function hostBudgetError(violation: HostBudgetViolation) {
  return edgeError('answer_over_host_budget', { violation }, violation.id);
}
