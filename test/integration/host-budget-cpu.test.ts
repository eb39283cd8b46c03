// What a client's claimed host costs everyone else (issue 23, item 4): any client may say it is Claude Code,
// and the edge then counts the tokens of its large results on the event loop. A result of one long run of
// letters must not stall the other clients' exchanges. Real SDK clients, a real SDK server, a real edge.

import { describe, expect, it } from 'vitest';
import { type ConnectedV1Client, connectV1Client, textOf } from '../support/clients.js';
import { sample } from '../support/exposition.js';
import { trackHandles } from '../support/handles.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startTestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

/** Log-like lines, about 200 KB: what a large ordinary tool result looks like. */
const ORDINARY = Array.from(
  { length: 2600 },
  (_, i) => `record ${i}: status ok, host web-${i % 97}, latency ${(i * 37) % 1000} ms`,
).join('\n');

/** One pre-token of 200 KB: 25,001 o200k tokens (8 `a` make one), just over Claude Code's 25,000. */
const RUN = 'a'.repeat(200_008);

/** While `call` runs, `pinger` pings through the edge back to back: the slowest ping, and how long the call took. */
async function pingsDuring(
  pinger: ConnectedV1Client,
  call: () => Promise<void>,
): Promise<{ slowestPingMs: number; pings: number; callMs: number }> {
  let calling = true;
  let slowestPingMs = 0;
  let pings = 0;
  const pinging = (async () => {
    while (calling) {
      const start = performance.now();
      await pinger.client.ping();
      slowestPingMs = Math.max(slowestPingMs, performance.now() - start);
      pings++;
    }
  })();
  const start = performance.now();
  await call();
  const callMs = performance.now() - start;
  calling = false;
  await pinging;
  return { slowestPingMs, pings, callMs };
}

describe('a claimed host and everyone else', () => {
  it('a 200 KB run of `a` returned to "claude-code" does not stall another client: pings as during an ordinary result', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, '', { metrics: true }));
    const claude = track(await connectV1Client(edge.url, { name: 'claude-code' }));
    const other = track(await connectV1Client(edge.url, { name: 'acme-agent' }));
    const echo = async (text: string) => {
      const result = await claude.client.callTool({ name: 'echo', arguments: { text } });
      expect(textOf(result)).toBe(text);
    };
    // The tokenizer's tables load on the first count (a one-time cost, not what is compared).
    await echo(ORDINARY);

    const baseline = await pingsDuring(other, () => echo(ORDINARY));
    const run = await pingsDuring(other, () => echo(RUN));

    // Before the fix the run held the event loop for about 30 s: every ping waited that long.
    const bound = 4 * Math.max(baseline.slowestPingMs, baseline.callMs);
    expect(
      run.slowestPingMs,
      `slowest ping ${run.slowestPingMs.toFixed(0)} ms during the run; during the ordinary result ${baseline.slowestPingMs.toFixed(0)} ms (call ${baseline.callMs.toFixed(0)} ms)`,
    ).toBeLessThan(bound);
    expect(run.pings).toBeGreaterThan(0);

    // And each result was measured for Claude Code and found over its 25,000-token budget: the two ordinary
    // ones (about 60,000 tokens) and the run.
    const metrics = await (await fetch(edge.metricsUrl!)).text();
    expect(
      sample(metrics, 'mcp_edge_host_budget_exceeded_total', {
        host: 'claude-code',
        unit: 'tokens',
        tenant: 'default',
        tool: 'echo',
        action: 'observed',
      }),
    ).toBe(3);
  });
});
