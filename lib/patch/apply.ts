import type { NativeBinding, NativeSelectorPatch } from '../../types/binding.js';
import { loadedLlamaCpp, type LoadedLlamaCpp } from '../engines/loaded-llama.js';
import { NativeError, type RefusedError, UnsupportedPlatformError, type NativeErrorCode } from '../core/errors.js';
import { familyNameOf, type FamilyName } from '../core/families.js';
import { loadNative } from '../device/native.js';
import { checkOptions } from '../core/options.js';
import { stockReport } from '../device/probe.js';
import {
  DEFAULT_PROFILE,
  diffAnswers,
  encodeNativeProfile,
  planProfile,
  resolveProfile,
  type AnswerChange,
  type Profile,
  type ProfileInput,
} from './profiles.js';
import { reportFromNative } from '../device/report.js';
import type { CapabilityReport, DeviceReport, SupportedReport, UnsupportedReason } from '../device/types.js';
import { planPatch, refusedError, type ApplyWarning } from './plan.js';

export {
  aboveHostFamilyMessage,
  claimsAboveHostFamily,
  planPatch,
  profileWarnings,
  refusalFor,
  type ApplyWarning,
  type PatchPlan,
} from './plan.js';

/** Options for applyProfile(). */
export interface ApplyOptions {
  /** Allow raising answers on a host that is not a virtual machine. */
  force?: boolean | undefined;
  /** Apply a threadgroup claim the llama.cpp release that will run would turn into a request above every Apple GPU's
   * threadgroup memory (refused otherwise: `above-hardware`). */
  allowAboveHardware?: boolean | undefined;
  /** Count every intercepted query (see status({ trace: true })). Off: the hot path does no counting. */
  trace?: boolean | undefined;
  /** Throw instead of returning `applied: false` when nothing can be patched. */
  strict?: boolean | undefined;
}

/** Why applyProfile() did not apply. */
export type ApplyFailureReason =
  | UnsupportedReason
  /** A device class could not be hooked (it lacks a query); the hooks already in were taken out again. */
  | 'hook-failed'
  /** The hooks went in, but a fresh device did not answer as the profile says; they were taken out again. */
  | 'verification-failed'
  /** The profile raises answers on a host that is not known to be a virtual machine, and `force` was not given. */
  | 'refused-bare-metal'
  /** The profile claims the host chip's name or family (`'host'`), and this host's chip is unknown: nothing is guessed. */
  | 'host-unknown'
  /** The profile's `mlxArchitecture` is above the host's GPU generation, or would turn on MLX's NAX kernels. */
  | 'mlx-architecture-refused'
  /** The llama.cpp release that will run would turn the profile's threadgroup claim into a request above every Apple
   * GPU's threadgroup memory, and `allowAboveHardware` was not given. */
  | 'above-hardware';

/** A device class the engine hooked, with how each selector was reached. */
export interface PatchedClass {
  className: string;
  selectors: NativeSelectorPatch[];
}

/** One answer that does not match what the profile says. */
export interface Mismatch {
  device: number;
  className: string;
  field: string;
  expected: boolean | number | string | null;
  actual: boolean | number | string | null;
}

/** Checking the live answers of freshly obtained devices against the expected ones. Narrow it on `ok`. */
export type Verification =
  | {
      ok: true;
      /** Answers compared (families and sizes, over every device). */
      checked: number;
      mismatches: [];
    }
  | {
      ok: false;
      checked: number;
      /** Every answer that differs; empty when the device list itself changed. */
      mismatches: Mismatch[];
    };

/** applyProfile() patched every device class and the answers verified. */
export interface Applied {
  applied: true;
  reason: null;
  detail: null;
  /** The validated, normalised profile. */
  profile: Profile;
  patchedClasses: PatchedClass[];
  /** Every device as it answered just before this call (stock, or the previous profile). */
  before: SupportedReport;
  /** Every device, freshly obtained, as it answers with the profile installed. */
  after: SupportedReport;
  /** Each answer that differs between `before` and `after`. */
  changed: AnswerChange[];
  warnings: ApplyWarning[];
  verification: Verification & { ok: true };
}

/**
 * applyProfile() left the process as it was; `reason` says why and `detail` what to do (with `hook-failed`, the
 * engine's message naming the class and selector).
 */
export interface NotApplied {
  applied: false;
  reason: ApplyFailureReason;
  detail: string;
  profile: Profile;
  patchedClasses: [];
  /** With `verification-failed`: the answers before this call; otherwise null. */
  before: SupportedReport | null;
  /** With `verification-failed`: the answers that failed, before the patch was taken out; otherwise null. */
  after: CapabilityReport | null;
  changed: [];
  warnings: ApplyWarning[];
  /** With `verification-failed`: the failed check; otherwise null. */
  verification: (Verification & { ok: false }) | null;
}

/** The outcome of applyProfile(). Narrow it on `applied`. */
export type ApplyResult = Applied | NotApplied;

/** A hooked (class, selector). */
export interface HookRef {
  className: string;
  selector: string;
}

/** Why restore() took no hook out. */
export type RestoreSkipReason =
  | Exclude<UnsupportedReason, 'no-device'>
  /** No hook of ours is installed (nothing was applied, or it was restored already). */
  | 'nothing-applied'
  /** Every hook of ours has another library's hook on top of it: see `conflicts`. */
  | 'conflicts';

/** restore() took at least one hook out. */
export interface Restored {
  restored: true;
  reason: null;
  restoredHooks: HookRef[];
  /** Hooks another library replaced after us: left in place so theirs keeps working. */
  conflicts: HookRef[];
  /** A fresh probe compared with the one taken before the first apply. */
  verification: Verification;
}

/** restore() took no hook out; `reason` says why. */
export interface NotRestored {
  restored: false;
  reason: RestoreSkipReason;
  restoredHooks: [];
  conflicts: HookRef[];
  /** A fresh probe compared with the one taken before the first apply; null if nothing was ever applied. */
  verification: Verification | null;
}

/** The outcome of restore(). Narrow it on `restored`. */
export type RestoreResult = Restored | NotRestored;

/** One row of the trace: a hooked selector (and family), how often it was asked and what it answered. */
export interface TraceEntry {
  selector: string;
  /** The family asked, by name where known, else its MTLGPUFamily value; null for `name` and the size queries. */
  family: FamilyName | number | null;
  calls: number;
  /** The last answer asked of the device and the last given: a name for `name`, a number for the sizes. */
  stock: boolean | number | string;
  given: boolean | number | string;
}

/** Fields every status has. */
interface StatusBase {
  /** Hooks in this process: ours, and another library's on top of ours (`ours: false`). */
  hooks: (HookRef & { mode: 'replaced' | 'added'; ours: boolean })[];
  patchedClasses: string[];
  tracing: boolean;
  /** With `status({ trace: true })`: the trace rows. */
  trace: TraceEntry[] | null;
  /** Every ggml-metal loaded in this process: its llama.cpp release and ggml version, and the rules that apply. */
  llamaCpp: LoadedLlamaCpp[];
}

/** The engine's state in this process, shared by the ESM and CJS entry points. Narrow it on `active`. */
export type Status =
  | (StatusBase & { supported: true; active: true; profile: Profile })
  | (StatusBase & { supported: true; active: false; profile: null })
  | {
      supported: false;
      active: false;
      profile: null;
      patchedClasses: [];
      hooks: [];
      tracing: false;
      trace: null;
      llamaCpp: [];
    };

/**
 * Compares freshly obtained devices with the answers expected of them. Fails when any answer differs, and when the
 * device list itself changed length (a device appeared or went away while patching).
 */
export function verifyAnswers(expected: DeviceReport[], actual: DeviceReport[]): Verification {
  const mismatches = diffAnswers(expected, actual).map((c) => ({
    device: c.device,
    className: c.className,
    field: c.field,
    expected: c.from,
    actual: c.to,
  }));
  // The families, the name and the two sizes.
  const perDevice = Object.keys(expected[0]?.families ?? {}).length + 3;
  const checked = perDevice * actual.length;
  if (mismatches.length === 0 && expected.length === actual.length) return { ok: true, checked, mismatches: [] };
  return { ok: false, checked, mismatches };
}

function mergeVerifications(a: Verification, b: Verification | null): Verification {
  if (b === null) return a;
  const checked = a.checked + b.checked;
  if (a.ok && b.ok) return { ok: true, checked, mismatches: [] };
  return { ok: false, checked, mismatches: [...a.mismatches, ...b.mismatches] };
}

/**
 * The default device as MTLCreateSystemDefaultDevice() hands it out, when its class is none of the listed devices'
 * classes: a validation or capture layer can wrap the default device alone. ggml asks that object, so the engine
 * patches its class too (src-native/engine/capabilities.mm), and it is verified here on its own, under the index of the
 * listed device it stands for.
 */
function separateDefault(binding: NativeBinding, listed: DeviceReport[], stock: boolean): DeviceReport | null {
  const device = reportFromNative(binding.probe(false, stock)).devices[0];
  if (device === undefined || listed.some((d) => d.className === device.className)) return null;
  return { ...device, index: listed.find((d) => d.isDefault)?.index ?? device.index };
}

const STRICT_CODES = {
  'native-module-unavailable': 'ERR_NATIVE_UNAVAILABLE',
  'no-device': 'ERR_NO_DEVICE',
  'hook-failed': 'ERR_HOOK_FAILED',
  'verification-failed': 'ERR_VERIFICATION_FAILED',
} as const satisfies Record<
  Exclude<
    ApplyFailureReason,
    'unsupported-platform' | 'refused-bare-metal' | 'host-unknown' | 'mlx-architecture-refused' | 'above-hardware'
  >,
  NativeErrorCode
>;

/** The error `strict: true` throws for a reason applyProfile() did not apply; recordSnapshot and exec throw the same. */
export function notAppliedError(
  reason: ApplyFailureReason,
  detail: string,
): UnsupportedPlatformError | RefusedError | NativeError {
  if (reason === 'unsupported-platform') return new UnsupportedPlatformError(detail);
  if (
    reason === 'refused-bare-metal' ||
    reason === 'host-unknown' ||
    reason === 'mlx-architecture-refused' ||
    reason === 'above-hardware'
  )
    return refusedError(reason, detail);
  return new NativeError(STRICT_CODES[reason], detail);
}

function notApplied(
  profile: Profile,
  reason: ApplyFailureReason,
  detail: string,
  strict: boolean,
  extra: Pick<NotApplied, 'before' | 'after' | 'verification' | 'warnings'> = {
    before: null,
    after: null,
    verification: null,
    warnings: [],
  },
): NotApplied {
  if (strict) throw notAppliedError(reason, detail);
  return { applied: false, reason, detail, profile, patchedClasses: [], changed: [], ...extra };
}

/**
 * applyProfile() for a profile that needs no measuring (every profile but `auto`; lib/select/auto.ts is the public
 * applyProfile and resolves `auto` first), and what the doctor and audit apply.
 * Patches every Metal device class in this process to answer as the profile says, then verifies the answers on
 * freshly obtained devices. Call it before any engine initialises Metal (for node-llama-cpp: before the first
 * getLlama()). Applying another profile swaps it in place. Throws InvalidProfileError or InvalidOptionsError before
 * touching anything. Not applying is a result (`applied: false` with a `reason`), refusal on bare metal and a class
 * that cannot be hooked included; with `strict: true` each reason throws its error instead (RefusedError,
 * UnsupportedPlatformError, NativeError).
 */
export function applyPatch(profile: ProfileInput = DEFAULT_PROFILE, options?: ApplyOptions): ApplyResult {
  return applyPatchOver(undefined, profile, options);
}

/** applyPatch() over a stock report the caller has just read (profile auto reads one to find its cache). */
export function applyPatchOver(
  known: CapabilityReport | undefined,
  profile: ProfileInput,
  options?: ApplyOptions,
): ApplyResult {
  const {
    force = false,
    allowAboveHardware = false,
    trace = false,
    strict = false,
  } = checkOptions<ApplyOptions>('applyProfile', options, {
    force: 'boolean',
    allowAboveHardware: 'boolean',
    trace: 'boolean',
    strict: 'boolean',
  });
  const requested = resolveProfile(profile);
  const native = loadNative();
  if (native.binding === null) return notApplied(requested, native.reason, native.detail, strict);
  const binding = native.binding;
  const stock = known ?? stockReport(binding);
  if (!stock.supported) return notApplied(requested, 'no-device', stock.detail, strict);
  // 'host' values become this host's chip and family here, or the profile is not applied: never a guess. The family
  // warning names llama.cpp's tuning under the loaded llama.cpp's rules, else the newest.
  const plan = planPatch(stock, requested, {
    force,
    allowAboveHardware,
    consumers: binding.loadedConsumers(),
    rules: loadedLlamaCpp(binding)[0]?.rules ?? 'current',
    env: process.env,
  });
  if (!plan.accepted) return notApplied(plan.profile, plan.reason, plan.detail, strict);
  const { profile: normalized, expected, warnings } = plan;
  const stockDefault = separateDefault(binding, stock.devices, true);
  const expectedDefault = stockDefault === null ? null : planProfile([stockDefault], normalized).expected;
  binding.baseline(JSON.stringify(stock));
  const previousStatus = binding.status();
  const previous = previousStatus.profileJson;
  const before = reportFromNative(binding.probe(true, false));
  if (!before.supported) return notApplied(normalized, 'no-device', before.detail, strict);

  const json = JSON.stringify(normalized);
  const result = binding.apply(encodeNativeProfile(normalized, trace), json);
  if (!result.ok) {
    if (result.code === 'ERR_NO_DEVICE') return notApplied(normalized, 'no-device', result.message, strict);
    // The engine installs all hooks or none, so the process is as it was: a way of not applying like the others.
    return notApplied(normalized, 'hook-failed', `${result.message}; nothing was changed`, strict, {
      before: null,
      after: null,
      verification: null,
      warnings,
    });
  }
  const after = reportFromNative(binding.probe(true, false));
  const afterDefault = expectedDefault === null ? null : separateDefault(binding, after.devices, false);
  const verification = mergeVerifications(
    verifyAnswers(expected, after.devices),
    expectedDefault === null ? null : verifyAnswers(expectedDefault, afterDefault === null ? [] : [afterDefault]),
  );
  if (!verification.ok || !after.supported) {
    // Fail closed: put the process back as it was (the previous profile, or stock).
    binding.restore();
    if (previous !== null) {
      // Read back from the engine, so resolved here: the one resolution of this profile.
      binding.apply(encodeNativeProfile(resolveProfile(JSON.parse(previous)), previousStatus.trace), previous);
    }
    const first = verification.mismatches[0];
    const detail = first
      ? `device ${first.device} (${first.className}) answered ${first.field}=${String(first.actual)}, expected ${String(first.expected)}; the patch was taken out`
      : 'the device list changed while patching; the patch was taken out';
    // `after` keeps the answers that failed, so callers see what the device really said.
    const failed: Verification & { ok: false } = verification.ok ? { ...verification, ok: false } : verification;
    return notApplied(normalized, 'verification-failed', detail, strict, {
      before,
      after,
      verification: failed,
      warnings,
    });
  }
  // The trace counts the program's queries, not the verification probe's just above.
  if (trace) binding.trace(true);
  return {
    applied: true,
    reason: null,
    detail: null,
    profile: normalized,
    patchedClasses: result.classes,
    before,
    after,
    changed: diffAnswers(before.devices, after.devices),
    warnings,
    verification,
  };
}

/**
 * Takes every hook out (only where the implementation is still ours; a hook someone installed on top is reported as a
 * conflict and left working), then checks that a fresh probe equals the one taken before the first apply.
 */
export function restore(): RestoreResult {
  const native = loadNative();
  if (native.binding === null) {
    return { restored: false, reason: native.reason, restoredHooks: [], conflicts: [], verification: null };
  }
  const binding = native.binding;
  const outcome = binding.restore();
  const baselineJson = binding.baseline();
  const baseline = baselineJson === null ? null : (JSON.parse(baselineJson) as CapabilityReport);
  const verification =
    baseline === null ? null : verifyAnswers(baseline.devices, reportFromNative(binding.probe(true, false)).devices);
  if (outcome.restored.length === 0 || verification === null) {
    const reason = outcome.conflicts.length > 0 ? 'conflicts' : 'nothing-applied';
    return { restored: false, reason, restoredHooks: [], conflicts: outcome.conflicts, verification };
  }
  return { restored: true, reason: null, restoredHooks: outcome.restored, conflicts: outcome.conflicts, verification };
}

function traceEntries(binding: NativeBinding): TraceEntry[] {
  return binding.trace().rows.map((row) => {
    const isFamily = row.selector === 'supportsFamily:';
    return {
      selector: row.selector,
      family: row.family === null ? null : (familyNameOf(row.family) ?? row.family),
      calls: row.calls,
      stock: isFamily ? row.stock !== 0 : row.stock,
      given: isFamily ? row.given !== 0 : row.given,
    };
  });
}

/** The engine's state: active profile, hooked classes and, with `{ trace: true }`, the trace. */
export function status(options?: { trace?: boolean }): Status {
  const { trace = false } = checkOptions<{ trace?: boolean }>('status', options, { trace: 'boolean' });
  const native = loadNative();
  if (native.binding === null) {
    return {
      supported: false,
      active: false,
      profile: null,
      patchedClasses: [],
      hooks: [],
      tracing: false,
      trace: null,
      llamaCpp: [],
    };
  }
  const s = native.binding.status();
  const common = {
    patchedClasses: [...new Set(s.hooks.map((h) => h.className))],
    hooks: s.hooks,
    tracing: s.trace,
    trace: trace ? traceEntries(native.binding) : null,
    llamaCpp: loadedLlamaCpp(native.binding),
  };
  if (s.active && s.profileJson !== null) {
    return { supported: true, active: true, profile: JSON.parse(s.profileJson) as Profile, ...common };
  }
  return { supported: true, active: false, profile: null, ...common };
}
