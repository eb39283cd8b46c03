// A load of MCP calls at a fixed rate over sessions, for an upstream that keeps sessions (stdio): autocannon
// sends one body, and one id in flight on a session's child waits for the last (upstream.stdio.idWait), so
// this client opens sessions and gives every call its own id. Prints one JSON line: what it completed.
// Run: node dist/bench/bench/paced-client.js URL RATE SECONDS SESSIONS MAX_IN_FLIGHT
import { Agent, request } from 'node:http';

const [url = '', rateText = '100', secondsText = '5', sessionsText = '8', inFlightText = '16'] =
  process.argv.slice(2);
const rate = Number(rateText);
const seconds = Number(secondsText);
const agent = new Agent({ keepAlive: true, maxSockets: Number(inFlightText) });

interface Answer {
  status: number;
  sessionId: string | undefined;
}

function post(body: string, sessionId: string | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(sessionId !== undefined
            ? { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }
            : {}),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          const header = res.headers['mcp-session-id'];
          resolve({
            status: res.statusCode ?? 0,
            sessionId: typeof header === 'string' ? header : undefined,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function openSession(): Promise<string> {
  const init = await post(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      },
    }),
    undefined,
  );
  if (init.sessionId === undefined) throw new Error(`initialize got ${init.status} and no session`);
  await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), init.sessionId);
  return init.sessionId;
}

/** A tools/call of server-everything's echo whose result is about 1 KiB. */
function call(id: number): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'echo', arguments: { message: 'x'.repeat(1000) } },
  });
}

async function main(): Promise<void> {
  const sessions = await Promise.all(Array.from({ length: Number(sessionsText) }, () => openSession()));
  const maxInFlight = Number(inFlightText);
  const latencies: number[] = [];
  let sent = 0;
  let inFlight = 0;
  let non2xx = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      // Every call due by now goes, as long as the in-flight bound allows: a fixed rate, not a closed loop.
      const due = Math.min(Math.floor(((now - started) / 1000) * rate), Math.floor(seconds * rate));
      while (sent < due && inFlight < maxInFlight) {
        const id = ++sent;
        const at = performance.now();
        inFlight++;
        post(call(id), sessions[id % sessions.length])
          .then((answer) => {
            if (answer.status < 200 || answer.status >= 300) non2xx++;
            latencies.push(performance.now() - at);
          })
          .catch(() => errors++)
          .finally(() => {
            inFlight--;
          });
      }
      if (now >= deadline && inFlight === 0) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  process.stdout.write(
    `${JSON.stringify({ requests: latencies.length, non2xx, errors, p50Ms: at(0.5), p99Ms: at(0.99) })}\n`,
  );
  agent.destroy();
}

void main();
