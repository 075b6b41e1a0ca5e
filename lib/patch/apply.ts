import type { NativeBinding, NativeSelectorPatch } from '../../types/binding.js';
import { loadedLlamaCpp, type LoadedLlamaCpp } from '../engines/loaded-llama.js';
import { NativeError, RefusedError, UnsupportedPlatformError, type NativeErrorCode } from '../core/errors.js';
import { chipFamily } from '../device/chips.js';
import { isParavirtualDevice } from '../device/paravirtual.js';
import { LLAMA_CPP_RULE_SET_INFO, tuningFor, tuningPhrase, type LlamaCppRuleSet } from '../engines/index.js';
import { FAMILY_VALUES, familyLabel, familyNameOf, isAppleFamilyValue, type FamilyName } from '../core/families.js';
import { loadNative } from '../device/native.js';
import { checkOptions } from '../core/options.js';
import { stockReport } from '../device/probe.js';
import {
  APPLE_GPU_THREADGROUP_MEMORY,
  bindToHost,
  DEFAULT_PROFILE,
  diffAnswers,
  encodeNativeProfile,
  isRaise,
  planProfile,
  resolveProfile,
  type AnswerChange,
  type Profile,
  type ProfileInput,
} from './profiles.js';
import { hostOf, reportFromNative } from '../device/report.js';
import type { CapabilityReport, DeviceReport, HostInfo, SupportedReport, UnsupportedReason } from '../device/types.js';

/** Options for applyProfile(). */
export interface ApplyOptions {
  /** Allow raising answers on a host that is not a virtual machine. */
  force?: boolean;
  /** Count every intercepted query (see status({ trace: true })). Off: the hot path does no counting. */
  trace?: boolean;
  /** Throw instead of returning `applied: false` when nothing can be patched. */
  strict?: boolean;
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
  | 'host-unknown';

/** A warning about a profile or the process it is applied in; `code` is stable. */
export interface ApplyWarning {
  code:
    | 'advertises-metal3'
    | 'threadgroup-memory-above-hardware'
    | 'not-paravirtual'
    | 'consumer-already-loaded'
    | 'tuned-for-other-chip'
    | 'heap-in-vm'
    | 'above-host-family'
    | 'no-change';
  message: string;
}

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

/** The highest Apple family a change turns on (an `apple<N>` answer NO→YES), or null. */
function highestRaisedFamily(changes: AnswerChange[]): number | null {
  let best: number | null = null;
  for (const c of changes) {
    const family = c.field.startsWith('families.')
      ? FAMILY_VALUES[c.field.slice('families.'.length) as FamilyName]
      : undefined;
    if (
      family !== undefined &&
      isAppleFamilyValue(family) &&
      c.to === true &&
      c.from === false &&
      (best === null || family > best)
    )
      best = family;
  }
  return best;
}

/**
 * The one line that says a profile claims more than the host's GPU is: the family it claims, the host's chip and
 * true family, and what llama.cpp (under `llamaRules`) then tunes flash attention for, where that rule set tunes by
 * chip. `name` is the name the default device answers with the profile.
 */
export function aboveHostFamilyMessage(
  claimed: number,
  chip: string,
  trueFamily: number,
  llamaRules: LlamaCppRuleSet,
  name: string,
): string {
  const tuning = tuningFor(llamaRules, name, claimed - FAMILY_VALUES.apple1 + 1);
  const own = tuningFor(llamaRules, chip, trueFamily - FAMILY_VALUES.apple1 + 1);
  // Where llama.cpp tunes by chip and the name still picks the host's own rows (bare metal), it is not misled.
  const consequence =
    tuning === null || JSON.stringify(tuning.value) === JSON.stringify(own?.value)
      ? 'an engine that tunes by family tunes for a newer GPU than the one doing the work'
      : `llama.cpp ${LLAMA_CPP_RULE_SET_INFO[llamaRules].releases} will tune ${tuningPhrase(tuning.value)}, not this host's ${chip}`;
  return `the profile claims ${familyText(claimed)}, above ${familyText(trueFamily)}, the true family of this host's ${chip}: ${consequence} (profile host claims exactly the host's)`;
}

function familyText(value: number): string {
  const name = familyNameOf(value);
  return name === undefined ? `family ${value}` : familyLabel(name);
}

/** Whether `changes` claim a family above the true family of the host's chip (false when the chip is unknown). */
export function claimsAboveHostFamily(changes: AnswerChange[], host: HostInfo | null): boolean {
  const trueFamily = chipFamily(host?.chip ?? null);
  const claimed = highestRaisedFamily(changes);
  return trueFamily !== null && claimed !== null && claimed > trueFamily;
}

/**
 * Warnings for applying `profile` (bound to the host) to devices answering `stock`, given the changes it makes, the
 * Metal consumers already loaded in the process, the host (its chip's true family) and the llama.cpp rules whose
 * tuning the family warning names.
 */
export function profileWarnings(
  profile: Profile,
  stock: DeviceReport[],
  changes: AnswerChange[],
  loadedConsumers: string[],
  host: HostInfo | null,
  llamaRules: LlamaCppRuleSet,
): ApplyWarning[] {
  const warnings: ApplyWarning[] = [];
  if (claimsAboveHostFamily(changes, host)) {
    const main = stock.find((d) => d.isDefault) ?? stock[0]!;
    const name = typeof profile.deviceName === 'string' ? profile.deviceName : main.name;
    const message = aboveHostFamilyMessage(
      highestRaisedFamily(changes)!,
      host!.chip!,
      chipFamily(host!.chip!)!,
      llamaRules,
      name,
    );
    warnings.push({ code: 'above-host-family', message });
  }
  if (changes.some((c) => c.field === 'families.metal3' && c.to === true)) {
    warnings.push({
      code: 'advertises-metal3',
      message:
        'the profile advertises Metal3: MLX then creates residency sets, which the paravirtual device cannot ("Unable to construct residency set")',
    });
  }
  if ((profile.maxThreadgroupMemoryLength ?? 0) > APPLE_GPU_THREADGROUP_MEMORY) {
    warnings.push({
      code: 'threadgroup-memory-above-hardware',
      message: `threadgroup memory ${profile.maxThreadgroupMemoryLength} bytes is above ${APPLE_GPU_THREADGROUP_MEMORY}, which no Apple GPU exceeds; a kernel sized from it may ask for memory the GPU does not have (profile apple9-hw-tg avoids this)`,
    });
  }
  for (const device of stock) {
    if (!isParavirtualDevice(device) && changes.some((c) => c.device === device.index && isRaise(c))) {
      warnings.push({
        code: 'not-paravirtual',
        message: `device ${device.index} (${device.name}, ${device.className}) is not the paravirtual device; raising its answers claims features its GPU may not have`,
      });
    }
  }
  for (const consumer of loadedConsumers) {
    warnings.push({
      code: 'consumer-already-loaded',
      message: `${consumer} is already loaded in this process: if that engine has initialised Metal, it cached the old answers; apply before the first getLlama() / backend load`,
    });
  }
  if (changes.length === 0) {
    warnings.push({ code: 'no-change', message: 'the profile changes no answer on this device' });
  }
  return warnings;
}

/** The raised answers, device by device: `device 0 (AGXG13DDevice): apple8, apple9, maxThreadgroupMemoryLength 32768 → 65536`. */
function raisedAnswers(changes: AnswerChange[]): string {
  const byDevice = new Map<string, string[]>();
  for (const c of changes.filter(isRaise)) {
    const device = `device ${c.device} (${c.className})`;
    const what = c.field.startsWith('families.')
      ? c.field.slice('families.'.length)
      : `${c.field} ${String(c.from)} → ${String(c.to)}`;
    byDevice.set(device, [...(byDevice.get(device) ?? []), what]);
  }
  return [...byDevice].map(([device, list]) => `${device}: ${list.join(', ')}`).join('; ');
}

/**
 * Why raising answers must be refused on this host (it is not known to be a virtual machine and `force` is off), or
 * null when it may go ahead. A profile that raises no answer is allowed anywhere. The reason names what would be
 * raised: an exact profile can raise too, e.g. mask-apple5 claims Apple1–5 on an Intel or AMD GPU, which claims no
 * Apple family, so there it needs force like any raise.
 */
export function refusalFor(host: HostInfo, changes: AnswerChange[], force: boolean): string | null {
  if (force || host.isVirtualMachine === true || !changes.some(isRaise)) return null;
  const where =
    host.isVirtualMachine === false
      ? 'this host is not a virtual machine'
      : 'this host could not be identified as a virtual machine';
  return `refusing to raise Metal answers: ${where} (hw.model ${host.model ?? 'unknown'}), so the GPU really is what it reports. The profile would raise ${raisedAnswers(changes)}. Pass { force: true } (CLI: --force) to do it anyway; a profile that only lowers answers (mask-apple5 on an Apple GPU) needs no force.`;
}

const STRICT_CODES = {
  'native-module-unavailable': 'ERR_NATIVE_UNAVAILABLE',
  'no-device': 'ERR_NO_DEVICE',
  'hook-failed': 'ERR_HOOK_FAILED',
  'verification-failed': 'ERR_VERIFICATION_FAILED',
} as const satisfies Record<
  Exclude<ApplyFailureReason, 'unsupported-platform' | 'refused-bare-metal' | 'host-unknown'>,
  NativeErrorCode
>;

/** The error `strict: true` throws for a reason applyProfile() did not apply; recordSnapshot and exec throw the same. */
export function notAppliedError(
  reason: ApplyFailureReason,
  detail: string,
): UnsupportedPlatformError | RefusedError | NativeError {
  if (reason === 'unsupported-platform') return new UnsupportedPlatformError(detail);
  if (reason === 'refused-bare-metal') return new RefusedError(detail);
  if (reason === 'host-unknown') return new RefusedError(detail, 'ERR_HOST_UNKNOWN');
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
 * applyProfile() for a profile that needs no measuring (every profile but `auto`; lib/apply/auto.ts is the public
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
    trace = false,
    strict = false,
  } = checkOptions<ApplyOptions>('applyProfile', options, {
    force: 'boolean',
    trace: 'boolean',
    strict: 'boolean',
  });
  const requested = resolveProfile(profile);
  const native = loadNative();
  if (native.binding === null) return notApplied(requested, native.reason, native.detail, strict);
  const binding = native.binding;
  const stock = known ?? stockReport(binding);
  if (!stock.supported) return notApplied(requested, 'no-device', stock.detail, strict);
  // 'host' values become this host's chip and family here, or the profile is not applied: never a guess.
  const bound = bindToHost(requested, stock.host);
  if (!bound.ok) return notApplied(requested, bound.reason, bound.detail, strict);
  const normalized = bound.profile;
  const { expected, changes: changesFromStock } = planProfile(stock.devices, normalized);
  const stockDefault = separateDefault(binding, stock.devices, true);
  const expectedDefault = stockDefault === null ? null : planProfile([stockDefault], normalized).expected;
  const refusal = refusalFor(hostOf(stock), changesFromStock, force);
  if (refusal !== null) return notApplied(normalized, 'refused-bare-metal', refusal, strict);
  // The family warning names llama.cpp's tuning under the loaded llama.cpp's rules, else the newest.
  const llamaRules = loadedLlamaCpp(binding)[0]?.rules ?? 'current';
  const warnings = profileWarnings(
    normalized,
    stock.devices,
    changesFromStock,
    binding.loadedConsumers(),
    stock.host,
    llamaRules,
  );
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
