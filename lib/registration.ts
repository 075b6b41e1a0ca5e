/**
 * What `metal-cap-shim/register` decides and does, as a function a test can call in-process. The side effect on
 * import lives in register.ts, which only reports this function's outcome.
 */
import { applyProfile, isAuto, PROFILE_ENV, type AutoApplyResult } from './doctor/auto.js';
import { loadNative } from './native.js';
import { checkSimulatedSnapshot } from './probe.js';
import { DEFAULT_PROFILE, resolveProfile } from './profiles.js';
import { hostFromNative } from './report.js';
import type { HostInfo } from './types.js';

/** What registerFromEnvironment() did. */
export type RegisterOutcome =
  /** METAL_CAP_SHIM_PROFILE=off. */
  | { action: 'off' }
  /** No native module (not macOS): nothing to patch. */
  | { action: 'no-native' }
  /** Not inside a VM (or unknown): nothing was patched and no Metal device was created. */
  | { action: 'not-a-vm'; host: HostInfo }
  | { action: 'applied'; result: AutoApplyResult }
  /** Inside a VM, but the profile could not be applied; nothing is left installed. */
  | { action: 'not-applied'; why: string };

/**
 * Applies the profile named by METAL_CAP_SHIM_PROFILE (default cua-release; `auto`: the verified profile) when this
 * process runs inside a macOS virtual machine. Host facts are read first, without touching Metal: on bare metal no
 * device is ever created, since MTLCreateSystemDefaultDevice() switches a dual-GPU Mac to its discrete GPU. Throws InvalidProfileError for a
 * malformed value (and InvalidSnapshotError / SnapshotNotFoundError for a bad simulated snapshot) before anything
 * is installed.
 */
export function registerFromEnvironment(env: NodeJS.ProcessEnv = process.env): RegisterOutcome {
  const value = env[PROFILE_ENV]?.trim() || DEFAULT_PROFILE;
  if (value === 'off') return { action: 'off' };
  // A malformed value is a configuration error even where nothing would be applied.
  if (!isAuto(value)) resolveProfile(value);
  const native = loadNative();
  if (native.binding === null) return { action: 'no-native' };
  checkSimulatedSnapshot(native.binding);
  const host = hostFromNative(native.binding.host().host);
  if (host.isVirtualMachine !== true) return { action: 'not-a-vm', host };
  const result = applyProfile(value);
  return result.applied ? { action: 'applied', result } : { action: 'not-applied', why: `${result.reason}: ${result.detail}` };
}
