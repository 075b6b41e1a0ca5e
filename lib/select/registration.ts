/**
 * What `metal-cap-shim/register` decides and does, as a function a test can call in-process. The side effect on
 * import lives in register.ts, which only reports this function's outcome.
 */
import { applyProfile, AUTO_PROFILE, isAuto, OFF, PROFILE_ENV, type AutoApplyResult, type AutoSource } from './auto.js';
import { InvalidProfileError } from '../core/errors.js';
import { allowsAboveHardware } from '../patch/plan.js';
import { clip } from '../core/input.js';
import { loadNative } from '../device/native.js';
import { checkSimulatedSnapshot } from '../device/probe.js';
import { DEFAULT_PROFILE, resolveProfile, type ProfileInput } from '../patch/profiles.js';
import { hostFromNative } from '../device/report.js';
import type { HostInfo } from '../device/types.js';

export { OFF };

/** What registerFromEnvironment() did. */
export type RegisterOutcome =
  /** METAL_CAP_SHIM_PROFILE=off. */
  | { action: 'off' }
  /** No native module (not macOS): nothing to patch. `ignored`: the value was not a profile, which costs one warning
   * here rather than the program, since nothing would have been applied. */
  | { action: 'no-native'; ignored: InvalidProfileError | null }
  /** Not inside a VM (or unknown): nothing was patched and no Metal device was created. */
  | { action: 'not-a-vm'; host: HostInfo }
  | { action: 'applied'; result: AutoApplyResult }
  /** Inside a VM, but the profile could not be applied; nothing is left installed. `auto`: where profile auto came
   * from (its cache notices are said either way); null for any other profile. */
  | { action: 'not-applied'; why: string; auto: AutoSource | null };

/** The error for a value that is no profile, saying every kind of value the variable takes. */
function variableError(value: string, e: InvalidProfileError): InvalidProfileError {
  return new InvalidProfileError(
    e.field,
    `${PROFILE_ENV}=${clip(value, 80)}: ${e.message}; ${PROFILE_ENV} also takes ${OFF} (do nothing) and ${AUTO_PROFILE} (the profile doctor proved), in any case`,
  );
}

/**
 * Applies the profile named by METAL_CAP_SHIM_PROFILE (default host-family; `auto`: the verified profile; `off`:
 * nothing; both in any case) when this process runs inside a macOS virtual machine. Host facts are read first,
 * without touching Metal: on bare metal no device is ever created, since MTLCreateSystemDefaultDevice() switches a
 * dual-GPU Mac to its discrete GPU. Where Metal exists, throws InvalidProfileError for a malformed value (and
 * InvalidSnapshotError / SnapshotNotFoundError for a bad simulated snapshot) before anything is installed; elsewhere
 * a malformed value is returned as `ignored`.
 */
export function registerFromEnvironment(env: NodeJS.ProcessEnv = process.env): RegisterOutcome {
  const value = env[PROFILE_ENV]?.trim() || DEFAULT_PROFILE;
  if (value.toLowerCase() === OFF) return { action: 'off' };
  let invalid: InvalidProfileError | null = null;
  if (!isAuto(value)) {
    try {
      resolveProfile(value);
    } catch (e) {
      if (!(e instanceof InvalidProfileError)) throw e;
      invalid = variableError(value, e);
    }
  }
  const native = loadNative();
  if (native.binding === null) return { action: 'no-native', ignored: invalid };
  // A malformed value is a configuration error wherever a profile could be applied.
  if (invalid !== null) throw invalid;
  checkSimulatedSnapshot(native.binding);
  const host = hostFromNative(native.binding.host().host);
  if (host.isVirtualMachine !== true) return { action: 'not-a-vm', host };
  // Any text from the environment: applyProfile checks it at run time, as the types cannot.
  // register takes no options: the environment lifts the above-hardware refusal, as it does for exec.
  const result: AutoApplyResult = applyProfile(value as ProfileInput, {
    allowAboveHardware: allowsAboveHardware(env),
  });
  return result.applied
    ? { action: 'applied', result }
    : { action: 'not-applied', why: `${result.reason}: ${result.detail}`, auto: result.auto ?? null };
}
