/**
 * Profile `auto`: the verified profile of the newest cached doctor result for this host, OS build, device and
 * package version, or, when there is none, of a fresh run of the capability probes (cached for next time). It then
 * goes through applyProfile like any profile: refused on bare metal when it raises, verified on fresh devices.
 */
import { applyPatch, applyPatchOver, type ApplyOptions, type ApplyResult } from '../patch/apply.js';
import { InvalidProfileError, UnsupportedPlatformError } from '../core/errors.js';
import { loadNative } from '../device/native.js';
import { checkOptions } from '../core/options.js';
import { stockReport } from '../device/probe.js';
import {
  DEFAULT_PROFILE,
  offeredMlxArchitecture,
  resolveProfile,
  type Profile,
  type ProfileInput,
} from '../patch/profiles.js';
import { ALLOW_ABOVE_HARDWARE_ENV, allowsAboveHardware, mlxArchitectureEnv } from '../patch/plan.js';
import { MLX_ARCHITECTURE_ENV } from '../engines/mlx-architecture.js';
import type { SupportedReport } from '../device/types.js';
import { cacheKeyFor, doctorCacheDir, readCache } from '../doctor/cache.js';
import { leastProfile } from '../doctor/derive.js';
import { AUTO_PROBES, checkDoctorOptions, type CheckedDoctorOptions } from '../doctor/options.js';
import { runDoctorLiveSync } from '../doctor/run.js';
import type { Recommendation } from '../doctor/types.js';

/** The profile name that asks for the verified profile. */
export const AUTO_PROFILE = 'auto' as const;

/** The environment variable `metal-cap-shim/register` (and `exec` without `--profile`) reads. */
export const PROFILE_ENV = 'METAL_CAP_SHIM_PROFILE';

export { ALLOW_ABOVE_HARDWARE_ENV };

/**
 * The value of METAL_CAP_SHIM_PROFILE that turns the shim off (in any case, as `auto`): register applies nothing, and
 * exec runs the program unpatched.
 */
export const OFF = 'off';

/** True when a profile input asks for `auto`. */
export function isAuto(profile: unknown): boolean {
  return typeof profile === 'string' && profile.trim().toLowerCase() === AUTO_PROFILE;
}

/** Where `auto`'s profile came from. */
export interface AutoSource {
  /** `cache`: every device's result was cached; `doctor`: the capability probes ran now (and were cached). */
  from: 'cache' | 'doctor';
  /** The cache files read, or written by the fresh run. */
  files: string[];
  /** Cache files that exist but could not be used (damaged, another format, another machine or version). */
  ignored: { file: string; why: string }[];
  /** Set when the fresh result could not be cached. */
  cacheError: string | null;
  /** Every device's recommendations (nocopy-mmap only when a cached full doctor run tested it). */
  recommendations: Recommendation[];
}

/** Options for applyProfile('auto'): applyProfile's, and the probes' deadline for a fresh run. */
export interface AutoApplyOptions extends ApplyOptions {
  /** Per-probe deadline in milliseconds when the probes must run; default 5000. */
  timeoutMs?: number | undefined;
}

/** applyProfile()'s result; with `auto`, also where the profile came from. */
export type AutoApplyResult = ApplyResult & { auto?: AutoSource };

/** The options of the doctor run `auto` starts when nothing is cached: the capability probes, `env` read once here. */
export function autoDoctorOptions(
  options: { force: boolean; timeoutMs?: number },
  env: NodeJS.ProcessEnv,
): CheckedDoctorOptions {
  return checkDoctorOptions({
    probes: [...AUTO_PROBES],
    force: options.force,
    allowAboveHardware: allowsAboveHardware(env),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
}

function autoProfileFor(
  stock: SupportedReport,
  options: { force: boolean; timeoutMs?: number },
): { profile: Profile; auto: AutoSource } {
  const lookups = stock.devices.map((d) => readCache(cacheKeyFor(stock, d), d, doctorCacheDir(), options.force));
  const ignored = lookups.flatMap((l) => (l.ignored === null ? [] : [{ file: l.file, why: l.ignored }]));
  if (lookups.every((l) => l.entry !== null)) {
    const devices = lookups.map((l) => l.entry!.result);
    return {
      // Each verified profile is derived capped at the host chip's true family (a cached one is derived again, on this
      // host's chip), so their least is too.
      profile: leastProfile(devices.map((d) => d.verifiedProfile)),
      auto: {
        from: 'cache',
        files: lookups.map((l) => l.file),
        ignored,
        cacheError: null,
        recommendations: devices.flatMap((d) => d.recommendations),
      },
    };
  }
  // Synchronous, as applyProfile() is: the probe runner (a child process) runs while this thread waits, bounded by
  // the sum of its deadlines.
  const report = runDoctorLiveSync(autoDoctorOptions(options, process.env), stock.devices.length);
  return {
    profile: leastProfile(report.devices.map((d) => d.verifiedProfile)),
    auto: {
      from: 'doctor',
      files: report.cache?.written ?? [],
      ignored,
      cacheError: report.cache?.error ?? null,
      recommendations: report.devices.flatMap((d) => d.recommendations),
    },
  };
}

/** A profile that changes nothing: what `auto` stands for where there is no Metal to measure. */
const NOTHING = resolveProfile({});

/**
 * The profile `auto` stands for in this process (the least verified profile over every device), and where it came
 * from. Throws UnsupportedPlatformError where there is no Metal device to measure.
 */
export function resolveAutoProfile(options?: { force?: boolean; timeoutMs?: number }): {
  profile: Profile;
  auto: AutoSource;
} {
  const o = checkOptions<{ force?: boolean; timeoutMs?: number }>('resolveAutoProfile', options, {
    force: 'boolean',
    timeoutMs: 'number',
  });
  const native = loadNative();
  if (native.binding === null)
    throw new UnsupportedPlatformError(`profile auto needs Metal to measure: ${native.detail}`);
  const stock = stockReport(native.binding);
  if (!stock.supported)
    throw new UnsupportedPlatformError(`profile auto needs a Metal device to measure: ${stock.detail}`);
  return autoProfileFor(stock, {
    force: o.force ?? false,
    ...(o.timeoutMs === undefined ? {} : { timeoutMs: o.timeoutMs }),
  });
}

/**
 * Patches every Metal device class to answer as the profile says, then verifies the answers on fresh devices (see
 * apply.ts): not applying is a result, and `strict: true` throws instead. `'auto'` stands for the verified profile,
 * cached from an earlier doctor run or measured now, synchronously, in doctor's probe runner (a child process, which
 * measures stock answers whatever this process has applied).
 */
export function applyProfile(profile: typeof AUTO_PROFILE, options?: AutoApplyOptions): AutoApplyResult;
/** A named (or JSON, or object) profile: applyProfile's options, without `timeoutMs`, which only `auto` takes. */
export function applyProfile(profile?: ProfileInput, options?: ApplyOptions): ApplyResult;
export function applyProfile(
  profile: ProfileInput | typeof AUTO_PROFILE = DEFAULT_PROFILE,
  options?: AutoApplyOptions,
): AutoApplyResult {
  // A named profile goes straight through; applyPatch rejects timeoutMs, which only `auto` uses.
  if (!isAuto(profile)) return offerToMlx(applyPatch(profile as ProfileInput, options));
  const o = checkOptions<AutoApplyOptions>('applyProfile', options, {
    force: 'boolean',
    allowAboveHardware: 'boolean',
    trace: 'boolean',
    strict: 'boolean',
    timeoutMs: 'number',
  });
  const { timeoutMs, ...applyOptions } = o;
  if (timeoutMs !== undefined) checkDoctorOptions({ timeoutMs });
  const native = loadNative();
  // Where nothing can be measured, applying is impossible for any profile: the same not-applied result (or throw).
  if (native.binding === null) return applyPatch(NOTHING, applyOptions);
  const stock = stockReport(native.binding);
  if (!stock.supported) return applyPatch(NOTHING, applyOptions);
  const { profile: verified, auto } = autoProfileFor(stock, {
    force: applyOptions.force ?? false,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
  return { ...offerToMlx(applyPatchOver(stock, verified, applyOptions)), auto };
}

/**
 * An applied profile's architecture for MLX, put where MLX reads it: MLX_METAL_GPU_ARCH in this process's environment
 * (MLX reads it once, when it first uses the GPU, so this must come before). A value the environment already holds is
 * the user's and wins, with a warning in the result (mlxArchitectureEnv). Not undone by restore(): an MLX that has
 * started has read it already.
 */
function offerToMlx(result: ApplyResult): ApplyResult {
  if (!result.applied) return result;
  // A value this process set for an earlier profile is not the user's: the new profile's offer replaces it, and a
  // profile that offers nothing takes it away, so MLX never reads an architecture no applied profile offers.
  const offeredHere = OFFERED_HERE.value;
  if (offeredHere !== null && process.env[MLX_ARCHITECTURE_ENV] === offeredHere)
    delete process.env[MLX_ARCHITECTURE_ENV];
  OFFERED_HERE.value = null;
  const { set, warning } = mlxArchitectureEnv(offeredMlxArchitecture(result.profile), process.env);
  if (set !== null) {
    process.env[MLX_ARCHITECTURE_ENV] = set;
    OFFERED_HERE.value = set;
  }
  return warning === null ? result : { ...result, warnings: [...result.warnings, warning] };
}

/**
 * The MLX_METAL_GPU_ARCH value this process set (offerToMlx). One per process, like the native state: the ESM and the
 * CommonJS build (or two copies of the package) loaded in one process share it through a global symbol.
 */
const OFFERED_HERE: { value: string | null } = ((g: Record<symbol, { value: string | null } | undefined>) => {
  const key = Symbol.for('metal-cap-shim.mlx-architecture-offered');
  g[key] ??= { value: null };
  return g[key];
})(globalThis as unknown as Record<symbol, { value: string | null } | undefined>);

/** Something `auto` has to tell the user about the cache: a file it ignored, or why nothing could be cached. */
export interface AutoCacheNotice {
  code: 'cache-ignored' | 'cache-not-written';
  message: string;
}

/**
 * What `auto` did with the cache that its user must hear about: one notice per file it ignored (a planted folder, a
 * hand-edited or damaged file; each device is then measured again), and the reason the fresh result could not be
 * cached. `exec` prints each as a warning, `register` emits each as a process warning.
 */
export function autoCacheNotices(auto: AutoSource): AutoCacheNotice[] {
  return [
    ...auto.ignored.map(({ file, why }) => ({
      code: 'cache-ignored' as const,
      message: `profile auto ignored the cache file ${file}: ${why}; the device was measured again`,
    })),
    ...(auto.cacheError === null
      ? []
      : [{ code: 'cache-not-written' as const, message: `profile auto: ${auto.cacheError}` }]),
  ];
}

/**
 * The profile `exec` injects: `--profile` when given, else METAL_CAP_SHIM_PROFILE, else the default. `profile` null:
 * METAL_CAP_SHIM_PROFILE=off, the kill switch register honours too, so the program runs unpatched. `auto` is resolved
 * here, in the CLI's process, before the program starts; `auto` then says where it came from (null for any other
 * profile, and where there is no Metal to measure). A value from the variable that is no profile is an error naming
 * the variable.
 */
export function profileForExec(
  flag: ProfileInput | string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  force = false,
): { profile: Profile | null; auto: AutoSource | null } {
  const fromEnv = flag === undefined ? env[PROFILE_ENV]?.trim() : undefined;
  if (fromEnv !== undefined && fromEnv.toLowerCase() === OFF) return { profile: null, auto: null };
  const value = flag ?? (fromEnv || DEFAULT_PROFILE);
  if (!isAuto(value)) {
    try {
      return { profile: resolveProfile(value), auto: null };
    } catch (e) {
      if (!fromEnv || !(e instanceof InvalidProfileError)) throw e;
      throw new InvalidProfileError(e.field, `${PROFILE_ENV}: ${e.message}`);
    }
  }
  // Nothing to measure here: auto claims nothing, and exec decides as for any profile (--allow-unpatched runs the
  // program unpatched, otherwise it says there is no Metal).
  const native = loadNative();
  if (native.binding === null || !stockReport(native.binding).supported) return { profile: NOTHING, auto: null };
  return resolveAutoProfile({ force });
}
