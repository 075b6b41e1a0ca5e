/**
 * Predicts, from a device's reported answers, the flags llama.cpp (ggml-metal) and MLX compute when they initialise
 * Metal. Every rule lives in one table per engine (and, for llama.cpp, per source generation) so the CLI can print
 * exactly what is evaluated. The tables restate facts read from the engines' sources; they contain no engine code.
 *
 * macOS-version-dependent rules and a missing host: when `options.host` is null/absent, or its `osVersion` cannot be
 * parsed, the rule assumes the minimum macOS the current rules need (15.0) is met and says "unknown macOS version" in
 * its reason. This package mostly runs on the machine it predicts for, where macOS 15+ is the common case, and a
 * false "residency sets off" would hide the Metal3 residency-set warning that matters most in VMs.
 */
import type { DeviceReport, HostInfo } from './types.js';
import { familyLabel, isFamilyName, type FamilyName } from './families.js';
import { InvalidOptionsError } from './errors.js';

/** An inference engine whose Metal init gates this module predicts. */
export type Engine = 'llama.cpp' | 'mlx';

/** Every engine `predictGates` accepts, in display order. */
export const ENGINES: readonly Engine[] = Object.freeze(['llama.cpp', 'mlx'] as const);

/** Which generation of ggml-metal sources to model: `current` (ggml-metal-device.m) or `legacy` (ggml-metal.m, 2024–2025). */
export type LlamaCppRuleSet = 'current' | 'legacy';

/** Every llama.cpp rule set `predictGates` accepts. */
export const LLAMA_CPP_RULE_SETS: readonly LlamaCppRuleSet[] = Object.freeze(['current', 'legacy'] as const);

/** An environment shaped like `process.env`. */
export type EnvMap = Record<string, string | undefined>;

/** Options for `predictGates`. */
export interface PredictOptions {
  /** Environment the engine would see; default `process.env`. */
  env?: EnvMap;
  /** Host facts for macOS-version rules; null/absent means "unknown macOS version", treated as ≥ 15.0. */
  host?: HostInfo | null;
  /** llama.cpp source generation to model; default `current`. MLX accepts only `current`. */
  rules?: LlamaCppRuleSet;
}

/** A predicted value and the queries that decided it. */
export interface Derived<T> {
  value: T;
  /** The answers that decided the value, e.g. `supportsFamily(Apple7)=NO, supportsFamily(Metal3)=NO`. */
  reason: string;
}

/** A predicted boolean gate. */
export type GateFlag = Derived<boolean>;

/** A parsed macOS `ProductVersion`. */
export interface MacosVersion {
  major: number;
  minor: number;
  text: string;
}

/** What a rule's `compute` sees. */
export interface RuleContext {
  device: DeviceReport;
  env: EnvMap;
  host: HostInfo | null;
  /** Parsed `host.osVersion`; null when unknown. */
  macos: MacosVersion | null;
}

/** One entry of a rule table: how an engine computes one flag at init. */
export interface GateRule<Name extends string, T> {
  /** The flag as the engine names it. */
  flag: Name;
  /** Where the engine computes it, e.g. `ggml-metal-device.m ggml_metal_device_init`. */
  source: string;
  /** The rule in words, for printing. */
  rule: string;
  /** Families the rule asks `supportsFamily:` about (a null answer is warned about). */
  families: readonly FamilyName[];
  /** Device properties (other than families) and host facts the rule reads. */
  properties: readonly string[];
  /** Environment variables the rule reads. */
  env: readonly string[];
  /** Computes the value and its reason. */
  compute: (ctx: RuleContext) => Derived<T>;
}

/** Flags ggml-metal-device.m sets in `ggml_metal_device_init` (current rules). */
export type LlamaCppCurrentFlag =
  | 'has_simdgroup_reduction'
  | 'has_simdgroup_mm'
  | 'has_bfloat'
  | 'has_tensor'
  | 'use_residency_sets'
  | 'use_shared_buffers';

/** Flags ggml-metal.m set in its device context (legacy rules). */
export type LlamaCppLegacyFlag =
  | 'has_simdgroup_reduction'
  | 'has_simdgroup_mm'
  | 'has_bfloat'
  | 'use_bfloat'
  | 'has_residency_sets';

/** A llama.cpp rule-table entry. */
export type LlamaCppRule<F extends string> = GateRule<F, boolean>;

/** An op that ggml-metal's `supports_op` accepts only when one flag is true; otherwise it runs on the CPU. */
export interface OpGate {
  /** ggml op name without the `GGML_OP_` prefix. */
  op: string;
  needs: 'has_simdgroup_reduction' | 'has_simdgroup_mm';
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

interface LlamaCppPredictionBase {
  engine: 'llama.cpp';
  /** The MTLDevice name the prediction is for. */
  deviceName: string;
  consequences: LlamaCppConsequences;
  warnings: string[];
}

/** llama.cpp prediction under the current (ggml-metal-device.m) rules. */
export interface LlamaCppCurrentPrediction extends LlamaCppPredictionBase {
  rules: 'current';
  flags: Record<LlamaCppCurrentFlag, GateFlag>;
}

/** llama.cpp prediction under the legacy (ggml-metal.m) rules. */
export interface LlamaCppLegacyPrediction extends LlamaCppPredictionBase {
  rules: 'legacy';
  flags: Record<LlamaCppLegacyFlag, GateFlag>;
}

/** llama.cpp prediction under either rule set (discriminated by `rules`). */
export type LlamaCppPrediction = LlamaCppCurrentPrediction | LlamaCppLegacyPrediction;

/** The values MLX derives at device/allocator init. */
export interface MlxValues {
  /** Whether MLX creates MTLResidencySets (and throws if it cannot). */
  residencySets: boolean;
  /** GPU generation MLX parses from the architecture name (13 for `applegpu_g13s`). */
  architectureGeneration: number | null;
  /** MLX allocator's garbage-collection limit in bytes. */
  allocatorLimitBytes: number | null;
  /** Whether MLX skips its buffer heap (and that heap's residency): the device name is exactly "Apple Paravirtual device". */
  heapSkipped: boolean;
}

/** An MLX rule-table entry (one per `MlxValues` key). */
export type MlxRule = { [K in keyof MlxValues]: GateRule<K, MlxValues[K]> }[keyof MlxValues];

/** MLX prediction. */
export interface MlxPrediction {
  engine: 'mlx';
  /** The MTLDevice name the prediction is for. */
  deviceName: string;
  residencySets: GateFlag;
  architectureGeneration: Derived<number | null>;
  allocatorLimitBytes: Derived<number | null>;
  heapSkipped: GateFlag;
  warnings: string[];
}

/** Any prediction `predictGates` returns. */
export type GatePrediction = LlamaCppPrediction | MlxPrediction;

// ---------------------------------------------------------------------------------------------------------------
// Answer helpers: every reason is built from these so the wording stays uniform across rules.

interface FamilyAnswer {
  yes: boolean;
  known: boolean;
  text: string;
}

function ask(device: DeviceReport, family: FamilyName): FamilyAnswer {
  const raw: unknown = device.families[family];
  const known = raw === true || raw === false;
  // An unanswerable query is NO for the engines too: supportsFamily: returning nothing cannot enable a kernel.
  const word = raw === true ? 'YES' : raw === false ? 'NO' : 'unknown (treated as NO)';
  return { yes: raw === true, known, text: `supportsFamily(${familyLabel(family)})=${word}` };
}

interface EnvAnswer {
  set: boolean;
  text: string;
}

/** ggml tests `getenv(name) != NULL`: a variable set to the empty string still counts. */
function envSet(env: EnvMap, name: string): EnvAnswer {
  const v = env[name];
  if (v === undefined) return { set: false, text: `${name} unset` };
  return { set: true, text: v === '' ? `${name} set (empty; ggml only checks that it exists)` : `${name}=${JSON.stringify(v)}` };
}

const RESIDENCY_MIN_MACOS = 15;

function macosAtLeast(ctx: RuleContext, major: number): { ok: boolean; text: string } {
  if (ctx.macos === null) {
    const why =
      ctx.host === null
        ? 'no host info'
        : ctx.host.osVersion == null
          ? 'host.osVersion is null'
          : `host.osVersion ${JSON.stringify(ctx.host.osVersion)} not parseable`;
    return { ok: true, text: `unknown macOS version (${why}; assumed ≥ ${major}.0)` };
  }
  const ok = ctx.macos.major >= major;
  return { ok, text: `macOS ${ctx.macos.text} ${ok ? '≥' : '<'} ${major}.0` };
}

function parseMacos(host: HostInfo | null): MacosVersion | null {
  const text = host?.osVersion;
  if (typeof text !== 'string') return null;
  const m = /^(\d+)(?:\.(\d+))?/.exec(text.trim());
  if (m === null) return null;
  return { major: Number(m[1]), minor: m[2] === undefined ? 0 : Number(m[2]), text: text.trim() };
}

function result<T>(value: T, parts: readonly string[]): Derived<T> {
  return { value, reason: parts.join(', ') };
}

/** The architecture of the engine build that runs here: x86_64 under Rosetta, else the machine's own. */
function engineArch(host: HostInfo | null): { arch: 'arm64' | 'x86_64' | null; text: string } {
  if (host?.translated === true) {
    return { arch: 'x86_64', text: 'under Rosetta (sysctl.proc_translated=1): an x86_64 build' };
  }
  if (host?.arch === 'x86_64') return { arch: 'x86_64', text: 'x86_64 host: an x86_64 build' };
  if (host?.arch === 'arm64') return { arch: 'arm64', text: 'arm64 host, not translated: an arm64 build' };
  return { arch: null, text: 'build architecture unknown (assumed arm64)' };
}

/** ggml's residency flag and whether sets really get created; `parts` says why. */
interface ResidencyModel {
  flag: boolean;
  created: boolean;
  parts: string[];
}

/**
 * ggml sets the flag to true, and only builds that define GGML_METAL_HAS_RESIDENCY_SETS (arm64, macOS 15+ SDK) read
 * GGML_METAL_NO_RESIDENCY and create sets, at run time only under @available(macOS 15.0). An x86_64 build therefore
 * reports true and creates none. Released arm64 builds come from current Xcode, so the 15+ SDK is assumed.
 */
function residencyModel(ctx: RuleContext, envName: string): ResidencyModel {
  const noRes = envSet(ctx.env, envName);
  const build = engineArch(ctx.host);
  const mac = macosAtLeast(ctx, RESIDENCY_MIN_MACOS);
  const parts = [noRes.text, build.text, mac.text];
  if (build.arch === 'x86_64') {
    parts.push(`x86_64 builds compile residency sets out: the flag stays true, ${envName} is not read, no set is created`);
    return { flag: true, created: false, parts };
  }
  if (noRes.set) {
    parts.push('no set is created');
    return { flag: false, created: false, parts };
  }
  if (!mac.ok) {
    parts.push('the flag is true, but sets are created only under @available(macOS 15.0): none here');
    return { flag: true, created: false, parts };
  }
  parts.push('sets are created: only arm64 builds against the macOS 15+ SDK create them (an older SDK leaves the flag true and creates none)');
  return { flag: true, created: true, parts };
}

function residencyFlag(ctx: RuleContext, envName: string): GateFlag {
  const model = residencyModel(ctx, envName);
  return result(model.flag, model.parts);
}

function bfloatFamilies(device: DeviceReport): { yes: boolean; parts: string[] } {
  const metal3 = ask(device, 'metal3');
  const apple6 = ask(device, 'apple6');
  return { yes: metal3.yes || apple6.yes, parts: [metal3.text, apple6.text] };
}

const TENSOR_CHIP_MARKERS = ['M5', 'M6', 'A19', 'A20'] as const;

// ---------------------------------------------------------------------------------------------------------------
// llama.cpp, current: ggml/src/ggml-metal/ggml-metal-device.m, ggml_metal_device_init.

const SRC_DEVICE_INIT = 'ggml-metal-device.m ggml_metal_device_init';

/** The reduction gate: the same rule in both source generations, only the place it is read differs. */
function simdgroupReductionRule<F extends 'has_simdgroup_reduction'>(source: string): LlamaCppRule<F> {
  return {
    flag: 'has_simdgroup_reduction' as F,
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

/** Current llama.cpp rules (ggml/src/ggml-metal/ggml-metal-device.m, `ggml_metal_device_init`). */
export const LLAMA_CPP_CURRENT_RULES: readonly LlamaCppRule<LlamaCppCurrentFlag>[] = Object.freeze([
  simdgroupReductionRule(SRC_DEVICE_INIT),
  {
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
  },
  {
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
  },
  {
    flag: 'has_tensor',
    source: SRC_DEVICE_INIT,
    rule:
      'supportsFamily(Metal4) AND GGML_METAL_TENSOR_DISABLE unset AND (name contains M5/M6/A19/A20 OR GGML_METAL_TENSOR_ENABLE set)',
    families: ['metal4'],
    properties: ['name'],
    env: ['GGML_METAL_TENSOR_DISABLE', 'GGML_METAL_TENSOR_ENABLE'],
    compute: ({ device, env }) => {
      const m4 = ask(device, 'metal4');
      const off = envSet(env, 'GGML_METAL_TENSOR_DISABLE');
      const on = envSet(env, 'GGML_METAL_TENSOR_ENABLE');
      const marker = TENSOR_CHIP_MARKERS.find((m) => device.name.includes(m));
      const nameText =
        marker === undefined
          ? `name ${JSON.stringify(device.name)} has no M5/M6/A19/A20`
          : `name ${JSON.stringify(device.name)} contains ${marker}`;
      const parts = [m4.text, off.text, on.text, nameText];
      const value = m4.yes && !off.set && (on.set || marker !== undefined);
      if (value) parts.push('ggml then test-compiles a tensor kernel and clears this flag if that fails');
      return result(value, parts);
    },
  },
  {
    flag: 'use_residency_sets',
    source: SRC_DEVICE_INIT,
    rule:
      'true; arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset (x86_64, also under Rosetta: always true). Sets are created only by such arm64 builds on macOS ≥ 15',
    families: [],
    properties: ['host.osVersion', 'host.arch', 'host.translated'],
    env: ['GGML_METAL_NO_RESIDENCY'],
    compute: (ctx) => residencyFlag(ctx, 'GGML_METAL_NO_RESIDENCY'),
  },
  {
    flag: 'use_shared_buffers',
    source: SRC_DEVICE_INIT,
    rule:
      '(hasUnifiedMemory OR location == external); GGML_METAL_SHARED_BUFFERS_DISABLE → false, then GGML_METAL_SHARED_BUFFERS_ENABLE → true',
    families: [],
    properties: ['hasUnifiedMemory', 'location'],
    env: ['GGML_METAL_SHARED_BUFFERS_DISABLE', 'GGML_METAL_SHARED_BUFFERS_ENABLE'],
    compute: ({ device, env }) => {
      const unified = typeof device.hasUnifiedMemory === 'boolean' ? device.hasUnifiedMemory : null;
      const location = typeof device.location === 'string' ? device.location : null;
      const off = envSet(env, 'GGML_METAL_SHARED_BUFFERS_DISABLE');
      const on = envSet(env, 'GGML_METAL_SHARED_BUFFERS_ENABLE');
      const parts = [
        `hasUnifiedMemory=${unified === null ? 'unknown (treated as NO)' : unified ? 'YES' : 'NO'}`,
        `location=${location ?? 'unknown'}`,
        off.text,
        on.text,
      ];
      // ggml applies DISABLE first and ENABLE last, so ENABLE wins when both are set.
      let value = unified === true || location === 'external';
      if (off.set) value = false;
      if (on.set) value = true;
      return result(value, parts);
    },
  },
]);

// ---------------------------------------------------------------------------------------------------------------
// llama.cpp, legacy: ggml/src/ggml-metal/ggml-metal.m (2025: ggml_backend_metal_device_acq; 2024: ggml_metal_init).

const SRC_LEGACY_ACQ = 'ggml-metal.m ggml_backend_metal_device_acq (ggml_metal_init in 2024 builds)';

/** Legacy llama.cpp rules (ggml-metal.m, 2024–2025). */
export const LLAMA_CPP_LEGACY_RULES: readonly LlamaCppRule<LlamaCppLegacyFlag>[] = Object.freeze([
  simdgroupReductionRule(SRC_LEGACY_ACQ),
  {
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
  },
  {
    flag: 'has_bfloat',
    source: SRC_LEGACY_ACQ,
    rule: 'supportsFamily(Metal3) OR supportsFamily(Apple6) (no environment override)',
    families: ['metal3', 'apple6'],
    properties: [],
    env: [],
    compute: ({ device, env }) => {
      const fam = bfloatFamilies(device);
      const parts = [...fam.parts];
      if (env.GGML_METAL_BF16_DISABLE !== undefined) parts.push('GGML_METAL_BF16_DISABLE is set but these rules do not read it');
      return result(fam.yes, parts);
    },
  },
  {
    flag: 'use_bfloat',
    source: `${SRC_LEGACY_ACQ}; CMake option GGML_METAL_USE_BF16`,
    rule: 'has_bfloat AND built with -DGGML_METAL_USE_BF16=ON (assumed; the CMake default is OFF)',
    families: ['metal3', 'apple6'],
    properties: [],
    env: [],
    compute: ({ device }) => {
      const fam = bfloatFamilies(device);
      // A build flag is no device answer; assuming ON isolates what the device decides (a default OFF build rejects BF16 anyway).
      return result(fam.yes, [...fam.parts, 'assumes a -DGGML_METAL_USE_BF16=ON build (CMake default OFF rejects BF16 on any device)']);
    },
  },
  {
    flag: 'has_residency_sets',
    source: SRC_LEGACY_ACQ,
    rule:
      'true; arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset (x86_64, also under Rosetta: always true). Sets are created only by such arm64 builds on macOS ≥ 15',
    families: [],
    properties: ['host.osVersion', 'host.arch', 'host.translated'],
    env: ['GGML_METAL_NO_RESIDENCY'],
    compute: (ctx) => residencyFlag(ctx, 'GGML_METAL_NO_RESIDENCY'),
  },
]);

/** Both llama.cpp rule tables, by rule set. */
export const LLAMA_CPP_RULES = Object.freeze({
  current: LLAMA_CPP_CURRENT_RULES,
  legacy: LLAMA_CPP_LEGACY_RULES,
});

const reductionOps = (ops: readonly string[]): OpGate[] => ops.map((op) => ({ op, needs: 'has_simdgroup_reduction' }));

/** Ops `supports_op` gates on a SIMD-group flag (current: `ggml_metal_device_supports_op`; legacy: `ggml_metal_supports_op`). */
export const LLAMA_CPP_OP_GATES: Readonly<Record<LlamaCppRuleSet, readonly OpGate[]>> = Object.freeze({
  current: Object.freeze<OpGate[]>([
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
  legacy: Object.freeze<OpGate[]>([
    ...reductionOps(['MUL_MAT', 'MUL_MAT_ID', 'SOFT_MAX', 'RMS_NORM', 'NORM', 'GROUP_NORM', 'L2_NORM', 'SUM_ROWS', 'MEAN']),
    { op: 'FLASH_ATTN_EXT', needs: 'has_simdgroup_mm' },
  ]),
});

/** Env variables only the current rules read; setting them under legacy rules is a likely mistake. */
const CURRENT_ONLY_ENV = [
  'GGML_METAL_BF16_DISABLE',
  'GGML_METAL_TENSOR_DISABLE',
  'GGML_METAL_TENSOR_ENABLE',
  'GGML_METAL_SHARED_BUFFERS_DISABLE',
  'GGML_METAL_SHARED_BUFFERS_ENABLE',
] as const;

// ---------------------------------------------------------------------------------------------------------------
// MLX: mlx/backend/metal/.

/** The name Virtualization.framework's paravirtual device reports; MLX compares against it exactly. */
const PARAVIRTUAL_DEVICE_NAME = 'Apple Paravirtual device';

const MLX_ARCH_CLASS: Readonly<Record<string, string>> = Object.freeze({
  p: 'phone',
  g: 'base/pro',
  s: 'max',
  d: 'ultra',
});

/** MLX rules (mlx/backend/metal/resident.cpp, device.cpp, allocator.cpp). */
export const MLX_RULES: readonly MlxRule[] = Object.freeze([
  {
    flag: 'residencySets',
    source: 'mlx/backend/metal/resident.cpp ResidencySet::ResidencySet',
    rule: 'supportsFamily(Metal3) AND macOS ≥ 15 (creation failure throws "Unable to construct residency set")',
    families: ['metal3'],
    properties: ['host.osVersion'],
    env: [],
    compute: (ctx: RuleContext): Derived<boolean> => {
      const m3 = ask(ctx.device, 'metal3');
      const mac = macosAtLeast(ctx, RESIDENCY_MIN_MACOS);
      return result(m3.yes && mac.ok, [m3.text, mac.text]);
    },
  },
  {
    flag: 'architectureGeneration',
    source: 'mlx/backend/metal/device.cpp Device::Device',
    rule: 'the two digits before the last character of MLX_METAL_GPU_ARCH (if non-empty) or architecture.name',
    families: [],
    properties: ['architecture'],
    env: ['MLX_METAL_GPU_ARCH'],
    compute: ({ device, env }: RuleContext): Derived<number | null> => {
      const override = env.MLX_METAL_GPU_ARCH;
      const reported = typeof device.architecture === 'string' ? device.architecture : null;
      // MLX falls back to the device when the variable is empty, not only when it is unset.
      const useOverride = override !== undefined && override !== '';
      const arch = useOverride ? override : reported;
      const origin = useOverride
        ? `MLX_METAL_GPU_ARCH=${JSON.stringify(override)} overrides architecture.name=${reported === null ? 'unknown' : JSON.stringify(reported)}`
        : `architecture.name=${reported === null ? 'unknown' : JSON.stringify(reported)}${override === '' ? ' (MLX_METAL_GPU_ARCH empty, ignored)' : ''}`;
      if (arch === null) {
        return result(null, [origin, 'not in this report (architecture.name needs macOS 14+); MLX reads it itself at init']);
      }
      const tens = arch.length >= 3 ? arch.charAt(arch.length - 3) : '';
      const ones = arch.length >= 3 ? arch.charAt(arch.length - 2) : '';
      if (!/^\d$/.test(tens) || !/^\d$/.test(ones)) {
        // MLX maps each non-digit to 0, so its own number would be meaningless here.
        return result(null, [origin, 'no two digits before the last character; MLX would count each non-digit as 0']);
      }
      const cls = MLX_ARCH_CLASS[arch.charAt(arch.length - 1)];
      const clsText = cls === undefined ? `class ${JSON.stringify(arch.charAt(arch.length - 1))} unknown (MLX uses medium defaults)` : `class ${cls}`;
      return result(Number(tens) * 10 + Number(ones), [origin, clsText]);
    },
  },
  {
    flag: 'allocatorLimitBytes',
    source: 'mlx/backend/metal/allocator.cpp MetalAllocator::MetalAllocator',
    rule:
      'gc limit = min(floor(0.95 × recommendedMaxWorkingSetSize), block limit), block limit = floor(min(1.5 × recommendedMaxWorkingSetSize, 0.95 × hw.memsize)): past it MLX frees cached buffers',
    families: [],
    properties: ['recommendedMaxWorkingSetSize', 'host.memoryBytes'],
    env: [],
    compute: ({ device, host }: RuleContext): Derived<number | null> => {
      const wss = device.recommendedMaxWorkingSetSize;
      if (typeof wss !== 'number' || !Number.isFinite(wss) || wss < 0) {
        return result(null, ['recommendedMaxWorkingSetSize unknown']);
      }
      const ram = host?.memoryBytes;
      const ramKnown = typeof ram === 'number' && Number.isFinite(ram) && ram > 0;
      // MLX truncates each double to size_t: the block limit as min(double, double), the gc term on its own.
      const gcTerm = Math.floor(0.95 * wss);
      const blockLimit = Math.floor(ramKnown ? Math.min(1.5 * wss, 0.95 * ram) : 1.5 * wss);
      const value = Math.min(gcTerm, blockLimit);
      const parts = [
        `recommendedMaxWorkingSetSize=${wss} (${(wss / 1048576).toFixed(2)} MiB)`,
        `0.95 × that = ${gcTerm}`,
        `1.5 × that = ${Math.floor(1.5 * wss)}`,
        ramKnown
          ? `hw.memsize=${ram} (${(ram / 1073741824).toFixed(2)} GiB), 0.95 × that = ${Math.floor(0.95 * ram)}`
          : 'hw.memsize unknown: the 0.95 × RAM bound is left out, so the real limit may be lower',
        `gc limit = ${value}`,
      ];
      return result(value, parts);
    },
  },
  {
    flag: 'heapSkipped',
    source: 'mlx/backend/metal/allocator.cpp MetalAllocator::MetalAllocator (is_vm)',
    rule: 'name == "Apple Paravirtual device" (exactly): MLX creates no buffer heap, and so no residency for one',
    families: [],
    properties: ['name'],
    env: [],
    compute: ({ device }: RuleContext): Derived<boolean> => {
      const value = device.name === PARAVIRTUAL_DEVICE_NAME;
      return result(value, [
        `name ${JSON.stringify(device.name)} ${value ? 'is' : 'is not'} ${JSON.stringify(PARAVIRTUAL_DEVICE_NAME)}`,
        value
          ? 'MLX knows it is in a VM from the name, which metal-cap-shim never changes'
          : 'MLX creates its heap and adds it to its residency set',
      ]);
    },
  },
]);

/** Rule tables by engine, for printing. */
export const RULE_TABLES = Object.freeze({
  'llama.cpp': LLAMA_CPP_RULES,
  mlx: MLX_RULES,
});

const OPTION_KEYS = ['env', 'host', 'rules'] as const;

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v);
  return typeof v;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

interface ValidOptions {
  env: EnvMap;
  host: HostInfo | null;
  rules: LlamaCppRuleSet;
}

function validateEngine(engine: unknown): Engine {
  if (typeof engine === 'string' && (ENGINES as readonly string[]).includes(engine)) return engine as Engine;
  throw new InvalidOptionsError(
    'engine',
    `engine must be one of ${ENGINES.map((e) => JSON.stringify(e)).join(', ')}; got ${describe(engine)}`,
  );
}

function validateDevice(device: unknown): DeviceReport {
  if (!isPlainObject(device) || !isPlainObject(device.families)) {
    throw new InvalidOptionsError(
      'device',
      `device must be a DeviceReport object with a "families" object; got ${isPlainObject(device) ? 'an object without families' : describe(device)}`,
    );
  }
  for (const [name, answer] of Object.entries(device.families)) {
    if (isFamilyName(name) && answer !== true && answer !== false && answer !== null && answer !== undefined) {
      throw new InvalidOptionsError('device', `device.families.${name} must be true, false or null; got ${describe(answer)}`);
    }
  }
  if (typeof device.name !== 'string') {
    throw new InvalidOptionsError('device', `device.name must be a string; got ${describe(device.name)}`);
  }
  return device as unknown as DeviceReport;
}

function validateOptions(options: unknown, engine: Engine): ValidOptions {
  if (options === undefined) return { env: process.env, host: null, rules: 'current' };
  if (!isPlainObject(options)) {
    throw new InvalidOptionsError('options', `options must be an object with any of ${OPTION_KEYS.join(', ')}; got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!(OPTION_KEYS as readonly string[]).includes(key)) {
      throw new InvalidOptionsError('options', `unknown option ${JSON.stringify(key)}; accepted: ${OPTION_KEYS.join(', ')}`);
    }
  }

  let env: EnvMap = process.env;
  if (options.env !== undefined) {
    if (!isPlainObject(options.env)) {
      throw new InvalidOptionsError('env', `env must be an object mapping names to strings (like process.env); got ${describe(options.env)}`);
    }
    for (const [k, v] of Object.entries(options.env)) {
      if (v !== undefined && typeof v !== 'string') {
        throw new InvalidOptionsError('env', `env values must be strings or undefined; env.${k} is ${describe(v)}`);
      }
    }
    env = options.env as EnvMap;
  }

  let host: HostInfo | null = null;
  if (options.host !== undefined && options.host !== null) {
    if (!isPlainObject(options.host)) {
      throw new InvalidOptionsError('host', `host must be a HostInfo object or null; got ${describe(options.host)}`);
    }
    const os = options.host.osVersion;
    if (os !== undefined && os !== null && typeof os !== 'string') {
      throw new InvalidOptionsError('host', `host.osVersion must be a string or null; got ${describe(os)}`);
    }
    host = options.host as unknown as HostInfo;
  }

  let rules: LlamaCppRuleSet = 'current';
  if (options.rules !== undefined) {
    if (typeof options.rules !== 'string' || !(LLAMA_CPP_RULE_SETS as readonly string[]).includes(options.rules)) {
      throw new InvalidOptionsError(
        'rules',
        `rules must be ${LLAMA_CPP_RULE_SETS.map((r) => JSON.stringify(r)).join(' or ')}; got ${describe(options.rules)}`,
      );
    }
    rules = options.rules as LlamaCppRuleSet;
    if (engine === 'mlx' && rules !== 'current') {
      throw new InvalidOptionsError('rules', `rules "${rules}" applies to engine "llama.cpp" only; MLX accepts "current" or no rules option`);
    }
  }
  return { env, host, rules };
}

function evaluate<F extends string>(rules: readonly LlamaCppRule<F>[], ctx: RuleContext): Record<F, GateFlag> {
  const out: Partial<Record<F, GateFlag>> = {};
  for (const r of rules) out[r.flag] = r.compute(ctx);
  return out as Record<F, GateFlag>;
}

function nullFamilyWarnings(rules: readonly { families: readonly FamilyName[] }[], device: DeviceReport): string[] {
  const seen = new Set<FamilyName>();
  for (const r of rules) for (const f of r.families) if (!ask(device, f).known) seen.add(f);
  return [...seen].map(
    (f) => `supportsFamily(${familyLabel(f)}) has no answer in this report; predicted as NO, the engine may see otherwise`,
  );
}

function isVmHost(host: HostInfo | null, device: DeviceReport): boolean {
  return host?.isVirtualMachine === true || (host?.model ?? '').startsWith('VirtualMac') || device.name.includes('Paravirtual');
}

function llamaConsequences(
  rules: LlamaCppRuleSet,
  reduction: boolean,
  mm: boolean,
  bf16: boolean,
  residencySetsCreated: boolean,
): LlamaCppConsequences {
  const have = { has_simdgroup_reduction: reduction, has_simdgroup_mm: mm };
  const cpuFallbackOps = LLAMA_CPP_OP_GATES[rules].filter((g) => !have[g.needs]).map((g) => g.op);
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
  return { cpuFallbackOps, matMulKernels, flashAttentionOnGpu, bf16Ops, residencySetsCreated, summary: `${parts.join('; ')}.` };
}

function predictLlamaCpp(ctx: RuleContext, rules: LlamaCppRuleSet): LlamaCppPrediction {
  const { device, env } = ctx;
  const warnings: string[] = [];
  if (device.isDefault === false) {
    warnings.push(
      `ggml-metal uses MTLCreateSystemDefaultDevice(); this report is device ${device.index} (${JSON.stringify(device.name)}), which llama.cpp does not pick`,
    );
  }

  if (rules === 'current') {
    const flags = evaluate(LLAMA_CPP_CURRENT_RULES, ctx);
    warnings.unshift(...nullFamilyWarnings(LLAMA_CPP_CURRENT_RULES, device));
    return {
      engine: 'llama.cpp',
      rules,
      deviceName: device.name,
      flags,
      consequences: llamaConsequences(
        rules,
        flags.has_simdgroup_reduction.value,
        flags.has_simdgroup_mm.value,
        flags.has_bfloat.value,
        residencyModel(ctx, 'GGML_METAL_NO_RESIDENCY').created,
      ),
      warnings,
    };
  }

  const flags = evaluate(LLAMA_CPP_LEGACY_RULES, ctx);
  warnings.unshift(...nullFamilyWarnings(LLAMA_CPP_LEGACY_RULES, device));
  warnings.push(
    'legacy ggml-metal.m asks supportsFamily(Apple7) on every MUL_MAT encode: a capability patch must stay installed for the life of the process',
  );
  for (const name of CURRENT_ONLY_ENV) {
    if (env[name] !== undefined) warnings.push(`${name} is set but legacy ggml-metal.m does not read it`);
  }
  return {
    engine: 'llama.cpp',
    rules,
    deviceName: device.name,
    flags,
    consequences: llamaConsequences(
      rules,
      flags.has_simdgroup_reduction.value,
      flags.has_simdgroup_mm.value,
      flags.use_bfloat.value,
      residencyModel(ctx, 'GGML_METAL_NO_RESIDENCY').created,
    ),
    warnings,
  };
}

function mlxRule<K extends keyof MlxValues>(flag: K): GateRule<K, MlxValues[K]> {
  const rule = MLX_RULES.find((r) => r.flag === flag);
  if (rule === undefined) throw new Error(`MLX_RULES has no entry for ${flag}`);
  return rule as GateRule<K, MlxValues[K]>;
}

function predictMlx(ctx: RuleContext): MlxPrediction {
  const { device, host } = ctx;
  const residencySets = mlxRule('residencySets').compute(ctx);
  const architectureGeneration = mlxRule('architectureGeneration').compute(ctx);
  const allocatorLimitBytes = mlxRule('allocatorLimitBytes').compute(ctx);
  const heapSkipped = mlxRule('heapSkipped').compute(ctx);

  const warnings = nullFamilyWarnings(MLX_RULES, device);
  if (residencySets.value && device.name.includes('Paravirtual')) {
    warnings.push(
      'advertising metal3 makes MLX create residency sets; the paravirtual device cannot ("Unable to construct residency set")',
    );
  }
  if (ask(device, 'metal3').yes && isVmHost(host, device)) {
    warnings.push(
      'supportsFamily(Metal3)=YES on a virtual machine: MLX on macOS 15+ then creates residency sets and throws if the VM GPU cannot; answer Apple families only, never Metal3',
    );
  }
  if (device.index !== 0) {
    warnings.push(
      `MLX uses MTLCopyAllDevices()[0]; this report is device ${device.index} (${JSON.stringify(device.name)}), which MLX does not pick`,
    );
  }
  return { engine: 'mlx', deviceName: device.name, residencySets, architectureGeneration, allocatorLimitBytes, heapSkipped, warnings };
}

/** Predicts llama.cpp's current-rule flags; every overload throws `InvalidOptionsError` on a bad engine, device or option. */
export function predictGates(
  device: DeviceReport,
  engine: 'llama.cpp',
  options?: PredictOptions & { rules?: 'current' },
): LlamaCppCurrentPrediction;
/** Predicts llama.cpp's flags under the legacy (ggml-metal.m) rules. */
export function predictGates(
  device: DeviceReport,
  engine: 'llama.cpp',
  options: PredictOptions & { rules: 'legacy' },
): LlamaCppLegacyPrediction;
/** Predicts llama.cpp's flags under a rule set chosen at run time. */
export function predictGates(device: DeviceReport, engine: 'llama.cpp', options?: PredictOptions): LlamaCppPrediction;
/** Predicts MLX's init-time values. */
export function predictGates(device: DeviceReport, engine: 'mlx', options?: PredictOptions): MlxPrediction;
/** Predicts for an engine chosen at run time. */
export function predictGates(device: DeviceReport, engine: Engine, options?: PredictOptions): GatePrediction;
export function predictGates(device: unknown, engine: unknown, options?: unknown): GatePrediction {
  const eng = validateEngine(engine);
  const dev = validateDevice(device);
  const opts = validateOptions(options, eng);
  const ctx: RuleContext = { device: dev, env: opts.env, host: opts.host, macos: parseMacos(opts.host) };
  return eng === 'mlx' ? predictMlx(ctx) : predictLlamaCpp(ctx, opts.rules);
}
