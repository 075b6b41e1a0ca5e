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
