import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Every property runs through test/support/property-runs.ts: seeded and bounded under `npm test`,
    // time-boxed under `npm run fuzz` (scripts/fuzz.ts).
    alias: [
      {
        find: /^fast-check$/,
        replacement: fileURLToPath(new URL('./test/support/property-runs.ts', import.meta.url)),
      },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests open real sockets and child processes; two workers fit the 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});
