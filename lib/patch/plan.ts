/**
 * The patch plan: what a profile does on a host, decided once. Bind the profile to the host (its `'host'` values),
 * predict the answers and the changes, refuse (a host whose chip is unknown; raising on a host not known to be a VM
 * without force), and warn. Pure: every command that applies, audits, injects, measures or summarises a profile asks
 * planPatch, and installing takes its plan.
 */
import { RefusedError } from '../core/errors.js';
import { quote } from '../core/input.js';
import { chipFamily, chipGpuGeneration } from '../device/chips.js';
import { isParavirtualDevice } from '../device/paravirtual.js';
import { hostOf } from '../device/report.js';
import { loadSnapshot, reportFromSnapshot } from '../device/snapshots.js';
import type { DeviceReport, HostInfo } from '../device/types.js';
import {
  aboveHardware,
  configurationText,
  ENGINES,
  LLAMA_CPP_RULE_SET_INFO,
  LLAMA_CPP_RULE_SETS,
  parseMacos,
  predictLlamaCpp,
  tuningFor,
  tuningPhrase,
  type Engine,
  type EnvMap,
  type LlamaCppRuleSet,
  type ThreadgroupConfiguration,
  type ValidOptions,
} from '../engines/index.js';
import { engineWarnings } from './engine-warnings.js';
import type { ApplyWarning } from './warning.js';
import {
  MLX_ARCHITECTURE_ENV,
  MLX_ARCHITECTURE_ENV_FIRST_RELEASE,
  mlxArchitectureOf,
  naxAvailable,
  readsArchitectureEnv,
} from '../engines/mlx-architecture.js';
import { FAMILY_VALUES, familyLabel, familyNameOf, isAppleFamilyValue, type FamilyName } from '../core/families.js';
import {
  APPLE_GPU_THREADGROUP_MEMORY,
  bindToHost,
  HOST_VALUE,
  isRaise,
  planProfile,
  profiles,
  resolveProfile,
  type AnswerChange,
  type BuiltinProfileName,
  type Profile,
} from './profiles.js';

export { APPLY_WARNING_CODES, type ApplyWarning } from './warning.js';

/**
 * The warnings a command says aloud once when it applies a profile (exec before the program runs, register on
 * import), with the process-warning code register gives each: the ones a user must hear to know what the program
 * gets. The others are in the results (`--json`, `warnings`).
 */
export const SAID_ONCE: Readonly<Partial<Record<ApplyWarning['code'], string>>> = Object.freeze({
  'host-unknown-fallback': 'METAL_CAP_SHIM_HOST_UNKNOWN_FALLBACK',
  'above-host-family': 'METAL_CAP_SHIM_ABOVE_HOST_FAMILY',
  'mlx-architecture-user-set': 'METAL_CAP_SHIM_MLX_ARCHITECTURE_USER_SET',
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

/** What the llama.cpp rules do with a threadgroup claim above the hardware, given the configurations it makes ask
 * for more (aboveHardwareConfigurations; null: not computed). */
function aboveHardwareConsequence(above: readonly ThreadgroupConfiguration[] | null, rules: LlamaCppRuleSet): string {
  const releases = `llama.cpp ${LLAMA_CPP_RULE_SET_INFO[rules].releases}`;
  if (above === null) return 'a kernel sized from it may ask for memory the GPU does not have';
  if (above.length === 0) {
    return LLAMA_CPP_RULE_SET_INFO[rules].threadgroup === 'unread'
      ? `what ${releases} sizes from it is not predicted`
      : `${releases} sizes no kernel above ${APPLE_GPU_THREADGROUP_MEMORY} from it on this device, but its ggml-metal.m releases do (audit --rules legacy)`;
  }
  const largest = above.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  return `${releases} then asks ${configurationText(largest)}`;
}

/**
 * Warnings for applying `profile` (bound to the host) to devices answering `stock`, given the changes it makes, the
 * Metal consumers already loaded in the process, the host (its chip's true family), the llama.cpp rules whose
 * tuning the family warning names, and the configurations those rules would size above the hardware.
 */
export function profileWarnings(
  profile: Profile,
  stock: DeviceReport[],
  changes: AnswerChange[],
  loadedConsumers: string[],
  host: HostInfo | null,
  llamaRules: LlamaCppRuleSet,
  above: readonly ThreadgroupConfiguration[] | null = null,
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
      message: `threadgroup memory ${profile.maxThreadgroupMemoryLength} bytes is above ${APPLE_GPU_THREADGROUP_MEMORY}, which no Apple GPU exceeds: ${aboveHardwareConsequence(above, llamaRules)}; profile apple9-hw-tg avoids this`,
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

/**
 * `1` lifts the above-hardware refusal where no option can be passed (register, and exec's environment), and lets the
 * doctor run `auto` starts dispatch threadgroup sizes above what the GPU can prove.
 */
export const ALLOW_ABOVE_HARDWARE_ENV = 'METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE';

/** Whether `env` lifts the above-hardware refusal (and doctor's above-hardware dispatch): the one reader of the variable. */
export function allowsAboveHardware(env: NodeJS.ProcessEnv | Record<string, string | undefined>): boolean {
  return env[ALLOW_ABOVE_HARDWARE_ENV] === '1';
}

/**
 * The configurations of the llama.cpp release that will run (`options.rules`, `options.release`; default the newest
 * rules) that the profile's threadgroup claim makes ask for more than APPLE_GPU_THREADGROUP_MEMORY on the default
 * device: empty where the profile raises no threadgroup answer above that, or the release sizes nothing from it.
 */
export function aboveHardwareConfigurations(
  stock: { devices: DeviceReport[]; host: HostInfo | null },
  expected: DeviceReport[],
  changes: AnswerChange[],
  options: Pick<PlanOptions, 'rules' | 'release' | 'env'>,
): ThreadgroupConfiguration[] {
  const main = expected.find((d) => d.isDefault) ?? expected[0];
  const raised = changes.some(
    (c) =>
      c.device === main?.index &&
      c.field === 'maxThreadgroupMemoryLength' &&
      typeof c.to === 'number' &&
      c.to > APPLE_GPU_THREADGROUP_MEMORY,
  );
  if (main === undefined || !raised) return [];
  const ctx = { device: main, env: options.env ?? {}, host: stock.host, macos: parseMacos(stock.host) };
  return aboveHardware(predictLlamaCpp(ctx, options.rules ?? 'current', options.release ?? null).threadgroup);
}

/**
 * Why the profile is refused for the llama.cpp release that will run, or null: its threadgroup claim would make that
 * release ask for more threadgroup memory than any Apple GPU has (the largest request named), and allowAboveHardware
 * is off. Only that option lifts it; `force` does not.
 */
export function aboveHardwareRefusal(
  stock: { devices: DeviceReport[]; host: HostInfo | null },
  expected: DeviceReport[],
  changes: AnswerChange[],
  options: PlanOptions,
): string | null {
  if (options.allowAboveHardware === true) return null;
  const above = aboveHardwareConfigurations(stock, expected, changes, options);
  if (above.length === 0) return null;
  const largest = above.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const rules = options.rules ?? 'current';
  const release = options.release?.text ?? LLAMA_CPP_RULE_SET_INFO[rules].releases;
  const more = above.length === 1 ? '' : ` (and ${above.length - 1} more configurations)`;
  return `refusing the profile for llama.cpp ${release} (${rules} rules): its threadgroup memory claim makes ${configurationText(largest)}${more}, above the ${APPLE_GPU_THREADGROUP_MEMORY} bytes every Apple GPU has. Use a profile that keeps threadgroup memory at ${APPLE_GPU_THREADGROUP_MEMORY} (apple9-hw-tg), name the release that will run (audit: --release or --rules), or pass { allowAboveHardware: true } (CLI: --allow-above-hardware; register and exec's environment: ${ALLOW_ABOVE_HARDWARE_ENV}=1) to apply it anyway.`;
}

/** The bundled snapshot the built-in profiles' above-hardware refusals are stated for: a stock macOS guest. */
export const ABOVE_HARDWARE_REFERENCE = 'vz-guest-m1-ultra-tahoe-stock';

/**
 * The llama.cpp rule sets under which planPatch refuses `profile` on the stock guest (ABOVE_HARDWARE_REFERENCE)
 * because the release would ask for more threadgroup memory than any Apple GPU has: the releases `profiles` says a
 * profile is refused for, read from the same rule data and the same decision as every command's.
 */
export function aboveHardwareRuleSets(profile: Profile): LlamaCppRuleSet[] {
  const stock = reportFromSnapshot(loadSnapshot(ABOVE_HARDWARE_REFERENCE), { allDevices: true });
  return LLAMA_CPP_RULE_SETS.filter((rules) => {
    const plan = planPatch(stock, profile, { force: false, rules, engines: [] });
    return !plan.accepted && plan.reason === 'above-hardware';
  });
}

/** What a profile offers MLX on a host: the architecture (or none), why none where a `'host'` value gave none, or why
 * an explicit one is refused. */
export type MlxArchitectureDecision =
  | { offered: string | null; warnings: ApplyWarning[]; refusal: null }
  | { offered: null; warnings: []; refusal: string };

const NAX_RULE =
  'on macOS 26.2 or later MLX turns on its NAX kernels for GPU generation 17 and later (18 for class p; mlx/backend/metal/device.cpp is_nax_available)';
const NAX_UNPROVEN = 'no guest has been shown to run them: doctor has no NAX probe';

/**
 * Why offering `name` would turn on MLX's NAX kernels on this host, or null when it would not: NAX on with `name`
 * (or possibly, where the host's macOS version is unknown) and not already on with the default device's own
 * architecture (unknown in a guest, so counted as off).
 */
function turnsOnNax(name: string, stock: { devices: DeviceReport[]; host: HostInfo | null }): string | null {
  const nax = naxAvailable(name, stock.host);
  if (nax === false) return null;
  const own = (stock.devices.find((d) => d.isDefault) ?? stock.devices[0])?.architecture ?? null;
  if (own !== null && naxAvailable(own, stock.host) === true) return null;
  const os =
    nax === 'unknown'
      ? `this host's macOS version is unknown, so MLX may turn on its NAX kernels for ${name}`
      : `${NAX_RULE}, so ${name} turns them on here (macOS ${stock.host!.osVersion})`;
  return `${os}, and ${NAX_UNPROVEN}`;
}

/**
 * The one decision about `mlxArchitecture` on a host, for the profile as requested and as bound (bindToHost). A bound
 * `'host'` value (the host chip's architecture, CHIP_ARCHITECTURES) is offered only inside a VM (on bare metal MLX
 * reads the GPU's own `architecture.name`), and never where it would turn on MLX's NAX kernels: there it is left out
 * with a warning, as where the host's architecture is unknown. An architecture named explicitly is refused when its
 * generation is above the host's own GPU generation (or that is unknown) or when it would turn on NAX. Where the MLX
 * release is known (`mlxRelease`) and reads no MLX_METAL_GPU_ARCH (before v0.31.0), what is offered carries a warning.
 */
export function decideMlxArchitecture(
  requested: Profile,
  bound: Profile,
  stock: { devices: DeviceReport[]; host: HostInfo | null },
  mlxRelease: string | null = null,
): MlxArchitectureDecision {
  const host = stock.host;
  const chip = host?.chip ?? null;
  const name = bound.mlxArchitecture ?? null;
  const fromHost = requested.mlxArchitecture === HOST_VALUE;
  const notOffered = (why: string): MlxArchitectureDecision => ({
    offered: null,
    warnings: [{ code: 'mlx-architecture-not-offered', message: `no GPU architecture is offered to MLX: ${why}` }],
    refusal: null,
  });
  if (fromHost && host?.isVirtualMachine !== true) return { offered: null, warnings: [], refusal: null };
  if (fromHost && name === null) {
    const cause =
      chip === null
        ? "this host's chip is unknown"
        : `no ${chip} has been seen to report its architecture (lib/device/chips.ts CHIP_ARCHITECTURES)`;
    return notOffered(`${cause}, so none is offered rather than a guess; MLX reads the device's own architecture.name`);
  }
  if (name === null) return { offered: null, warnings: [], refusal: null };
  const refuse = (why: string): MlxArchitectureDecision => ({
    offered: null,
    warnings: [],
    refusal: `refusing to offer MLX the GPU architecture ${name} (${MLX_ARCHITECTURE_ENV}): ${why}`,
  });
  const hostGeneration = chipGpuGeneration(chip);
  const { generation } = mlxArchitectureOf(name);
  if (!fromHost && hostGeneration === null) {
    return refuse(
      `this host's GPU generation is unknown (${chip === null ? 'its chip is unknown' : `${chip} is not in lib/device/chips.ts CHIP_GPU_GENERATIONS`}), so ${name} cannot be shown not to be above it`,
    );
  }
  if (!fromHost && generation > hostGeneration!) {
    return refuse(
      `its generation ${generation} is above ${hostGeneration}, the GPU generation of this host's ${chip}: MLX would pick kernels tuned for a newer GPU than the one doing the work (mlxArchitecture "host" offers the host's own)`,
    );
  }
  const nax = turnsOnNax(name, stock);
  if (nax !== null && fromHost) return notOffered(`the host's ${name} is left out: ${nax}`);
  if (nax !== null) return refuse(nax);
  const ignored = mlxRelease !== null && readsArchitectureEnv(mlxRelease) === false;
  const warnings: ApplyWarning[] = ignored
    ? [
        {
          code: 'mlx-architecture-ignored',
          message: `MLX ${mlxRelease} ignores the offered ${name}: MLX reads ${MLX_ARCHITECTURE_ENV} from ${MLX_ARCHITECTURE_ENV_FIRST_RELEASE}, so it reads the device's own architecture.name`,
        },
      ]
    : [];
  return { offered: name, warnings, refusal: null };
}

/**
 * What the program's MLX is given for MLX_METAL_GPU_ARCH: the offered architecture, unless the environment already
 * sets the variable to a value of its own (the user's, which wins, with a warning). An empty value is no value: MLX
 * reads the device's own architecture then, so the offered one is set.
 */
export function mlxArchitectureEnv(
  offered: string | null,
  env: NodeJS.ProcessEnv,
): { set: string | null; warning: ApplyWarning | null } {
  const own = env[MLX_ARCHITECTURE_ENV];
  if (offered === null) return { set: null, warning: null };
  if (own === undefined || own === '') return { set: offered, warning: null };
  if (own === offered) return { set: null, warning: null };
  return {
    set: null,
    warning: {
      code: 'mlx-architecture-user-set',
      message: `${MLX_ARCHITECTURE_ENV} is already set to ${quote(own)}: that value is kept, and the profile's ${offered} is not offered to MLX (unset it to offer the profile's)`,
    },
  };
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
      /** The GPU architecture offered to MLX (MLX_METAL_GPU_ARCH), or null: none (see decideMlxArchitecture). */
      mlxArchitecture: string | null;
    }
  | {
      accepted: false;
      /** `host-unknown`: a `'host'` value on a host whose chip is unknown; `refused-bare-metal`: raising where the host
       * is not known to be a VM, without force; `mlx-architecture-refused`: an `mlxArchitecture` above the host's GPU
       * generation, or one that would turn on MLX's NAX kernels; `above-hardware`: the llama.cpp release that will run
       * would, under the claimed threadgroup memory, ask for more than any Apple GPU has, without allowAboveHardware. */
      reason: 'host-unknown' | 'refused-bare-metal' | 'above-hardware' | 'mlx-architecture-refused';
      detail: string;
      /** The bound profile (the requested one when it could not be bound). */
      profile: Profile;
      /** The devices as they would answer (as they are, when the profile could not be bound). */
      expected: DeviceReport[];
      changes: AnswerChange[];
      /** What the profile would warn of, were it applied (none when it could not be bound). */
      warnings: ApplyWarning[];
      claimsAboveHost: boolean;
      /** What would be offered to MLX were it applied (null when refused for it, or when it could not be bound). */
      mlxArchitecture: string | null;
    };

/** The built-in planned instead of `profile` where its host values cannot be bound, if it names one. */
function fallbackFor(profile: Profile): BuiltinProfileName | undefined {
  const name = profile.name;
  return name !== null && Object.hasOwn(profiles, name) ? profiles[name as BuiltinProfileName].fallback : undefined;
}

/** Why planPatch refused. */
export type PlanRefusalReason = Extract<PatchPlan, { accepted: false }>['reason'];

/** The error a refusal is, by its reason: the one mapping applyProfile, exec and bench share. */
export function refusedError(reason: PlanRefusalReason, detail: string): RefusedError {
  if (reason === 'host-unknown') return new RefusedError(detail, 'ERR_HOST_UNKNOWN');
  if (reason === 'mlx-architecture-refused') return new RefusedError(detail, 'ERR_MLX_ARCHITECTURE_REFUSED');
  if (reason === 'above-hardware') return new RefusedError(detail, 'ERR_ABOVE_HARDWARE');
  return new RefusedError(detail, 'ERR_REFUSED_BARE_METAL');
}

/** What planPatch needs besides the stock answers and the profile. */
export interface PlanOptions {
  /** Raise answers even where the host is not known to be a VM. */
  force: boolean;
  /** Apply a threadgroup claim the llama.cpp release that will run would turn into a request above every Apple GPU's
   * threadgroup memory (aboveHardwareRefusal); default false. */
  allowAboveHardware?: boolean;
  /** Metal consumers already loaded in the process (a warning each); default none. */
  consumers?: readonly string[];
  /** The llama.cpp rules whose tuning the family warning names; default the newest. */
  rules?: LlamaCppRuleSet;
  /** The MLX release the offered architecture is for, where known (`0.30.6`): one before v0.31.0 ignores it, and a
   * warning says so. The engine warnings predict MLX under this release's rules (default the newest). */
  mlxRelease?: string | null;
  /** The engines whose warnings the plan gives (engine-warnings.ts); default every engine. */
  engines?: readonly Engine[];
  /** The environment the engines would see (MLX's switches); default none. */
  env?: EnvMap;
  /** The llama.cpp release asked for, parsed (audit's `release`); default none: `rules` alone. */
  release?: ValidOptions['release'];
  /** An architecture to predict MLX with instead of the one the plan offers (audit's what-if, `--mlx-arch`): it
   * changes the engine warnings, never the decision or what is offered. */
  mlxArchitecture?: string | null;
}

/** The architecture MLX's patched side is predicted with: the what-if one, else the one offered. */
export function predictedMlxArchitecture(offered: string | null, whatIf: string | null | undefined): string | null {
  return whatIf !== undefined ? whatIf : offered;
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
      mlxArchitecture: null,
    };
  }
  const mlx = decideMlxArchitecture(requested, bound.profile, stock, options.mlxRelease ?? null);
  // The bound profile holds what is offered: a 'host' architecture left out is not in it.
  const { mlxArchitecture: _bound, ...rest } = bound.profile;
  const profile: Profile = mlx.offered === null ? rest : { ...rest, mlxArchitecture: mlx.offered };
  const { expected, changes } = planProfile(stock.devices, profile);
  const claimsAboveHost = claimsAboveHostFamily(changes, stock.host);
  const warnings = [
    ...profileWarnings(
      profile,
      stock.devices,
      changes,
      [...(options.consumers ?? [])],
      stock.host,
      options.rules ?? 'current',
      aboveHardwareConfigurations(stock, expected, changes, options),
    ),
    ...mlx.warnings,
    ...engineWarnings(stock.devices, expected, {
      engines: options.engines ?? ENGINES,
      env: options.env ?? {},
      host: stock.host,
      rules: options.rules ?? 'current',
      release: options.release ?? null,
      mlx: {
        release: options.mlxRelease ?? undefined,
        architectureName: predictedMlxArchitecture(mlx.offered, options.mlxArchitecture),
      },
      offerIgnoredWarned:
        options.mlxArchitecture === undefined && mlx.warnings.some((w) => w.code === 'mlx-architecture-ignored'),
      claimsAboveHost,
    }),
  ];
  const found = { expected, changes, warnings, claimsAboveHost };
  const refusal = refusalFor(hostOf(stock), changes, options.force);
  if (refusal !== null)
    return {
      accepted: false,
      reason: 'refused-bare-metal',
      detail: refusal,
      profile,
      ...found,
      mlxArchitecture: mlx.offered,
    };
  const aboveHw = aboveHardwareRefusal(stock, expected, changes, options);
  if (aboveHw !== null) {
    return {
      accepted: false,
      reason: 'above-hardware',
      detail: aboveHw,
      profile,
      ...found,
      mlxArchitecture: mlx.offered,
    };
  }
  // The refused architecture stays in the profile the plan names, so the reason and the profile agree.
  if (mlx.refusal !== null) {
    const reason = 'mlx-architecture-refused';
    return { accepted: false, reason, detail: mlx.refusal, profile: bound.profile, ...found, mlxArchitecture: null };
  }
  return { accepted: true, reason: null, detail: null, profile, ...found, mlxArchitecture: mlx.offered };
}
