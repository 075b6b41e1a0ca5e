/**
 * The host's chip: parsed from sysctl `machdep.cpu.brand_string`, and the Apple GPU family it really is. Inside a
 * Virtualization.framework guest the brand string is the host's with " (Virtual)" appended, so a guest knows the
 * chip that runs its GPU work. Pure functions: no sysctl, no Metal.
 */
import { FAMILY_VALUES, type FamilyName } from '../core/families.js';
import type { HostInfo } from './types.js';

/** One row of the chip → true Apple family table, with where it comes from. */
export interface ChipFamilyRow {
  /** Chip generations (`M1`, `A17`): every tier of a generation (Pro, Max, Ultra) and its X/Z variants. */
  generations: readonly string[];
  family: FamilyName;
  source: string;
}

const FEATURE_TABLES =
  'Apple Metal Feature Set Tables (developer.apple.com/metal/feature-sets, May 21, 2026): GPUs by Apple family';
const FEATURE_TABLES_2024 = 'Apple Metal Feature Set Tables (June 5, 2024), "Apple GPUs" table';

/**
 * What Apple family each chip generation's GPU is. Every tier shares its generation's family: "M1-series Apple7"
 * (Feature Set Tables), "M1, M1 Pro, M1 Max, M1 Ultra" under Apple7 (the 2024 edition).
 */
export const CHIP_FAMILIES: readonly ChipFamilyRow[] = Object.freeze([
  { generations: ['A8'], family: 'apple2', source: `${FEATURE_TABLES}: A8-series Apple2` },
  { generations: ['A9', 'A10'], family: 'apple3', source: `${FEATURE_TABLES}: A9-series and A10-series Apple3` },
  { generations: ['A11'], family: 'apple4', source: `${FEATURE_TABLES}: A11 Bionic Apple4` },
  {
    generations: ['A12'],
    family: 'apple5',
    source: `${FEATURE_TABLES}: A12-series Apple5; ${FEATURE_TABLES_2024}: A12 Bionic, A12X Bionic, A12Z Bionic`,
  },
  { generations: ['A13'], family: 'apple6', source: `${FEATURE_TABLES}: A13 Bionic Apple6` },
  {
    generations: ['A14'],
    family: 'apple7',
    source: `${FEATURE_TABLES}: A14 Bionic Apple7; MTLGPUFamily.apple7: "the Apple A14 and M1 GPUs"`,
  },
  {
    generations: ['M1'],
    family: 'apple7',
    source: `${FEATURE_TABLES}: M1-series Apple7; ${FEATURE_TABLES_2024}: M1, M1 Pro, M1 Max, M1 Ultra`,
  },
  {
    generations: ['A15', 'A16'],
    family: 'apple8',
    source: `${FEATURE_TABLES}: A15 Bionic and A16 Bionic Apple8; MTLGPUFamily.apple8: "the Apple A15, A16, and M2 GPUs"`,
  },
  {
    generations: ['M2'],
    family: 'apple8',
    source: `${FEATURE_TABLES}: M2-series Apple8; ${FEATURE_TABLES_2024}: M2, M2 Pro, M2 Max, M2 Ultra`,
  },
  {
    generations: ['A17', 'A18'],
    family: 'apple9',
    source: `${FEATURE_TABLES}: A17 Pro and A18-series Apple9; MTLGPUFamily.apple9: "the Apple A17, M3, and M4 GPUs"`,
  },
  {
    generations: ['M3', 'M4'],
    family: 'apple9',
    source: `${FEATURE_TABLES}: M3-series and M4-series Apple9; ${FEATURE_TABLES_2024}: M3, M3 Pro, M3 Max, M4`,
  },
  { generations: ['A19'], family: 'apple10', source: `${FEATURE_TABLES}: A19-series Apple10` },
  { generations: ['M5'], family: 'apple10', source: `${FEATURE_TABLES}: M5-series Apple10` },
]);

/** The suffix a Virtualization.framework guest's brand string carries after the host's. */
export const VIRTUAL_SUFFIX = ' (Virtual)';

// `Apple` + generation (M or A and a number; the A-series' X and Z variants) + an optional tier. Anchored, no
// nested repetition: linear in the input, which is capped below anyway.
const CHIP_NAME = /^Apple (M\d{1,2}|A\d{1,2}[XZ]?)(?: (?:Pro|Max|Ultra))?$/;
const BRAND_MAX = 256;

/**
 * The chip named by a `machdep.cpu.brand_string`, as bare metal reports it: "Apple M1 (Virtual)" → "Apple M1",
 * "Apple M2 Ultra" → "Apple M2 Ultra". Null for Intel brands ("Intel(R) Core(TM) …"), Apple's unnamed "Apple
 * processor", and anything else not shaped like an Apple chip name.
 */
export function chipFromBrand(brand: string | null): string | null {
  if (brand === null || brand.length > BRAND_MAX) return null;
  const text = brand.trim();
  const name = text.endsWith(VIRTUAL_SUFFIX) ? text.slice(0, -VIRTUAL_SUFFIX.length) : text;
  return CHIP_NAME.test(name) ? name : null;
}

/** `M1` for "Apple M1 Ultra", `A12` for "Apple A12Z": the generation the family table is keyed by. */
export function chipGeneration(chip: string): string | null {
  const m = CHIP_NAME.exec(chip);
  return m ? m[1]!.replace(/[XZ]$/, '') : null;
}

/** The row of CHIP_FAMILIES for a chip name, or undefined when its generation is not in the table. */
export function chipFamilyRow(chip: string | null): ChipFamilyRow | undefined {
  const generation = chip === null ? null : chipGeneration(chip);
  return generation === null ? undefined : CHIP_FAMILIES.find((r) => r.generations.includes(generation));
}

/** The chip's true Apple family as an MTLGPUFamily value (1007 for any M1), or null when unknown. */
export function chipFamily(chip: string | null): number | null {
  const row = chipFamilyRow(chip);
  return row === undefined ? null : FAMILY_VALUES[row.family];
}

/** The host's chip facts as HostInfo carries them, from the brand string the OS gave (null: not read). */
export function hostChipFacts(cpuBrand: string | null): Pick<HostInfo, 'cpuBrand' | 'chip'> {
  return { cpuBrand, chip: chipFromBrand(cpuBrand) };
}

/**
 * No shipping Apple GPU reports more threadgroup memory than this, in any family (JuliaGPU/Metal.jl PR 828): the most a
 * doctor run can prove, and the most a verified profile claims.
 */
export const APPLE_GPU_THREADGROUP_MEMORY = 32768;

/**
 * The largest threadgroup size a doctor run can prove on a device: APPLE_GPU_THREADGROUP_MEMORY on an Apple GPU (any
 * Apple family answered YES, a guest's paravirtual device included), where a larger size that works is only
 * accepted; on another GPU its own stock answer when larger (an Intel Mac's AMD GPU reports 65536).
 */
export function provableThreadgroupMemory(device: {
  families: Readonly<Record<string, boolean | null>>;
  maxThreadgroupMemoryLength: number | null;
}): number {
  const apple = Object.entries(device.families).some(([family, yes]) => family.startsWith('apple') && yes === true);
  return apple
    ? APPLE_GPU_THREADGROUP_MEMORY
    : Math.max(APPLE_GPU_THREADGROUP_MEMORY, device.maxThreadgroupMemoryLength ?? 0);
}

/** One row of the chip generation → GPU architecture generation table, with where it comes from. */
export interface ChipGpuGenerationRow {
  /** Chip generations (`M1`): every tier of a generation shares its GPU generation. */
  generations: readonly string[];
  /** The number in `applegpu_g<N><class>`, as Metal's `architecture.name` gives it and MLX parses it. */
  gpuGeneration: number;
  source: string;
}

const MLX_SOURCE = 'ml-explore/mlx (commit 846d176)';
/** Published `mx.device_info()` output (MLX's own copy of `architecture.name` and the device name), GitHub, 2026. */
const DEVICE_INFO = 'mx.device_info() output published on GitHub (device_name and architecture printed together)';

/**
 * The GPU generation of each Mac chip generation: the two digits MLX reads from `architecture.name`. Only the Mac's M
 * series: a guest's host is a Mac.
 */
export const CHIP_GPU_GENERATIONS: readonly ChipGpuGenerationRow[] = Object.freeze([
  {
    generations: ['M1'],
    gpuGeneration: 13,
    source: `${DEVICE_INFO}: Apple M1 applegpu_g13g, Apple M1 Max applegpu_g13s, Apple M1 Ultra applegpu_g13d`,
  },
  {
    generations: ['M2'],
    gpuGeneration: 14,
    source: `${DEVICE_INFO}: Apple M2 applegpu_g14g, Apple M2 Pro applegpu_g14s`,
  },
  {
    generations: ['M3'],
    gpuGeneration: 15,
    source: `${MLX_SOURCE} mlx/backend/metal/matmul.cpp: "Pre-M3 generations" are those with get_architecture_gen() < 15; ${DEVICE_INFO}: Apple M3 Max applegpu_g15s, Apple M3 Ultra applegpu_g15d`,
  },
  {
    generations: ['M4'],
    gpuGeneration: 16,
    source: `ml-explore/mlx issue 3885 (2026-07-24: "M4 Max reports applegpu_g16s"); ${DEVICE_INFO}: Apple M4 applegpu_g16g, Apple M4 Pro applegpu_g16s`,
  },
  {
    generations: ['M5'],
    gpuGeneration: 17,
    source: `${MLX_SOURCE} mlx/backend/metal/quantized.cpp: "M5 Max GPUs" are get_architecture_gen() == 17 with class 's'; ml-explore/mlx issue 3897 (Apple M5, applegpu_g17g)`,
  },
]);

/** One chip whose GPU's `architecture.name` is known from a device that reported it. */
export interface ChipArchitectureRow {
  /** The chip as `chipFromBrand` names it: `Apple M1 Ultra`. */
  chip: string;
  /** Its GPU's `architecture.name`: `applegpu_g13d`. */
  architecture: string;
  source: string;
}

/**
 * The `architecture.name` of each chip a real device has been seen to report. The class letter after the generation
 * is not the tier's by rule: MLX's own comments (mlx/backend/metal/device.cpp) call `g` "base, pro", but an M2 Pro, an
 * M4 Pro and an M5 Pro report `s`, and Asahi Linux's hardware names (G13G M1, G13S M1 Pro, G13C M1 Max, G13D M1 Ultra)
 * are not Metal's (an M1 Max reports `applegpu_g13s`). So a chip no device has been seen to report (the M1 Pro, the
 * M2 Max and Ultra, the M3 and M3 Pro, the M5 Ultra) is not in the table, and nothing is guessed for it.
 */
export const CHIP_ARCHITECTURES: readonly ChipArchitectureRow[] = Object.freeze([
  {
    chip: 'Apple M1',
    architecture: 'applegpu_g13g',
    source: `${DEVICE_INFO}: {'architecture': 'applegpu_g13g', 'device_name': 'Apple M1'} (mlx 0.29.3, macOS 13.7.8, machdep.cpu.brand_string "Apple M1")`,
  },
  {
    chip: 'Apple M1 Max',
    architecture: 'applegpu_g13s',
    source: `${DEVICE_INFO}: "Apple M1 Max (applegpu_g13s)" (two machines, macOS 15.7.4 and 26.6.2)`,
  },
  {
    chip: 'Apple M1 Ultra',
    architecture: 'applegpu_g13d',
    source: `${DEVICE_INFO}: "Apple M1 Ultra (applegpu_g13d)", a Mac Studio on macOS 26.6.2 with mlx 0.32.2`,
  },
  {
    chip: 'Apple M2',
    architecture: 'applegpu_g14g',
    source: `${DEVICE_INFO}: {:architecture "applegpu_g14g" :device-name "Apple M2"}; "Apple M2 (applegpu_g14g)" from a Swift probe of MTLDevice.architecture`,
  },
  {
    chip: 'Apple M2 Pro',
    architecture: 'applegpu_g14s',
    source: `${DEVICE_INFO}: "an Apple M2 Pro (16 GB, applegpu_g14s)"`,
  },
  {
    chip: 'Apple M3 Max',
    architecture: 'applegpu_g15s',
    source: `${DEVICE_INFO}: "Apple M3 Max (applegpu_g15s)", macOS 26.5, mlx 0.32.2`,
  },
  {
    chip: 'Apple M3 Ultra',
    architecture: 'applegpu_g15d',
    source: `${DEVICE_INFO}: {'architecture': 'applegpu_g15d', 'device_name': 'Apple M3 Ultra'}`,
  },
  {
    chip: 'Apple M4',
    architecture: 'applegpu_g16g',
    source: `${DEVICE_INFO}: {'device_name': 'Apple M4', 'architecture': 'applegpu_g16g'}`,
  },
  {
    chip: 'Apple M4 Pro',
    architecture: 'applegpu_g16s',
    source: `${DEVICE_INFO}: {'architecture': 'applegpu_g16s', 'device_name': 'Apple M4 Pro'} (two machines)`,
  },
  {
    chip: 'Apple M4 Max',
    architecture: 'applegpu_g16s',
    source: 'ml-explore/mlx issue 3885 (2026-07-24: "M4 Max reports applegpu_g16s")',
  },
  {
    chip: 'Apple M5',
    architecture: 'applegpu_g17g',
    source: 'ml-explore/mlx issue 3897 (environment: "Apple M5, 32 GB, macOS 26.5.2 (build 25F84), applegpu_g17g")',
  },
  {
    chip: 'Apple M5 Pro',
    architecture: 'applegpu_g17s',
    source:
      'nathansutton/chad issue 45 (mx.device_info(): "architecture: applegpu_g17s, device_name: Apple M5 Pro", macOS 26.6.2)',
  },
  {
    chip: 'Apple M5 Max',
    architecture: 'applegpu_g17s',
    source: `${MLX_SOURCE} mlx/backend/metal/quantized.cpp ("M5 Max GPUs": generation 17, class 's'); ${DEVICE_INFO}: {'device_name': 'Apple M5 Max', 'architecture': 'applegpu_g17s'} (mlx 0.32.2)`,
  },
]);

/** The GPU generation of a chip (13 for any M1), or null where its generation is not in CHIP_GPU_GENERATIONS. */
export function chipGpuGeneration(chip: string | null): number | null {
  const generation = chip === null ? null : chipGeneration(chip);
  if (generation === null) return null;
  return CHIP_GPU_GENERATIONS.find((r) => r.generations.includes(generation))?.gpuGeneration ?? null;
}

/** The row of CHIP_ARCHITECTURES for a chip, or undefined where no device of that chip has been seen to report one. */
export function chipArchitectureRow(chip: string | null): ChipArchitectureRow | undefined {
  return chip === null ? undefined : CHIP_ARCHITECTURES.find((r) => r.chip === chip);
}
