import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NativeBinding } from '../../types/binding.js';
import type { UnsupportedReason } from './types.js';

/** The outcome of loading the native module: the binding, or why there is none. */
export type NativeLoad =
  | { binding: NativeBinding; reason: null; detail: null }
  /** Never `no-device`: whether Metal has a device is known only once the module is asked. */
  | { binding: null; reason: Exclude<UnsupportedReason, 'no-device'>; detail: string };

let cached: NativeLoad | undefined;

/** The package's root folder (where package.json, snapshots/ and build/ live), from dist/ or lib/device/. */
export function packageRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  // Built, this module is part of a bundle in dist/; run from source (the tests), it is lib/device/native.ts.
  return path.resolve(here, path.basename(here) === 'dist' ? '..' : '../..');
}

/** The environment variable that selects the simulated Metal (the Linux test build) and the snapshot it answers from. */
export const SIM_SNAPSHOT_ENV = 'METAL_CAP_SHIM_SIM_SNAPSHOT';

/**
 * The schema of the simulated Metal's own files (test/sim-metal/README.md): a snapshot plus the class layouts, test
 * aids and simulated faults that only the simulation reads. Never a snapshot: the package's readers refuse it.
 */
export const SIMULATION_FILE_SCHEMA = 'metal-cap-shim/simulation@1';

/**
 * True when this process should use the simulated Metal: only outside macOS, and only when METAL_CAP_SHIM_SIM_SNAPSHOT
 * is set (the empty string selects a simulated Metal with no device). Without it a checkout whose tests have run
 * behaves like any other Linux install, whatever sits in build/Release.
 */
export function simulationSelected(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): boolean {
  return platform !== 'darwin' && env[SIM_SNAPSHOT_ENV] !== undefined;
}

let version: string | undefined;

/** This package's version, from its package.json (read once: profile auto keys its cache on it at start-up). */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string })
    .version;
  return version;
}

/** What the install script says where no addon was built (scripts/build/install.cjs, shipped with the package). */
interface InstallScript {
  noAddonLine(hasTools: boolean): string;
  hasBuildTools(): boolean;
}

/**
 * Why the addon will not load on a Mac, and what to do. Where none was built (no prebuilt binary matched and the
 * install had no compiler), the install script's own line: one wording at install and at the first live call.
 */
export function unloadableDetail(message: string, script?: InstallScript): string {
  if (/No native build was found/i.test(message)) {
    const install =
      script ??
      (createRequire(import.meta.url)(path.join(packageRoot(), 'scripts', 'build', 'install.cjs')) as InstallScript);
    return install.noAddonLine(install.hasBuildTools());
  }
  return `the native module could not be loaded (${message}); reinstall metal-cap-shim or run \`npm rebuild metal-cap-shim\``;
}

/**
 * Loads the addon on first use, never at import. node-gyp-build (not `bindings`, which never looks in prebuilds/)
 * finds build/Release first, then prebuilds/<platform>-<arch>. Outside macOS there is no Metal: the only build that can
 * exist there is the simulated one, and it is loaded only when simulationSelected().
 */
export function loadNative(): NativeLoad {
  if (cached) return cached;
  const unsupported = `Metal exists only on macOS; this is ${process.platform}`;
  if (process.platform !== 'darwin' && !simulationSelected()) {
    cached = { binding: null, reason: 'unsupported-platform', detail: unsupported };
    return cached;
  }
  const require = createRequire(import.meta.url);
  try {
    const nodeGypBuild = require('node-gyp-build') as (dir: string) => NativeBinding;
    cached = { binding: nodeGypBuild(packageRoot()), reason: null, detail: null };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    cached =
      process.platform === 'darwin'
        ? { binding: null, reason: 'native-module-unavailable', detail: unloadableDetail(message) }
        : {
            binding: null,
            reason: 'unsupported-platform',
            detail: `${unsupported} (${SIM_SNAPSHOT_ENV} is set, but this install has no simulated Metal)`,
          };
  }
  return cached;
}
