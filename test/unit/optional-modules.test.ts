// Client libraries of optional features load only when the feature is configured: an edge without a Redis
// quota store does not pay ioredis' memory (its modules stay resident for the life of the process).
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, spawnNode } from '../support/processes.js';

/**
 * Imports the edge's whole module graph (what the CLI imports to run an edge and to explain quotas) in a
 * fresh Node, then `extra`, and prints whether ioredis' modules are in Node's module cache after each.
 */
async function ioredisLoaded(extra: string): Promise<{ afterEdge: boolean; afterExtra: boolean }> {
  const script = `
    import { createRequire } from 'node:module';
    const cache = createRequire(import.meta.url).cache;
    const loaded = () => Object.keys(cache).some((file) => file.includes('/node_modules/ioredis/'));
    await import('./src/run.ts');
    await import('./src/quotas/explain.ts');
    const afterEdge = loaded();
    ${extra}
    console.log(JSON.stringify({ afterEdge, afterExtra: loaded() }));
  `;
  const child = spawnNode(['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT });
  const exit = await child.exited;
  expect(exit, child.stderr()).toEqual({ code: 0, signal: null });
  return JSON.parse(child.stdout().trim()) as { afterEdge: boolean; afterExtra: boolean };
}

describe('optional client libraries', () => {
  it('an edge with no Redis quota store never loads ioredis, not even with a memory store made', async () => {
    const seen = await ioredisLoaded(`
      const { quotaStoreOf } = await import('./src/quotas/select-store.ts');
      const { pino } = await import('pino');
      quotaStoreOf({ store: 'memory', maxKeys: 100 }, pino({ level: 'silent' }));
    `);
    expect(seen).toEqual({ afterEdge: false, afterExtra: false });
  });

  it('the probe sees ioredis once it is imported (the check above can fail)', async () => {
    const seen = await ioredisLoaded(`await import('ioredis');`);
    expect(seen).toEqual({ afterEdge: false, afterExtra: true });
  });
});
