import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NativeBinding } from '../types/binding.js';
import type { UnsupportedReason } from './types.js';

/** The outcome of loading the native module: the binding, or why there is none. */
export type NativeLoad =
  | { binding: NativeBinding; reason: null; detail: null }
  | { binding: null; reason: UnsupportedReason; detail: string };

let cached: NativeLoad | undefined;

/** The package's root folder (where package.json, snapshots/ and build/ live), from dist/ or lib/. */
export function packageRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
}

/**
 * Loads the addon on first use, never at import. node-gyp-build (not `bindings`, which never looks in prebuilds/)
 * finds build/Release first, then prebuilds/<platform>-<arch>. Outside macOS the only build that can exist is the
 * simulated Linux test build; its absence is the normal case there, not an error.
 */
export function loadNative(): NativeLoad {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  try {
    const nodeGypBuild = require('node-gyp-build') as (dir: string) => NativeBinding;
    cached = { binding: nodeGypBuild(packageRoot()), reason: null, detail: null };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    cached =
      process.platform === 'darwin'
        ? {
            binding: null,
            reason: 'native-module-unavailable',
            detail: `the native module could not be loaded (${message}); reinstall metal-cap-shim or run \`npx node-gyp rebuild\` in its folder`,
          }
        : {
            binding: null,
            reason: 'unsupported-platform',
            detail: `Metal exists only on macOS; this is ${process.platform}, and no simulated test build is present`,
          };
  }
  return cached;
}
