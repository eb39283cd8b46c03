// `npm start`: the demo MCP server with mcp-edge in front of it, as a newcomer runs it, and the example
// client script calling through it.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { limitExceededCount, REFUSAL_QUERY } from '../../src/demo/refusal.js';
import { freePort } from '../support/ports.js';
import { type ChildHandle, REPO_ROOT, spawnTsx } from '../support/processes.js';

const children: ChildHandle[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const child of children.splice(0)) await child.stop();
  for (const close of closers.splice(0)) await close();
});

/** A listener on a free loopback port, as another program holding the port would be. */
async function holdPort(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('npm start', () => {
  it('serves the demo through mcp-edge, and the example client shows a call refused by the demo ceiling', async () => {
    // The shipped demo config, on free ports so the test never collides with anything.
    const [edgePort, upstreamPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
    const shipped = readFileSync(join(REPO_ROOT, 'config/demo.yaml'), 'utf8');
    const config = shipped
      .replace(/port: 8080/, `port: ${edgePort}`)
      .replace('127.0.0.1:3000', `127.0.0.1:${upstreamPort}`)
      .replace(/port: 9464/, `port: ${metricsPort}`);
    expect(config).not.toBe(shipped);
    const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-demo-')), 'demo.yaml');
    writeFileSync(file, config);

    const start = spawnTsx('src/demo/start.ts', [file]);
    children.push(start);
    await start.waitForLine(/point your MCP client here/, { timeoutMs: 30_000 });
    const url = `http://127.0.0.1:${edgePort}/mcp`;
    expect(start.stdout()).toContain(url);
    // Where the refusal shows: the metrics URL and the series to look at.
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    await start.waitForLine(/the refusal it causes/, { timeoutMs: 30_000 });
    expect(start.stdout()).toContain(`metrics           ${metricsUrl}`);
    expect(start.stdout()).toContain(`npx tsx examples/call-demo.ts ${url} ${metricsUrl}`);
    expect(start.stdout()).toContain(`the refusal it causes, counted: ${REFUSAL_QUERY}`);

    const example = spawnTsx('examples/call-demo.ts', [url, metricsUrl]);
    children.push(example);
    const exit = await example.exited;
    const out = example.stdout();
    expect(exit.code).toBe(0);
    expect(out).toContain('tools: echo, weather_report');
    expect(out).toMatch(/sized .*JSON-RPC error -32603/);
    expect(out).toContain('"reason":"limit_exceeded"');
    expect(out).toMatch(/export_report .*ok/);
    // The demo does not warn about its own defaults: no log line at warn or above, from its start (its log,
    // written asynchronously, has long caught up once the example's exchanges are logged) to now.
    await start.waitForLine(/"msg":"exchange"/, { timeoutMs: 30_000 });
    const warnings = start
      .stdout()
      .split('\n')
      .filter((line) => /^\{"level":(40|50|60),/.test(line));
    expect(warnings).toEqual([]);
    // The refused request's error whole: code, the complete message (it ends naming the tenant) and its data.
    const refusedRequest = out.split('\n- ').find((entry) => entry.startsWith('echo with a 1.5 MiB request'));
    expect(refusedRequest).toMatch(
      /^echo with a 1\.5 MiB request: HTTP error 413: JSON-RPC error -32600: .* set by the mcp-edge operator for tenant "default"\n {4}data: \{.*"reason":"limit_exceeded".*"direction":"request".*"enforcedBy":"mcp-edge"\}/,
    );
    // The counter, read from the metrics listener before and after: the one refused response.
    expect(out).toContain(`${REFUSAL_QUERY} at ${metricsUrl}: before 0, after 1`);
    const scrape = await (await fetch(metricsUrl)).text();
    expect(limitExceededCount(scrape, { direction: 'response', action: 'rejected' })).toBe(1);
  }, 90_000);

  it.each([
    ['--port', 'mcp-edge'],
    ['--upstream-port', 'the demo MCP server'],
    ['--metrics-port', "mcp-edge's metrics listener"],
  ] as const)(
    'a port that is taken: says whose and that %s chooses another, and that flag works',
    async (flag, whose) => {
      const ports = {
        '--port': await freePort(),
        '--upstream-port': await freePort(),
        '--metrics-port': await freePort(),
      };
      const taken = await holdPort();
      closers.push(taken.close);
      const flags = (chosen: Record<string, number>) =>
        Object.entries(chosen).flatMap(([name, port]) => [name, String(port)]);

      const refused = spawnTsx('src/demo/start.ts', flags({ ...ports, [flag]: taken.port }));
      children.push(refused);
      expect((await refused.exited).code).toBe(1);
      expect(refused.stderr()).toContain(`port ${taken.port} is taken (${whose}'s)`);
      expect(refused.stderr()).toContain(`choose other ports: npm start -- ${flag} N`);

      const moved = spawnTsx('src/demo/start.ts', flags(ports));
      children.push(moved);
      await moved.waitForLine(/point your MCP client here/, { timeoutMs: 30_000 });
      expect(moved.stdout()).toContain(`http://127.0.0.1:${ports['--port']}/mcp`);
      expect(moved.stdout()).toContain(`http://127.0.0.1:${ports['--upstream-port']}/mcp`);
      expect(moved.stdout()).toContain(`http://127.0.0.1:${ports['--metrics-port']}/metrics`);
    },
    90_000,
  );
});
