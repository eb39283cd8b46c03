import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests open real sockets and child processes; two workers fit the 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});
