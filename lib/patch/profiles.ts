import { InvalidProfileError } from '../core/errors.js';
import {
  APPLE_FAMILY_MAX_KNOWN,
  APPLE_FAMILY_MIN,
  FAMILY_NAMES,
  FAMILY_VALUES,
  familyNameOf,
  isAppleFamilyValue,
  isFamilyName,
  type FamilyName,
} from '../core/families.js';
import { APPLE_GPU_THREADGROUP_MEMORY, chipArchitectureRow, chipFamily } from '../device/chips.js';
import { MLX_ARCHITECTURE_NAME } from '../engines/mlx-architecture.js';
import { clip, describeValue, isObject, quote, readInput } from '../core/input.js';
import { parseJsonText } from '../core/jsonfile.js';
import { rederive } from '../device/report.js';
import { didYouMean } from '../core/suggest.js';
import type { DeviceReport, HostInfo } from '../device/types.js';

/**
 * How a profile changes answers. `raise` only ever adds: a family the device supports stays supported, sizes grow.
 * `exact` reports exactly the profile: Apple families above the ceiling answer NO and sizes are set, which masks a
 * real Mac down to test an engine's fallback kernels.
 */
export type ProfileMode = 'raise' | 'exact';

/**
 * The value that stands for the host's own chip: `appleFamilyMax: 'host'` claims the chip's true Apple family,
 * `deviceName: 'host'` its name as bare metal reports it. A profile with it is bound to a host (bindToHost) before
 * anything is predicted or installed; where the chip is unknown, nothing is guessed (`host-unknown`).
 */
export const HOST_VALUE = 'host';

/** The longest device name a profile may answer. */
export const DEVICE_NAME_MAX = 128;

/** A profile as a user writes it (object or JSON). Every field is optional. */
export interface ProfileSpec {
  /** Accepted so that a printed Profile reads back; kept only when it names a built-in with these same settings. */
  name?: string | null;
  /** Highest Apple family to answer YES for, as an MTLGPUFamily value 1001 (Apple1) … 1010 (Apple10), or `'host'`:
   * the host chip's true family. */
  appleFamilyMax?: number | typeof HOST_VALUE | null;
  /** Threadgroup memory in bytes: raised to at least this (`raise`) or set to it (`exact`). */
  maxThreadgroupMemoryLength?: number | null;
  /** recommendedMaxWorkingSetSize in bytes: raised to at least this (`raise`) or set to it (`exact`). */
  recommendedMaxWorkingSetSize?: number | null;
  /** What `name` answers: 1–128 printable ASCII characters, or `'host'`: the host chip's name (`Apple M1`). */
  deviceName?: string | null;
  /** Explicit answers for named families, applied last: `{ metal3: false }`. */
  families?: Partial<Record<FamilyName, boolean>>;
  mode?: ProfileMode;
  /**
   * The GPU architecture offered to MLX as MLX_METAL_GPU_ARCH (not a Metal answer: no hook changes
   * `architecture.name`): a name MLX reads (`applegpu_g13d`: `applegpu_g`, two digits, a class letter), `'host'` (the
   * host chip's own, where a device of that chip has been seen to report it), or null (offer nothing).
   */
  mlxArchitecture?: string | typeof HOST_VALUE | null;
}

/** A validated profile with every field present (`null` = leave that answer alone). */
export interface Profile {
  /** The built-in name it came from, or null for a custom profile. */
  name: string | null;
  appleFamilyMax: number | typeof HOST_VALUE | null;
  maxThreadgroupMemoryLength: number | null;
  recommendedMaxWorkingSetSize: number | null;
  /** The name `name` answers; `'host'` until bound to a host; null leaves the name alone. */
  deviceName: string | null;
  families: Partial<Record<FamilyName, boolean>>;
  mode: ProfileMode;
  /**
   * The architecture offered to MLX (MLX_METAL_GPU_ARCH); `'host'` until bound to a host. Absent when nothing is
   * offered, so profiles without it print as they always have.
   */
  mlxArchitecture?: string;
}

/** A built-in profile with the reasoning behind it. */
export interface BuiltinProfile {
  name: string;
  summary: string;
  rationale: string;
  source: string;
  risks: string;
  /** The built-in planned instead where this one needs the host's chip and the chip is unknown (said in a warning). */
  fallback?: BuiltinProfileName;
  profile: Profile;
}

/** The built-in profiles' names: `profiles` holds exactly one profile for each, as the compiler checks. */
export type BuiltinProfileName = 'host-family' | 'cua-release' | 'apple9-hw-tg' | 'apple7' | 'mask-apple5' | 'host';

/** A profile written as JSON text: an object, so it starts with `{`. */
export type JsonProfileText = `{${string}`;

/**
 * What the profile-taking functions accept: a built-in name (editors offer them), JSON object text, a ProfileSpec or
 * a Profile read back. A misspelt name does not compile; a name from elsewhere (a file, the environment) is checked at
 * run time, and `resolveProfile` takes any value for that.
 */
export type ProfileInput = BuiltinProfileName | JsonProfileText | ProfileSpec | Profile;

/**
 * The profile applied when none is named: the host chip's own Apple family, and its GPU architecture offered to MLX
 * (where known, and not where it would turn on MLX's NAX kernels). On a stock guest it
 * turns on the same llama.cpp gates as cua-release (reduction and SIMD-group matrix need Apple7, bfloat Apple6, and
 * every Apple Silicon Mac is Apple7 or newer), gives llama.cpp's tuning the host's own family, and claims nothing the
 * host GPU lacks; on bare metal it changes nothing, so it is never refused there. Where the chip is unknown it falls
 * back to apple7 and says so.
 */
export const DEFAULT_PROFILE: BuiltinProfileName = 'host-family';

/** Bounds for threadgroup memory: Metal allocates it in 16-byte units; 1 MiB is far above any GPU. */
export const THREADGROUP_MEMORY_RANGE = { min: 1024, max: 1 << 20, multipleOf: 16 } as const;
/** Bounds for the working-set size: at least 64 MiB, at most 2^53 − 1 bytes (exact in JavaScript). */
export const WORKING_SET_RANGE = { min: 64 * 1024 * 1024, max: Number.MAX_SAFE_INTEGER } as const;
/** No shipping Apple GPU reports more threadgroup memory than this (defined with the chip facts). */
export { APPLE_GPU_THREADGROUP_MEMORY };

// Declared before the built-in table below, which is validated as the module loads.
const SPEC_KEYS = [
  'appleFamilyMax',
  'maxThreadgroupMemoryLength',
  'recommendedMaxWorkingSetSize',
  'deviceName',
  'families',
  'mode',
  'mlxArchitecture',
];
// Printable ASCII: what Metal's device names use, and what engines compare byte for byte.
const DEVICE_NAME = /^[\x20-\x7e]+$/;

function checkDeviceName(v: unknown): string {
  const ok =
    typeof v === 'string' && v.length > 0 && v.length <= DEVICE_NAME_MAX && DEVICE_NAME.test(v) && v.trim() === v;
  if (!ok) {
    throw new InvalidProfileError(
      'deviceName',
      `deviceName must be 1 to ${DEVICE_NAME_MAX} printable ASCII characters without leading or trailing spaces (e.g. "Apple M1"), or "host" (the host chip's name), got ${quote(v)}`,
    );
  }
  return v;
}

function checkMlxArchitecture(v: unknown): string {
  if (v === HOST_VALUE || (typeof v === 'string' && MLX_ARCHITECTURE_NAME.test(v))) return v;
  throw new InvalidProfileError(
    'mlxArchitecture',
    `mlxArchitecture must be a GPU architecture name as MLX reads it: "applegpu_g", two digits (the generation) and a lowercase class letter (e.g. "applegpu_g13d"), or "host" (the host chip's own), or null, got ${quote(v)}`,
  );
}

function builtin(name: string, spec: ProfileSpec, text: Omit<BuiltinProfile, 'name' | 'profile'>): BuiltinProfile {
  const profile = checkProfileObject(spec, name);
  Object.freeze(profile.families);
  return Object.freeze({ name, ...text, profile: Object.freeze(profile) });
}

/** The built-in profiles, by name. */
export const profiles: Readonly<Record<BuiltinProfileName, BuiltinProfile>> = Object.freeze({
  'host-family': builtin(
    'host-family',
    { appleFamilyMax: HOST_VALUE, mode: 'raise', mlxArchitecture: HOST_VALUE },
    {
      summary:
        'The host chip’s true Apple family, and its GPU architecture offered to MLX; threadgroup memory and name left as the device answers (apple7 where the chip is unknown)',
      rationale:
        'A guest’s machdep.cpu.brand_string names its host’s chip, and every Apple Silicon chip is Apple7 or newer, so on a stock guest this turns on llama.cpp’s SIMD-group reduction, SIMD-group matrix (Apple7) and bfloat (Apple6) paths like cua-release, while llama.cpp’s tuning by family gets the host’s own family and no feature the host GPU lacks is claimed. MLX tunes by the GPU architecture instead (tile sizes, the wide matrix-vector kernels from generation 15, command-buffer sizes by class), read from architecture.name or MLX_METAL_GPU_ARCH: the host’s own architecture is that of the GPU that does the guest’s work, and what MLX picks by it runs on any Apple GPU (MLX’s source: tile sizes, kernel variants, buffer limits), except its NAX kernels, which are never offered. On bare metal the device already answers its family and its architecture: nothing changes, nothing is refused.',
      source:
        'chip → family: Apple Metal Feature Set Tables; llama.cpp’s gates: ggml/src/ggml-metal/ggml-metal-device.m ggml_metal_device_init; chip → architecture: CHIP_ARCHITECTURES (devices that reported it); MLX’s reading: mlx/backend/metal/device.cpp Device::Device, is_nax_available',
      risks:
        'Claims the host’s Apple7–Apple10 features, some of which the paravirtual device may not implement (doctor tests the ones engines use). Where the host’s chip is unknown (an unrecognised brand string, a chip newer than the table) apple7 is planned instead, with a host-unknown-fallback warning. The architecture offered to MLX is unmeasured in a guest (what the paravirtual device’s own architecture.name is, and whether MLX is faster with the host’s, only a Mac can show); MLX’s documentation warns that an architecture that does not match the GPU can select incompatible kernels. It is not offered where the host’s is unknown, nor where it would turn on MLX’s NAX kernels, which no doctor probe has shown to run in a guest.',
      fallback: 'apple7',
    },
  ),
  'cua-release': builtin(
    'cua-release',
    { appleFamilyMax: FAMILY_VALUES.apple9, maxThreadgroupMemoryLength: 65536, mode: 'raise' },
    {
      summary: 'Apple9 and 64 KB threadgroup memory: the configuration behind the published VM measurements',
      rationale:
        'Turns on llama.cpp’s SIMD-group reduction, SIMD-group matrix and bfloat paths in a Virtualization.framework guest. With it, llama.cpp reached 98 % of bare metal on prompts in Cua’s measurements (M1 Ultra host, Tahoe guest).',
      source:
        'trycua/cua PR 3070 (libs/lume/metal-capability-shim, defaults 1009 / 65536); Tart base images use the same defaults',
      risks:
        'Reports 65536 bytes of threadgroup memory, more than any Apple GPU has. llama.cpp’s ggml-metal.m releases size flash attention’s SIMD groups and MUL_MAT_ID’s rows from it and then ask up to 65504 bytes, so the plan refuses it for them (allowAboveHardware applies it anyway); b6501 to b10586 only assert against it, and v0.4.0 and later size a flash-attention configuration from it only in tuned rows a stock guest under Apple9 never picks.',
    },
  ),
  'apple9-hw-tg': builtin(
    'apple9-hw-tg',
    { appleFamilyMax: FAMILY_VALUES.apple9, mode: 'raise' },
    {
      summary: 'Apple9, threadgroup memory left at the hardware’s 32768 bytes',
      rationale:
        'The same family answers as cua-release without overstating threadgroup memory: no Apple GPU reports more than 32768 bytes, and llama.cpp’s three gates still come out true.',
      source: 'ardanlabs/kronk zarf/macos/README.md (overrides the shim to 32768); JuliaGPU/Metal.jl PR 828',
      risks:
        'Claims Apple8/Apple9 features (e.g. newer texture and ray-tracing tiers) that the paravirtual device may not implement.',
    },
  ),
  apple7: builtin(
    'apple7',
    { appleFamilyMax: FAMILY_VALUES.apple7, mode: 'raise' },
    {
      summary: 'Apple7: the least that turns on llama.cpp’s three gates',
      rationale:
        'llama.cpp enables SIMD-group reduction and matrix multiply on Apple7 and bfloat on Apple6, so Apple7 is the smallest ceiling that enables all three. Claims the fewest features the host GPU might not pass through.',
      source: 'ggml/src/ggml-metal/ggml-metal-device.m ggml_metal_device_init',
      risks: 'Engines that pick kernels by Apple8+ (none of llama.cpp’s current gates) keep their slower paths.',
    },
  ),
  'mask-apple5': builtin(
    'mask-apple5',
    {
      appleFamilyMax: FAMILY_VALUES.apple5,
      maxThreadgroupMemoryLength: APPLE_GPU_THREADGROUP_MEMORY,
      families: { mac1: false, mac2: false, macCatalyst1: false, macCatalyst2: false, metal3: false, metal4: false },
      mode: 'exact',
    },
    {
      summary: 'Exactly what a stock VM guest reports: Apple1–5, no Mac2/Metal3, 32 KB',
      rationale:
        'Masks a real Mac down to the paravirtual device’s answers, to reproduce the VM’s slow path on bare metal and test an engine’s fallback kernels.',
      source: 'stock guest answers recorded in trycua/cua evidence/lume-metal-capability-shim/2026-08-09-m1-ultra/',
      risks: 'Slows engines down on purpose. Common families keep their real answers.',
    },
  ),
  host: builtin(
    'host',
    { appleFamilyMax: HOST_VALUE, deviceName: HOST_VALUE, mode: 'raise', mlxArchitecture: HOST_VALUE },
    {
      summary:
        'The host chip’s true Apple family, its name and its GPU architecture offered to MLX; threadgroup memory left as the device answers',
      rationale:
        'A guest’s machdep.cpu.brand_string is its host’s with " (Virtual)" appended, so the guest knows the chip that runs its GPU work. Claiming exactly that chip’s family (Apple7 on an M1, per Apple’s Metal Feature Set Tables), its name and, for MLX, its GPU architecture lets engines that tune by chip pick the host’s own tuning instead of a newer chip’s, and claims no feature the host GPU lacks.',
      source:
        'machdep.cpu.brand_string in a Virtualization.framework guest (GitHub’s macOS arm64 runners report "Apple M1 (Virtual)"); chip → family: Apple Metal Feature Set Tables; chip → architecture: CHIP_ARCHITECTURES (devices that reported it)',
      risks:
        'With the chip’s name, MLX no longer recognises the VM and creates its buffer heap there, which it skips on "Apple Paravirtual device" on purpose (doctor’s heap probe tests that path). On an M1 host it turns on llama.cpp’s gates like apple7; on an M3 or newer host it claims Apple9 or Apple10 features the paravirtual device may not implement. Where the host’s chip is unknown (an Intel host, an unrecognised brand string) it is not applied (host-unknown). The architecture offered to MLX is unmeasured in a guest, and is not offered where it is unknown or would turn on MLX’s NAX kernels.',
    },
  ),
});

function isInteger(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v);
}

/** A profile object (not a name or JSON text) checked field by field into a resolved Profile, or an InvalidProfileError. */
function checkProfileObject(spec: unknown, name: string | null): Profile {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new InvalidProfileError(
      null,
      `a profile must be a built-in name, a JSON object string, or an object, got ${describeValue(spec)}`,
    );
  }
  const s = spec as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    if (!SPEC_KEYS.includes(key)) {
      throw new InvalidProfileError(
        key,
        `unknown profile field '${clip(key)}'${didYouMean(key, SPEC_KEYS)}; profile fields are ${SPEC_KEYS.join(', ')}`,
      );
    }
  }
  const profile: Profile = {
    name,
    appleFamilyMax: null,
    maxThreadgroupMemoryLength: null,
    recommendedMaxWorkingSetSize: null,
    deviceName: null,
    families: {},
    mode: 'raise',
  };
  if (s.appleFamilyMax !== undefined) {
    const v = s.appleFamilyMax;
    if (v !== HOST_VALUE && (!isInteger(v) || v < APPLE_FAMILY_MIN || v > APPLE_FAMILY_MAX_KNOWN)) {
      throw new InvalidProfileError(
        'appleFamilyMax',
        `appleFamilyMax must be an MTLGPUFamily value from ${APPLE_FAMILY_MIN} (Apple1) to ${APPLE_FAMILY_MAX_KNOWN} (Apple10), or "host" (the host chip's true family), got ${quote(v)}`,
      );
    }
    profile.appleFamilyMax = v;
  }
  if (s.maxThreadgroupMemoryLength !== undefined) {
    const v = s.maxThreadgroupMemoryLength;
    const { min, max, multipleOf } = THREADGROUP_MEMORY_RANGE;
    if (!isInteger(v) || v < min || v > max || v % multipleOf !== 0) {
      throw new InvalidProfileError(
        'maxThreadgroupMemoryLength',
        `maxThreadgroupMemoryLength must be a byte count from ${min} to ${max}, a multiple of ${multipleOf} (e.g. 32768 or 65536), got ${quote(v)}`,
      );
    }
    profile.maxThreadgroupMemoryLength = v;
  }
  if (s.recommendedMaxWorkingSetSize !== undefined) {
    const v = s.recommendedMaxWorkingSetSize;
    if (!isInteger(v) || v < WORKING_SET_RANGE.min || v > WORKING_SET_RANGE.max) {
      throw new InvalidProfileError(
        'recommendedMaxWorkingSetSize',
        `recommendedMaxWorkingSetSize must be a whole number of bytes from ${WORKING_SET_RANGE.min} (64 MiB) up, got ${quote(v)}`,
      );
    }
    profile.recommendedMaxWorkingSetSize = v;
  }
  if (s.deviceName !== undefined) profile.deviceName = checkDeviceName(s.deviceName);
  if (s.families !== undefined) {
    const f = s.families;
    if (typeof f !== 'object' || f === null || Array.isArray(f)) {
      throw new InvalidProfileError(
        'families',
        'families must be an object of family name → true/false, e.g. {"metal3": false}',
      );
    }
    for (const [family, answer] of Object.entries(f)) {
      if (!isFamilyName(family)) {
        throw new InvalidProfileError(
          `families.${family}`,
          `unknown family '${clip(family)}'; known families are ${FAMILY_NAMES.join(', ')}`,
        );
      }
      if (typeof answer !== 'boolean') {
        throw new InvalidProfileError(
          `families.${family}`,
          `families.${family} must be true or false, got ${quote(answer)}`,
        );
      }
    }
    // Stored in MTLGPUFamily order so equal profiles serialise equally.
    for (const family of FAMILY_NAMES) {
      const answer = (f as Record<string, boolean>)[family];
      if (answer !== undefined) profile.families[family] = answer;
    }
  }
  if (s.mode !== undefined) {
    if (s.mode !== 'raise' && s.mode !== 'exact') {
      throw new InvalidProfileError('mode', `mode must be 'raise' or 'exact', got ${quote(s.mode)}`);
    }
    profile.mode = s.mode;
  }
  // Last, so that a profile's printed form keeps its fields' order; absent when null (nothing offered).
  if (s.mlxArchitecture !== undefined && s.mlxArchitecture !== null)
    profile.mlxArchitecture = checkMlxArchitecture(s.mlxArchitecture);
  return profile;
}

function sameSettings(a: Profile, b: Profile): boolean {
  return JSON.stringify({ ...a, name: null }) === JSON.stringify({ ...b, name: null });
}

/**
 * `profile` with the fields its built-in leaves to the host (`'host'`) set back to `'host'`, where it has a value
 * there: a built-in bound to a host (printed by audit or a report) reads back under its own name.
 */
function unbind(profile: Profile, builtin: BuiltinProfile): Profile {
  const hostField = (mine: unknown, theirs: unknown) => theirs === HOST_VALUE && mine !== null;
  return {
    ...profile,
    appleFamilyMax: hostField(profile.appleFamilyMax, builtin.profile.appleFamilyMax)
      ? HOST_VALUE
      : profile.appleFamilyMax,
    deviceName: hostField(profile.deviceName, builtin.profile.deviceName) ? HOST_VALUE : profile.deviceName,
    // A built-in's 'host' architecture binds to nothing where the host's is unknown or refused: either reads back.
    ...(builtin.profile.mlxArchitecture === HOST_VALUE ? { mlxArchitecture: HOST_VALUE } : {}),
  };
}

/** The size fields a resolved Profile writes as `null` ("leave this answer alone"). */
const NULLABLE_KEYS = [
  'appleFamilyMax',
  'maxThreadgroupMemoryLength',
  'recommendedMaxWorkingSetSize',
  'deviceName',
  'mlxArchitecture',
];

/**
 * A profile object as this package prints it (`profiles --json`, `audit --json`, status(), a field report), or as a
 * user writes it. The printed form carries `name` and `null` for answers left alone; both are accepted, so anything
 * printed as a profile is accepted back as the same profile. A built-in name is kept only when the settings still say
 * exactly what that built-in says, or what it says bound to a host (`host-family` with `appleFamilyMax` 1007 on an
 * M1); any other name is dropped (the profile is custom).
 */
function resolveObject(input: object): Profile {
  // Read once into plain data: a getter or Proxy that throws is this profile's error, naming the field.
  const copy = readInput(input, (field, problem) => {
    throw new InvalidProfileError(field || null, `the profile${field ? `'s ${field}` : ''} ${problem}`);
  });
  const { name, ...rest } = copy as Record<string, unknown>;
  if (name !== undefined && name !== null && typeof name !== 'string') {
    throw new InvalidProfileError('name', `name must be a string or null, got ${quote(name)}`);
  }
  const spec = Object.fromEntries(Object.entries(rest).filter(([k, v]) => !(v === null && NULLABLE_KEYS.includes(k))));
  const resolved = checkProfileObject(spec, null);
  const builtin =
    typeof name === 'string' && Object.hasOwn(profiles, name) ? profiles[name as BuiltinProfileName] : undefined;
  if (builtin && (sameSettings(builtin.profile, resolved) || sameSettings(builtin.profile, unbind(resolved, builtin))))
    resolved.name = builtin.name;
  return resolved;
}

/**
 * Turns a profile name, JSON string or object into a validated Profile. Throws InvalidProfileError (code
 * ERR_INVALID_PROFILE) naming the field at fault; never partially accepts.
 */
export function resolveProfile(input: unknown = DEFAULT_PROFILE): Profile {
  if (typeof input === 'string') {
    const text = input.trim();
    if (text.startsWith('{')) {
      const parsed = parseJsonText(text);
      if (!parsed.ok)
        throw new InvalidProfileError(null, `the profile ${parsed.problem}; pass a built-in name or a JSON object`);
      if (typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value))
        return checkProfileObject(parsed.value, null);
      return resolveObject(parsed.value);
    }
    const found = Object.hasOwn(profiles, text) ? profiles[text as BuiltinProfileName] : undefined;
    if (!found) {
      const names = Object.keys(profiles);
      throw new InvalidProfileError(
        'name',
        `unknown profile '${clip(input)}'${didYouMean(text, names)}; built-in profiles are ${names.join(', ')}, or pass a JSON object`,
      );
    }
    return { ...found.profile, families: { ...found.profile.families } };
  }
  if (isObject(input)) return resolveObject(input);
  return checkProfileObject(input, null);
}

/** True when a profile has a `'host'` value, so it must be bound to a host before it says anything. */
export function needsHost(profile: Profile): boolean {
  return (
    profile.appleFamilyMax === HOST_VALUE || profile.deviceName === HOST_VALUE || profile.mlxArchitecture === HOST_VALUE
  );
}

/** What bindToHost() made of a profile: the profile with the host's values, or why there are none. */
export type HostBinding =
  | { ok: true; profile: Profile }
  | {
      ok: false;
      reason: 'host-unknown';
      /** Why the host's values are unknown: "this host's chip is unknown (it reports no machdep.cpu.brand_string)". */
      cause: string;
      detail: string;
    };

/**
 * The profile with its `'host'` values replaced by this host's: `appleFamilyMax` by the chip's true Apple family,
 * `deviceName` by the chip's name, `mlxArchitecture` by the architecture a device of that chip reports
 * (CHIP_ARCHITECTURES). A profile without them comes back as it is. Where the chip (or its family) is unknown, the
 * result says so (`host-unknown`) and nothing is guessed; an architecture that is not known is no Metal answer, so it
 * is left out (nothing offered, which planPatch says in a warning) rather than failing the profile. The bound profile
 * keeps its name (`host`).
 */
export function bindToHost(profile: Profile, host: HostInfo | null): HostBinding {
  if (!needsHost(profile)) return { ok: true, profile };
  const chip = host?.chip ?? null;
  const { mlxArchitecture: _offered, ...rest } = profile;
  const architecture =
    profile.mlxArchitecture === HOST_VALUE ? chipArchitectureRow(chip)?.architecture : profile.mlxArchitecture;
  const offered = architecture === undefined ? {} : { mlxArchitecture: architecture };
  if (profile.appleFamilyMax !== HOST_VALUE && profile.deviceName !== HOST_VALUE)
    return { ok: true, profile: { ...rest, families: { ...profile.families }, ...offered } };
  const family = chipFamily(chip);
  const label = profile.name ?? 'the profile';
  const brand = host?.cpuBrand ?? null;
  const why =
    brand === null
      ? 'it reports no machdep.cpu.brand_string'
      : `machdep.cpu.brand_string ${JSON.stringify(brand)} names no Apple chip`;
  if (chip === null) {
    const cause = `this host’s chip is unknown (${why})`;
    return {
      ok: false,
      reason: 'host-unknown',
      cause,
      detail: `${label} claims the host chip’s own answers, but ${cause}, so nothing is claimed rather than a guess`,
    };
  }
  if (profile.appleFamilyMax === HOST_VALUE && family === null) {
    const cause = `${chip} is not in the chip table (lib/device/chips.ts)`;
    return {
      ok: false,
      reason: 'host-unknown',
      cause,
      detail: `${label} claims the host chip’s true Apple family, but ${cause}, so nothing is claimed rather than a guess`,
    };
  }
  return {
    ok: true,
    profile: {
      ...rest,
      appleFamilyMax: profile.appleFamilyMax === HOST_VALUE ? family : profile.appleFamilyMax,
      deviceName: profile.deviceName === HOST_VALUE ? chip : profile.deviceName,
      families: { ...profile.families },
      ...offered,
    },
  };
}

function unbound(field: string): InvalidProfileError {
  return new InvalidProfileError(
    field,
    `${field} is "host": bind the profile to a host (bindToHost) before it is predicted or installed`,
  );
}

/**
 * The architecture a bound profile offers MLX (MLX_METAL_GPU_ARCH), or null when it offers none. Throws for an
 * unbound `'host'`.
 */
export function offeredMlxArchitecture(profile: Profile): string | null {
  if (profile.mlxArchitecture === HOST_VALUE) throw unbound('mlxArchitecture');
  return profile.mlxArchitecture ?? null;
}

/** A bound profile's Apple family ceiling (null: none). Throws for an unbound `'host'`. */
export function familyCeiling(profile: Profile): number | null {
  if (profile.appleFamilyMax === HOST_VALUE) throw unbound('appleFamilyMax');
  return profile.appleFamilyMax;
}

/**
 * The name a bound profile makes every device answer, or null when it leaves names alone: the one place the
 * patched identity comes from (predictPatchedDevice, and through it the engine predictions). Throws for an unbound
 * `'host'`.
 */
export function patchedName(profile: Profile): string | null {
  if (profile.deviceName === HOST_VALUE) throw unbound('deviceName');
  return profile.deviceName;
}

/** The hex form of a device name in the native text: only hex digits reach the native parser. */
function hexOf(text: string): string {
  return Buffer.from(text, 'latin1').toString('hex');
}

/**
 * The compact text the native engine and the exec injector read (src-native/engine/profile.h), made from a profile
 * this package resolved (resolveProfile, then bindToHost), so the native parser never sees user input: applyPatch and
 * exec resolve their profile once and encode that value, rather than validating it again. Never pass it anything that
 * did not come out of resolveProfile. An unbound `'host'` value throws. `mlxArchitecture` is left out on purpose: it
 * is no Metal answer, and reaches MLX through its environment (MLX_METAL_GPU_ARCH), never the native engine.
 */
export function encodeNativeProfile(profile: Profile, trace: boolean): string {
  const ceiling = familyCeiling(profile);
  const name = patchedName(profile);
  const orDash = (v: number | null) => (v === null ? '-' : String(v));
  const fam = FAMILY_NAMES.filter((n) => profile.families[n] !== undefined)
    .map((n) => `${FAMILY_VALUES[n]}:${profile.families[n] ? 1 : 0}`)
    .join(',');
  return [
    'mcs1',
    `max=${orDash(ceiling)}`,
    `tg=${orDash(profile.maxThreadgroupMemoryLength)}`,
    `wss=${orDash(profile.recommendedMaxWorkingSetSize)}`,
    `mode=${profile.mode}`,
    `trace=${trace ? 1 : 0}`,
    `fam=${fam}`,
    `name=${name === null ? '-' : hexOf(name)}`,
  ].join(';');
}

/** The answer a bound profile gives to `supportsFamily:` for a family value, given the stock answer. */
export function familyAnswer(profile: Profile, family: number, stock: boolean): boolean {
  const name = familyNameOf(family);
  const explicit = name === undefined ? undefined : profile.families[name];
  if (explicit !== undefined) return explicit;
  const ceiling = familyCeiling(profile);
  if (!isAppleFamilyValue(family) || ceiling === null) return stock;
  const withinCeiling = family <= ceiling;
  return profile.mode === 'exact' ? withinCeiling : stock || withinCeiling;
}

function sizeAnswer(profile: Profile, configured: number | null, stock: number | null): number | null {
  if (configured === null || stock === null) return stock;
  return profile.mode === 'exact' ? configured : Math.max(stock, configured);
}

/** The device as it will answer under a bound profile, computed from its stock answers without touching Metal. */
export function predictPatchedDevice(stock: DeviceReport, profile: Profile): DeviceReport {
  const families = { ...stock.families };
  for (const name of FAMILY_NAMES) {
    const answer = stock.families[name];
    if (answer !== null) families[name] = familyAnswer(profile, FAMILY_VALUES[name], answer);
  }
  return rederive({
    ...stock,
    name: patchedName(profile) ?? stock.name,
    families,
    maxThreadgroupMemoryLength: sizeAnswer(
      profile,
      profile.maxThreadgroupMemoryLength,
      stock.maxThreadgroupMemoryLength,
    ),
    recommendedMaxWorkingSetSize: sizeAnswer(
      profile,
      profile.recommendedMaxWorkingSetSize,
      stock.recommendedMaxWorkingSetSize,
    ),
  });
}

/** One answer that differs between two reports of the same device. */
export interface AnswerChange {
  device: number;
  className: string;
  /** `name`, `families.apple7`, `maxThreadgroupMemoryLength`, … */
  field: string;
  from: boolean | number | string | null;
  to: boolean | number | string | null;
}

/** The hooked answers (name, families and the two sizes) that differ between two lists of the same devices. */
export function diffAnswers(before: DeviceReport[], after: DeviceReport[]): AnswerChange[] {
  const changes: AnswerChange[] = [];
  after.forEach((a, i) => {
    const b = before.find((d) => d.index === a.index && d.className === a.className) ?? before[i];
    if (!b) return;
    const push = (field: string, from: AnswerChange['from'], to: AnswerChange['to']) => {
      if (from !== to) changes.push({ device: a.index, className: a.className, field, from, to });
    };
    push('name', b.name, a.name);
    for (const name of FAMILY_NAMES) push(`families.${name}`, b.families[name], a.families[name]);
    push('maxThreadgroupMemoryLength', b.maxThreadgroupMemoryLength, a.maxThreadgroupMemoryLength);
    push('recommendedMaxWorkingSetSize', b.recommendedMaxWorkingSetSize, a.recommendedMaxWorkingSetSize);
  });
  return changes;
}

/** What a bound profile would change on devices answering `stock`: each device's predicted answers and every change. */
export function planProfile(
  stock: DeviceReport[],
  profile: Profile,
): { expected: DeviceReport[]; changes: AnswerChange[] } {
  const expected = stock.map((d) => predictPatchedDevice(d, profile));
  return { expected, changes: diffAnswers(stock, expected) };
}

/**
 * True when a change makes the device claim more than it is: a family NO→YES, a size up, or another name (an
 * identity the device does not have).
 */
export function isRaise(change: AnswerChange): boolean {
  if (change.field === 'name') return true;
  if (typeof change.from === 'boolean') return change.from === false && change.to === true;
  return typeof change.from === 'number' && typeof change.to === 'number' && change.to > change.from;
}

/** A profile's answers: everything but its name (what a custom profile's matrix column and a cache message show). */
export function profileAnswers(p: Profile): Omit<Profile, 'name'> {
  const { name: _name, ...answers } = p;
  return answers;
}
