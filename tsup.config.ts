import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'lib/index.ts', register: 'lib/register.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    target: 'node20',
    platform: 'node',
    shims: true,
    sourcemap: true,
    clean: true,
    splitting: false,
  },
  {
    entry: { cli: 'lib/cli.ts' },
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    shims: true,
    sourcemap: true,
    banner: { js: '#!/usr/bin/env node' },
  },
]);
