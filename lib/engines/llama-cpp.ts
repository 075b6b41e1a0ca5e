/**
 * llama.cpp's rule tables: how ggml-metal computes its device flags, one table per rule set (llama-cpp-releases.ts
 * says which releases each covers). The tables restate what llama.cpp's sources do; they contain no llama.cpp code.
 * The conformance suite (test/conformance/) builds those sources against the simulated Metal and compares.
 */
import type { DeviceReport } from '../device/types.js';
import {
  ask,
  engineArch,
  envSet,
  macosAtLeast,
  nullFamilyWarnings,
  RESIDENCY_MIN_MACOS,
  result,
  workingSetOf,
  wssText,
  type Derived,
  type GateFlag,
  type GateRule,
  type RuleContext,
} from './common.js';
import { predictThreadgroup, type LlamaCppThreadgroup } from './llama-cpp-threadgroup.js';
import {
  LLAMA_CPP_RULE_SET_INFO,
  LLAMA_CPP_RULE_SET_REGISTRY,
  parseRelease,
  type LlamaCppRuleKey,
  type LlamaCppRuleSet,
  type LlamaCppRuleSetInfo,
} from './llama-cpp-releases.js';

/** Flags ggml-metal.m sets in its device context (legacy rules). */
export type LlamaCppLegacyFlag =
  | 'has_simdgroup_reduction'
  | 'has_simdgroup_mm'
  | 'has_bfloat'
  | 'use_bfloat'
  | 'has_residency_sets';

/** Boolean flags ggml-metal-device.m sets in `ggml_metal_device_init`. */
export type LlamaCppDeviceFlag =
  | 'has_simdgroup_reduction'
  | 'has_simdgroup_mm'
  | 'has_bfloat'
  | 'has_tensor'
  | 'use_residency_sets'
  | 'use_shared_buffers';

/** Every on/off flag of every rule set, once: what a report's `gatesOn` may name (anything else in a report is not one). */
export const LLAMA_CPP_SWITCH_FLAGS: readonly (LlamaCppLegacyFlag | LlamaCppDeviceFlag)[] = Object.freeze([
  'has_simdgroup_reduction',
  'has_simdgroup_mm',
  'has_bfloat',
  'use_bfloat',
  'has_residency_sets',
  'has_tensor',
  'use_residency_sets',
  'use_shared_buffers',
]);

/** The device flags before the tensor API (device-b6501 rules): no has_tensor. */
export type LlamaCppEarlyDeviceFlag = Exclude<LlamaCppDeviceFlag, 'has_tensor'>;

/** Every flag of the chip-tuning and current rules: the device flags, the Apple GPU family and the chip. */
export type LlamaCppCurrentFlag = LlamaCppDeviceFlag | 'gpu_family' | 'device_id';

/** The memory ggml reports for the device (its working set), which llama.cpp fits layers and context into. */
export interface LlamaCppMemoryFlag {
  max_working_set_size: Derived<number | null>;
}

/** A value a llama.cpp rule computes. */
export type LlamaCppValue = boolean | number | string;

/** A llama.cpp rule-table entry. */
export type LlamaCppRule<F extends string, T extends LlamaCppValue = boolean> = GateRule<F, T>;

/** The flags of the chip-tuning and current rules, each with its value's type. */
export type LlamaCppCurrentFlags = Record<LlamaCppDeviceFlag, GateFlag> &
  LlamaCppMemoryFlag & {
    gpu_family: Derived<number>;
    device_id: Derived<string>;
  };

/** An op that ggml-metal's `supports_op` accepts only when one flag is true; otherwise it runs on the CPU. */
export interface OpGate {
  /** ggml op name without the `GGML_OP_` prefix. */
  op: string;
  needs: 'has_simdgroup_reduction' | 'has_simdgroup_mm';
}

/**
 * A release asked for, as a prediction takes it: its tag, the warning its mapping gave, and the op gates a vendor's
 * patches set on top of the rule set's (Ollama's; `needs: null` takes the op off every SIMD-group flag).
 */
export interface LlamaCppReleaseAsked {
  text: string;
  warning: string | null;
  opGates?: readonly { op: string; needs: OpGate['needs'] | null }[];
}

/** What the llama.cpp flags mean for a user. */
export interface LlamaCppConsequences {
  /** Op types ggml-metal refuses, so the scheduler runs them on the CPU. */
  cpuFallbackOps: string[];
  /** Whether batched MUL_MAT can use the SIMD-group matrix kernels. */
  matMulKernels: 'simdgroup-mm' | 'mat-vec-only';
  /** Whether FLASH_ATTN_EXT runs on the GPU. */
  flashAttentionOnGpu: boolean;
  /** Whether ops with a BF16 tensor are accepted. */
  bf16Ops: 'supported' | 'rejected';
  /** Whether ggml creates residency sets (the flag alone does not say: see `use_residency_sets`). */
  residencySetsCreated: boolean;
  /** One-sentence description of the above. */
  summary: string;
}

/**
 * Which table ggml-metal-tuning.cpp's flash-attention vector kernels (`fa_vec_pick`) consult first for this device:
 * the chip's own rows (`exact`), the rows of a family (`family`: v0.4's family representative chip, or v0.5's
 * per-family table), or none (`baseline`). A shape the table has no row for falls back further, down to the baseline.
 */
export interface TuningTier {
  tier: 'exact' | 'family' | 'baseline';
  /** The chip whose rows are used, as llama.cpp names it (`GGML_METAL_DEVICE_M4_MAX`); null for v0.5's family tables and the baseline. */
  chip: string | null;
  /** The Apple GPU family whose rows are used (family tier only). */
  family: number | null;
}

interface LlamaCppPredictionBase {
  engine: 'llama.cpp';
  /** The MTLDevice name the prediction is for: the name the engine would see. */
  deviceName: string;
  /** The releases these rules describe. */
  releases: string;
  /** The release asked for with `release`, or null. */
  release: string | null;
  consequences: LlamaCppConsequences;
  /** What the release does with the answered maxThreadgroupMemoryLength: the configurations sized from it. */
  threadgroup: LlamaCppThreadgroup;
  warnings: string[];
}

/** llama.cpp prediction under the chip-tuning or current rules (v0.4.0 and later). */
export interface LlamaCppCurrentPrediction extends LlamaCppPredictionBase {
  rules: 'current' | 'chip-tuning';
  flags: LlamaCppCurrentFlags;
  /** The flash-attention tuning tier that follows from device_id and gpu_family. */
  tuning: Derived<TuningTier>;
}

/** llama.cpp prediction under the device rules with device_id (b9333 to v0.3.x): no gpu_family, no tuning. */
export interface LlamaCppDeviceIdPrediction extends LlamaCppPredictionBase {
  rules: 'device';
  flags: Record<LlamaCppDeviceFlag, GateFlag> & LlamaCppMemoryFlag & { device_id: Derived<string> };
  tuning: null;
}

/** llama.cpp prediction under the device rules with the tensor API, before device_id (b6968 to b9332). */
export interface LlamaCppDevicePrediction extends LlamaCppPredictionBase {
  rules: 'device-b7411' | 'device-b7010' | 'device-b6968';
  flags: Record<LlamaCppDeviceFlag, GateFlag> & LlamaCppMemoryFlag;
  tuning: null;
}

/** llama.cpp prediction under the first ggml-metal-device.m rules (b6501 to b6967): no has_tensor flag yet. */
export interface LlamaCppEarlyDevicePrediction extends LlamaCppPredictionBase {
  rules: 'device-b6501';
  flags: Record<LlamaCppEarlyDeviceFlag, GateFlag> & LlamaCppMemoryFlag;
  tuning: null;
}

/** llama.cpp prediction under the legacy (ggml-metal.m) rules. */
export interface LlamaCppLegacyPrediction extends LlamaCppPredictionBase {
  rules: 'legacy';
  flags: Record<LlamaCppLegacyFlag, GateFlag> & LlamaCppMemoryFlag;
  tuning: null;
}

/**
 * llama.cpp prediction under the ggml-metal.m rules before residency sets (up to b4561): the flags each release
 * computes; `has_simdgroup_reduction` from b1853, `has_bfloat` and `use_bfloat` from b4040.
 */
export interface LlamaCppOlderLegacyPrediction extends LlamaCppPredictionBase {
  rules: 'legacy-b0' | 'legacy-b1853' | 'legacy-b4040' | 'legacy-b4053';
  flags: Partial<Record<LlamaCppLegacyFlag, GateFlag>> & { has_simdgroup_mm: GateFlag };
  tuning: null;
}

/** llama.cpp prediction under any rule set (discriminated by `rules`). */
export type LlamaCppPrediction =
  | LlamaCppCurrentPrediction
  | LlamaCppDeviceIdPrediction
  | LlamaCppDevicePrediction
  | LlamaCppEarlyDevicePrediction
  | LlamaCppLegacyPrediction
  | LlamaCppOlderLegacyPrediction;

/** A table with a prediction type for every rule set: a rule set without one does not compile. */
type EveryRuleSet<T extends Record<LlamaCppRuleSet, LlamaCppPrediction>> = T;

/** Each rule set's prediction type. */
type LlamaCppPredictions = EveryRuleSet<{
  'legacy-b0': LlamaCppOlderLegacyPrediction;
  'legacy-b1853': LlamaCppOlderLegacyPrediction;
  'legacy-b4040': LlamaCppOlderLegacyPrediction;
  'legacy-b4053': LlamaCppOlderLegacyPrediction;
  legacy: LlamaCppLegacyPrediction;
  'device-b6501': LlamaCppEarlyDevicePrediction;
  'device-b6968': LlamaCppDevicePrediction;
  'device-b7010': LlamaCppDevicePrediction;
  'device-b7411': LlamaCppDevicePrediction;
  device: LlamaCppDeviceIdPrediction;
  'chip-tuning': LlamaCppCurrentPrediction;
  current: LlamaCppCurrentPrediction;
}>;

/** The prediction a rule set gives: `LlamaCppPredictionFor<'legacy'>` is LlamaCppLegacyPrediction. */
export type LlamaCppPredictionFor<R extends LlamaCppRuleSet> = LlamaCppPredictions[R];

/**
 * llama.cpp's other Metal workloads, in a line: the draft model of speculative decoding (a second
 * llama_model_load_from_file, common/speculative.cpp) and the multimodal projector (clip_ctx, tools/mtmd/clip.cpp)
 * take their devices from the same ggml-metal registry, whose devices compute their props once
 * (ggml_backend_metal_reg, ggml_metal_device_init), so the same gates hold for them (read in llama.cpp v0.5.0).
 */
export const LLAMA_CPP_OTHER_WORKLOADS =
  'The draft model (speculative decoding) and the multimodal projector (mtmd clip) run on this same ggml-metal device, whose props are computed once per process, so these gates are theirs too (unless kept off the GPU).';

// ---------------------------------------------------------------------------------------------------------------
// Shared pieces.

/** ggml's residency flag and whether sets really get created; `parts` says why. */
interface ResidencyModel {
  flag: boolean;
  created: boolean;
  parts: string[];
}

/**
 * Only builds that define GGML_METAL_HAS_RESIDENCY_SETS (arm64 against a macOS 15+ SDK) read GGML_METAL_NO_RESIDENCY
 * and create sets, at run time only under @available(macOS 15.0). Elsewhere the flag keeps its initial value:
 * true in ggml-metal-device.m, false in ggml-metal.m's static device context. Released arm64 builds are assumed to
 * come from a current Xcode (SDK 15+): node-llama-cpp 3.6.0's was built against SDK 14.5, where the legacy flag is
 * false whatever the environment (test/conformance/binaries.test.ts reads each binary's SDK).
 */
function residencyModel(ctx: RuleContext, compiledOutFlag: boolean): ResidencyModel {
  const noRes = envSet(ctx.env, 'GGML_METAL_NO_RESIDENCY');
  const build = engineArch(ctx.host);
  const mac = macosAtLeast(ctx, RESIDENCY_MIN_MACOS);
  const parts = [noRes.text, build.text, mac.text];
  if (build.arch === 'x86_64') {
    parts.push(
      `x86_64 builds compile residency sets out: the flag keeps its initial value (${compiledOutFlag}), GGML_METAL_NO_RESIDENCY is not read, no set is created`,
    );
    return { flag: compiledOutFlag, created: false, parts };
  }
  if (noRes.set) {
    parts.push('no set is created');
    return { flag: false, created: false, parts };
  }
  if (!mac.ok) {
    parts.push('the flag is true, but sets are created only under @available(macOS 15.0): none here');
    return { flag: true, created: false, parts };
  }
  parts.push(
    'sets are created: only arm64 builds against the macOS 15+ SDK create them (an older SDK leaves the flag at its initial value)',
  );
  return { flag: true, created: true, parts };
}

function bfloatFamilies(device: DeviceReport): { yes: boolean; parts: string[] } {
  const metal3 = ask(device, 'metal3');
  const apple6 = ask(device, 'apple6');
  return { yes: metal3.yes || apple6.yes, parts: [metal3.text, apple6.text] };
}

/** Names that turn the tensor API on: M5 and M6 from b6968, A19 and A20 too from b7010. */
const TENSOR_CHIP_MARKERS = ['M5', 'M6', 'A19', 'A20'] as const;
const TENSOR_CHIP_MARKERS_B6968 = ['M5', 'M6'] as const;

const SRC_DEVICE_INIT = 'ggml-metal-device.m ggml_metal_device_init';
const SRC_LEGACY_ACQ = 'ggml-metal.m ggml_backend_metal_device_acq (ggml_metal_init in 2024 builds)';

/** The reduction gate: the same rule in every rule set, only the place it is read differs. */
function simdgroupReductionRule(source: string): LlamaCppRule<'has_simdgroup_reduction'> {
  return {
    flag: 'has_simdgroup_reduction',
    source,
    rule: 'supportsFamily(Apple7) OR supportsFamily(Metal3)',
    families: ['apple7', 'metal3'],
    properties: [],
    env: [],
    compute: ({ device }) => {
      const a7 = ask(device, 'apple7');
      const m3 = ask(device, 'metal3');
      return result(a7.yes || m3.yes, [a7.text, m3.text]);
    },
  };
}

const simdgroupMmRule: LlamaCppRule<'has_simdgroup_mm'> = {
  flag: 'has_simdgroup_mm',
  source: SRC_DEVICE_INIT,
  rule: 'supportsFamily(Apple7)',
  families: ['apple7'],
  properties: [],
  env: [],
  compute: ({ device }) => {
    const a7 = ask(device, 'apple7');
    return result(a7.yes, [a7.text]);
  },
};

const bfloatRule: LlamaCppRule<'has_bfloat'> = {
  flag: 'has_bfloat',
  source: SRC_DEVICE_INIT,
  rule: '(supportsFamily(Metal3) OR supportsFamily(Apple6)) AND GGML_METAL_BF16_DISABLE unset',
  families: ['metal3', 'apple6'],
  properties: [],
  env: ['GGML_METAL_BF16_DISABLE'],
  compute: ({ device, env }) => {
    const fam = bfloatFamilies(device);
    const off = envSet(env, 'GGML_METAL_BF16_DISABLE');
    const parts = [...fam.parts, off.text];
    const value = fam.yes && !off.set;
    if (value && ask(device, 'metal4').yes) {
      // Only reachable when the tensor API is on; the prediction cannot run Apple's compiler.
      parts.push('if has_tensor is on, ggml also test-compiles a bfloat tensor kernel and clears this when that fails');
    }
    return result(value, parts);
  },
};

/** has_bfloat where no environment switch exists (ggml-metal.m, and ggml-metal-device.m before b6968). */
function bfloatNoSwitchRule(source: string): LlamaCppRule<'has_bfloat'> {
  return {
    flag: 'has_bfloat',
    source,
    rule: 'supportsFamily(Metal3) OR supportsFamily(Apple6) (no environment override)',
    families: ['metal3', 'apple6'],
    properties: [],
    env: [],
    compute: ({ device, env }) => {
      const fam = bfloatFamilies(device);
      const parts = [...fam.parts];
      if (env.GGML_METAL_BF16_DISABLE !== undefined)
        parts.push('GGML_METAL_BF16_DISABLE is set but these rules do not read it');
      return result(fam.yes, parts);
    },
  };
}

/** has_tensor; `markers`: the name parts that turn it on without GGML_METAL_TENSOR_ENABLE. */
function tensorRule(markers: readonly string[]): LlamaCppRule<'has_tensor'> {
  const list = markers.join('/');
  return {
    flag: 'has_tensor',
    source: SRC_DEVICE_INIT,
    rule: `supportsFamily(Metal4) AND GGML_METAL_TENSOR_DISABLE unset AND (name contains ${list} OR GGML_METAL_TENSOR_ENABLE set)`,
    families: ['metal4'],
    properties: ['name'],
    env: ['GGML_METAL_TENSOR_DISABLE', 'GGML_METAL_TENSOR_ENABLE'],
    compute: ({ device, env }) => {
      const m4 = ask(device, 'metal4');
      const off = envSet(env, 'GGML_METAL_TENSOR_DISABLE');
      const on = envSet(env, 'GGML_METAL_TENSOR_ENABLE');
      const marker = markers.find((m) => device.name.includes(m));
      const nameText =
        marker === undefined
          ? `name ${JSON.stringify(device.name)} has no ${list}`
          : `name ${JSON.stringify(device.name)} contains ${marker}`;
      const parts = [m4.text, off.text, on.text, nameText];
      const value = m4.yes && !off.set && (on.set || marker !== undefined);
      if (value) parts.push('ggml then test-compiles a tensor kernel and clears this flag if that fails');
      return result(value, parts);
    },
  };
}

/** The residency flag under both names: `compiledOutFlag` is its value where the build compiles residency sets out. */
function residencyRule<F extends 'use_residency_sets' | 'has_residency_sets'>(
  flag: F,
  source: string,
  rule: string,
  compiledOutFlag: boolean,
): LlamaCppRule<F> {
  return {
    flag,
    source,
    rule,
    families: [],
    properties: ['host.osVersion', 'host.arch', 'host.translated'],
    env: ['GGML_METAL_NO_RESIDENCY'],
    compute: (ctx) => {
      const model = residencyModel(ctx, compiledOutFlag);
      return result(model.flag, model.parts);
    },
  };
}

const residencySetsRule = residencyRule(
  'use_residency_sets',
  SRC_DEVICE_INIT,
  'true; arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset (x86_64, also under Rosetta: always true). Sets are created only by such arm64 builds on macOS ≥ 15',
  true,
);

/**
 * use_shared_buffers, by what a release reads besides hasUnifiedMemory: nothing else and only the DISABLE switch
 * (`unified`, before b7411), the device location everywhere and the ENABLE switch too (`location`, b7411 to v0.4.x),
 * or the location in x86_64 builds only (`location-x86`, v0.5.0).
 */
function sharedBuffersRule(reads: 'unified' | 'location' | 'location-x86'): LlamaCppRule<'use_shared_buffers'> {
  const readsSwitchOn = reads !== 'unified';
  const condition = {
    unified: 'hasUnifiedMemory',
    location: '(hasUnifiedMemory OR location == external)',
    'location-x86': '(hasUnifiedMemory OR (an x86_64 build AND location == external))',
  }[reads];
  return {
    flag: 'use_shared_buffers',
    source: SRC_DEVICE_INIT,
    rule: `${condition}; GGML_METAL_SHARED_BUFFERS_DISABLE → false${readsSwitchOn ? ', then GGML_METAL_SHARED_BUFFERS_ENABLE → true' : ' (no ENABLE switch)'}`,
    families: [],
    properties: {
      unified: ['hasUnifiedMemory'],
      location: ['hasUnifiedMemory', 'location'],
      'location-x86': ['hasUnifiedMemory', 'location', 'host.arch', 'host.translated'],
    }[reads],
    env: readsSwitchOn
      ? ['GGML_METAL_SHARED_BUFFERS_DISABLE', 'GGML_METAL_SHARED_BUFFERS_ENABLE']
      : ['GGML_METAL_SHARED_BUFFERS_DISABLE'],
    compute: ({ device, env, host }) => {
      const unified = typeof device.hasUnifiedMemory === 'boolean' ? device.hasUnifiedMemory : null;
      const location = typeof device.location === 'string' ? device.location : null;
      const off = envSet(env, 'GGML_METAL_SHARED_BUFFERS_DISABLE');
      const on = envSet(env, 'GGML_METAL_SHARED_BUFFERS_ENABLE');
      const parts = [`hasUnifiedMemory=${unified === null ? 'unknown (treated as NO)' : unified ? 'YES' : 'NO'}`];
      let readsLocation = reads !== 'unified';
      if (readsLocation) parts.push(`location=${location ?? 'unknown'}`);
      if (reads === 'location-x86') {
        const build = engineArch(host);
        readsLocation = build.arch === 'x86_64';
        parts.push(
          `${build.text}${readsLocation ? ', which reads the location' : ', which does not read the location'}`,
        );
      }
      parts.push(off.text);
      if (readsSwitchOn) parts.push(on.text);
      else if (on.set) parts.push('GGML_METAL_SHARED_BUFFERS_ENABLE is set but these rules do not read it');
      // ggml applies DISABLE first and ENABLE last, so ENABLE wins when both are set.
      let value = unified === true || (readsLocation && location === 'external');
      if (off.set) value = false;
      if (readsSwitchOn && on.set) value = true;
      return result(value, parts);
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// gpu_family, device_id and the flash-attention tuning tier (v0.4.0 and later).

/** The chips ggml_metal_device_id_parse knows, by the name after "Apple " (v0.4.0 and v0.5.0 have the same list). */
export const LLAMA_CPP_CHIPS: readonly string[] = Object.freeze([
  'M1',
  'M1 Pro',
  'M1 Max',
  'M1 Ultra',
  'M2',
  'M2 Pro',
  'M2 Max',
  'M2 Ultra',
  'M3',
  'M3 Pro',
  'M3 Max',
  'M3 Ultra',
  'M4',
  'M4 Pro',
  'M4 Max',
  'M5',
  'M5 Pro',
  'M5 Max',
  'M5 Ultra',
  'A18 Pro',
]);

/** The chips of b9333's first ggml_metal_device_id_parse (the device rules): v0.4.0's list but the A18 Pro (#28152). */
export const LLAMA_CPP_CHIPS_B9333: readonly string[] = Object.freeze(LLAMA_CPP_CHIPS.filter((c) => c !== 'A18 Pro'));

/** llama.cpp's token for a chip: `M1 Ultra` → `GGML_METAL_DEVICE_M1_ULTRA`; null → `GGML_METAL_DEVICE_GENERIC`. */
export function deviceIdToken(chip: string | null): string {
  return `GGML_METAL_DEVICE_${chip === null ? 'GENERIC' : chip.toUpperCase().replace(/ /g, '_')}`;
}

/**
 * The chip a device name parses to: "Apple " and then exactly one of `chips` (by default v0.4.0's, LLAMA_CPP_CHIPS);
 * otherwise null (GENERIC).
 */
export function chipOfName(name: string, chips: readonly string[] = LLAMA_CPP_CHIPS): string | null {
  if (!name.startsWith('Apple ')) return null;
  const suffix = name.slice('Apple '.length);
  return chips.includes(suffix) ? suffix : null;
}

/** v0.4.0's tuning table has rows for every chip but the M5 Ultra; its family representative: Apple9 → M4 Max. */
const CHIP_TUNED = (chip: string): boolean => chip !== 'M5 Ultra';
const FAMILY_REPRESENTATIVE: Readonly<Record<number, string>> = Object.freeze({ 9: 'M4 Max' });

/** v0.5.0's tuning table, keyed by Apple GPU family, pooled from the sweeps of these chips (its segment headers). */
const FAMILY_TABLES: Readonly<Record<number, readonly string[]>> = Object.freeze({
  7: ['M1', 'M1 Ultra'],
  8: ['M2', 'M2 Max', 'M2 Pro'],
  9: ['A18 Pro', 'M3 Max', 'M3 Pro', 'M3 Ultra', 'M4', 'M4 Max', 'M4 Pro'],
  10: ['M5 Max'],
});

const gpuFamilyRule: LlamaCppRule<'gpu_family', number> = {
  flag: 'gpu_family',
  source: SRC_DEVICE_INIT,
  rule: 'the highest N with supportsFamily(Apple N), asked from Apple21 down to Apple1; 0 when none',
  families: ['apple1', 'apple2', 'apple3', 'apple4', 'apple5', 'apple6', 'apple7', 'apple8', 'apple9', 'apple10'],
  properties: [],
  env: [],
  compute: ({ device }) => {
    for (let n = 10; n >= 1; n--) {
      const answer = ask(device, `apple${n}` as `apple${1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10}`);
      if (answer.yes)
        return result(n, [
          `${answer.text} is the highest Apple family answered YES (Apple11–Apple21 are asked too; no GPU and no profile answers them)`,
        ]);
    }
    return result(0, ['no Apple family answered YES (Apple1–Apple21)']);
  },
};

/** device_id as ggml_metal_device_id_parse computes it from the device name, knowing `chips`. */
function deviceIdRule(chips: readonly string[]): LlamaCppRule<'device_id', string> {
  return {
    flag: 'device_id',
    source: `${SRC_DEVICE_INIT} (ggml_metal_device_id_parse)`,
    rule: `name is "Apple " followed by exactly one of ${chips.join(', ')}; otherwise GGML_METAL_DEVICE_GENERIC`,
    families: [],
    properties: ['name'],
    env: [],
    compute: ({ device }) => {
      const chip = chipOfName(device.name, chips);
      return result(deviceIdToken(chip), [
        chip === null
          ? `name ${JSON.stringify(device.name)} is not "Apple " and a chip llama.cpp knows`
          : `name ${JSON.stringify(device.name)} is the ${chip}`,
      ]);
    },
  };
}

/** The tuning tier by chip (v0.4) or by family (v0.5), from the predicted device_id and gpu_family. */
function tuningTier(by: 'chip' | 'family', chip: string | null, family: number): Derived<TuningTier> {
  if (by === 'family') {
    const pooled = FAMILY_TABLES[family];
    if (pooled !== undefined) {
      return result({ tier: 'family', chip: null, family }, [
        `gpu_family ${family}: llama.cpp's Apple${family} table, pooled from the ${pooled.join(', ')} sweeps`,
      ]);
    }
    return result({ tier: 'baseline', chip: null, family: null }, [
      `gpu_family ${family}: no table rows, the baseline kernels`,
    ]);
  }
  if (chip !== null && CHIP_TUNED(chip)) {
    return result({ tier: 'exact', chip: deviceIdToken(chip), family: null }, [`the ${chip}'s own rows`]);
  }
  const rep = FAMILY_REPRESENTATIVE[family];
  const why = chip === null ? 'device_id GENERIC' : `no rows for the ${chip}`;
  if (rep !== undefined) {
    return result({ tier: 'family', chip: deviceIdToken(rep), family }, [
      `${why}; gpu_family ${family}'s representative, the ${rep}`,
    ]);
  }
  return result({ tier: 'baseline', chip: null, family: null }, [
    `${why}; gpu_family ${family} has no representative: the baseline kernels`,
  ]);
}

/**
 * The tuning tier `ruleSet` gives a device named `name` whose highest Apple family is `gpuFamily` (4 for Apple4), as
 * the prediction computes it; null for the rule sets without per-chip tuning (legacy, device).
 */
export function tuningFor(ruleSet: LlamaCppRuleSet, name: string, gpuFamily: number): Derived<TuningTier> | null {
  const by = LLAMA_CPP_RULE_SET_INFO[ruleSet].tuning;
  return by === null ? null : tuningTier(by, chipOfName(name), gpuFamily);
}

/** What llama.cpp tunes flash attention for, in words: `for an M4 Max (Apple9's representative)`, `with its Apple7 table (…)`. */
export function tuningPhrase(t: TuningTier): string {
  const chip = LLAMA_CPP_CHIPS.find((c) => deviceIdToken(c) === t.chip);
  if (t.tier === 'baseline') return 'with its baseline kernels';
  if (chip === undefined)
    return `with its Apple${t.family} table (swept on the ${(FAMILY_TABLES[t.family!] ?? []).join(', ')})`;
  return t.tier === 'exact' ? `for an ${chip} (its own rows)` : `for an ${chip} (Apple${t.family}'s representative)`;
}

// ---------------------------------------------------------------------------------------------------------------
// The rule tables.

/** Any rule of any llama.cpp rule set. */
export type AnyLlamaCppRule =
  | LlamaCppRule<LlamaCppDeviceFlag | LlamaCppLegacyFlag>
  | GateRule<'max_working_set_size', number | null>
  | LlamaCppRule<'gpu_family', number>
  | LlamaCppRule<'device_id', string>;

const legacyMmRule: LlamaCppRule<'has_simdgroup_mm'> = {
  flag: 'has_simdgroup_mm',
  source: `${SRC_LEGACY_ACQ}; ggml_metal_encode_node asks again per MUL_MAT`,
  rule: 'supportsFamily(Apple7), asked at init and again on every MUL_MAT encode',
  families: ['apple7'],
  properties: [],
  env: [],
  compute: ({ device }) => {
    const a7 = ask(device, 'apple7');
    return result(a7.yes, [a7.text, 'asked again on every MUL_MAT encode to pick the matrix-matrix kernel']);
  },
};

/** Before b1853 the context holds no flag: the matrix kernel is chosen on each encode alone. */
const encodeOnlyMmRule: LlamaCppRule<'has_simdgroup_mm'> = {
  ...legacyMmRule,
  source: 'ggml-metal.m ggml_metal_graph_compute (per MUL_MAT encode)',
  rule: 'supportsFamily(Apple7), asked on every MUL_MAT encode (no flag in the context yet)',
  compute: ({ device }) => {
    const a7 = ask(device, 'apple7');
    return result(a7.yes, [a7.text, 'asked on every MUL_MAT encode to pick the matrix-matrix kernel']);
  },
};

/**
 * The memory ggml reports for the device: get_memory's total is recommendedMaxWorkingSetSize (free is that minus
 * currentAllocatedSize), and llama.cpp's memory fitting decides from it how many layers and how much context fit, so a
 * profile's working set is what llama.cpp plans with.
 */
function workingSetRule(source: string): GateRule<'max_working_set_size', number | null> {
  return {
    flag: 'max_working_set_size',
    source,
    rule: "recommendedMaxWorkingSetSize, reported as the device's total memory: llama.cpp fits layers and context into it",
    families: [],
    properties: ['recommendedMaxWorkingSetSize'],
    env: [],
    compute: ({ device }) => {
      const wss = workingSetOf(device);
      return wss === null
        ? result(null, ['recommendedMaxWorkingSetSize not in this report'])
        : result(wss, [wssText(wss), 'the memory llama.cpp believes the GPU has']);
    },
  };
}

/** use_bfloat from b4040 to b4052: no build switch yet, so the BF16 kernels follow has_bfloat. */
const useBfloatAlwaysRule: LlamaCppRule<'use_bfloat'> = {
  flag: 'use_bfloat',
  source: SRC_LEGACY_ACQ,
  rule: 'has_bfloat (no GGML_METAL_USE_BF16 build switch before b4053)',
  families: ['metal3', 'apple6'],
  properties: [],
  env: [],
  compute: ({ device }) => {
    const fam = bfloatFamilies(device);
    return result(fam.yes, [...fam.parts, 'the BF16 kernels are built in every build of these releases']);
  },
};

const useBfloatOptInRule: LlamaCppRule<'use_bfloat'> = {
  flag: 'use_bfloat',
  source: `${SRC_LEGACY_ACQ}; CMake option GGML_METAL_USE_BF16`,
  rule: "has_bfloat in builds with -DGGML_METAL_USE_BF16=ON; false in builds with the CMake default (OFF), as llama.cpp's and node-llama-cpp's are",
  families: ['metal3', 'apple6'],
  properties: [],
  env: [],
  compute: ({ device }) => {
    const fam = bfloatFamilies(device);
    return result(false, [
      ...fam.parts,
      `built with the CMake default GGML_METAL_USE_BF16=OFF, so false whatever the device answers (an ON build would make it ${fam.yes})`,
    ]);
  },
};

/**
 * Every rule a llama.cpp rule set can hold, by the key the registry's rows list (llama-cpp-rule-sets.ts): a new rule
 * set made of known rules is a row there and nothing here.
 */
export const LLAMA_CPP_RULE_CATALOGUE: Readonly<Record<LlamaCppRuleKey, AnyLlamaCppRule>> = Object.freeze({
  'reduction-legacy': simdgroupReductionRule(SRC_LEGACY_ACQ),
  'reduction-device': simdgroupReductionRule(SRC_DEVICE_INIT),
  'mm-encode-only': encodeOnlyMmRule,
  'mm-legacy': legacyMmRule,
  'mm-device': simdgroupMmRule,
  'bfloat-no-switch-legacy': bfloatNoSwitchRule(SRC_LEGACY_ACQ),
  'bfloat-no-switch-device': bfloatNoSwitchRule(SRC_DEVICE_INIT),
  'bfloat-switch': bfloatRule,
  'use-bfloat-always': useBfloatAlwaysRule,
  'use-bfloat-opt-in': useBfloatOptInRule,
  'tensor-b6968': tensorRule(TENSOR_CHIP_MARKERS_B6968),
  'tensor-b7010': tensorRule(TENSOR_CHIP_MARKERS),
  'residency-legacy': residencyRule(
    'has_residency_sets',
    SRC_LEGACY_ACQ,
    "arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset; other builds (x86_64, also under Rosetta): false, the static's initial value",
    false,
  ),
  'residency-device': residencySetsRule,
  'shared-unified': sharedBuffersRule('unified'),
  'shared-location': sharedBuffersRule('location'),
  'shared-location-x86': sharedBuffersRule('location-x86'),
  'gpu-family': gpuFamilyRule,
  'device-id-b9333': deviceIdRule(LLAMA_CPP_CHIPS_B9333),
  'device-id': deviceIdRule(LLAMA_CPP_CHIPS),
  'working-set-legacy': workingSetRule('ggml-metal.m ggml_backend_metal_device_get_memory'),
  'working-set-device': workingSetRule('ggml-metal-device.m ggml_metal_device_get_memory'),
});

/** The registry row of a rule set. */
function rowOf(ruleSet: LlamaCppRuleSet): LlamaCppRuleSetInfo {
  return LLAMA_CPP_RULE_SET_INFO[ruleSet];
}

/** Every llama.cpp rule table, by rule set, built from each registry row's rule keys. */
export const LLAMA_CPP_RULES: Readonly<Record<LlamaCppRuleSet, readonly AnyLlamaCppRule[]>> = Object.freeze(
  Object.fromEntries(
    LLAMA_CPP_RULE_SET_REGISTRY.map((r) => [
      r.id,
      Object.freeze((r.rules as readonly LlamaCppRuleKey[]).map((k) => LLAMA_CPP_RULE_CATALOGUE[k])),
    ]),
  ) as Record<LlamaCppRuleSet, readonly AnyLlamaCppRule[]>,
);

const reductionOps = (ops: readonly string[]): OpGate[] => ops.map((op) => ({ op, needs: 'has_simdgroup_reduction' }));

/** The op lists `supports_op` gates, by the registry's `gates`: ggml-metal.m's, ggml-metal-device.m's, or none. */
const OP_GATE_LISTS: Readonly<Record<LlamaCppRuleSetInfo['gates'], readonly OpGate[]>> = Object.freeze({
  none: Object.freeze<OpGate[]>([]),
  legacy: Object.freeze<OpGate[]>([
    ...reductionOps([
      'MUL_MAT',
      'MUL_MAT_ID',
      'SOFT_MAX',
      'RMS_NORM',
      'NORM',
      'GROUP_NORM',
      'L2_NORM',
      'SUM_ROWS',
      'MEAN',
    ]),
    { op: 'FLASH_ATTN_EXT', needs: 'has_simdgroup_mm' },
  ]),
  device: Object.freeze<OpGate[]>([
    ...reductionOps([
      'MUL_MAT',
      'MUL_MAT_ID',
      'SOFT_MAX',
      'RMS_NORM',
      'NORM',
      'GROUP_NORM',
      'L2_NORM',
      'SUM',
      'SUM_ROWS',
      'MEAN',
      'CUMSUM',
      'ARGMAX',
      'COUNT_EQUAL',
      'SSM_CONV',
      'SSM_SCAN',
      'SOLVE_TRI',
      'OPT_STEP_ADAMW',
      'OPT_STEP_SGD',
    ]),
    { op: 'FLASH_ATTN_EXT', needs: 'has_simdgroup_mm' },
  ]),
});

/** Ops `supports_op` gates on a SIMD-group flag (ggml-metal-device.m `ggml_metal_device_supports_op`; legacy: `ggml_metal_supports_op`). */
export const LLAMA_CPP_OP_GATES: Readonly<Record<LlamaCppRuleSet, readonly OpGate[]>> = Object.freeze(
  Object.fromEntries(LLAMA_CPP_RULE_SET_REGISTRY.map((r) => [r.id, OP_GATE_LISTS[r.gates]])) as Record<
    LlamaCppRuleSet,
    readonly OpGate[]
  >,
);

/** A rule set's op gates with a vendor's patches on top: each replaces its op's gate (null: none) or adds the op. */
export function opGatesWith(gates: readonly OpGate[], patched: NonNullable<LlamaCppReleaseAsked['opGates']>): OpGate[] {
  const needs = new Map<string, OpGate['needs'] | null>(gates.map((g) => [g.op, g.needs]));
  for (const g of patched) needs.set(g.op, g.needs);
  return [...needs].flatMap(([op, need]) => (need === null ? [] : [{ op, needs: need }]));
}

/** Every environment variable any llama.cpp rule set reads. */
export const LLAMA_CPP_SWITCHES: readonly string[] = Object.freeze(
  [...new Set(Object.values(LLAMA_CPP_RULES).flatMap((rules) => rules.flatMap((r) => r.env)))].sort(),
);

// ---------------------------------------------------------------------------------------------------------------
// Prediction.

function evaluate(
  rules: readonly { flag: string; compute: (ctx: RuleContext) => Derived<LlamaCppValue | null> }[],
  ctx: RuleContext,
) {
  const out: Record<string, Derived<LlamaCppValue | null>> = {};
  for (const r of rules) out[r.flag] = r.compute(ctx);
  return out;
}

function llamaConsequences(
  ruleSet: LlamaCppRuleSet,
  reduction: boolean,
  mm: boolean,
  bf16: boolean,
  residencySetsCreated: boolean,
  patched: NonNullable<LlamaCppReleaseAsked['opGates']>,
): LlamaCppConsequences {
  const have = { has_simdgroup_reduction: reduction, has_simdgroup_mm: mm };
  const cpuFallbackOps = opGatesWith(LLAMA_CPP_OP_GATES[ruleSet], patched)
    .filter((g) => !have[g.needs])
    .map((g) => g.op);
  const matMulKernels = mm ? 'simdgroup-mm' : 'mat-vec-only';
  const flashAttentionOnGpu = mm;
  const bf16Ops = bf16 ? 'supported' : 'rejected';

  const parts: string[] = [];
  if (!reduction) {
    const shown = cpuFallbackOps.slice(0, 4).join(', ');
    parts.push(
      `SIMD-group reduction off: ${cpuFallbackOps.length} op types (${shown}${cpuFallbackOps.length > 4 ? ', …' : ''}) fall back to the CPU`,
    );
  } else {
    parts.push(mm ? 'MUL_MAT uses SIMD-group matrix kernels' : 'MUL_MAT uses mat-vec kernels only');
  }
  parts.push(flashAttentionOnGpu ? 'flash attention runs on the GPU' : 'flash attention falls back to the CPU');
  parts.push(bf16 ? 'BF16 ops supported' : 'BF16 ops rejected');
  return {
    cpuFallbackOps,
    matMulKernels,
    flashAttentionOnGpu,
    bf16Ops,
    residencySetsCreated,
    summary: `${parts.join('; ')}.`,
  };
}

/** Whether the rule set holds a residency rule (ggml-metal.m before b4562 has no residency sets at all). */
function hasResidencyRule(rules: readonly AnyLlamaCppRule[]): boolean {
  return rules.some((r) => r.flag === 'use_residency_sets' || r.flag === 'has_residency_sets');
}

/** Warnings that follow from the row itself: how ggml-metal.m asks on encode, and the releases without the gate. */
function rowWarnings(row: LlamaCppRuleSetInfo, device: RuleContext['device']): string[] {
  const out: string[] = [];
  if (row.source === 'ggml-metal.m') {
    out.push(
      'legacy ggml-metal.m asks supportsFamily(Apple7) on every MUL_MAT encode: a capability patch must stay installed for the life of the process',
    );
  }
  if (row.gates === 'none') {
    const a7 = ask(device, 'apple7');
    const m3 = ask(device, 'metal3');
    if (!a7.yes && !m3.yes) {
      out.push(
        `llama.cpp ${row.releases} refuses no op for a missing SIMD-group reduction (${a7.text}, ${m3.text}): its reduction kernels are dispatched anyway and fail on this device`,
      );
    }
  }
  return out;
}

/** The key the tuned flash-attention rows are looked up by: the chip token (v0.4) or the family (v0.5); null: baseline. */
function tuningKeyOf(t: TuningTier | null): string | null {
  if (t === null || t.tier === 'baseline') return null;
  return t.chip ?? String(t.family);
}

/** Predicts llama.cpp's flags for the device in `ctx` under `ruleSet`; `release` is the release asked for, if any. */
export function predictLlamaCpp(
  ctx: RuleContext,
  ruleSet: LlamaCppRuleSet,
  release: LlamaCppReleaseAsked | null,
): LlamaCppPrediction {
  const { device, env } = ctx;
  const row = rowOf(ruleSet);
  const rules = LLAMA_CPP_RULES[ruleSet];
  const warnings = nullFamilyWarnings(rules, device);
  if (release?.warning) warnings.push(release.warning);
  if (device.isDefault === false) {
    warnings.push(
      `ggml-metal uses MTLCreateSystemDefaultDevice(); this report is device ${device.index} (${JSON.stringify(device.name)}), which llama.cpp does not pick`,
    );
  }
  const base = {
    engine: 'llama.cpp' as const,
    deviceName: device.name,
    releases: row.releases,
    release: release?.text ?? null,
  };
  const created = hasResidencyRule(rules) && residencyModel(ctx, row.source === 'ggml-metal-device.m').created;
  // A switch of another release, set here, is a likely mistake: say that these rules ignore it.
  const read = new Set(rules.flatMap((r) => r.env));
  const these = ruleSet === 'legacy' ? 'legacy ggml-metal.m' : `llama.cpp ${base.releases}`;
  const unread = LLAMA_CPP_SWITCHES.filter((name) => !read.has(name) && env[name] !== undefined).map(
    (name) => `${name} is set but ${these} does not read it`,
  );
  warnings.push(...rowWarnings(row, device), ...unread);

  const flags = evaluate(rules, ctx);
  const boolFlag = (name: string): boolean | undefined => flags[name]?.value as boolean | undefined;
  const consequences = llamaConsequences(
    ruleSet,
    boolFlag('has_simdgroup_reduction') ?? true,
    boolFlag('has_simdgroup_mm') ?? false,
    boolFlag('use_bfloat') ?? boolFlag('has_bfloat') ?? false,
    created,
    release?.opGates ?? [],
  );
  const tuning =
    row.tuning === null ? null : tuningTier(row.tuning, chipOfName(device.name), flags.gpu_family!.value as number);
  const threadgroup = predictThreadgroup(row.threadgroup, {
    claim: device.maxThreadgroupMemoryLength ?? null,
    simdgroupMm: boolFlag('has_simdgroup_mm') ?? false,
    tuningKey: tuningKeyOf(tuning?.value ?? null),
    release: release === null ? null : parseRelease(release.text),
  });
  return { ...base, rules: ruleSet, flags, tuning, consequences, threadgroup, warnings } as LlamaCppPrediction;
}
