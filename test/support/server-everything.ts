// Launches @modelcontextprotocol/server-everything (Streamable HTTP) as a child process bound to loopback.
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.js';
import { type ChildExit, type ChildHandle, spawnNode } from './processes.js';

const ENTRY = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);
/** Makes the server's `listen(PORT)` bind 127.0.0.1 instead of every interface. */
const LOOPBACK_PRELOAD = fileURLToPath(new URL('./bind-loopback.cjs', import.meta.url));

export interface ServerEverything {
  /** `http://127.0.0.1:PORT/mcp` */
  url: string;
  port: number;
  pid: number;
  /** The child's handle (output, exit). */
  process: ChildHandle;
  /** Stops the child (SIGTERM, SIGKILL after 5 s) and resolves once it has exited. */
  close(): Promise<ChildExit>;
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function waitForPort(handle: ChildHandle, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await portAnswers(port))) {
    const exit = handle.exit();
    if (exit)
      throw new Error(
        `server-everything exited (${JSON.stringify(exit)}) before listening:\n${handle.stderr()}`,
      );
    if (Date.now() >= deadline)
      throw new Error(`server-everything did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function startServerEverything(
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ServerEverything> {
  const port = await freePort();
  const handle = spawnNode(['--require', LOOPBACK_PRELOAD, ENTRY, 'streamableHttp'], {
    env: { ...opts.env, PORT: String(port) },
  });
  try {
    await waitForPort(handle, port, opts.timeoutMs ?? 15_000);
  } catch (error) {
    await handle.stop();
    throw error;
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    pid: handle.pid,
    process: handle,
    close: () => handle.stop(),
  };
}
