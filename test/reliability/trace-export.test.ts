// An exporter that is down or slow never delays an exchange: spans wait in a bounded queue, and what does not
// fit or cannot be sent is counted in mcp_edge_spans_dropped_total. The bounds are derived from the same calls
// measured against a receiver that answers at once.
import { describe, expect, it } from 'vitest';
import { connectV1Client } from '../support/clients.js';
import { sample } from '../support/exposition.js';
import { trackHandles } from '../support/handles.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { freePort } from '../support/ports.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import type { TestEdge } from '../support/start-edge.js';
import { startTracedEdge } from '../support/traced-edge.js';

const { track } = trackHandles();

const CALLS = 60;
/** A small queue, so a few dozen calls fill it. */
const QUEUE = 'maxQueueSize: 16, maxExportBatchSize: 4';
/** Each tools/call exchange ends two spans: the exchange's and its request's. */
const SPANS_PER_CALL = 2;

/** The duration of each of CALLS sequential tools/call through the edge, in ms. */
async function callDurations(edge: TestEdge): Promise<number[]> {
  const { client } = track(await connectV1Client(edge.url));
  const durations: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    await client.callTool({ name: 'echo', arguments: { text: `call ${i}` } });
    durations.push(performance.now() - started);
  }
  return durations;
}

async function dropped(edge: TestEdge, reason: string): Promise<number> {
  const text = await (await fetch(edge.metricsUrl ?? '')).text();
  return sample(text, 'mcp_edge_spans_dropped_total', { reason }) ?? 0;
}

/** Polls the counter until it reaches `atLeast` (each poll an HTTP scrape); the test's own timeout bounds it. */
async function droppedReaching(edge: TestEdge, reason: string, atLeast: number): Promise<number> {
  for (;;) {
    const count = await dropped(edge, reason);
    if (count >= atLeast) return count;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Durations as a bound: the slowest call of the baseline, five times over, plus one second of slack. */
function boundOf(baseline: number[]): number {
  return Math.max(...baseline) * 5 + 1000;
}

describe('an exporter that is down or slow', () => {
  it('a closed port: every call takes its usual time, and every span is counted as dropped', async () => {
    const server = track(await startV1Server({ mode: 'json' }));
    const healthy = track(await startOtlpReceiver());
    const baseline = await callDurations(
      track(await startTracedEdge(server.url, healthy.url, '', { traces: QUEUE, metrics: true })),
    );

    const closed = `http://127.0.0.1:${await freePort()}/v1/traces`;
    const edge = track(
      await startTracedEdge(server.url, closed, '', { traces: `${QUEUE}, exportTimeout: 2s`, metrics: true }),
    );
    const durations = await callDurations(edge);
    expect(Math.max(...durations)).toBeLessThan(boundOf(baseline));
    // Spans that fit the queue fail to export; the rest never fit: together, every span of the calls.
    const full = await dropped(edge, 'queue_full');
    await droppedReaching(edge, 'export_failed', CALLS * SPANS_PER_CALL - full);
  }, 120_000);

  it('a receiver that answers after 30 s: calls take their usual time, the queue holds its bound, the rest is counted', async () => {
    const server = track(await startV1Server({ mode: 'json' }));
    const healthy = track(await startOtlpReceiver());
    const baseline = await callDurations(
      track(await startTracedEdge(server.url, healthy.url, '', { traces: QUEUE, metrics: true })),
    );

    const slow = track(await startOtlpReceiver({ answerAfterMs: 30_000 }));
    // Each export waits up to exportTimeout: a call that waited for one would take at least that long.
    const edge = track(
      await startTracedEdge(server.url, slow.url, '', {
        traces: `${QUEUE}, exportTimeout: 3s`,
        metrics: true,
      }),
    );
    const durations = await callDurations(edge);
    expect(Math.max(...durations)).toBeLessThan(Math.min(boundOf(baseline), 3000));
    // Nothing was delivered (the receiver never answered in time): every span of the calls is queued (at
    // most 16), in the one export in flight (at most 4), or dropped and counted.
    const counted = (await dropped(edge, 'queue_full')) + (await dropped(edge, 'export_timeout'));
    expect(counted).toBeGreaterThanOrEqual(CALLS * SPANS_PER_CALL - 16 - 4);
    expect(slow.requests).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
