import { chmodSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Stryker makes its sandbox (build/stryker-tmp/sandbox-*) with mkdtemp, mode 0700. Tests that run the CLI as another
// user (doctor's unreadable --mmap-file runs as nobody when root runs the suite) must reach dist/ in it, as they reach
// it in the worktree.
const here = path.dirname(fileURLToPath(import.meta.url));
if (path.basename(path.dirname(here)) === 'stryker-tmp') chmodSync(here, 0o755);

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
    // The unit project's files, as in vitest.config.ts: all but the live suite (it needs a Mac) and the conformance
    // suite.
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/*.test.ts', 'test/!(live|conformance)/**/*.test.ts'] } },
    ],
  },
});
