// The memory formula of docs/operations.md ("Sizing memory"), held to a measured run: a real mcp-edge process
// in front of a scripted upstream that answers N calls at once with S-byte results, all held by the edge at
// the same time (the upstream sends each result's last bytes only once the edge has read the rest of every
// one), the edge's RSS sampled throughout. The figures come from scripts/memory-formula.ts, the same ones the
// docs quote and the manifests are sized from.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { measureBurst } from '../../scripts/measure-memory.js';
import { EDGE_MEMORY, edgeMemoryBytes, MiB, nodeLine } from '../../scripts/memory-formula.js';
import { REPO_ROOT } from '../support/processes.js';

// Small enough for CI, large enough that the in-flight term is most of what the formula allows.
const MESSAGES = 8;
const MESSAGE_BYTES = 16 * MiB;

describe('memory sizing', () => {
  const node = nodeLine();
  const figures = EDGE_MEMORY[node];

  it('the run is one the in-flight term decides: factor x in-flight is most of what the formula adds', () => {
    const inFlight = figures.factor * MESSAGES * MESSAGE_BYTES;
    expect(inFlight).toBeGreaterThan(figures.headroomMiB * MiB + MESSAGE_BYTES);
  });

  it('docs/operations.md states the figures this test holds the edge to, for each Node line', () => {
    const docs = readFileSync(join(REPO_ROOT, 'docs/operations.md'), 'utf8');
    for (const [line, stated] of Object.entries(EDGE_MEMORY)) {
      const row = new RegExp(
        `^\\| ${line}\\b[^|]*\\| ${stated.measuredOn} \\| ${stated.restingMiB} MiB \\| ${stated.headroomMiB} MiB \\| ${stated.factor} \\|$`,
        'm',
      );
      expect(docs, `the Node ${line} row`).toMatch(row);
    }
  });

  for (const framing of ['json', 'sse'] as const) {
    it(`${MESSAGES} results of ${MESSAGE_BYTES / MiB} MiB held at once (${framing}): peak RSS within the formula for Node ${node}`, async () => {
      const run = await measureBurst({
        messages: MESSAGES,
        messageBytes: MESSAGE_BYTES,
        framing,
        mode: 'enforce',
        edge: 'source',
        timeoutMs: 90_000,
      });
      // Every result arrived whole (a JSON body byte for byte; an SSE event with its framing).
      for (const bytes of run.delivered) expect(bytes).toBeGreaterThanOrEqual(MESSAGE_BYTES);
      const grown = run.peakBytes - run.restingBytes;
      const allowed = edgeMemoryBytes(node, run);
      const figuresText = `resting ${(run.restingBytes / MiB).toFixed(1)} MiB, peak ${(run.peakBytes / MiB).toFixed(1)} MiB, formula ${(allowed / MiB).toFixed(1)} MiB`;
      console.log(`memory sizing, ${framing}, Node ${process.version}: ${figuresText}`);
      // The edge held what it was sent: the run measures the in-flight bytes, not an idle process.
      expect(grown, figuresText).toBeGreaterThanOrEqual(0.5 * run.inFlightBytes);
      expect(run.peakBytes, figuresText).toBeLessThanOrEqual(allowed);
    }, 180_000);
  }
});
