// `npm start`: the bundled demo MCP server with mcp-edge in front of it, on the shipped demo config.
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '../config/load.js';
import { startEdge } from '../run.js';
import { startDemoServer } from './server.js';

const configPath = process.argv[2] ?? fileURLToPath(new URL('../../config/demo.yaml', import.meta.url));

async function main(): Promise<void> {
  const loaded = await loadConfigFile(configPath);
  const upstream = new URL(loaded.config.upstream.url!);
  const demo = await startDemoServer({ host: upstream.hostname, port: Number(upstream.port) });
  const edge = await startEdge(loaded);
  process.stdout.write(
    [
      '',
      `  demo MCP server   ${demo.url}`,
      `  mcp-edge          ${edge.url}   <- point your MCP client here`,
      `  config            ${configPath}`,
      '',
      `  try: npx tsx examples/call-demo.ts ${edge.url}`,
      '',
      '',
    ].join('\n'),
  );
  const stop = async () => {
    await edge.stop();
    await demo.close();
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err: unknown) => {
  process.stderr.write(`npm start failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
