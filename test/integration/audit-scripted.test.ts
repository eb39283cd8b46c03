// `mcp-edge audit` against scripted servers (raw HTTP: exactly the bytes each test writes), for the contract
// findings on cursors and for descriptors whose bytes as sent differ from their re-serialized JSON; against
// the scripted stdio server speaking in terminal control sequences; and through a real edge, where audit's
// numbers and the edge's metrics must agree to the byte.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { METRIC_NAMES } from '../../src/metrics/families.js';
import { callsFile, runAudit, stopAudits } from '../support/audit-cli.js';
import { sample } from '../support/exposition.js';
import { REPO_ROOT } from '../support/processes.js';
import {
  jsonReply,
  parseJsonBody,
  type RawReply,
  type RawUpstream,
  startRawUpstream,
} from '../support/raw-upstream.js';
import { startServerEverything } from '../support/server-everything.js';
import { startTestEdge } from '../support/start-edge.js';
import { controlsIn, HOSTILE, HOSTILE_SHOWN } from '../support/terminal-text.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await stopAudits();
  for (const close of closers.splice(0)) await close();
});

type Id = string | number;

/**
 * An MCP server over plain HTTP (JSON answers, no session) whose tools/list answer is the `result` text a
 * test writes for each cursor; a cursor it rejects gets `rejected` (an error object's text), if given.
 */
async function scriptedServer(
  toolsList: (cursor: string | undefined) => string | { error: string } | RawReply,
): Promise<RawUpstream> {
  const server = await startRawUpstream((req) => {
    if (req.method !== 'POST') return { status: 405 };
    const message = parseJsonBody(req) as { id?: Id; method?: string; params?: { cursor?: string } };
    if (message.id === undefined) return { status: 202 };
    const id = JSON.stringify(message.id);
    if (message.method === 'initialize') {
      return jsonReply({
        jsonrpc: '2.0',
        id: message.id,
        result: {
          protocolVersion: '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'scripted', version: '0.0.1' },
        },
      });
    }
    if (message.method !== 'tools/list') {
      return jsonReply({
        jsonrpc: '2.0',
        id: message.id,
        error: { code: -32601, message: 'no such method' },
      });
    }
    const answer = toolsList(message.params?.cursor);
    if (typeof answer === 'object' && 'status' in answer) return answer;
    return typeof answer === 'string'
      ? jsonReply(`{"jsonrpc":"2.0","id":${id},"result":${answer}}`)
      : jsonReply(`{"jsonrpc":"2.0","id":${id},"error":${answer.error}}`);
  });
  closers.push(() => server.close());
  return server;
}

const tool = (name: string) => `{"name":"${name}","inputSchema":{"type":"object"}}`;

function toolsListCursors(server: RawUpstream): (string | undefined)[] {
  return server.received
    .map((r) => parseJsonBody(r) as { method?: string; params?: { cursor?: string } } | undefined)
    .filter((m) => m?.method === 'tools/list')
    .map((m) => m?.params?.cursor);
}

describe('mcp-edge audit: scripted servers', () => {
  it('a tools/list cursor that cycles ends the walk with the pages seen (no hang), reported as a finding', async () => {
    const next: Record<string, string> = { start: 'a', a: 'b', b: 'a' };
    const server = await scriptedServer((cursor) => {
      const page = cursor ?? 'start';
      return `{"tools":[${tool(`tool-${page}`)}],"nextCursor":"${next[page]}"}`;
    });
    const { code, json } = await runAudit([server.url, '--json']);
    expect(code).toBe(0);
    const walk = json.listings.find((l) => l.method === 'tools/list');
    expect(walk).toMatchObject({ stop: 'cursor-cycle', items: 3 });
    expect(walk?.pages.length).toBe(3);
    expect(json.catalog.tools.map((t) => t.name).sort()).toEqual(['tool-a', 'tool-b', 'tool-start']);
    const cycle = json.findings.find((f) => f.code === 'cursor-cycle');
    expect(cycle?.message).toContain('3 page(s), 3 item(s) seen');
    // First walk only: a walk that did not end is not walked twice.
    expect(toolsListCursors(server).slice(0, 3)).toEqual([undefined, 'a', 'b']);
  }, 60_000);

  it('a cursor that never ends stops at --max-pages', async () => {
    const server = await scriptedServer((cursor) => {
      const page = cursor === undefined ? 0 : Number(cursor.slice(1));
      return `{"tools":[${tool(`tool-${page}`)}],"nextCursor":"p${page + 1}"}`;
    });
    const { code, json } = await runAudit([server.url, '--json', '--max-pages', '7']);
    expect(code).toBe(0);
    const walk = json.listings.find((l) => l.method === 'tools/list');
    expect(walk).toMatchObject({ stop: 'page-cap', items: 7 });
    expect(json.findings.map((f) => f.code)).toContain('page-cap');
    expect(toolsListCursors(server).filter((c) => c !== 'mcp-edge-audit:not-a-cursor').length).toBe(7);
  }, 60_000);

  it('a listing that never answers ends at --timeout with the pages seen, and audit exits', async () => {
    const never = new Promise<void>(() => {});
    const server = await scriptedServer((cursor) =>
      cursor === undefined
        ? `{"tools":[${tool('first')}],"nextCursor":"stalls"}`
        : { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [{ until: never }] },
    );
    const calls = callsFile([{ tool: 'first', arguments: {} }]);
    const { code, json } = await runAudit([server.url, '--json', '--timeout', '3s', '--calls', calls]);
    expect(code).toBe(0);
    expect(json.calls[0]?.error?.message).toBe("not made: the audit's --timeout had passed");
    expect(json.listings[0]).toMatchObject({ method: 'tools/list', stop: 'deadline', items: 1 });
    expect(json.catalog.tools.map((t) => t.name)).toEqual(['first']);
    expect(json.findings.find((f) => f.code === 'deadline')?.message).toContain('1 page(s), 1 item(s) seen');
  }, 60_000);

  it('a bad cursor answered with a result is a finding; answered with -32602 it is not', async () => {
    const pages: Record<string, string> = {
      start: `{"tools":[${tool('one')}],"nextCursor":"c2"}`,
      c2: `{"tools":[${tool('two')}]}`,
    };
    const lax = await scriptedServer((cursor) => pages[cursor ?? 'start'] ?? pages.start!);
    const strict = await scriptedServer(
      (cursor) => pages[cursor ?? 'start'] ?? { error: '{"code":-32602,"message":"Invalid cursor"}' },
    );
    const laxRun = await runAudit([lax.url, '--json']);
    expect(laxRun.code).toBe(0);
    expect(laxRun.json.listings[0]).toMatchObject({ method: 'tools/list', stop: 'end', items: 2 });
    const finding = laxRun.json.findings.find((f) => f.code === 'invalid-cursor-accepted');
    expect(finding?.subject).toBe('tools/list');
    expect(finding?.message).toContain('instead of error -32602');
    expect(finding?.fix).toContain('-32602');

    const strictRun = await runAudit([strict.url, '--json']);
    expect(strictRun.code).toBe(0);
    expect(strictRun.json.listings[0]).toMatchObject({ stop: 'end', items: 2 });
    expect(strictRun.json.findings.map((f) => f.code)).not.toContain('invalid-cursor-accepted');
    expect(strictRun.json.findings.map((f) => f.code)).not.toContain('invalid-cursor-code');
  }, 60_000);

  it('weighs a descriptor as sent (escapes, whitespace), not as its re-serialized JSON; flags a promised cursor', async () => {
    const escaped =
      '{ "name": "caf\\u00e9",\n  "description": "Lists rows; pass a cursor for the next page. a\\/b",\n  "inputSchema": { "type": "object" } }';
    const server = await scriptedServer(() => `{"tools":[ ${escaped} ]}`);
    const { code, json } = await runAudit([server.url, '--json']);
    expect(code).toBe(0);
    const [only] = json.catalog.tools;
    expect(only?.name).toBe('café');
    expect(only?.bytes).toBe(Buffer.byteLength(escaped));
    expect(only?.bytes).toBeGreaterThan(Buffer.byteLength(JSON.stringify(JSON.parse(escaped))));
    expect(only?.chars).toBe(escaped.length);
    const promised = json.findings.find((f) => f.code === 'promised-parameter-missing');
    expect(promised?.subject).toBe('café');
    expect(promised?.message).toContain('"cursor"');
  }, 60_000);
});

describe('mcp-edge audit: a server that writes terminal control sequences', () => {
  const scripted = (mode: string) => [
    process.execPath,
    '--import',
    'tsx',
    join(REPO_ROOT, 'test/fixtures/stdio-scripted-server.ts'),
    mode,
  ];

  it("prints its name, version, tool names, error messages and findings escaped: no control byte but the table's line breaks", async () => {
    const calls = callsFile([{ tool: `evil${HOSTILE}`, arguments: {} }]);
    const table = await runAudit(['--calls', calls, '--', ...scripted('--hostile')]);
    expect(table.code, table.stderr).toBe(0);
    expect(controlsIn(table.bytes.stdout)).toEqual([]);
    expect(controlsIn(table.bytes.stderr)).toEqual([]);
    const lines = table.stdout.split('\n');
    expect(lines).toContain(`server scripted${HOSTILE_SHOWN} 1.0.0${HOSTILE_SHOWN}, protocol 2025-11-25`);
    // The tool's row, its call's row and error, and the findings that quote the server.
    expect(lines.filter((l) => l.startsWith(`  evil${HOSTILE_SHOWN}  `))).toHaveLength(1);
    expect(lines.filter((l) => l.includes(`evil${HOSTILE_SHOWN}`))).toHaveLength(4);
    expect(lines).toContain(`  line 1 (evil${HOSTILE_SHOWN}): unknown tool${HOSTILE_SHOWN}`);
    expect(table.stdout).toContain(`  ! promised-parameter-missing: tool evil${HOSTILE_SHOWN}'s description`);
    expect(table.stdout).toContain(`invalid cursor with error -32000 ("cursor${HOSTILE_SHOWN}")`);
    expect(lines.some((l) => l.startsWith('Audit OK'))).toBe(false);

    const json = await runAudit(['--json', '--calls', calls, '--', ...scripted('--hostile')]);
    expect(json.code, json.stderr).toBe(0);
    expect(controlsIn(json.bytes.stdout)).toEqual([]);
    // Escaped as JSON escapes them: the values parse back whole.
    expect(json.json.server).toMatchObject({ name: `scripted${HOSTILE}`, version: `1.0.0${HOSTILE}` });
    expect(json.json.catalog.tools.map((t) => t.name)).toContain(`evil${HOSTILE}`);
  }, 90_000);

  it('a server that refuses initialize: its error and its stderr lines are printed escaped', async () => {
    const refused = await runAudit(['--', ...scripted('--hostile-refuse')]);
    expect(refused.code).toBe(3);
    expect(controlsIn(refused.bytes.stdout)).toEqual([]);
    expect(controlsIn(refused.bytes.stderr)).toEqual([]);
    const lines = refused.stderr.split('\n');
    expect(lines[0]).toMatch(
      /^mcp-edge audit: could not reach or initialize .*stdio-scripted-server\.ts --hostile-refuse: /,
    );
    expect(lines[0]).toContain(`MCP error -32603: no${HOSTILE_SHOWN}`);
    expect(lines).toContain("  the server's last stderr lines:");
    expect(lines).toContain(`    starting${HOSTILE_SHOWN}`);
    expect(lines).toContain(`    fatal: no key\\u000dAudit OK${HOSTILE_SHOWN}`);
  }, 60_000);
});

describe('mcp-edge audit through a real edge', () => {
  it("agrees to the byte with the edge's metrics on the same answers", async () => {
    const everything = await startServerEverything();
    closers.push(() => everything.close());
    const edge = await startTestEdge(everything.url, '', { metrics: true });
    closers.push(() => edge.stop());
    const calls = callsFile([
      { tool: 'echo', arguments: { message: 'é'.repeat(30_000) } },
      { tool: 'get-structured-content', arguments: { location: 'Los Angeles' } },
    ]);
    const { code, json } = await runAudit([edge.url, '--calls', calls, '--json']);
    expect(code).toBe(0);
    const metrics = await (await fetch(edge.metricsUrl!)).text();
    for (const call of json.calls) {
      const tool = call.tool!;
      const messageBytes = sample(metrics, `${METRIC_NAMES.messageBytes}_sum`, {
        direction: 'response',
        method: 'tools/call',
        tool,
      });
      expect(messageBytes, `${tool}: envelope bytes`).toBe(call.bytes);
      for (const [channel, bytes] of Object.entries(call.channels?.blocks ?? {})) {
        if (bytes === 0) continue;
        expect(
          sample(metrics, `${METRIC_NAMES.resultChannelBytes}_sum`, { channel, tool }),
          `${tool} ${channel}`,
        ).toBe(bytes);
      }
      const duplicated = sample(metrics, METRIC_NAMES.duplicatedBytes, { tool }) ?? 0;
      expect(duplicated, `${tool}: duplicated bytes`).toBe(call.duplicatedBytes);
    }
    expect(json.calls[1]?.duplicatedBytes).toBeGreaterThan(0);
    for (const weight of json.catalog.tools) {
      expect(sample(metrics, METRIC_NAMES.toolDescriptorBytes, { tool: weight.name }), weight.name).toBe(
        weight.bytes,
      );
    }
    expect(sample(metrics, METRIC_NAMES.toolCatalogBytes, {})).toBe(json.catalog.totalBytes);
  }, 90_000);
});
