// The command line contract (design.md section 5), run as a real child process.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startDemoServer } from '../../src/demo/server.js';
import { connectV1Client } from '../support/clients.js';
import { freePort } from '../support/ports.js';
import { type ChildHandle, cliTestTimeout, REPO_ROOT, spawnTsx } from '../support/processes.js';

const children: ChildHandle[] = [];
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const child of children.splice(0)) await child.stop();
  for (const close of closers.splice(0)) await close();
});

function cli(args: string[], env: Record<string, string> = {}): ChildHandle {
  const child = spawnTsx('src/cli.ts', args, { env });
  children.push(child);
  return child;
}

function tempFile(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-cli-'));
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

vi.setConfig({ testTimeout: await cliTestTimeout() });

describe('mcp-edge command line', () => {
  it('--help and --version exit 0', async () => {
    const help = cli(['--help']);
    expect((await help.exited).code).toBe(0);
    expect(help.stdout()).toContain('mcp-edge --config FILE');
    const version = cli(['--version']);
    expect((await version.exited).code).toBe(0);
    expect(version.stdout().trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('usage errors exit 2 with a message', async () => {
    const [none, unknown, badFlag] = [cli([]), cli(['frobnicate']), cli(['--bogus'])];
    expect((await none.exited).code).toBe(2);
    expect(none.stderr()).toContain('give --config FILE or --upstream URL');
    expect((await unknown.exited).code).toBe(2);
    expect(unknown.stderr()).toContain('unknown command "frobnicate"');
    expect((await badFlag.exited).code).toBe(2);
  });

  it('a mistyped flag gets the usage and the flag it resembles, not parseArgs text', async () => {
    const child = cli(['--upstream', 'http://127.0.0.1:3000/mcp', '--metric-port', '9465']);
    expect((await child.exited).code).toBe(2);
    expect(child.stderr()).toContain('mcp-edge: unknown option --metric-port; did you mean --metrics-port?');
    expect(child.stderr()).toContain('Usage:');
    expect(child.stderr()).not.toContain('positional argument');
    const missing = cli(['--upstream']);
    expect((await missing.exited).code).toBe(2);
    expect(missing.stderr()).toContain('mcp-edge: --upstream needs a value');
  });

  it('check-config prints the effective config of a valid file and exits 0', async () => {
    const child = cli(['check-config', 'config/mcp-edge.example.yaml'], {
      TENANT_JWT_SECRET: 'x'.repeat(40),
    });
    const exit = await child.exited;
    expect(child.stderr()).toContain('configuration is valid');
    expect(exit.code).toBe(0);
    expect(child.stdout()).toContain('maxMessageBytes');
  });

  it.each([
    [
      'a bad size',
      'upstream: { url: http://127.0.0.1:3000/mcp }\nlimits:\n  response:\n    maxMessageBytes: 4 mb\n',
      /:4:\d+: limits\.response\.maxMessageBytes: .*not a size/,
    ],
    [
      'an unknown key',
      'upstream: { url: http://127.0.0.1:3000/mcp }\nlimit:\n  mode: enforce\n',
      /:2:\d+: limit/,
    ],
    ['a bad URL', 'upstream: { url: "not a url" }\n', /:1:\d+: upstream\.url/],
    ['broken YAML', 'upstream: { url: http://127.0.0.1:3000/mcp\n', /:\d+:\d+: /],
    [
      'a missing env var',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's own ${VAR} syntax, not a template
      'upstream: { url: "${NO_SUCH_VAR_FOR_MCP_EDGE}" }\n',
      /:1:\d+: upstream\.url: .*NO_SUCH_VAR_FOR_MCP_EDGE/,
    ],
  ])('rejects %s with exit 2, naming the key and line', async (_name, text, pattern) => {
    const file = tempFile('edge.yaml', text);
    for (const args of [
      ['check-config', file],
      ['--config', file],
    ]) {
      const child = cli(args);
      const exit = await child.exited;
      expect(exit.code).toBe(2);
      expect(child.stderr()).toMatch(pattern);
    }
  });

  it('check-config points at listen.port when it collides with the default metrics.port', async () => {
    const file = tempFile(
      'edge.yaml',
      'upstream: { url: http://127.0.0.1:3000/mcp }\nlisten:\n  port: 9464\n',
    );
    const child = cli(['check-config', file]);
    expect((await child.exited).code).toBe(2);
    expect(child.stderr()).toContain(
      `${file}:3:9: listen.port: must differ from metrics.port, which is 9464 by default; set one of them to another port`,
    );
  });

  it('check-config warns, with the line, about a tenant header trusted from everyone', async () => {
    const file = tempFile(
      'edge.yaml',
      [
        'upstream: { url: http://127.0.0.1:3000/mcp }',
        'tenancy:',
        '  resolve:',
        '    - header: x-tenant-id',
        '      trustedProxies: [10.0.0.0/8, 0.0.0.0/0, "::/0"]',
        '',
      ].join('\n'),
    );
    const child = cli(['check-config', file]);
    expect((await child.exited).code).toBe(0);
    const warnings = child
      .stderr()
      .split('\n')
      .filter((line) => line.includes('warning:'));
    expect(warnings).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${file}:5:36: tenancy\\.resolve\\[0\\]\\.trustedProxies\\[1\\]: warning: 0\\.0\\.0\\.0/0 trusts every peer, so any client can pick its tenant with the x-tenant-id header`,
        ),
      ),
      expect.stringMatching(
        /:5:47: tenancy\.resolve\[0\]\.trustedProxies\[2\]: warning: ::\/0 trusts every peer/,
      ),
    ]);
    expect(child.stderr()).toContain('configuration is valid');
  });

  it('check-config prints a ceiling clamped by hardMaxBytes as the value in force, as explain does', async () => {
    const file = tempFile(
      'edge.yaml',
      [
        'upstream: { url: http://127.0.0.1:3000/mcp }',
        'limits:',
        '  hardMaxBytes: 32MiB',
        '  response: { maxMessageBytes: 0 }',
        '  tools:',
        '    export_report: { response: { maxMessageBytes: 64MiB } }',
        '',
      ].join('\n'),
    );
    const check = cli(['check-config', file]);
    expect((await check.exited).code).toBe(0);
    const clamped = check
      .stdout()
      .split('\n')
      .filter((line) => line.includes('maxMessageBytes: 33554432'));
    expect(clamped).toEqual([
      '    maxMessageBytes: 33554432 # 32 MiB: clamped by limits.hardMaxBytes (configured: no ceiling)',
      '        maxMessageBytes: 33554432 # 32 MiB: clamped by limits.hardMaxBytes (configured: 64 MiB)',
    ]);
    const explain = cli(['explain', '--config', file, '--tenant', 'default', '--tool', 'export_report']);
    expect((await explain.exited).code).toBe(0);
    expect(explain.stdout()).toMatch(
      /response\.maxMessageBytes\s+33,554,432 bytes \(32\.0 MiB\)\s+from limits\.hardMaxBytes/,
    );
  });

  it('explain --host prints the profile, its source and the action; an override names the config', async () => {
    const file = tempFile(
      'hosts.yaml',
      [
        'upstream: { url: http://127.0.0.1:3000/mcp }',
        'tenants: { acme: {} }',
        'hosts:',
        '  claude-code: { budgets: { tokens: 50000 } }',
        'hostBudgets: { action: observe, tenants: { acme: { tools: { export: { action: refuse } } } } }',
      ].join('\n'),
    );
    const claude = cli([
      'explain',
      '--config',
      file,
      '--host',
      'claude-code',
      '--tenant',
      'acme',
      '--tool',
      'export',
    ]);
    expect((await claude.exited).code).toBe(0);
    expect(claude.stdout()).toMatch(/\n {2}budget +50,000 tokens per tool result\n/);
    // The catalog budget is the built-in's: the override set only the result budget.
    expect(claude.stdout()).toMatch(
      /\n {2}catalog budget +25,000 tokens of tool definitions: \/doctor warns/,
    );
    expect(claude.stdout()).toContain('github.com/anthropics/claude-code/issues/12241');
    expect(claude.stdout()).toContain('hosts.claude-code in the mcp-edge config');
    expect(claude.stdout()).toContain(
      'refuse for tenant "acme", tool "export", from hostBudgets.tenants.acme.tools.export.action',
    );
    // A client name finds the profile it maps to.
    const gemini = cli(['explain', '--config', file, '--host', 'gemini-cli-mcp-client']);
    expect((await gemini.exited).code).toBe(0);
    expect(gemini.stdout()).toContain('40,000 characters');
    expect(gemini.stdout()).toContain('github.com/google-gemini/gemini-cli/pull/18446');
    expect(gemini.stdout()).toContain('observe for tenant "default", from hostBudgets.action');
    expect(gemini.stdout()).toMatch(
      /\n {2}catalog budget +none \(hosts\.gemini-cli\.catalogBudgets gives one\)\n/,
    );
    const unknown = cli(['explain', '--config', file, '--host', 'some-agent']);
    expect((await unknown.exited).code).toBe(2);
    expect(unknown.stderr()).toContain('no host profile matches "some-agent"');
  });

  it('explain refuses a tool with a method other than tools/call', async () => {
    const child = cli([
      'explain',
      '--config',
      'config/demo.yaml',
      '--tenant',
      'default',
      '--method',
      'tools/list',
      '--tool',
      'export_report',
    ]);
    expect((await child.exited).code).toBe(2);
    expect(child.stderr()).toContain('--tool applies only to --method tools/call');
    expect(child.stdout()).toBe('');
  });

  it('a missing config file exits 2', async () => {
    const child = cli(['--config', '/nonexistent/mcp-edge.yaml']);
    expect((await child.exited).code).toBe(2);
    expect(child.stderr()).toContain('/nonexistent/mcp-edge.yaml');
  });

  it('a port already in use is a runtime failure: exit 1, naming the address and --port, without a stack', async () => {
    const demo = await startDemoServer({});
    closers.push(() => demo.close());
    const port = Number(new URL(demo.url).port);
    const child = cli([
      '--upstream',
      demo.url,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--metrics-port',
      String(await freePort()),
    ]);
    expect((await child.exited).code).toBe(1);
    expect(child.stderr()).toContain(`mcp-edge: cannot listen on 127.0.0.1:${port} (listen.port)`);
    expect(child.stderr()).toContain('EADDRINUSE');
    expect(child.stderr()).toContain('--port N');
    expect(child.stderr()).not.toMatch(/\n\s+at /);
    expect(child.stdout()).not.toMatch(/listening|serving/i);
  });

  it('a second mcp-edge on the same metrics port exits 1 naming that port and --metrics-port, and never says it listens', async () => {
    const metricsPort = await freePort();
    const first = cli([
      '--upstream',
      'http://127.0.0.1:3000/mcp',
      '--host',
      '127.0.0.1',
      '--port',
      String(await freePort()),
      '--metrics-port',
      String(metricsPort),
    ]);
    await first.waitForLine(/mcp-edge serving/);
    const second = cli([
      '--upstream',
      'http://127.0.0.1:3000/mcp',
      '--host',
      '127.0.0.1',
      '--port',
      String(await freePort()),
      '--metrics-port',
      String(metricsPort),
    ]);
    expect((await second.exited).code).toBe(1);
    expect(second.stderr()).toContain(`mcp-edge: cannot listen on 127.0.0.1:${metricsPort} (metrics.port)`);
    expect(second.stderr()).toContain('another mcp-edge');
    expect(second.stderr()).toContain('--metrics-port N');
    expect(second.stderr()).not.toMatch(/\n\s+at /);
    expect(second.stdout()).not.toMatch(/listening|serving/i);
    expect(first.exit()).toBeUndefined();
  });

  it('SIGHUP says what it did: an unchanged file, or no file at all with --upstream', async () => {
    const port = await freePort();
    const file = tempFile(
      'edge.yaml',
      `listen: { host: 127.0.0.1, port: ${port} }\nupstream: { url: http://127.0.0.1:3000/mcp }\nmetrics: { enabled: false }\n`,
    );
    const fromFile = cli(['--config', file]);
    await fromFile.waitForLine(/mcp-edge serving/);
    fromFile.child.kill('SIGHUP');
    await fromFile.waitForLine(/config reload: the file is unchanged; the running config stays in force/);

    const fromFlags = cli([
      '--upstream',
      'http://127.0.0.1:3000/mcp',
      '--host',
      '127.0.0.1',
      '--port',
      String(await freePort()),
      '--metrics-port',
      String(await freePort()),
    ]);
    await fromFlags.waitForLine(/mcp-edge serving/);
    fromFlags.child.kill('SIGHUP');
    await fromFlags.waitForLine(/there is no config file to reload \(started with --upstream\)/);
    expect(fromFlags.exit()).toBeUndefined();
  });

  it('--upstream URL --port N runs the proxy with built-in defaults; SIGTERM stops it with exit 0', async () => {
    const demo = await startDemoServer({});
    closers.push(() => demo.close());
    const port = await freePort();
    const metricsPort = await freePort();
    const child = cli([
      '--upstream',
      demo.url,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--metrics-port',
      String(metricsPort),
    ]);
    await child.waitForLine(new RegExp(`mcp-edge serving http://127\\.0\\.0\\.1:${port}/mcp`));
    // Metrics are on their own listener, on loopback.
    const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(await scrape.text()).toContain('mcp_edge_');
    const { client, close } = await connectV1Client(`http://127.0.0.1:${port}/mcp`);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('echo');
    await close();
    const exit = await child.stop({ signal: 'SIGTERM' });
    expect(exit.code).toBe(0);
    // One log line per exchange, without bodies.
    const lines = child
      .stdout()
      .split('\n')
      .filter((l) => l.includes('"msg":"exchange"'));
    expect(lines.length).toBeGreaterThan(0);
    expect(child.stdout()).not.toContain('"arguments"');
  });

  it('--upstream and --stdio bind loopback unless --host says otherwise; --host 0.0.0.0 still serves every interface', async () => {
    const demo = await startDemoServer({});
    closers.push(() => demo.close());
    const everything = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
    // The address in the line is the bound socket's (server.address()), not the flag echoed back.
    const served = async (flags: string[], stdioArgv: string[] = []) => {
      const child = cli([...flags, '--port', '0', '--metrics-port', '0', ...stdioArgv]);
      const [, host, port] = await child.waitForLine(/mcp-edge serving http:\/\/([^:/]+):(\d+)\/mcp/, {
        timeoutMs: 90_000,
      });
      // Whatever it bound, loopback reaches it.
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      await child.stop();
      return host;
    };
    expect(await served(['--upstream', demo.url])).toBe('127.0.0.1');
    expect(await served(['--stdio'], ['--', process.execPath, everything, 'stdio'])).toBe('127.0.0.1');
    expect(await served(['--upstream', demo.url, '--host', '0.0.0.0'])).toBe('0.0.0.0');
  }, 300_000);
});
