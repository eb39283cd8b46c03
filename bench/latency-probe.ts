// Unloaded latency: one connection, one request at a time, timed here with hrtime (autocannon's histogram
// has 1 ms resolution, too coarse for "added p50 <= 1 ms"). Prints one JSON line.
// Run: node dist/bench/bench/latency-probe.js URL ANSWER TOOL COUNT
import { Agent, request } from 'node:http';

function requestBody(tool: string): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: tool, arguments: {} },
  });
}

function once(agent: Agent, url: URL, answer: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
          'x-bench-answer': answer,
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.once('end', () => {
          if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
          else resolve(Number(process.hrtime.bigint() - start) / 1e3);
        });
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;
}

async function main(): Promise<void> {
  const url = new URL(process.argv[2] ?? 'http://127.0.0.1:3000/mcp');
  const answer = process.argv[3] ?? 'json-1k';
  const body = requestBody(process.argv[4] ?? 'small');
  const count = Number(process.argv[5] ?? 1000);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < Math.min(200, count); i++) await once(agent, url, answer, body);
  const micros: number[] = [];
  for (let i = 0; i < count; i++) micros.push(await once(agent, url, answer, body));
  agent.destroy();
  micros.sort((a, b) => a - b);
  const mean = micros.reduce((a, b) => a + b, 0) / micros.length;
  process.stdout.write(
    `${JSON.stringify({ count, p50Us: percentile(micros, 50), p99Us: percentile(micros, 99), meanUs: mean })}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`latency-probe: ${String(err)}\n`);
  process.exitCode = 1;
});
