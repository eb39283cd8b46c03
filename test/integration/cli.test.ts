// The command line contract (design.md section 5), run as a real child process.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startDemoServer } from '../../src/demo/server.js';
import { connectV1Client } from '../support/clients.js';
import { freePort } from '../support/ports.js';
import { type ChildHandle, spawnTsx } from '../support/processes.js';

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
    const none = cli([]);
    expect((await none.exited).code).toBe(2);
    expect(none.stderr()).toContain('give --config FILE or --upstream URL');
    const unknown = cli(['frobnicate']);
    expect((await unknown.exited).code).toBe(2);
    expect(unknown.stderr()).toContain('unknown command "frobnicate"');
    const badFlag = cli(['--bogus']);
    expect((await badFlag.exited).code).toBe(2);
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

  it('a missing config file exits 2', async () => {
    const child = cli(['--config', '/nonexistent/mcp-edge.yaml']);
    expect((await child.exited).code).toBe(2);
    expect(child.stderr()).toContain('/nonexistent/mcp-edge.yaml');
  });

  it('a port already in use is a runtime failure: exit 1', async () => {
    const demo = await startDemoServer({});
    closers.push(() => demo.close());
    const port = Number(new URL(demo.url).port);
    const child = cli([
      '--upstream',
      demo.url,
      '--port',
      String(port),
      '--metrics-port',
      String(await freePort()),
    ]);
    expect((await child.exited).code).toBe(1);
    expect(child.stderr()).toContain('EADDRINUSE');
  });

  it('--upstream URL --port N runs the proxy with built-in defaults; SIGTERM stops it with exit 0', async () => {
    const demo = await startDemoServer({});
    closers.push(() => demo.close());
    const port = await freePort();
    const metricsPort = await freePort();
    const child = cli([
      '--upstream',
      demo.url,
      '--port',
      String(port),
      '--metrics-port',
      String(metricsPort),
    ]);
    await child.waitForLine(/mcp-edge serving/);
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
});
