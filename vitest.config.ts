import { defineConfig } from 'vitest/config';

// Native addons want separate processes: the default `forks` pool gives each test file its own, so each file can
// pick its own simulated snapshot (the simulated Metal reads METAL_CAP_SHIM_SIM_SNAPSHOT once per process).
export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'live', include: ['test/live/*.test.ts'] },
      },
    ],
  },
});
