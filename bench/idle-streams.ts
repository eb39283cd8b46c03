// Opens COUNT standalone GET SSE streams (raw sockets, so the client costs little), waits up to 15 s for
// their response headers, holds them HOLD_S seconds, closes them and prints one JSON line. A stream whose
// headers never came (a proxy that sends them only with the first event) is held all the same, and counted.
// Run: node dist/bench/bench/idle-streams.js PORT PATH COUNT HOLD_S
import { connect, type Socket } from 'node:net';

const HEADERS_TIMEOUT_MS = 15_000;
/** Connections opened at once, so the listener's backlog never overflows. */
const BATCH = 100;

interface Stream {
  socket: Socket;
  /** Resolves true when a 200 arrived, false on another status, an error or the timeout. */
  headers: Promise<boolean>;
  status: string | undefined;
}

function openStream(port: number, path: string, n: number): Promise<Stream> {
  return new Promise((connected, failed) => {
    const socket = connect({ host: '127.0.0.1', port });
    const stream: Stream = { socket, headers: Promise.resolve(false), status: undefined };
    stream.headers = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), HEADERS_TIMEOUT_MS);
      let head = '';
      socket.on('data', (chunk: Buffer) => {
        if (stream.status !== undefined) return; // the stream's body: read and dropped
        head += chunk.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        clearTimeout(timer);
        stream.status = head.split('\r\n')[0];
        resolve(head.startsWith('HTTP/1.1 200'));
      });
      socket.once('close', () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    socket.once('error', failed);
    socket.once('connect', () => {
      socket.off('error', failed);
      socket.on('error', () => {});
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n` +
          `Mcp-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: bench-session-${n}\r\n\r\n`,
      );
      connected(stream);
    });
  });
}

async function main(): Promise<void> {
  const port = Number(process.argv[2]);
  const path = process.argv[3] ?? '/mcp';
  const count = Number(process.argv[4] ?? 1000);
  const holdS = Number(process.argv[5] ?? 60);
  const streams: Stream[] = [];
  const failures: string[] = [];
  const started = Date.now();
  for (let i = 0; i < count; i += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, count - i) }, (_, k) => openStream(port, path, i + k));
    for (const result of await Promise.allSettled(batch)) {
      if (result.status === 'fulfilled') streams.push(result.value);
      else failures.push(String(result.reason));
    }
  }
  const withHeaders = (await Promise.all(streams.map((s) => s.headers))).filter(Boolean).length;
  const openMs = Date.now() - started;
  process.stdout.write(`open ${streams.length} (${withHeaders} with response headers) in ${openMs} ms\n`);
  let closedEarly = 0;
  for (const s of streams) s.socket.once('close', () => closedEarly++);
  await new Promise((resolve) => setTimeout(resolve, holdS * 1000));
  const stillOpen = streams.length - closedEarly;
  const statuses = [...new Set(streams.map((s) => s.status ?? 'no response headers'))];
  for (const s of streams) s.socket.destroy();
  process.stdout.write(
    `${JSON.stringify({ connected: streams.length, opened: withHeaders, stillOpen, openMs, statuses, failures: failures.slice(0, 5), failed: failures.length })}\n`,
  );
}

void main();
