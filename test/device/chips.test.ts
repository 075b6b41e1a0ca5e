// The host's chip from sysctl machdep.cpu.brand_string, and the Apple family each chip's GPU really is: pure
// functions over the strings macOS gives (a guest's is its host's with " (Virtual)").
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { FAMILY_VALUES } from '../../lib/core/families.js';

// Imported afresh before each test: the table and the chip-name pattern are module-level, and a test that reads them
// after a fresh import is what pins them (the mutation run counts them as covered by such tests).
let CHIP_FAMILIES: typeof import('../../lib/device/chips.js').CHIP_FAMILIES;
let chipFamily: typeof import('../../lib/device/chips.js').chipFamily;
let chipFamilyRow: typeof import('../../lib/device/chips.js').chipFamilyRow;
let chipFromBrand: typeof import('../../lib/device/chips.js').chipFromBrand;
let chipGeneration: typeof import('../../lib/device/chips.js').chipGeneration;
let hostChipFacts: typeof import('../../lib/device/chips.js').hostChipFacts;
let provableThreadgroupMemory: typeof import('../../lib/device/chips.js').provableThreadgroupMemory;
beforeEach(async () => {
  vi.resetModules();
  ({
    CHIP_FAMILIES,
    chipFamily,
    chipFamilyRow,
    chipFromBrand,
    chipGeneration,
    hostChipFacts,
    provableThreadgroupMemory,
  } = await import('../../lib/device/chips.js'));
});

describe('chipFromBrand', () => {
  it.each([
    ['Apple M1', 'Apple M1'],
    ['Apple M1 (Virtual)', 'Apple M1'],
    ['Apple M1 Ultra', 'Apple M1 Ultra'],
    ['Apple M1 Ultra (Virtual)', 'Apple M1 Ultra'],
    ['Apple M2 Pro', 'Apple M2 Pro'],
    ['Apple M4 Max (Virtual)', 'Apple M4 Max'],
    ['Apple M5', 'Apple M5'],
    ['Apple M10', 'Apple M10'],
    ['Apple A18 Pro', 'Apple A18 Pro'],
    ['Apple A12Z', 'Apple A12Z'],
    ['  Apple M3  ', 'Apple M3'],
  ])('%j names %j', (brand, chip) => {
    expect(chipFromBrand(brand)).toBe(chip);
  });

  it.each([
    ['Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz'],
    ['Apple processor'],
    ['Apple M'],
    ['Apple M123'],
    ['Apple M1 Turbo'],
    ['Apple M1 (Virtual) (Virtual)'],
    ['Apple M1 Ultra Max'],
    ['apple m1'],
    ['Apple M1 (virtual)'],
    ['Apple B1'],
    ['Apple M1X'],
    ['Apple  M1'],
    ['Not Apple M1'],
    [''],
    [`Apple M1${' '.repeat(300)}`],
  ])('%j names no Apple chip', (brand) => {
    expect(chipFromBrand(brand)).toBeNull();
  });

  it('no brand string: no chip', () => {
    expect(chipFromBrand(null)).toBeNull();
    expect(hostChipFacts(null)).toEqual({ cpuBrand: null, chip: null });
    expect(hostChipFacts('Apple M1 (Virtual)')).toEqual({ cpuBrand: 'Apple M1 (Virtual)', chip: 'Apple M1' });
  });

  it('a long brand is read up to 256 characters, and no further', () => {
    expect(chipFromBrand(`${' '.repeat(248)}Apple M1`)).toBe('Apple M1');
    expect(chipFromBrand(`${' '.repeat(249)}Apple M1`)).toBeNull();
  });
});

describe('the chip → family table', () => {
  it('every generation is in one row, with its source', () => {
    const generations = CHIP_FAMILIES.flatMap((r) => r.generations);
    expect(new Set(generations).size).toBe(generations.length);
    // Each part of a source is Apple's feature set tables (one of two editions, by date) or MTLGPUFamily's page.
    const part =
      /^(Apple Metal Feature Set Tables \((developer\.apple\.com\/metal\/feature-sets, May 21, 2026|June 5, 2024)\)[^;]+|MTLGPUFamily\.apple\d+: "[^"]+")$/;
    for (const row of CHIP_FAMILIES) {
      expect(row.source).toMatch(/^Apple Metal Feature Set Tables \(developer/);
      for (const p of row.source.split('; ')) expect(p).toMatch(part);
    }
  });

  it.each([
    ['Apple M1', 'M1', FAMILY_VALUES.apple7],
    ['Apple M1 Ultra', 'M1', FAMILY_VALUES.apple7],
    ['Apple M2 Max', 'M2', FAMILY_VALUES.apple8],
    ['Apple M3 Pro', 'M3', FAMILY_VALUES.apple9],
    ['Apple M4', 'M4', FAMILY_VALUES.apple9],
    ['Apple M5', 'M5', FAMILY_VALUES.apple10],
    ['Apple A8', 'A8', FAMILY_VALUES.apple2],
    ['Apple A9', 'A9', FAMILY_VALUES.apple3],
    ['Apple A10', 'A10', FAMILY_VALUES.apple3],
    ['Apple A11', 'A11', FAMILY_VALUES.apple4],
    ['Apple A12Z', 'A12', FAMILY_VALUES.apple5],
    ['Apple A13', 'A13', FAMILY_VALUES.apple6],
    ['Apple A14', 'A14', FAMILY_VALUES.apple7],
    ['Apple A15', 'A15', FAMILY_VALUES.apple8],
    ['Apple A16', 'A16', FAMILY_VALUES.apple8],
    ['Apple A17 Pro', 'A17', FAMILY_VALUES.apple9],
    ['Apple A18 Pro', 'A18', FAMILY_VALUES.apple9],
    ['Apple A19 Pro', 'A19', FAMILY_VALUES.apple10],
  ])('%s: generation %s, family %d', (chip, generation, family) => {
    expect([chipGeneration(chip), chipFamily(chip)]).toEqual([generation, family]);
  });

  it('a chip the table does not have, or no chip: no family, never a guess', () => {
    expect([chipFamily('Apple M6'), chipFamily('Apple A7'), chipFamily(null), chipFamilyRow('Apple M6')]).toEqual([
      null,
      null,
      null,
      undefined,
    ]);
    expect(chipGeneration('Intel')).toBeNull();
  });
});

// The GPU architecture MLX reads (`applegpu_g13d`): a generation per chip generation, and the whole name only for the
// chips a device has been seen to report. Both tables are pinned whole; the tests hold them to the rules they encode.
describe('the chip → GPU architecture tables', () => {
  let chips: typeof import('../../lib/device/chips.js');
  let mlx: typeof import('../../lib/engines/mlx-architecture.js');
  beforeEach(async () => {
    chips = await import('../../lib/device/chips.js');
    mlx = await import('../../lib/engines/mlx-architecture.js');
  });

  it('are pinned whole, each row with its source', () => {
    expect({ generations: chips.CHIP_GPU_GENERATIONS, architectures: chips.CHIP_ARCHITECTURES }).toMatchSnapshot();
    for (const row of [...chips.CHIP_GPU_GENERATIONS, ...chips.CHIP_ARCHITECTURES])
      expect(row.source.length).toBeGreaterThan(40);
  });

  it('every name is one MLX reads, of a Mac chip the brand parser names, in its generation, and of a Mac class', () => {
    for (const row of chips.CHIP_ARCHITECTURES) {
      expect(row.architecture).toMatch(mlx.MLX_ARCHITECTURE_NAME);
      expect(chipFromBrand(`${row.chip} (Virtual)`)).toBe(row.chip);
      const { generation, cls } = mlx.mlxArchitectureOf(row.architecture);
      expect([row.chip, generation]).toEqual([row.chip, chips.chipGpuGeneration(row.chip)]);
      // Macs are base (g), Pro and Max (s) or Ultra (d); p is a phone's.
      expect(['g', 's', 'd']).toContain(cls);
      expect(chips.chipArchitectureRow(row.chip)).toBe(row);
    }
    expect(new Set(chips.CHIP_ARCHITECTURES.map((r) => r.chip)).size).toBe(chips.CHIP_ARCHITECTURES.length);
  });

  it('generations follow the chips: one more for each M generation, from the M1’s 13', () => {
    const rows = chips.CHIP_GPU_GENERATIONS;
    expect(rows.map((r) => [r.generations, r.gpuGeneration])).toEqual(rows.map((_, i) => [[`M${i + 1}`], 13 + i]));
  });

  it.each([
    ['Apple M1', 13, 'applegpu_g13g'],
    ['Apple M1 Ultra', 13, 'applegpu_g13d'],
    ['Apple M1 Pro', 13, undefined],
    ['Apple M2 Max', 14, undefined],
    ['Apple M3', 15, undefined],
    ['Apple M4 Pro', 16, 'applegpu_g16s'],
    ['Apple M5', 17, 'applegpu_g17g'],
    ['Apple M6', null, undefined],
    ['Apple A17 Pro', null, undefined],
  ])('%s: generation %j, architecture %j', (chip, generation, architecture) => {
    expect([chips.chipGpuGeneration(chip), chips.chipArchitectureRow(chip)?.architecture]).toEqual([
      generation,
      architecture,
    ]);
  });

  it('no chip: nothing', () => {
    expect([chips.chipGpuGeneration(null), chips.chipArchitectureRow(null)]).toEqual([null, undefined]);
  });

  it('the bundled M1 Ultra snapshot records what the table says an M1 Ultra reports', async () => {
    const { loadSnapshot } = await import('../../lib/device/snapshots.js');
    const snap = loadSnapshot('m1-ultra-bare-metal');
    expect(chips.chipArchitectureRow(snap.host.chip)?.architecture).toBe(snap.devices[0]!.architecture);
  });
});

describe('provableThreadgroupMemory: 32768 on an Apple GPU, another GPU’s own larger limit', () => {
  const families = (apple: boolean) => ({ apple1: apple, apple5: apple, mac2: true, metal3: null });
  it('an Apple GPU (a guest’s paravirtual device too) proves at most 32768, whatever it answers', () => {
    expect(provableThreadgroupMemory({ families: families(true), maxThreadgroupMemoryLength: 65536 })).toBe(32768);
    expect(provableThreadgroupMemory({ families: families(true), maxThreadgroupMemoryLength: 16384 })).toBe(32768);
  });
  it('an Intel Mac’s AMD or Intel GPU proves up to its own stock limit, never below 32768', () => {
    expect(provableThreadgroupMemory({ families: families(false), maxThreadgroupMemoryLength: 65536 })).toBe(65536);
    expect(provableThreadgroupMemory({ families: families(false), maxThreadgroupMemoryLength: 16384 })).toBe(32768);
    expect(provableThreadgroupMemory({ families: families(false), maxThreadgroupMemoryLength: null })).toBe(32768);
  });
});
