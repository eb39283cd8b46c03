// What the edge holds and runs now, as an operator scrapes it: mcp_edge_held_bytes while a request body is
// read, a JSON answer is held and an SSE event is framed (back to 0 after each); mcp_edge_stdio_processes
// beside mcp_edge_stdio_processes_limit, with the log lines of each child's start and end; and the
// McpEdgeStdioProcessesNearLimit rule of deploy/prometheus/alerts.yaml firing and resolving on a real
// Prometheus that scrapes a real stdio edge.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { connectV1Client } from '../support/clients.js';
import { samples } from '../support/exposition.js';
import { MCP_POST_HEADERS } from '../support/handles.js';
import { prometheusInstalled, startPrometheus } from '../support/prometheus.js';
import { parseJsonBody, type RawUpstream, startRawUpstream } from '../support/raw-upstream.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';
import { STDIO_SERVERS, type StdioTestEdge, startStdioEdge } from '../support/stdio-edge.js';

const ALERTS_FILE = new URL('../../deploy/prometheus/alerts.yaml', import.meta.url);

async function gauge(metricsUrl: string | undefined, name: string): Promise<number | undefined> {
  const text = await (await fetch(metricsUrl ?? '')).text();
  return samples(text, name)[0]?.value;
}

/** Polls `read` until it gives `want` (what the edge does next is an event this test cannot hook). */
async function until<T>(read: () => Promise<T>, want: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (want(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('mcp_edge_held_bytes', () => {
  let upstream: RawUpstream;
  let edge: TestEdge;
  const releases: (() => void)[] = [];
  const held = () => gauge(edge.metricsUrl, 'mcp_edge_held_bytes');
  const FIRST = 5000;

  beforeAll(async () => {
    upstream = await startRawUpstream((req) => {
      const message = parseJsonBody(req) as { id: number; params: { name: string } };
      const released = new Promise<void>((resolve) => releases.push(resolve));
      if (message.params.name === 'json') {
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: message.id,
          result: { content: [{ type: 'text', text: 'j'.repeat(2 * FIRST) }] },
        });
        return {
          status: 200,
          headers: { 'content-type': 'application/json' },
          chunks: [body.slice(0, FIRST), { until: released }, body.slice(FIRST)],
        };
      }
      const event = `data: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 's'.repeat(2 * FIRST) }] } })}\n\n`;
      return {
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        chunks: [event.slice(0, FIRST), { until: released }, event.slice(FIRST)],
      };
    });
    edge = await startTestEdge(upstream.url, '', { metrics: true });
  });

  afterAll(async () => {
    for (const release of releases) release();
    await edge?.stop();
    await upstream?.close();
  });

  const callTool = (id: number, name: string) =>
    fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } }),
    }).then((res) => res.text());

  it('is 0 at rest', async () => {
    expect(await held()).toBe(0);
  });

  it('counts a JSON answer held until it is judged whole, and lets it go once sent', async () => {
    const answer = callTool(1, 'json');
    expect(await until(held, (v) => v === FIRST, 'the held half')).toBe(FIRST);
    releases.shift()?.();
    expect(await answer).toContain('j'.repeat(2 * FIRST));
    expect(await until(held, (v) => v === 0, 'released')).toBe(0);
  });

  it('counts the SSE event being framed, and lets it go once the event is complete', async () => {
    const answer = callTool(2, 'sse');
    const framed = await until(held, (v) => (v ?? 0) > 0, 'the framed half');
    // The framer holds the event's bytes so far (its raw pieces, the data value in progress): no less than
    // what came, no more than twice it.
    expect(framed).toBeGreaterThanOrEqual(FIRST);
    expect(framed).toBeLessThanOrEqual(2 * FIRST);
    releases.shift()?.();
    expect(await answer).toContain('s'.repeat(2 * FIRST));
    expect(await until(held, (v) => v === 0, 'released')).toBe(0);
  });

  it('counts a request body while it is read', async () => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'json', arguments: { text: 'b'.repeat(3 * FIRST) } },
    });
    const req = httpRequest(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, 'content-length': Buffer.byteLength(body) },
    });
    const answered = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
    });
    req.write(body.slice(0, FIRST));
    expect(await until(held, (v) => v === FIRST, 'the body read so far')).toBe(FIRST);
    req.end(body.slice(FIRST));
    // Read whole: the body goes upstream; the upstream's answer (held JSON) is released next.
    await until(held, (v) => v === FIRST, 'the answer held');
    releases.shift()?.();
    expect(await answered).toBe(200);
    expect(await until(held, (v) => v === 0, 'released')).toBe(0);
  });

  it('lets a body go when its client leaves halfway', async () => {
    const req = httpRequest(edge.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, 'content-length': 4 * FIRST },
    });
    req.on('error', () => {});
    req.write('x'.repeat(FIRST));
    expect(await until(held, (v) => v === FIRST, 'the body read so far')).toBe(FIRST);
    req.destroy();
    expect(await until(held, (v) => v === 0, 'let go')).toBe(0);
  });

  it('an HTTP upstream exports no stdio process families', async () => {
    const text = await (await fetch(edge.metricsUrl ?? '')).text();
    expect(text).not.toContain('mcp_edge_stdio_processes');
  });
});

describe('mcp_edge_stdio_processes, and the log of each child', () => {
  let edge: StdioTestEdge;
  beforeAll(async () => {
    edge = await startStdioEdge(STDIO_SERVERS.v1Fixture, { stdioYaml: '    maxProcesses: 3', metrics: true });
  });
  afterAll(async () => {
    await edge?.stop();
  });
  const alive = () => gauge(edge.metricsUrl, 'mcp_edge_stdio_processes');

  it('counts the children alive beside maxProcesses; logs each start, an asked end at info, an unasked one at warn', async () => {
    expect(await alive()).toBe(0);
    expect(await gauge(edge.metricsUrl, 'mcp_edge_stdio_processes_limit')).toBe(3);
    const a = await connectV1Client(edge.url);
    const b = await connectV1Client(edge.url);
    expect(await alive()).toBe(2);
    const [pidA, pidB] = edge.upstream.pids();
    const started = edge.logs.filter((l) => l.msg === 'stdio MCP server started');
    expect(started.map((l) => l.pid).sort()).toEqual([pidA, pidB].sort());
    expect(started[0]).toMatchObject({ program: 'node', level: 30, tenant: 'default' });
    expect(typeof started[0]?.session).toBe('string');

    // Ending a session (DELETE) asks its child to end.
    const pidOfA = edge.upstream
      .pids()
      .find((pid) => started.find((l) => l.pid === pid)?.session === a.sessionId());
    await a.transport.terminateSession();
    await a.close();
    const asked = await until(
      async () => edge.logs.find((l) => l.msg === 'stdio MCP server exited' && l.pid === pidOfA),
      (l) => l !== undefined,
      'the asked end',
    );
    expect(asked).toMatchObject({ level: 30, askedByEdge: true, program: 'node', tenant: 'default' });
    expect(await until(alive, (v) => v === 1, 'one child')).toBe(1);

    // A child that dies by itself (this test ends it from outside) is a warning.
    const [survivor] = edge.upstream.pids();
    process.kill(survivor ?? 0, 'SIGKILL');
    const unasked = await until(
      async () =>
        edge.logs.find(
          (l) => l.pid === survivor && l.msg === 'stdio MCP server exited without being asked to',
        ),
      (l) => l !== undefined,
      'the unasked end',
    );
    expect(unasked).toMatchObject({ level: 40, askedByEdge: false, signal: 'SIGKILL', exitCode: null });
    expect(await until(alive, (v) => v === 0, 'no child')).toBe(0);
    await b.close();
  }, 60_000);
});

describe('McpEdgeStdioProcessesNearLimit on a real Prometheus', () => {
  it('fires while the children fill maxProcesses, and resolves once they end', async () => {
    if (!prometheusInstalled()) throw new Error('prometheus missing: apt-get install -y prometheus');
    const edge = await startStdioEdge(STDIO_SERVERS.v1Fixture, {
      stdioYaml: '    maxProcesses: 2',
      metrics: true,
    });
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-stdio-alert-'));
    // The shipped rule without its hold time, so a run of seconds shows it fire and resolve.
    const doc = parseYaml(readFileSync(ALERTS_FILE, 'utf8')) as {
      groups: { rules: { alert: string; for?: string }[] }[];
    };
    const rule = doc.groups.flatMap((g) => g.rules).find((r) => r.alert === 'McpEdgeStdioProcessesNearLimit');
    if (rule === undefined) throw new Error('McpEdgeStdioProcessesNearLimit is not in alerts.yaml');
    delete rule.for;
    writeFileSync(join(dir, 'rules.yaml'), stringifyYaml({ groups: [{ name: 'stdio', rules: [rule] }] }));
    const prom = await startPrometheus({
      scrapeTargets: [new URL(edge.metricsUrl ?? '').host],
      metricsPath: '/metrics',
      scrapeIntervalMs: 1000,
      ruleFiles: [join(dir, 'rules.yaml')],
    });
    const firing = async () => {
      const { alerts } = (await prom.api('/api/v1/alerts')) as {
        alerts: { labels: Record<string, string>; state: string }[];
      };
      return alerts.filter(
        (a) => a.state === 'firing' && a.labels.alertname === 'McpEdgeStdioProcessesNearLimit',
      );
    };
    try {
      await prom.waitForSeries('mcp_edge_stdio_processes_limit', 30_000);
      // One child of two is 50%: below the rule's 80%.
      const one = await connectV1Client(edge.url);
      await prom.waitForSeries('mcp_edge_stdio_processes == 1', 30_000);
      await until(
        () => prom.api('/api/v1/rules'),
        () => true,
        'rules',
      );
      const two = await connectV1Client(edge.url);
      const fired = await until(firing, (a) => a.length === 1, 'McpEdgeStdioProcessesNearLimit firing');
      expect(fired[0]?.labels).toMatchObject({ severity: 'warning', upstream: edge.upstream.label });
      for (const client of [two, one]) {
        await client.transport.terminateSession();
        await client.close();
      }
      await until(firing, (a) => a.length === 0, 'McpEdgeStdioProcessesNearLimit resolved');
    } finally {
      await prom.close();
      await edge.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
