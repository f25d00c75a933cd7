import { defineConfig } from 'vitest/config';

// Crash and integration tests spawn processes and open sockets: give them room,
// and run test files in parallel only as far as a 2-core CI machine allows.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/support/plain-summary-reporter.ts'],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
