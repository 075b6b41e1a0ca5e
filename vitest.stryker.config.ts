import { chmodSync } from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

// Stryker creates its sandbox folder private (0700), and vitest runs in it. A test runs the CLI as nobody (root can
// read anything, so that is the only way to get EACCES), and nobody must be able to reach dist/ and the addon there.
if (path.basename(process.cwd()).startsWith('sandbox-')) chmodSync(process.cwd(), 0o755);

// The vitest config Stryker runs (stryker.config.mjs). Stryker's vitest runner starts vitest with `pool: 'threads'`
// as a command-line option, which beats any config file. Threads cannot run these suites: a worker thread's
// `process.env` is its own copy, so the simulated Metal (which reads METAL_CAP_SHIM_SIM_SNAPSHOT with getenv) sees
// no snapshot, and the addon with GNUstep loaded into several threads of one process crashes (SIGSEGV). This plugin
// puts every project back on `forks` once vitest has resolved its options: each test file then runs in a process
// of its own, as in `npm test`.
export default defineConfig({
  plugins: [
    {
      name: 'metal-cap-shim:forks-for-stryker',
      configureVitest({ project }) {
        project.config.pool = 'forks';
      },
    },
  ],
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Only the unit project: the live suite needs a Mac.
    projects: [{ extends: true, test: { name: 'unit', include: ['test/*.test.ts'] } }],
  },
});
