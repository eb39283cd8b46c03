// Asks for a tool result far over its ceiling (the upstream streams 1 GiB) and times how long until the
// client has mcp-edge's JSON-RPC error in place of the result: for JSON the whole body, for SSE the error
// event (an SDK client settles the call then; the stream itself ends when the upstream's does, timed too).
// Prints one JSON line.
// Run: node dist/bench/bench/huge-client.js URL ANSWER(huge-json|huge-sse) TIMEOUT_MS
import { request } from 'node:http';

const KEEP = 2048;

function main(): void {
  const url = new URL(process.argv[2] ?? 'http://127.0.0.1:8080/mcp');
  const answer = process.argv[3] ?? 'huge-json';
  const timeoutMs = Number(process.argv[4] ?? 30_000);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'huge', arguments: {} },
  });
  const start = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - start) / 1e6;
  const report = (fields: Record<string, unknown>) => {
    process.stdout.write(`${JSON.stringify({ answer, ...fields })}\n`);
  };
  const req = request(
    url,
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
        'x-bench-answer': answer,
        'content-length': Buffer.byteLength(body),
      },
      timeout: timeoutMs,
    },
    (res) => {
      const headersMs = elapsed();
      let bytes = 0;
      let head = '';
      let errorEventMs: number | undefined;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (head.length < KEEP) head += chunk.toString('utf8', 0, Math.min(chunk.length, KEEP));
        if (errorEventMs === undefined && /\n\n/.test(head) && /"error":\{"code"/.test(head))
          errorEventMs = elapsed();
      });
      res.once('end', () => {
        const match = head.match(/"error":\{"code":(-?\d+)/);
        report({
          ok: match !== null,
          status: res.statusCode,
          headersMs,
          errorMs: answer === 'huge-sse' ? (errorEventMs ?? elapsed()) : elapsed(),
          endMs: elapsed(),
          bytes,
          errorCode: match ? Number(match[1]) : null,
          head: head.slice(0, 300),
        });
      });
      res.once('error', (err) => report({ ok: false, error: String(err), errorMs: elapsed(), bytes }));
    },
  );
  req.once('timeout', () => {
    req.destroy(new Error(`no complete answer within ${timeoutMs} ms`));
  });
  req.once('error', (err) => report({ ok: false, error: String(err), errorMs: elapsed() }));
  req.end(body);
}

main();
