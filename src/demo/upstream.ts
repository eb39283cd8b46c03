// Runs the demo MCP server on its own: `npx tsx src/demo/upstream.ts --port 3000 [--host 127.0.0.1]`.
import { parseArgs } from 'node:util';
import { startDemoServer } from './server.js';

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(`--port must be an integer from 0 to 65535, got "${value}"`);
  }
  return port;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '3000' },
      host: { type: 'string', default: '127.0.0.1' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write('Usage: tsx src/demo/upstream.ts [--port 3000] [--host 127.0.0.1]\n');
    return;
  }
  const demo = await startDemoServer({ host: values.host, port: parsePort(values.port) });
  process.stdout.write(`Demo MCP server listening on ${demo.url}\n`);

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`Received ${signal}, stopping demo MCP server\n`);
    demo.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
});
