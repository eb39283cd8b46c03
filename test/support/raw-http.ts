// Raw HTTP/1.1 over a TCP socket, for requests no HTTP client library will send (smuggling shapes,
// header floods, trickled bytes) and for upstreams that lie about their framing.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface RawExchange {
  /** Everything the server sent before it closed (or the timeout). */
  response: string;
  status: number | undefined;
  /** True when the server closed the connection. */
  closed: boolean;
  elapsedMs: number;
}

/** Sends `parts` in order (a number waits that many ms) and collects the answer until close or timeout. */
export async function rawRequest(
  url: string,
  parts: (string | Buffer | number)[],
  timeoutMs = 5000,
): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  const socket: Socket = connect({ host: hostname, port: Number(port) });
  const chunks: Buffer[] = [];
  let closed = false;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve) => {
    socket.once('close', () => {
      closed = true;
      resolve();
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  for (const part of parts) {
    if (socket.destroyed) break;
    if (typeof part === 'number') await new Promise((resolve) => setTimeout(resolve, part));
    else socket.write(part);
  }
  await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, timeoutMs))]);
  socket.destroy();
  const response = Buffer.concat(chunks).toString('latin1');
  const status = /^HTTP\/1\.1 (\d{3})/.exec(response)?.[1];
  return {
    response,
    status: status === undefined ? undefined : Number(status),
    closed,
    elapsedMs: Date.now() - started,
  };
}

export interface RawTcpUpstream {
  url: string;
  /** Raw request texts received, one per connection. */
  received: string[];
  close(): Promise<void>;
}

/** An upstream that answers every connection with exactly `answer` bytes (a function of the request), then optionally resets. */
export async function startRawTcpUpstream(
  answer: (request: string) => { bytes: string | Buffer; after: 'end' | 'reset' | 'hold' },
): Promise<RawTcpUpstream> {
  const received: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const headerEnd = text.indexOf('\r\n\r\n');
      if (headerEnd === -1) return;
      const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, headerEnd))?.[1] ?? 0);
      if (text.length < headerEnd + 4 + length) return;
      received.push(text);
      const reply = answer(text);
      text = '';
      socket.write(reply.bytes);
      if (reply.after === 'end') socket.end();
      if (reply.after === 'reset') socket.resetAndDestroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    received,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
