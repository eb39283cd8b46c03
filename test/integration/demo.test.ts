// `npm start`: the demo MCP server with mcp-edge in front of it, as a newcomer runs it, and the example
// client script calling through it.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../support/ports.js';
import { type ChildHandle, REPO_ROOT, spawnTsx } from '../support/processes.js';

const children: ChildHandle[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) await child.stop();
});

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

    const example = spawnTsx('examples/call-demo.ts', [url]);
    children.push(example);
    const exit = await example.exited;
    const out = example.stdout();
    expect(exit.code).toBe(0);
    expect(out).toContain('tools: echo, weather_report');
    expect(out).toMatch(/sized .*JSON-RPC error -32603/);
    expect(out).toContain('"reason":"limit_exceeded"');
    expect(out).toMatch(/export_report .*ok/);
    // The refused request's error whole: code, the complete message (it ends naming the tenant) and its data.
    const refusedRequest = out.split('\n- ').find((entry) => entry.startsWith('echo with a 1.5 MiB request'));
    expect(refusedRequest).toMatch(
      /^echo with a 1\.5 MiB request: HTTP error 413: JSON-RPC error -32600: .* set by the mcp-edge operator for tenant "default"\n {4}data: \{.*"reason":"limit_exceeded".*"direction":"request".*"enforcedBy":"mcp-edge"\}/,
    );
  }, 90_000);
});
