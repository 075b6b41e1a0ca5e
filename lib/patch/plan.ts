/**
 * The patch plan: what a profile does on a host, decided once. Bind the profile to the host (its `'host'` values),
 * predict the answers and the changes, refuse (a host whose chip is unknown; raising on a host not known to be a VM
 * without force), and warn. Pure: every command that applies, audits, injects, measures or summarises a profile asks
 * planPatch, and installing takes its plan.
 */
import { chipFamily } from '../device/chips.js';
import { isParavirtualDevice } from '../device/paravirtual.js';
import { hostOf } from '../device/report.js';
import type { DeviceReport, HostInfo } from '../device/types.js';
import { LLAMA_CPP_RULE_SET_INFO, tuningFor, tuningPhrase, type LlamaCppRuleSet } from '../engines/index.js';
import { FAMILY_VALUES, familyLabel, familyNameOf, isAppleFamilyValue, type FamilyName } from '../core/families.js';
import {
  APPLE_GPU_THREADGROUP_MEMORY,
  bindToHost,
  isRaise,
  planProfile,
  profiles,
  resolveProfile,
  type AnswerChange,
  type BuiltinProfileName,
  type Profile,
} from './profiles.js';

/** Every code an ApplyWarning can have: stable, and documented in docs/profiles.md. */
export const APPLY_WARNING_CODES = Object.freeze([
  'advertises-metal3',
  'threadgroup-memory-above-hardware',
  'not-paravirtual',
  'consumer-already-loaded',
  'tuned-for-other-chip',
  'heap-in-vm',
  'mlx-switch-ignored',
  'above-host-family',
  'host-unknown-fallback',
  'no-change',
] as const);

/** A warning about a profile or the process it is applied in; `code` is stable. */
export interface ApplyWarning {
  code: (typeof APPLY_WARNING_CODES)[number];
  message: string;
}

/**
 * The warnings a command says aloud once when it applies a profile (exec before the program runs, register on
 * import), with the process-warning code register gives each: the ones a user must hear to know what the program
 * gets. The others are in the results (`--json`, `warnings`).
 */
export const SAID_ONCE: Readonly<Partial<Record<ApplyWarning['code'], string>>> = Object.freeze({
  'host-unknown-fallback': 'METAL_CAP_SHIM_HOST_UNKNOWN_FALLBACK',
  'above-host-family': 'METAL_CAP_SHIM_ABOVE_HOST_FAMILY',
});

/** The warnings of `warnings` that are said aloud once (SAID_ONCE), in their order. */
export function saidOnce(warnings: readonly ApplyWarning[]): ApplyWarning[] {
  return warnings.filter((w) => Object.hasOwn(SAID_ONCE, w.code));
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

/** What planPatch decided: accepted, or refused with the reason and what to do. Narrow it on `accepted`. */
export type PatchPlan =
  | {
      accepted: true;
      reason: null;
      detail: null;
      /** The profile bound to the host: its `'host'` values replaced. */
      profile: Profile;
      /** Each device as it will answer. */
      expected: DeviceReport[];
      changes: AnswerChange[];
      warnings: ApplyWarning[];
      /** The profile claims a family above the host chip's true family. */
      claimsAboveHost: boolean;
    }
  | {
      accepted: false;
      /** `host-unknown`: a `'host'` value on a host whose chip is unknown; `refused-bare-metal`: raising where the host
       * is not known to be a VM, without force. */
      reason: 'host-unknown' | 'refused-bare-metal';
      detail: string;
      /** The bound profile (the requested one when it could not be bound). */
      profile: Profile;
      /** The devices as they would answer (as they are, when the profile could not be bound). */
      expected: DeviceReport[];
      changes: AnswerChange[];
      /** What the profile would warn of, were it applied (none when it could not be bound). */
      warnings: ApplyWarning[];
      claimsAboveHost: boolean;
    };

/** The built-in planned instead of `profile` where its host values cannot be bound, if it names one. */
function fallbackFor(profile: Profile): BuiltinProfileName | undefined {
  const name = profile.name;
  return name !== null && Object.hasOwn(profiles, name) ? profiles[name as BuiltinProfileName].fallback : undefined;
}

/** What planPatch needs besides the stock answers and the profile. */
export interface PlanOptions {
  /** Raise answers even where the host is not known to be a VM. */
  force: boolean;
  /** Metal consumers already loaded in the process (a warning each); default none. */
  consumers?: readonly string[];
  /** The llama.cpp rules whose tuning the family warning names; default the newest. */
  rules?: LlamaCppRuleSet;
}

/**
 * The one decision every command makes about a profile on a host: bound to the host, the answers and changes it
 * makes, refused or accepted, and its warnings. `stock` is what the devices answer stock, with the host they are on.
 */
export function planPatch(
  stock: { devices: DeviceReport[]; host: HostInfo | null },
  requested: Profile,
  options: PlanOptions,
): PatchPlan {
  const bound = bindToHost(requested, stock.host);
  const fallback = bound.ok ? undefined : fallbackFor(requested);
  if (!bound.ok && fallback !== undefined) {
    const plan = planPatch(stock, resolveProfile(fallback), options);
    const warning: ApplyWarning = {
      code: 'host-unknown-fallback',
      message: `${requested.name} claims the host chip’s own family, but ${bound.cause}: profile ${fallback} is used instead (name a profile to choose another)`,
    };
    return { ...plan, warnings: [warning, ...plan.warnings] };
  }
  if (!bound.ok) {
    return {
      accepted: false,
      reason: 'host-unknown',
      detail: bound.detail,
      profile: requested,
      expected: stock.devices,
      changes: [],
      warnings: [],
      claimsAboveHost: false,
    };
  }
  const profile = bound.profile;
  const { expected, changes } = planProfile(stock.devices, profile);
  const warnings = profileWarnings(
    profile,
    stock.devices,
    changes,
    [...(options.consumers ?? [])],
    stock.host,
    options.rules ?? 'current',
  );
  const claimsAboveHost = claimsAboveHostFamily(changes, stock.host);
  const refusal = refusalFor(hostOf(stock), changes, options.force);
  if (refusal !== null) {
    return {
      accepted: false,
      reason: 'refused-bare-metal',
      detail: refusal,
      profile,
      expected,
      changes,
      warnings,
      claimsAboveHost,
    };
  }
  return { accepted: true, reason: null, detail: null, profile, expected, changes, warnings, claimsAboveHost };
}
