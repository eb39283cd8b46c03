// `mcp-edge --stdio -- ARGV`, the stdio twin of --upstream URL, as an operator runs it: the CLI process
// spawns the server, a real SDK client talks to it through the edge; usage mistakes exit 2 with a message.
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { connectV1Client } from '../support/clients.js';
import { trackHandles } from '../support/handles.js';
import { cliTestTimeout, REPO_ROOT, spawnTsx } from '../support/processes.js';

const { track } = trackHandles();
vi.setConfig({ testTimeout: await cliTestTimeout() });
const EVERYTHING = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

describe('mcp-edge --stdio -- ARGV', () => {
  it('serves the stdio server it spawns; everything after -- is the server argv, not the edge flags', async () => {
    const edge = spawnTsx('src/cli.ts', [
      '--stdio',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--',
      process.execPath,
      EVERYTHING,
      'stdio',
    ]);
    track({ stop: () => edge.stop() });
    const [, url] = await edge.waitForLine(/mcp-edge serving (http:\/\/[^"\s]+)/, { timeoutMs: 20_000 });
    expect(edge.stdout()).toContain('"upstream":"stdio:node"');
    const { client } = track(await connectV1Client(url!));
    const echoed = await client.callTool({ name: 'echo', arguments: { message: 'through the CLI' } });
    expect(JSON.stringify(echoed)).toContain('Echo: through the CLI');
  });

  it('exits 2 for --stdio without a command, and for a command without --stdio', async () => {
    const missing = spawnTsx('src/cli.ts', ['--stdio']);
    const stray = spawnTsx('src/cli.ts', ['--port', '0', '--', 'node', 'server.js']);
    const both = spawnTsx('src/cli.ts', ['--upstream', 'http://127.0.0.1:1/mcp', '--stdio', '--', 'node']);
    expect((await missing.exited).code).toBe(2);
    expect(missing.stderr()).toContain('--stdio needs the server command after --');
    expect((await stray.exited).code).toBe(2);
    expect(stray.stderr()).toContain('add --stdio');
    expect((await both.exited).code).toBe(2);
    expect(both.stderr()).toContain('not both');
  });
});
