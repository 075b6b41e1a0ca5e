/**
 * MLX's rule table: what MLX's Metal backend computes from the device at init and from the GPU architecture name,
 * release by release (mlx-releases.ts says which releases each rule set covers). The table restates what MLX's sources
 * do; it contains no MLX code. MLX asks `supportsFamily:` twice, both times for Metal3 (resident.cpp, fence.cpp), and
 * reads no Apple family and no threadgroup-memory size: its kernel choices follow the architecture name instead
 * (`MTLDevice.architecture.name`, or MLX_METAL_GPU_ARCH from v0.31.0), which the shim does not patch.
 */
import { InvalidOptionsError } from '../core/errors.js';
import { describeValue, quote } from '../core/input.js';
import { architectureText } from '../core/words.js';
import { isVmHost, namedParavirtual, PARAVIRTUAL_DEVICE_NAME } from '../device/paravirtual.js';
import type { DeviceReport, HostInfo } from '../device/types.js';
import {
  ask,
  macosAtLeast,
  nullFamilyWarnings,
  parseMacos,
  RESIDENCY_MIN_MACOS,
  result,
  workingSetOf,
  wssText,
  type Derived,
  type RuleContext,
} from './common.js';
import {
  MLX_NEWEST,
  MLX_RULE_SET_INFO,
  MLX_SWITCHES,
  mlxAtLeast,
  mlxRuleSetForRelease,
  parseMlxRelease,
  type MlxRuleSet,
} from './mlx-releases.js';

/** The values MLX derives at init and at its first kernel dispatches. */
export interface MlxValues {
  /** Whether MLX creates MTLResidencySets (and throws if it cannot). */
  residencySets: boolean;
  /** The bytes one residency set holds before MLX starts another; 0: one set holds everything. */
  residencySetCapBytes: number | null;
  /** The architecture name MLX parses: MLX_METAL_GPU_ARCH when a release reads it and it is not empty, else the device's. */
  architectureName: string | null;
  /** The GPU generation MLX parses from the name (13 for `applegpu_g13s`). */
  architectureGeneration: number | null;
  /** The class letter, the name's last character (`s` in `applegpu_g13s`). */
  architectureClass: string | null;
  /** Operations per command buffer before MLX commits it. */
  maxOpsPerBuffer: number | null;
  /** Megabytes of inputs per command buffer before MLX commits it. */
  maxMbPerBuffer: number | null;
  /** Which GEMM tile sizes the class picks: `small-device`, `large-device` or `default`. */
  gemmTiles: string | null;
  /** The most 16×16 output tiles a single GEMM may have and still take the split-K kernel. */
  splitKThreshold: number | null;
  /** When decoding attention takes the 2-pass SDPA vector kernel. */
  sdpaTwoPass: string | null;
  /** The 2-pass SDPA kernel's block count. */
  sdpaBlocks: string | null;
  /** The quantized mat-vec batch limits `a/b/c` for matrices up to 2048, up to 4096, and larger. */
  qmvBatchLimits: string | null;
  /** Whether affine quantized mat-vec may take qmv_wide. */
  affineQmvWide: boolean | null;
  /** Whether mat-vec products may take gemv_wide. */
  gemvWide: boolean | null;
  /** Whether MLX uses its NAX kernels. */
  nax: boolean | null;
  /** Whether MLX's fences use the fast path (a shared buffer) instead of MTLSharedEvent. */
  fastFence: boolean | null;
  /** MLX allocator's garbage-collection limit in bytes. */
  allocatorLimitBytes: number | null;
  /** The allocator's block limit, which is also its cache limit, in bytes. */
  cacheLimitBytes: number | null;
  /** The largest wired limit `mx.set_wired_limit` accepts, in bytes. */
  wiredLimitMaxBytes: number | null;
  /** The memory the Winograd convolution's batch step budgets, in bytes. */
  winogradBudgetBytes: number | null;
  /** Whether MLX skips its buffer heap (and that heap's residency): the device name is exactly "Apple Paravirtual device". */
  heapSkipped: boolean | null;
}

/** A value MLX computes. */
export type MlxFlag = keyof MlxValues;

/** What an MLX rule's `compute` sees: the device, the environment (with any offered architecture) and the rule set. */
export interface MlxRuleContext extends RuleContext {
  ruleSet: MlxRuleSet;
}

/** An MLX rule-table entry. */
export interface MlxRule<K extends MlxFlag = MlxFlag> {
  flag: K;
  /** Where MLX computes it (the newest source; `changes` names the older ones). */
  source: string;
  /** The rule in words, for printing (the newest; `changes` says how older releases differ). */
  rule: string;
  /** The first rule set that computes it: before it the value is null. */
  since: MlxRuleSet;
  /** The rule sets from which it is computed differently, each with what changed. */
  changes: readonly { from: MlxRuleSet; what: string }[];
  /** Whether the architecture name decides it (the values an offered architecture can change). */
  byArchitecture: boolean;
  /** Families the rule asks `supportsFamily:` about. */
  families: readonly 'metal3'[];
  /** Device properties and host facts it reads, in any rule set. */
  properties: readonly string[];
  /** Environment variables it reads, in any rule set (MLX_SWITCHES says from which). */
  env: readonly string[];
  compute: (ctx: MlxRuleContext) => Derived<MlxValues[K]>;
}

/** Any MLX rule, its flag and its value's type matched. */
export type MlxAnyRule = { [K in MlxFlag]: MlxRule<K> }[MlxFlag];

/** Every MLX prediction value with its reason. */
export type MlxFlags = { [K in MlxFlag]: Derived<MlxValues[K]> };

/** MLX prediction. */
export interface MlxPrediction {
  engine: 'mlx';
  /** The MTLDevice name the prediction is for. */
  deviceName: string;
  /** The rule set used (MLX_RULE_SETS). */
  rules: MlxRuleSet;
  /** The releases that rule set describes. */
  releases: string;
  /** The MLX release asked for, or null (the newest rules). */
  release: string | null;
  /** The architecture name offered to MLX as MLX_METAL_GPU_ARCH, or null when none is. */
  offeredArchitecture: string | null;
  flags: MlxFlags;
  /** Switches set in the environment (or the offered architecture) that this release does not read yet. */
  ignored: MlxIgnoredSwitch[];
  warnings: string[];
}

/** A switch set for a release that does not read it. */
export interface MlxIgnoredSwitch {
  name: string;
  /** The first rule set that reads it. */
  since: MlxRuleSet;
  message: string;
}

// ---------------------------------------------------------------------------------------------------------------
// The architecture name, as MLX reads it.

/** What the class letter means to MLX (device.cpp's comments). */
const CLASS_MEANING: Readonly<Record<string, string>> = Object.freeze({
  p: 'phone',
  g: 'base/pro',
  s: 'max',
  d: 'ultra',
});

interface ArchName {
  name: string | null;
  origin: string;
}

/** The name Device::Device parses: MLX_METAL_GPU_ARCH from v0.31.0 when not empty, else architecture.name. */
function archName({ device, env, ruleSet }: MlxRuleContext): ArchName {
  const reported = typeof device.architecture === 'string' ? device.architecture : null;
  const reportedText =
    reported === null ? `architecture.name ${architectureText(null)}` : `architecture.name=${JSON.stringify(reported)}`;
  const override = env.MLX_METAL_GPU_ARCH;
  if (override === undefined) return { name: reported, origin: reportedText };
  if (!mlxAtLeast(ruleSet, 'v0.31.0')) {
    return { name: reported, origin: `${reportedText} (MLX reads MLX_METAL_GPU_ARCH only from v0.31.0)` };
  }
  if (override === '') return { name: reported, origin: `${reportedText} (MLX_METAL_GPU_ARCH empty, ignored)` };
  return { name: override, origin: `MLX_METAL_GPU_ARCH=${quote(override)} replaces ${reportedText}` };
}

/** The name's bytes as C++'s `char` holds them on Apple's arm64 (signed). */
function chars(name: string): number[] {
  return [...new TextEncoder().encode(name)].map((b) => (b >= 128 ? b - 256 : b));
}

const ZERO = '0'.charCodeAt(0);

function charText(c: number): string {
  return c >= 32 && c < 127 ? JSON.stringify(String.fromCharCode(c)) : `byte ${c}`;
}

/** The generation Device::Device computes; null where the name is unknown or MLX's result is undefined. */
function generation(ctx: MlxRuleContext): Derived<number | null> {
  const { name, origin } = archName(ctx);
  if (name === null) {
    return result(null, [
      origin,
      'not in this report (architecture.name needs macOS 14+); MLX reads it itself at init',
    ]);
  }
  const c = chars(name);
  const clamped = mlxAtLeast(ctx.ruleSet, 'v0.31.0');
  if (c.length === 0) {
    // Every release reads arch_.back() in the same constructor: the empty name has no defined result to predict.
    return result(null, [origin, 'empty name: Device::Device reads its last character (undefined behaviour)']);
  }
  if (c.length < 3) {
    return clamped
      ? result(0, [origin, `${c.length} bytes, fewer than 3: MLX counts the generation 0`])
      : result(null, [origin, `${c.length} bytes, fewer than 3: MLX reads before the string (undefined behaviour)`]);
  }
  const tens = c[c.length - 3]! - ZERO;
  const ones = c[c.length - 2]! - ZERO;
  const digit = (d: number) => d >= 0 && d < 10;
  if (digit(tens) && digit(ones)) return result(tens * 10 + ones, [origin, `digits ${tens} and ${ones}`]);
  const bad = [c[c.length - 3]!, c[c.length - 2]!].filter((x) => !digit(x - ZERO)).map(charText);
  if (clamped) {
    const value = (digit(tens) ? tens : 0) * 10 + (digit(ones) ? ones : 0);
    return result(value, [origin, `${bad.join(' and ')} no digit: MLX counts it 0`]);
  }
  return result(tens * 10 + ones, [
    origin,
    `${bad.join(' and ')} no digit: MLX subtracts '0' from the character code unchecked, so the generation is ${tens} × 10 + ${ones}`,
  ]);
}

type ClassLetter = { letter: string; text: string } | { letter: null; text: string };

/** The class letter, `arch_.back()`; undefined behaviour on an empty name. */
function archClass(ctx: MlxRuleContext): ClassLetter & { origin: string } {
  const { name, origin } = archName(ctx);
  if (name === null) return { letter: null, text: 'class unknown (no architecture name)', origin };
  const c = chars(name);
  if (c.length === 0)
    return { letter: null, text: 'empty name: MLX reads its last character (undefined behaviour)', origin };
  const last = c[c.length - 1]!;
  const letter = last >= 0 ? String.fromCharCode(last) : `\\x${(last + 256).toString(16)}`;
  const meaning = CLASS_MEANING[letter];
  return {
    letter,
    text: `class ${JSON.stringify(letter)}${meaning === undefined ? ' (no class MLX names)' : ` (${meaning})`}`,
    origin,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Reading MLX's switches and the working set.

const LONG_MAX = (1n << 63n) - 1n;
const LONG_MIN = -(1n << 63n);

/** What env::get_var's `int` holds for a variable, and the number written when it does not fit. */
export interface AtoiReading {
  value: number;
  /** The number as written (its sign and digits) when an int cannot hold it; null when it fits or there is none. */
  overflowed: string | null;
}

/**
 * C's atoi over a variable, into MLX's `int`: leading blanks, a sign, digits; anything else is 0. Apple's atoi is
 * `(int)strtol(…)`: strtol saturates at the 64-bit long's bounds, and the conversion to int keeps the low 32 bits, so
 * 8589934592 reads as 0, 3000000000 as -1294967296 and 4294967301 as 5.
 */
export function atoiInt(text: string): AtoiReading {
  const m = /^[\t\n\v\f\r ]*([+-]?)0*(\d+)/.exec(text);
  if (m === null) return { value: 0, overflowed: null };
  // strtol saturates, so at most 20 significant digits matter: a longer run is past the long's bounds anyway.
  const digits = m[2]!.length > 20 ? '9'.repeat(20) : m[2]!;
  const magnitude = BigInt(digits);
  const asLong = m[1] === '-' ? -magnitude : magnitude;
  const long = asLong > LONG_MAX ? LONG_MAX : asLong < LONG_MIN ? LONG_MIN : asLong;
  const value = Number(BigInt.asIntN(32, long));
  const fits = asLong >= -(1n << 31n) && asLong < 1n << 31n;
  return { value, overflowed: fits ? null : `${m[1]}${m[2]}` };
}

function atoi(text: string): number {
  return atoiInt(text).value;
}

/** `(atoi: N)`, and when the number overflows MLX's int, what it wraps to. */
function atoiText(text: string): string {
  const r = atoiInt(text);
  return r.overflowed === null
    ? `atoi: ${r.value}`
    : `atoi into an int: ${r.overflowed} does not fit 32 bits and reads as ${r.value}`;
}

/** A warning for each integer switch this release reads whose number does not fit MLX's int. */
function intOverflowWarnings(env: MlxRuleContext['env'], ruleSet: MlxRuleSet): string[] {
  return MLX_SWITCHES.filter((s) => s.read === 'int' && mlxAtLeast(ruleSet, s.since)).flatMap((s) => {
    const v = env[s.name];
    const r = v === undefined ? null : atoiInt(v);
    return r === null || r.overflowed === null
      ? []
      : [
          `${s.name}=${JSON.stringify(v)} does not fit MLX's int (env::get_var's atoi): MLX reads ${r.value}, not ${r.overflowed}`,
        ];
  });
}

/** An integer switch as env::get_var reads it: its atoi when set (even empty), else the default. */
function intSwitch(env: MlxRuleContext['env'], name: string, fallback: number): { value: number; text: string } {
  const v = env[name];
  if (v === undefined) return { value: fallback, text: `${name} unset (${fallback})` };
  return { value: atoi(v), text: `${name}=${JSON.stringify(v)} (${atoiText(v)})` };
}

/** The allocator's block limit: floor(min(1.5 × wss, 0.95 × RAM)), RAM left out when unknown. */
function blockLimit(ctx: MlxRuleContext, wss: number): { value: number; parts: string[] } {
  const ram = ctx.host?.memoryBytes;
  const ramKnown = typeof ram === 'number' && Number.isFinite(ram) && ram > 0;
  return {
    value: Math.floor(ramKnown ? Math.min(1.5 * wss, 0.95 * ram) : 1.5 * wss),
    parts: [
      `1.5 × that = ${Math.floor(1.5 * wss)}`,
      ramKnown
        ? `hw.memsize=${ram} (${(ram / 1073741824).toFixed(2)} GiB), 0.95 × that = ${Math.floor(0.95 * ram)}`
        : 'hw.memsize unknown: the 0.95 × RAM bound is left out, so the real limit may be lower',
    ],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Rules that follow the architecture.

/** A value that needs the class letter: null, with the reason, where there is none. */
function byClass<T>(ctx: MlxRuleContext, pick: (letter: string) => Derived<T>): Derived<T | null> {
  const cls = archClass(ctx);
  if (cls.letter === null) return result(null, [cls.origin, cls.text]);
  const picked = pick(cls.letter);
  return result(picked.value, [cls.origin, cls.text, picked.reason]);
}

/** A value that needs the generation: null, with the reason, where MLX has none. */
function byGeneration<T>(ctx: MlxRuleContext, pick: (gen: number) => Derived<T>): Derived<T | null> {
  const gen = generation(ctx);
  if (gen.value === null) return gen as Derived<null>;
  const picked = pick(gen.value);
  return result(picked.value, [gen.reason, `generation ${gen.value}`, picked.reason]);
}

/** The command-buffer limits by class letter (Device::Device). */
const BUFFER_LIMITS: Readonly<Record<string, { ops: number; mb: number }>> = Object.freeze({
  p: { ops: 20, mb: 40 },
  g: { ops: 40, mb: 40 },
  s: { ops: 50, mb: 50 },
  d: { ops: 50, mb: 50 },
});
const DEFAULT_BUFFER_LIMITS = { ops: 40, mb: 40 };

function bufferLimit(ctx: MlxRuleContext, which: 'ops' | 'mb', name: string): Derived<number | null> {
  const env = ctx.env[name];
  const cls = archClass(ctx);
  // MLX computes the class default first (reading the last character), then lets the variable replace it.
  if (cls.letter === null) {
    const unknownName = archName(ctx).name === null;
    return unknownName && env !== undefined
      ? result(atoi(env), [cls.origin, `${name}=${JSON.stringify(env)} replaces the class's value (${atoiText(env)})`])
      : result(null, [cls.origin, cls.text]);
  }
  const limits = BUFFER_LIMITS[cls.letter] ?? DEFAULT_BUFFER_LIMITS;
  const own = `${cls.text}: ${limits[which]}${BUFFER_LIMITS[cls.letter] === undefined ? ' (the medium default)' : ''}`;
  if (env === undefined) return result(limits[which], [cls.origin, own, `${name} unset`]);
  return result(atoi(env), [cls.origin, own, `${name}=${JSON.stringify(env)} replaces it (${atoiText(env)})`]);
}

/** The quantized mat-vec batch limits `a/b/c` for a tier (quantized.cpp get_qmv_batch_limit). */
const QMV_LIMITS = Object.freeze({
  gen17: '33/25/13',
  gen15: '13/15/13',
  ultra: '32/18/12',
  m1m2: '14/10/6',
  other: '18/12/10',
});

function qmvLimits(ctx: MlxRuleContext): Derived<string | null> {
  return byClass(ctx, (letter) => {
    const d = letter === 'd';
    if (mlxAtLeast(ctx.ruleSet, 'v0.32.1')) {
      const gen = generation(ctx);
      const g = gen.value!;
      if (g >= 17 && !d) return result(QMV_LIMITS.gen17, ['generation ≥ 17, class not d']);
      if (g >= 15 && !d) return result(QMV_LIMITS.gen15, ['generation ≥ 15, class not d']);
      if (d) return result(QMV_LIMITS.ultra, [`class d (generation ${g})`]);
      return g >= 13
        ? result(QMV_LIMITS.m1m2, ['generation 13 or 14 (≥ 13, below 15)'])
        : result(QMV_LIMITS.other, ['generation below 13']);
    }
    if (mlxAtLeast(ctx.ruleSet, 'v0.31.0')) {
      const g = generation(ctx).value!;
      const m = g === 13 || g === 14;
      return result(d ? QMV_LIMITS.ultra : m ? QMV_LIMITS.m1m2 : QMV_LIMITS.other, [
        `generation ${g} ${m ? 'is' : 'is not'} 13 or 14`,
        d ? 'class d' : 'class not d',
      ]);
    }
    const c = chars(archName(ctx).name!);
    const two = new TextDecoder().decode(new Uint8Array(c.slice(c.length - 3, c.length - 1).map((x) => x & 255)));
    const m = two === '13' || two === '14';
    return result(d ? QMV_LIMITS.ultra : m ? QMV_LIMITS.m1m2 : QMV_LIMITS.other, [
      `characters ${JSON.stringify(two)} ${m ? 'are' : 'are not'} "13" or "14"`,
      d ? 'class d' : 'class not d',
    ]);
  });
}

/** The qmv limits need the generation from v0.31.0 and a name of 3 bytes before it (substr throws). */
function qmvRule(ctx: MlxRuleContext): Derived<string | null> {
  const { name, origin } = archName(ctx);
  if (name !== null && !mlxAtLeast(ctx.ruleSet, 'v0.31.0') && chars(name).length < 3 && chars(name).length > 0) {
    return result(null, [
      origin,
      'fewer than 3 bytes: substr throws std::out_of_range at the first quantized mat-vec product',
    ]);
  }
  return qmvLimits(ctx);
}

function naxRule(ctx: MlxRuleContext): Derived<boolean | null> {
  const gen = generation(ctx);
  if (gen.value === null) return gen as Derived<null>;
  const g = gen.value;
  const runtime = mlxAtLeast(ctx.ruleSet, 'v0.30.1');
  const mac = macosAtLeast(ctx, 26, 2);
  const macPart = runtime ? [mac.text] : ['assuming a build against the macOS 26.2+ SDK (MLX_ENABLE_NAX)'];
  if (!mlxAtLeast(ctx.ruleSet, 'v0.30.5')) {
    return result((!runtime || mac.ok) && g >= 17, [
      gen.reason,
      ...macPart,
      `generation ${g} ${g >= 17 ? '≥' : '<'} 17`,
    ]);
  }
  const cls = archClass(ctx);
  if (cls.letter === null) return result(null, [gen.reason, cls.text]);
  const min = cls.letter === 'p' ? 18 : 17;
  return result(mac.ok && g >= min, [
    gen.reason,
    mac.text,
    cls.text,
    `generation ${g} ${g >= min ? '≥' : '<'} ${min}${cls.letter === 'p' ? ' (class p)' : ''}`,
  ]);
}

/** What MLX reads from one architecture name on a host under a rule set: its generation, class letter and NAX. */
export interface MlxArchitectureReading {
  /** The generation as Device::Device computes it; null where MLX's result is undefined. */
  generation: number | null;
  /** The last character (`g`, `s`, `d`, `p` …); null for an empty name. */
  cls: string | null;
  /** is_nax_available(); an unknown macOS version counts as new enough (macosAtLeast). */
  nax: boolean | null;
}

/**
 * The architecture name `name` as MLX under `ruleSet` (the newest by default) reads it on `host`: the same rules
 * predictMlx applies to a device's architecture.name, for callers that hold a name rather than a device (the profile's
 * offered architecture).
 */
export function readMlxArchitecture(
  name: string,
  host: HostInfo | null,
  ruleSet: MlxRuleSet = MLX_NEWEST,
): MlxArchitectureReading {
  const device = { architecture: name } as DeviceReport;
  const ctx: MlxRuleContext = { device, env: {}, host, macos: parseMacos(host), ruleSet };
  return { generation: generation(ctx).value, cls: archClass(ctx).letter, nax: naxRule(ctx).value };
}

function sdpaBlocksRule(ctx: MlxRuleContext): Derived<string | null> {
  const env = mlxAtLeast(ctx.ruleSet, 'v0.32.0') ? ctx.env.MLX_SDPA_BLOCKS : undefined;
  const forced = env === undefined ? 0 : atoi(env);
  if (!mlxAtLeast(ctx.ruleSet, 'v0.30.4')) return result('32', ['32 whatever the class']);
  const byCls = byClass(ctx, (letter) =>
    letter === 's'
      ? result('64 to 1024 by key length', [
          'class s: 64, and from 1024 keys with more than 4 query SIMD groups 128 to 1024',
        ])
      : letter === 'd'
        ? result('128 to 1024 by key length', ['class d: 128, up to 1024 by key length and query SIMD groups'])
        : result('32 or 64', ['other classes: 64 with 4 or more query SIMD groups, else 32']),
  );
  if (forced <= 0) {
    return env === undefined
      ? byCls
      : result(byCls.value, [byCls.reason, `MLX_SDPA_BLOCKS=${JSON.stringify(env)} is not above 0`]);
  }
  const rounded = mlxAtLeast(ctx.ruleSet, 'v0.32.1') ? Math.ceil(forced / 32) * 32 : forced;
  return result(String(rounded), [
    `MLX_SDPA_BLOCKS=${JSON.stringify(env)} replaces the class's count${rounded === forced ? '' : `, rounded up to a multiple of 32: ${rounded}`}`,
  ]);
}

const ARCH_ENV = 'MLX_METAL_GPU_ARCH';

/** Whether MLX creates residency sets: Metal3 on macOS 15+, else its constructor returns before anything else. */
function residencySetsCreated(ctx: MlxRuleContext): { yes: boolean; parts: string[] } {
  const m3 = ask(ctx.device, 'metal3');
  const mac = macosAtLeast(ctx, RESIDENCY_MIN_MACOS);
  return { yes: m3.yes && mac.ok, parts: [m3.text, mac.text] };
}

/** MLX rules, in display order. */
export const MLX_RULES: readonly MlxAnyRule[] = Object.freeze<MlxAnyRule[]>([
  {
    flag: 'residencySets',
    source: 'mlx/backend/metal/resident.cpp ResidencySets::ResidencySets',
    rule: 'supportsFamily(Metal3) AND macOS ≥ 15 (creation failure throws "Unable to construct residency set")',
    since: 'v0.19.2',
    changes: [
      {
        from: 'v0.32.1',
        what: 'ResidencySets: several sets, each capped (before: one ResidencySet::ResidencySet, owned by the allocator until v0.31.1 and by Device from v0.31.2)',
      },
    ],
    byArchitecture: false,
    families: ['metal3'],
    properties: ['host.osVersion'],
    env: [],
    compute: (ctx) => {
      const sets = residencySetsCreated(ctx);
      return result(sets.yes, sets.parts);
    },
  },
  {
    flag: 'residencySetCapBytes',
    source: 'mlx/backend/metal/resident.cpp ResidencySets::ResidencySets',
    rule: 'none without residency sets (no Metal3 or macOS < 15: the constructor returns first); pct = MLX_RESIDENCY_SET_MAX_PCT (5); pct ≤ 0 or ≥ 100: 0 (one set), else max(floor(recommendedMaxWorkingSetSize / 100) × pct, 64 MiB); it spreads wired memory over sets, never wires more',
    since: 'v0.32.1',
    changes: [],
    byArchitecture: false,
    families: ['metal3'],
    properties: ['recommendedMaxWorkingSetSize', 'host.osVersion'],
    env: ['MLX_RESIDENCY_SET_MAX_PCT'],
    compute: (ctx) => {
      const sets = residencySetsCreated(ctx);
      if (!sets.yes)
        return result(null, [...sets.parts, 'no residency sets, so no cap: MLX returns before computing it']);
      const pct = intSwitch(ctx.env, 'MLX_RESIDENCY_SET_MAX_PCT', 5);
      if (pct.value <= 0 || pct.value >= 100) return result(0, [pct.text, 'one set holds everything']);
      const wss = workingSetOf(ctx.device);
      if (wss === null) return result(null, [pct.text, 'recommendedMaxWorkingSetSize unknown']);
      const cap = Math.max(Math.floor(wss / 100) * pct.value, 64 * 1048576);
      return result(cap, [pct.text, wssText(wss), `max(${Math.floor(wss / 100)} × ${pct.value}, 64 MiB) = ${cap}`]);
    },
  },
  {
    flag: 'architectureName',
    source: 'mlx/backend/metal/device.cpp Device::Device',
    rule: 'MLX_METAL_GPU_ARCH when set and not empty, else MTLDevice.architecture.name',
    since: 'v0.19.2',
    changes: [{ from: 'v0.31.0', what: 'MLX_METAL_GPU_ARCH, when not empty, replaces architecture.name' }],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV],
    compute: (ctx) => {
      const a = archName(ctx);
      return result(a.name, [a.origin]);
    },
  },
  {
    flag: 'architectureGeneration',
    source: 'mlx/backend/metal/device.cpp Device::Device',
    rule: "the two characters before the last, each its code minus '0' (tens, ones); one that is no digit counts 0, and a name of 1 or 2 bytes is generation 0 (an empty one is undefined behaviour: arch_.back())",
    since: 'v0.26.2',
    changes: [
      {
        from: 'v0.31.0',
        what: "a character that is no digit counts 0 and a name shorter than 3 is 0 (before: the code minus '0' unchecked, and a read before the string)",
      },
    ],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV],
    compute: generation,
  },
  {
    flag: 'architectureClass',
    source: 'mlx/backend/metal/device.cpp Device::Device',
    rule: "the name's last character (p phone, g base/pro, s max, d ultra); undefined behaviour on an empty name",
    since: 'v0.19.2',
    changes: [],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV],
    compute: (ctx) => {
      const cls = archClass(ctx);
      return result(cls.letter, [cls.origin, cls.text]);
    },
  },
  {
    flag: 'maxOpsPerBuffer',
    source: 'mlx/backend/metal/device.cpp Device::Device',
    rule: 'by class: p 20, g 40, s 50, d 50, other 40; MLX_MAX_OPS_PER_BUFFER (atoi) replaces it when set',
    since: 'v0.19.2',
    changes: [{ from: 'v0.23.0', what: 'by class (before: MLX_MAX_OPS_PER_BUFFER, else 10, in metal.cpp)' }],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV, 'MLX_MAX_OPS_PER_BUFFER'],
    compute: (ctx) => {
      if (mlxAtLeast(ctx.ruleSet, 'v0.23.0')) return bufferLimit(ctx, 'ops', 'MLX_MAX_OPS_PER_BUFFER');
      const v = intSwitch(ctx.env, 'MLX_MAX_OPS_PER_BUFFER', 10);
      return result(v.value, [v.text, 'the same for every class']);
    },
  },
  {
    flag: 'maxMbPerBuffer',
    source: 'mlx/backend/metal/device.cpp Device::Device',
    rule: 'by class: p 40, g 40, s 50, d 50, other 40; MLX_MAX_MB_PER_BUFFER (atoi) replaces it when set',
    since: 'v0.23.0',
    changes: [],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV, 'MLX_MAX_MB_PER_BUFFER'],
    compute: (ctx) => bufferLimit(ctx, 'mb', 'MLX_MAX_MB_PER_BUFFER'),
  },
  {
    flag: 'gemmTiles',
    source: 'mlx/backend/metal/matmul.cpp GEMM_TPARAM_MACRO',
    rule: 'class g or p: the small-device tiles; d: the large-device tiles; any other: the default tiles',
    since: 'v0.19.2',
    changes: [{ from: 'v0.23.0', what: 'class p takes the small-device tiles too (before: g only)' }],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV],
    compute: (ctx) =>
      byClass(ctx, (letter) => {
        const small = letter === 'g' || (letter === 'p' && mlxAtLeast(ctx.ruleSet, 'v0.23.0'));
        if (small) return result('small-device', ['small-device tiles']);
        if (letter === 'd') return result('large-device', ['large-device tiles']);
        return result('default', ['default tiles']);
      }),
  },
  {
    flag: 'splitKThreshold',
    source: 'mlx/backend/metal/matmul.cpp steel_matmul_axpby',
    rule: 'a single GEMM with at most this many 16×16 output tiles, K/16 ≥ 8 and K ≥ max(M, N), without NAX, takes split-K: class s or d 2048, other 1024',
    since: 'v0.19.2',
    changes: [{ from: 'v0.30.5', what: 'by class, and K ≥ max(M, N) (before: 32 tiles for every class)' }],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV],
    compute: (ctx) => {
      if (!mlxAtLeast(ctx.ruleSet, 'v0.30.5')) return result(32, ['32 for every class']);
      return byClass(ctx, (letter) =>
        letter === 's' || letter === 'd' ? result(2048, ['class s or d: 2048']) : result(1024, ['other classes: 1024']),
      );
    },
  },
  {
    flag: 'sdpaTwoPass',
    source: 'mlx/backend/metal/scaled_dot_product_attention.cpp ScaledDotProductAttention::eval_gpu',
    rule: 'decoding (one query) takes the 2-pass vector kernel from 1024 keys on class s or d, else only with GQA from 4096 keys',
    since: 'v0.21.0',
    changes: [{ from: 'v0.30.4', what: 'class s too (before: d only)' }],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV],
    compute: (ctx) =>
      byClass(ctx, (letter) =>
        letter === 'd' || (letter === 's' && mlxAtLeast(ctx.ruleSet, 'v0.30.4'))
          ? result('from 1024 keys', ['a large class: 2-pass from 1024 keys'])
          : result('GQA from 4096 keys', ['2-pass only with GQA from 4096 keys']),
      ),
  },
  {
    flag: 'sdpaBlocks',
    source: 'mlx/backend/metal/scaled_dot_product_attention.cpp sdpa_vector_2pass',
    rule: 'by class: s 64 to 1024 and d 128 to 1024 by key length, other 32 or 64; MLX_SDPA_BLOCKS above 0 replaces it, rounded up to a multiple of 32',
    since: 'v0.21.0',
    changes: [
      { from: 'v0.30.4', what: 'by class (before: 32)' },
      { from: 'v0.32.0', what: 'MLX_SDPA_BLOCKS' },
      { from: 'v0.32.1', what: 'MLX_SDPA_BLOCKS rounded up to a multiple of 32' },
    ],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV, 'MLX_SDPA_BLOCKS'],
    compute: sdpaBlocksRule,
  },
  {
    flag: 'qmvBatchLimits',
    source: 'mlx/backend/metal/quantized.cpp get_qmv_batch_limit',
    rule: 'the batch below which quantized matmul stays mat-vec, for matrices ≤ 2048 / ≤ 4096 / larger: generation ≥ 17 and not d 33/25/13, ≥ 15 and not d 13/15/13, d 32/18/12, 13 or 14 14/10/6, older 18/12/10',
    since: 'v0.24.2',
    changes: [
      {
        from: 'v0.31.0',
        what: 'reads the generation (before: the two characters "13" or "14"; substr throws on a name shorter than 3)',
      },
      { from: 'v0.32.1', what: 'tiers for generation ≥ 15 and ≥ 17' },
    ],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV],
    compute: qmvRule,
  },
  {
    flag: 'affineQmvWide',
    source: 'mlx/backend/metal/quantized.cpp use_qmv_wide',
    rule: 'affine quantized mat-vec may take qmv_wide at generation ≥ 15 (the fp modes at any generation)',
    since: 'v0.32.0',
    changes: [],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV],
    compute: (ctx) => byGeneration(ctx, (g) => result(g >= 15, [g >= 15 ? '≥ 15: qmv_wide' : '< 15: qmv'])),
  },
  {
    flag: 'gemvWide',
    source: 'mlx/backend/metal/matmul.cpp gemv_wide_config',
    rule: 'mat-vec products may take gemv_wide at generation ≥ 15',
    since: 'v0.32.1',
    changes: [],
    byArchitecture: true,
    families: [],
    properties: ['architecture'],
    env: [ARCH_ENV],
    compute: (ctx) =>
      byGeneration(ctx, (g) => result(g >= 15, [g >= 15 ? '≥ 15: gemv_wide' : '< 15: the older gemv kernels'])),
  },
  {
    flag: 'nax',
    source: 'mlx/backend/metal/device.cpp is_nax_available',
    rule: 'macOS ≥ 26.2 AND generation ≥ 17 (≥ 18 for class p); false in builds with MLX_METAL_NO_NAX',
    since: 'v0.30.0',
    changes: [
      { from: 'v0.30.1', what: 'macOS 26.2 checked at run time (before: only builds against the 26.2 SDK had NAX)' },
      { from: 'v0.30.5', what: 'class p needs generation 18' },
    ],
    byArchitecture: true,
    families: [],
    properties: ['architecture', 'host.osVersion'],
    env: [ARCH_ENV],
    compute: naxRule,
  },
  {
    flag: 'fastFence',
    source: 'mlx/backend/metal/fence.cpp FenceImpl::FenceImpl',
    rule: 'supportsFamily(Metal3) AND macOS ≥ 15 AND MLX_METAL_FAST_SYNCH (atoi) not 0; else MTLSharedEvent',
    since: 'v0.22.1',
    changes: [],
    byArchitecture: false,
    families: ['metal3'],
    properties: ['host.osVersion'],
    env: ['MLX_METAL_FAST_SYNCH'],
    compute: (ctx) => {
      const m3 = ask(ctx.device, 'metal3');
      const mac = macosAtLeast(ctx, RESIDENCY_MIN_MACOS);
      const sw = intSwitch(ctx.env, 'MLX_METAL_FAST_SYNCH', 0);
      return result(m3.yes && mac.ok && sw.value !== 0, [m3.text, mac.text, sw.text]);
    },
  },
  {
    flag: 'allocatorLimitBytes',
    source: 'mlx/backend/metal/allocator.cpp MetalAllocator::MetalAllocator',
    rule: 'gc limit = min(floor(0.95 × recommendedMaxWorkingSetSize), block limit), block limit = floor(min(1.5 × recommendedMaxWorkingSetSize, 0.95 × hw.memsize)): past it MLX frees cached buffers',
    since: 'v0.19.2',
    changes: [],
    byArchitecture: false,
    families: [],
    properties: ['recommendedMaxWorkingSetSize', 'host.memoryBytes'],
    env: [],
    compute: (ctx) => {
      const wss = workingSetOf(ctx.device);
      if (wss === null) return result(null, ['recommendedMaxWorkingSetSize unknown']);
      // MLX truncates each double to size_t: the block limit as min(double, double), the gc term on its own.
      const gcTerm = Math.floor(0.95 * wss);
      const block = blockLimit(ctx, wss);
      const value = Math.min(gcTerm, block.value);
      return result(value, [wssText(wss), `0.95 × that = ${gcTerm}`, ...block.parts, `gc limit = ${value}`]);
    },
  },
  {
    flag: 'cacheLimitBytes',
    source: 'mlx/backend/metal/allocator.cpp MetalAllocator::MetalAllocator',
    rule: 'the block limit, floor(min(1.5 × recommendedMaxWorkingSetSize, 0.95 × hw.memsize)): the memory limit and the buffer cache limit both start there',
    since: 'v0.19.2',
    changes: [],
    byArchitecture: false,
    families: [],
    properties: ['recommendedMaxWorkingSetSize', 'host.memoryBytes'],
    env: [],
    compute: (ctx) => {
      const wss = workingSetOf(ctx.device);
      if (wss === null) return result(null, ['recommendedMaxWorkingSetSize unknown']);
      const block = blockLimit(ctx, wss);
      return result(block.value, [wssText(wss), ...block.parts, `block limit = ${block.value}`]);
    },
  },
  {
    flag: 'wiredLimitMaxBytes',
    source: 'mlx/backend/metal/allocator.cpp set_wired_limit',
    rule: 'recommendedMaxWorkingSetSize: a larger wired limit throws "Setting a wired limit larger than the maximum working set size is not allowed"',
    since: 'v0.19.2',
    changes: [],
    byArchitecture: false,
    families: [],
    properties: ['recommendedMaxWorkingSetSize'],
    env: [],
    compute: (ctx) => {
      const wss = workingSetOf(ctx.device);
      return wss === null
        ? result(null, ['recommendedMaxWorkingSetSize unknown'])
        : result(wss, [wssText(wss), 'set_wired_limit refuses more']);
    },
  },
  {
    flag: 'winogradBudgetBytes',
    source: 'mlx/backend/metal/conv.cpp winograd_batch_step',
    rule: 'floor(W / 4) × 3 with W = MLX_CONV_WINOGRAD_WORKING_SET when above 0, else recommendedMaxWorkingSetSize: the memory one Winograd batch step may use',
    since: 'v0.32.2',
    changes: [],
    byArchitecture: false,
    families: [],
    properties: ['recommendedMaxWorkingSetSize'],
    env: ['MLX_CONV_WINOGRAD_WORKING_SET'],
    compute: (ctx) => {
      const sw = intSwitch(ctx.env, 'MLX_CONV_WINOGRAD_WORKING_SET', 0);
      const wss = workingSetOf(ctx.device);
      const fromEnv = sw.value > 0;
      const w = fromEnv ? sw.value : wss;
      if (w === null) return result(null, [sw.text, 'recommendedMaxWorkingSetSize unknown']);
      const value = Math.floor(w / 4) * 3;
      return result(value, [fromEnv ? sw.text : wssText(w), `floor(${w} / 4) × 3 = ${value}`]);
    },
  },
  {
    flag: 'heapSkipped',
    source: 'mlx/backend/metal/allocator.cpp MetalAllocator::MetalAllocator',
    rule: 'name == "Apple Paravirtual device" (exactly; the name as patched, so a profile\'s deviceName changes it): MLX creates no buffer heap, and so no residency for one',
    since: 'v0.23.2',
    changes: [],
    byArchitecture: false,
    families: [],
    properties: ['name', 'host.model', 'host.isVirtualMachine'],
    env: [],
    compute: ({ device, host }) => {
      const value = device.name === PARAVIRTUAL_DEVICE_NAME;
      const why = value
        ? 'MLX knows it is in a VM from the name and skips its heap there on purpose (a profile with deviceName changes the name)'
        : isVmHost(host, device)
          ? "in this VM MLX creates its heap and adds it to its residency set: the name no longer tells it it is in a VM, and it skips the heap there on purpose (doctor's heap probe tests that path)"
          : 'MLX creates its heap and adds it to its residency set';
      return result(value, [
        `name ${JSON.stringify(device.name)} ${value ? 'is' : 'is not'} ${JSON.stringify(PARAVIRTUAL_DEVICE_NAME)}`,
        why,
      ]);
    },
  },
]);

/** The values an offered architecture name can change, in display order. */
export const MLX_ARCHITECTURE_FLAGS: readonly MlxFlag[] = Object.freeze(
  MLX_RULES.filter((r) => r.byArchitecture).map((r) => r.flag),
);

/** Options for predictMlx. */
export interface MlxPredictOptions {
  /** An MLX release (`v0.31.0` or `0.31.0`): its rule set; default the newest. */
  release?: string | undefined;
  /** An architecture name offered to MLX as MLX_METAL_GPU_ARCH (replacing the environment's); null or absent: none. */
  architectureName?: string | null | undefined;
}

/** The rule set and release predictMlx uses; throws InvalidOptionsError on a release that is no version. */
export function mlxRulesFor(
  release: string | undefined,
  field = 'release',
): {
  ruleSet: MlxRuleSet;
  release: string | null;
  warning: string | null;
} {
  if (release === undefined) return { ruleSet: MLX_NEWEST, release: null, warning: null };
  const parsed = parseMlxRelease(release);
  if (parsed === null) {
    throw new InvalidOptionsError(
      field,
      `${field} must be an MLX release like "v0.31.0" or "0.31.0"; got ${describeValue(release)}`,
    );
  }
  const { ruleSet, warning } = mlxRuleSetForRelease(parsed);
  return { ruleSet, release: parsed.text, warning };
}

/**
 * Predicts MLX's values for the device in `ctx` under a release's rules. With `architectureName`, MLX is predicted
 * as `exec` would run it: MLX_METAL_GPU_ARCH set to that name (a release before v0.31.0 ignores it, and warns).
 */
export function predictMlx(ctx: RuleContext, options: MlxPredictOptions = {}): MlxPrediction {
  const { device, host } = ctx;
  const chosen = mlxRulesFor(options.release);
  const ruleSet = chosen.ruleSet;
  const offered = options.architectureName ?? null;
  const env = offered === null ? ctx.env : { ...ctx.env, [ARCH_ENV]: offered };
  const mctx: MlxRuleContext = { ...ctx, env, ruleSet };
  const flags = Object.fromEntries(
    MLX_RULES.map((r) => [
      r.flag,
      mlxAtLeast(ruleSet, r.since)
        ? r.compute(mctx)
        : { value: null, reason: `MLX ${ruleSet} rules have no ${r.flag} (from ${r.since})` },
    ]),
  ) as unknown as MlxFlags;

  const ignored = MLX_SWITCHES.filter((s) => env[s.name] !== undefined && !mlxAtLeast(ruleSet, s.since)).map((s) => {
    const what =
      s.name === ARCH_ENV && offered !== null
        ? `the offered architecture ${JSON.stringify(offered)}`
        : `${s.name}=${JSON.stringify(env[s.name])}`;
    return {
      name: s.name,
      since: s.since,
      message: `MLX ${chosen.release ?? ruleSet} ignores ${what}: ${s.name} is read from ${s.since} (${MLX_RULE_SET_INFO[s.since].releases})`,
    };
  });
  const warnings = chosen.warning === null ? [] : [chosen.warning];
  warnings.push(...nullFamilyWarnings(MLX_RULES, device), ...intOverflowWarnings(env, ruleSet));
  const name = archName(mctx).name;
  if (name !== null && chars(name).length < 3 && (name === '' || !mlxAtLeast(ruleSet, 'v0.31.0'))) {
    warnings.push(
      `MLX parses the architecture name ${JSON.stringify(name)} with undefined behaviour (${name === '' ? 'the last character of an empty name' : 'a read before a name shorter than 3'}): its kernel choices cannot be predicted`,
    );
  }
  if (flags.residencySets.value && namedParavirtual(device)) {
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
  return {
    engine: 'mlx',
    deviceName: device.name,
    rules: ruleSet,
    releases: MLX_RULE_SET_INFO[ruleSet].releases,
    release: chosen.release,
    offeredArchitecture: offered,
    flags,
    ignored,
    warnings,
  };
}
