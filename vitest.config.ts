import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Native addons want separate processes: the default `forks` pool gives each test file its own, so what one file loads
// into its process (the addon, libraries, hooks) never meets another file's tests. A describe block chooses its
// simulated snapshot with useSimulation() (test/support/simulation.ts).
export default defineConfig({
  test: {
    pool: 'forks',
    // One test file per core, not vitest's default of one less: most files spend their time in processes they spawn
    // (the CLI, exec's children, compilers), and on the 2-core CI machine the default ran one file at a time
    // (docs/measurements.md has the times).
    maxWorkers: availableParallelism(),
    testTimeout: 30_000,
    // Brings dist/ and the simulated native build up to date first: no test runs against a stale build.
    globalSetup: ['test/global-setup.ts'],
    hookTimeout: 60_000,
    // Off unless asked (`--coverage.enabled`, as scripts/test.sh does): the in-process half of the coverage that
    // scripts/measure/coverage.mjs merges with the spawned processes' (NODE_V8_COVERAGE).
    coverage: {
      provider: 'v8',
      include: ['lib/**/*.ts'],
      reporter: [['json', { file: 'coverage-final.json' }]],
      reportsDirectory: 'build/coverage/in-process',
    },
    projects: [
      {
        extends: true,
        // Every test file but the live and conformance suites, which are projects of their own: the layer folders
        // (test/<layer>/<file>.test.ts) and the scenario folders (docs/testing.md). The exclusion is in the glob, not in
        // `exclude`, so that `--exclude` on the command line still applies (scripts/measure/native-coverage.mjs).
        test: { name: 'unit', include: ['test/*.test.ts', 'test/!(live|conformance)/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'live', include: ['test/live/*.test.ts'] },
      },
      {
        // llama.cpp's own device code from node-llama-cpp's npm tarballs (test/conformance/README.md). Once per run:
        // the reruns on other Node majors (the native coverage run, the package checks) run the unit project only.
        extends: true,
        test: { name: 'conformance', include: ['test/conformance/*.test.ts'] },
      },
    ],
  },
});
