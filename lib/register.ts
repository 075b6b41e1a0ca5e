/**
 * `import 'metal-cap-shim/register'` (or `node --import metal-cap-shim/register app.js`): applies the profile named by
 * METAL_CAP_SHIM_PROFILE (a built-in name, JSON, or `auto` for the verified profile; default cua-release; `off`
 * disables) when the process runs inside a macOS virtual machine, and does nothing elsewhere. It must run before any
 * engine initialises Metal.
 */
import { applyProfile, isAuto, PROFILE_ENV as PROFILE_VARIABLE } from './doctor/auto.js';
import { MetalCapShimError, NativeError } from './errors.js';
import { loadNative } from './native.js';
import { checkSimulatedSnapshot } from './probe.js';
import { DEFAULT_PROFILE, resolveProfile } from './profiles.js';

/** The environment variable register reads. Typed as its literal so this entry's declarations stand alone. */
export const PROFILE_ENV: 'METAL_CAP_SHIM_PROFILE' = PROFILE_VARIABLE;

function registerFromEnvironment(): void {
  const value = process.env[PROFILE_ENV]?.trim() || DEFAULT_PROFILE;
  if (value === 'off') return;
  // A malformed value is a configuration error: say so and stop before the program runs unpatched.
  if (!isAuto(value)) resolveProfile(value);
  const native = loadNative();
  if (native.binding === null) return;
  checkSimulatedSnapshot(native.binding);
  const host = native.binding.probe(false, true).host;
  if (host.isVirtualMachine !== true) return;
  // The value was valid; if patching itself fails (nothing was left installed), the program still runs, unpatched,
  // and says so.
  try {
    const result = applyProfile(value);
    if (!result.applied) notApplied(`${result.reason}: ${result.detail}`);
  } catch (err) {
    if (!(err instanceof NativeError)) throw err;
    notApplied(`${err.code}: ${err.message}`);
  }
}

function notApplied(why: string): void {
  process.emitWarning(`metal-cap-shim/register: profile not applied (${why})`, { code: 'METAL_CAP_SHIM_NOT_APPLIED' });
}

try {
  registerFromEnvironment();
} catch (err) {
  if (!(err instanceof MetalCapShimError)) throw err;
  process.stderr.write(`metal-cap-shim/register: ${err.code}: ${err.message}\n`);
  process.exit(1);
}
