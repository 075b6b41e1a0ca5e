import { rmSync } from 'node:fs';
import { defineConfig } from 'tsup';

// Cleaned here, once, rather than with `clean: true`: tsup builds both configurations at the same time, and one
// cleaning the folder could remove what the other has just written.
rmSync('dist', { recursive: true, force: true });

export default defineConfig([
  {
    // The library's entry points. Their CommonJS builds share chunks (esbuild's splitting, which tsup also applies to
    // CommonJS), so `metal-cap-shim`, `metal-cap-shim/tables` and `metal-cap-shim/register` load one copy of the
    // library: an error thrown through one entry is an instance of the class the other exports, and the native
    // addon's loader state is one. scripts/build/post-build.mjs turns the ESM entries into wrappers over these.
    entry: { index: 'lib/index.ts', tables: 'lib/tables.ts', register: 'lib/register.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    target: 'node20',
    platform: 'node',
    shims: true,
    sourcemap: true,
    splitting: true,
  },
  {
    // Each command's module is a dynamic import in lib/cli/main.ts; splitting turns each into its own chunk, so a command
    // loads only its own code (CLI start-up is measured by bench/cli.mjs).
    // The probe runner (lib/doctor/runner-main.ts) is built here too: doctor starts it as a process of its own.
    // So is bench --node-llama-cpp's child (lib/bench/node-llama-cpp-child.ts), one process per side and round.
    entry: {
      cli: 'lib/cli/main.ts',
      'doctor-runner': 'lib/doctor/runner-main.ts',
      'bench-node-llama-cpp': 'lib/bench/node-llama-cpp-child.ts',
    },
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    shims: true,
    sourcemap: true,
    // Chunks stay in dist/ itself: packageRoot() finds package.json one folder up from the module's own file.
    splitting: true,
    banner: { js: '#!/usr/bin/env node' },
  },
]);
