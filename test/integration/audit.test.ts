// `mcp-edge audit` against real servers: server-everything over HTTP and over stdio, server-filesystem over
// stdio, and the bundled demo. What audit reports is checked against the bytes each server sends, read
// here without any MCP client.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type DemoServer, startDemoServer } from '../../src/demo/server.js';
import {
  type AuditJson,
  callsFile,
  rawHttpAnswer,
  rawStdioAnswer,
  runAudit,
  stopAudits,
} from '../support/audit-cli.js';
import { freePort } from '../support/ports.js';
import { REPO_ROOT } from '../support/processes.js';
import { type ServerEverything, startServerEverything } from '../support/server-everything.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);
const FILESYSTEM = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url),
);

/** Words enough that their tokens are well past Claude Code's 25,000 (each `wN` is at least one token). */
const OVERSIZED = Array.from({ length: 40_000 }, (_, i) => `w${i}`).join(' ');

/**
 * Each tool's bytes in a raw tools/list answer. These servers write compact JSON (the SDK's JSON.stringify),
 * so each descriptor's text as sent is its JSON.stringify, which must occur verbatim in the answer.
 */
function sentDescriptorBytes(raw: Buffer): Map<string, number> {
  const tools = (JSON.parse(raw.toString('utf8')) as { result: { tools: { name: string }[] } }).result.tools;
  const text = raw.toString('utf8');
  const bytes = new Map<string, number>();
  for (const tool of tools) {
    const compact = JSON.stringify(tool);
    expect(text.includes(compact), `${tool.name}'s descriptor is sent as compact JSON`).toBe(true);
    bytes.set(tool.name, Buffer.byteLength(compact, 'utf8'));
  }
  return bytes;
}

function expectCatalogAsSent(json: AuditJson, sent: Map<string, number>, pageBytes: number): void {
  expect(json.catalog.tools.map((t) => [t.name, t.bytes]).sort()).toEqual([...sent.entries()].sort());
  const weights = json.catalog.tools.map((t) => t.bytes);
  expect(weights).toEqual([...weights].sort((a, b) => b - a));
  expect(json.catalog.totalBytes).toBe([...sent.values()].reduce((a, b) => a + b, 0));
  const tools = json.listings.find((l) => l.method === 'tools/list');
  expect(tools?.stop).toBe('end');
  // A single page: the listing's total is the answer's bytes, envelope included (its id may differ from 2 by a digit).
  expect(tools?.pages.length).toBe(1);
  expect(Math.abs((tools?.pages[0]?.bytes ?? 0) - pageBytes)).toBeLessThanOrEqual(2);
  for (const tool of json.catalog.tools) {
    expect(tool.chars).toBeGreaterThan(0);
    expect(tool.tokens).toBeGreaterThan(0);
    expect(tool.tokens).toBeLessThan(tool.bytes);
  }
  // The catalog is judged by catalog budgets only (Claude Code's 25,000 tokens of tool definitions), at the
  // one total the report gives.
  expect(Object.keys(json.catalog.hosts)).toEqual(['claude-code']);
  expect(json.catalog.hosts['claude-code']).toMatchObject({ unit: 'tokens', budget: 25_000 });
  expect(json.catalog.hosts['claude-code']?.size).toBe(json.catalog.totalTokens);
  expect(json.catalog.totalTokens).toBe(json.catalog.tools.reduce((sum, t) => sum + t.tokens, 0));
}

afterEach(stopAudits);

describe('mcp-edge audit: server-everything', () => {
  let everything: ServerEverything;
  beforeAll(async () => {
    everything = await startServerEverything();
  });
  afterAll(async () => {
    await everything.close();
  });

  it('over HTTP: tool weights are the bytes sent; an oversized echo, both channels and a resources/read measured', async () => {
    const raw = await rawHttpAnswer(everything.url, 'tools/list');
    const structured = JSON.parse(
      (
        await rawHttpAnswer(everything.url, 'tools/call', {
          name: 'get-structured-content',
          arguments: { location: 'Chicago' },
        })
      ).toString('utf8'),
    ) as { result: { content: { type: string; text: string }[]; structuredContent: unknown } };
    const calls = callsFile([
      { tool: 'echo', arguments: { message: OVERSIZED } },
      { tool: 'get-structured-content', arguments: { location: 'Chicago' } },
      { method: 'resources/read', params: { uri: 'demo://resource/static/document/architecture.md' } },
    ]);
    const { code, json, stderr } = await runAudit([everything.url, '--calls', calls, '--json']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(json.server.name).toBe('mcp-servers/everything');
    expect(json.protocolVersion).toBe('2025-11-25');
    expectCatalogAsSent(json, sentDescriptorBytes(raw), raw.length);

    const [echo, both, read] = json.calls;
    expect(echo?.tool).toBe('echo');
    expect(echo?.bytes).toBeGreaterThan(OVERSIZED.length);
    expect(echo?.channels?.content).toBeGreaterThan(OVERSIZED.length);
    expect(echo?.channels?.structuredContent).toBe(0);
    expect(echo?.hosts['claude-code']).toMatchObject({ unit: 'tokens', budget: 25_000, over: true });
    expect(echo?.hosts['claude-code']?.size).toBeGreaterThan(25_000);
    expect(echo?.hosts['claude-code']?.past).toContain('exceeds maximum allowed tokens');
    expect(echo?.hosts['gemini-cli']).toMatchObject({ unit: 'characters', budget: 40_000, over: true });
    expect(echo?.hosts['claude-desktop']).toMatchObject({ unit: 'bytes', over: false });

    // Both channels, and the text block that repeats structuredContent: the bytes as the server sends them.
    const block = structured.result.content[0]!;
    expect(both?.channels?.structuredContent).toBe(
      JSON.stringify(structured.result.structuredContent).length,
    );
    expect(both?.channels?.content).toBe(JSON.stringify(block).length);
    expect(block.text).toBe(JSON.stringify(structured.result.structuredContent));
    expect(both?.duplicatedBytes).toBe(Buffer.byteLength(block.text));
    expect(both?.hosts['claude-code']?.over).toBe(false);

    expect(read).toMatchObject({ method: 'resources/read', channels: null, isError: false });
    expect(read?.bytes).toBeGreaterThan(1000);
    expect(read?.hosts['gemini-cli']?.unit).toBe('characters');
    expect(read?.hosts['gemini-cli']?.size).toBeGreaterThan(1000);

    const codes = json.findings.map((f) => `${f.code} ${f.subject ?? ''}`);
    expect(codes).toContain('structured-content-duplicated get-structured-content');
    // server-everything answers a cursor it never issued with the first page again.
    expect(codes).toContain('invalid-cursor-accepted tools/list');
    for (const finding of json.findings) expect(finding.fix.length).toBeGreaterThan(10);
  }, 60_000);

  it('over stdio: the server spawned as the edge spawns one, its descriptors weighed as its lines carry them', async () => {
    const argv = [process.execPath, EVERYTHING, 'stdio'];
    const raw = await rawStdioAnswer(argv, 'tools/list');
    const links = JSON.parse(
      (
        await rawStdioAnswer(argv, 'tools/call', { name: 'get-resource-links', arguments: { count: 3 } })
      ).toString('utf8'),
    ) as { result: { content: { type: string; size?: number; mimeType?: string }[] } };
    const sentLinks = links.result.content.filter((b) => b.type === 'resource_link');
    const calls = callsFile([
      { tool: 'get-structured-content', arguments: { location: 'New York' } },
      { tool: 'get-resource-links', arguments: { count: 3 } },
    ]);
    const { code, json } = await runAudit(['--json', '--calls', calls, '--', ...argv]);
    expect(code).toBe(0);
    expect(json.server.name).toBe('mcp-servers/everything');
    expectCatalogAsSent(json, sentDescriptorBytes(raw), raw.length);
    expect(json.calls[0]?.channels?.structuredContent).toBeGreaterThan(0);
    expect(json.calls[0]?.duplicatedBytes).toBeGreaterThan(0);
    expect(sentLinks.length).toBe(3);
    expect(json.calls[1]?.resourceLinks).toMatchObject({
      count: 3,
      withSize: sentLinks.filter((l) => typeof l.size === 'number').length,
      withMimeType: sentLinks.filter((l) => typeof l.mimeType === 'string').length,
    });
    expect(json.calls[1]?.channels?.blocks.content_resource_link).toBeGreaterThan(0);
  }, 60_000);

  it('an answer past --max-message-bytes is not held: the call says so, the audit goes on (HTTP and stdio)', async () => {
    const calls = callsFile([
      { tool: 'echo', arguments: { message: 'x'.repeat(200_000) } },
      { tool: 'echo', arguments: { message: 'after' } },
    ]);
    for (const target of [[everything.url], ['--', process.execPath, EVERYTHING, 'stdio']]) {
      const { code, json } = await runAudit([
        '--json',
        '--calls',
        calls,
        '--max-message-bytes',
        '64KiB',
        ...target,
      ]);
      expect(code).toBe(0);
      const [big, after] = json.calls;
      expect(big?.error?.message).toContain('over --max-message-bytes');
      expect(big?.bytes).toBeGreaterThan(64 * 1024);
      expect(big?.hosts).toEqual({});
      expect(after?.error).toBeUndefined();
      expect(after?.channels?.content).toBeGreaterThan(0);
    }
  }, 120_000);

  it('--fail-over claude-code: 0 within the budget, 1 over it', async () => {
    const small = callsFile([{ tool: 'echo', arguments: { message: 'hello' } }]);
    const within = await runAudit([everything.url, '--calls', small, '--fail-over', 'claude-code']);
    expect(within.code).toBe(0);
    expect(within.stdout).toContain('Within the budget of claude-code');

    const big = callsFile([{ tool: 'echo', arguments: { message: OVERSIZED } }]);
    const over = await runAudit([everything.url, '--calls', big, '--fail-over', 'claude-code']);
    expect(over.code).toBe(1);
    expect(over.stderr).toMatch(/over budget: claude-code: echo \(line 1\) is \d+ tokens, over 25000/);
    expect(over.stdout).toContain('OVER');
    // The catalog alone is far within Claude Code's budget.
    expect(over.stdout).not.toContain('the catalog is');
  }, 120_000);

  it('usage errors exit 2; a server that cannot be reached or initialized exits 3 with the reason', async () => {
    const unknownHost = await runAudit([everything.url, '--fail-over', 'no-such-host']);
    expect(unknownHost.code).toBe(2);
    expect(unknownHost.stderr).toContain('no host profile "no-such-host"');
    const badCalls = await runAudit([everything.url, '--calls', callsFile([{ nothing: 1 }])]);
    expect(badCalls.code).toBe(2);
    expect(badCalls.stderr).toMatch(/calls\.jsonl:1: expected \{"tool"/);
    const noServer = await runAudit(['--json']);
    expect(noServer.code).toBe(2);
    expect(noServer.stderr).toContain('audit needs a server');
    const help = await runAudit(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('mcp-edge audit URL [--header NAME=VALUE]');

    const closedPort = await freePort();
    const unreachable = await runAudit([`http://127.0.0.1:${closedPort}/mcp`, '--fail-over', 'claude-code']);
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toContain(`could not reach or initialize http://127.0.0.1:${closedPort}/mcp`);
    expect(unreachable.stderr).toContain('ECONNREFUSED');
    const noCommand = await runAudit(['--', join(tmpdir(), 'no-such-mcp-server')]);
    expect(noCommand.code).toBe(3);
    expect(noCommand.stderr).toContain('ENOENT');
    const failing = join(mkdtempSync(join(tmpdir(), 'mcp-edge-audit-bad-')), 'server.mjs');
    writeFileSync(failing, 'console.error("missing API_KEY"); process.exit(1);\n');
    const exits = await runAudit(['--', process.execPath, failing]);
    expect(exits.code).toBe(3);
    expect(exits.stderr).toContain('exited with code 1');
    expect(exits.stderr).toContain("the server's last stderr lines:\n    missing API_KEY");
    // Its stdin closed before it exits: audit's initialize meets a broken pipe, and still says how it ended.
    const closing = join(mkdtempSync(join(tmpdir(), 'mcp-edge-audit-bad-')), 'server.mjs');
    writeFileSync(
      closing,
      'process.stdin.destroy(); console.error("no config"); setTimeout(() => process.exit(4), 300);\n',
    );
    const broken = await runAudit(['--', process.execPath, closing]);
    expect(broken.code).toBe(3);
    expect(broken.stderr).toContain('exited with code 4');
    expect(broken.stderr).not.toContain('EPIPE');
  }, 180_000);
});

describe('mcp-edge audit: server-filesystem over stdio', () => {
  it('a read of a file over Claude Code budget is over it (exit 1 with --fail-over), a small one is not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-audit-fs-'));
    const large = join(dir, 'large.txt');
    writeFileSync(large, `${OVERSIZED}\n`);
    const small = join(dir, 'small.txt');
    writeFileSync(small, 'a small file\n');
    const argv = [process.execPath, FILESYSTEM, dir];
    const raw = await rawStdioAnswer(argv, 'tools/list');
    const calls = callsFile([
      { tool: 'read_text_file', arguments: { path: small } },
      { tool: 'read_text_file', arguments: { path: large } },
    ]);
    const { code, json, stderr } = await runAudit([
      '--json',
      '--calls',
      calls,
      '--fail-over',
      'claude-code',
      '--',
      ...argv,
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain('read_text_file (line 2)');
    expectCatalogAsSent(json, sentDescriptorBytes(raw), raw.length);
    const [smallRead, largeRead] = json.calls;
    expect(smallRead?.hosts['claude-code']?.over).toBe(false);
    expect(largeRead?.isError).toBe(false);
    expect(largeRead?.bytes).toBeGreaterThan(OVERSIZED.length);
    expect(largeRead?.hosts['claude-code']).toMatchObject({ unit: 'tokens', budget: 25_000, over: true });

    const within = await runAudit([
      '--calls',
      callsFile([{ tool: 'read_text_file', arguments: { path: small } }]),
      '--fail-over',
      'claude-code',
      '--',
      ...argv,
    ]);
    expect(within.code).toBe(0);
  }, 120_000);
});

describe('mcp-edge audit: server-filesystem, a stock official server, in a CI gate', () => {
  it("--fail-over codex with no calls file exits 0: Codex's 10 KiB bound each tool output, not the tool list", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-audit-fs-'));
    const argv = [process.execPath, FILESYSTEM, dir];
    const table = await runAudit(['--fail-over', 'codex', '--', ...argv]);
    expect(table.code, table.stdout + table.stderr).toBe(0);
    expect(table.stdout).toContain('no catalog budget: gemini-cli, codex, claude-desktop');
    expect(table.stdout).toMatch(/claude-code\s+[\d,]+ tokens of 25,000\s+[\d.]+%\n/);
    expect(table.stdout).toContain('Within the budget of codex.');
    // Its descriptors are each over 10% of 10 KiB, but well under 10% of Claude Code's catalog budget.
    expect(table.stdout).not.toContain('descriptor-heavy');
    const json = await runAudit([
      '--json',
      '--fail-over',
      'codex',
      '--fail-over',
      'claude-code',
      '--',
      ...argv,
    ]);
    expect(json.code).toBe(0);
    expect(json.json.catalog.totalBytes).toBeGreaterThan(10_240);
    expect(json.json.catalog.hosts.codex).toBeUndefined();
  }, 120_000);

  it('a call answered with isError shows the start of its text', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-audit-fs-'));
    const argv = [process.execPath, FILESYSTEM, dir];
    const calls = callsFile([{ tool: 'read_text_file', arguments: { path: join(dir, 'missing.txt') } }]);
    const json = await runAudit(['--json', '--calls', calls, '--', ...argv]);
    expect(json.json.calls[0]?.isError).toBe(true);
    expect(json.json.calls[0]?.isErrorText).toMatch(/^ENOENT: no such file or directory/);
    const table = await runAudit(['--calls', calls, '--', ...argv]);
    expect(table.stdout).toContain(`  line 1 (read_text_file), isError: ${json.json.calls[0]?.isErrorText}`);
  }, 120_000);
});

describe('mcp-edge audit: the bundled demo', () => {
  let demo: DemoServer;
  beforeAll(async () => {
    demo = await startDemoServer({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await demo.close();
  });

  it("the README's example: a table of the catalog, the calls per host and the findings; --json agrees", async () => {
    const raw = await rawHttpAnswer(demo.url, 'tools/list');
    const calls = join(REPO_ROOT, 'examples/audit-calls.jsonl');
    const json = await runAudit([demo.url, '--calls', calls, '--json']);
    expect(json.code).toBe(0);
    expectCatalogAsSent(json.json, sentDescriptorBytes(raw), raw.length);
    expect(json.json.calls.map((c) => c.tool ?? c.method)).toEqual([
      'weather_report',
      'sized',
      'export_report',
      'resources/read',
    ]);
    const sized = json.json.calls[1];
    expect(sized?.channels?.structuredContent).toBeGreaterThan(150_000);
    expect(sized?.duplicatedBytes).toBeGreaterThan(150_000);
    expect(sized?.hosts.codex?.over).toBe(true);
    expect(json.json.calls[2]?.hosts['claude-code']?.over).toBe(true);

    const table = await runAudit([demo.url, '--calls', calls, '--fail-over', 'claude-code']);
    expect(table.code).toBe(1);
    expect(table.stdout).toContain(`mcp-edge audit of ${demo.url}`);
    expect(table.stdout).toMatch(/Catalog: \d+ tools on 1 page\(s\)/);
    for (const tool of json.json.catalog.tools) expect(table.stdout).toContain(tool.name);
    expect(table.stdout).toMatch(/sized\s+codex\s+[\d,]+ bytes of 10,240\s+[\d.]+%\s+OVER/);
    expect(table.stdout).toMatch(/export_report\s+claude-code\s+>=[\d,]+ tokens of 25,000\s+[\d.]+%\s+OVER/);
    expect(table.stdout).toContain('structured-content-duplicated');
    expect(table.stdout).toContain('fix: ');
    expect(table.stdout).toContain('Over budget (--fail-over): claude-code: sized (line 2)');
  }, 120_000);

  it("--config adds the config's hosts: profiles, measured and failed over like the built-in ones", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-audit-config-'));
    const config = join(dir, 'edge.yaml');
    writeFileSync(
      config,
      `upstream: { url: ${demo.url} }\nhosts:\n  tiny-host:\n    match: [tiny*]\n    budgets: { characters: 200 }\n    catalogBudgets: { characters: 1000 }\n    channels: content\n`,
    );
    const calls = callsFile([{ tool: 'echo', arguments: { text: 'x'.repeat(300) } }]);
    const { code, json, stderr } = await runAudit([
      demo.url,
      '--json',
      '--config',
      config,
      '--hosts',
      'tiny-host',
      '--calls',
      calls,
      '--fail-over',
      'tiny-host',
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain('over budget: tiny-host: echo (line 1)');
    expect(Object.keys(json.catalog.hosts)).toEqual(['tiny-host']);
    expect(json.catalog.hosts['tiny-host']).toMatchObject({
      unit: 'characters',
      budget: 1000,
      size: json.catalog.totalChars,
      over: true,
    });
    expect(stderr).toContain(
      `over budget: tiny-host: the catalog is ${json.catalog.totalChars} characters, over its catalog budget of 1000`,
    );
    expect(json.calls[0]?.hosts['tiny-host']).toMatchObject({ unit: 'characters', budget: 200, over: true });
    expect(json.calls[0]?.hosts['tiny-host']?.size).toBeGreaterThanOrEqual(300);
  }, 60_000);
});
