// predictGates compared as whole values: every flag with its reason, the consequences and the full warning list,
// for the recorded devices and for one change at a time. A reason is what `audit` prints, so its words are behaviour.
// lib/engines/ is imported afresh before each test, so its module-level tables (the ops each gate sends to the CPU,
// the variables each rule reads) are built inside the test: a change to one of them shows here. Imported once at the
// top, they would be built before any test, and Stryker could only leave their mutants out as static.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type {
  predictGates as PredictGates,
  LLAMA_CPP_CHIPS as Chips,
  LLAMA_CPP_SWITCHES as Switches,
  RULE_TABLES as RuleTables,
} from '../../lib/engines/index.js';
import type { LLAMA_CPP_OP_GATES as OpGates } from '../../lib/engines/llama-cpp.js';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import type { DeviceReport, HostInfo } from '../../lib/device/types.js';

let predictGates: typeof PredictGates;
let LLAMA_CPP_CHIPS: typeof Chips;
let RULE_TABLES: typeof RuleTables;
let LLAMA_CPP_SWITCHES: typeof Switches;
let LLAMA_CPP_OP_GATES: typeof OpGates;
beforeEach(async () => {
  vi.resetModules();
  ({ predictGates, LLAMA_CPP_CHIPS, RULE_TABLES, LLAMA_CPP_SWITCHES } = await import('../../lib/engines/index.js'));
  ({ LLAMA_CPP_OP_GATES } = await import('../../lib/engines/llama-cpp.js'));
});
/** The op types a rule set's supports_op gates on a SIMD-group flag, in its order. */
const gatedOps = (set: keyof typeof OpGates) => LLAMA_CPP_OP_GATES[set].map((g) => g.op);

function recorded(name: string): { devices: DeviceReport[]; host: HostInfo } {
  const report = reportFromSnapshot(loadSnapshot(name), { allDevices: true });
  return { devices: report.devices, host: report.host! };
}

const guest = recorded('vz-guest-m1-ultra-tahoe-stock');
const m1 = recorded('m1-ultra-bare-metal');
const intelMac = recorded('macbookpro16-intel-amd-two-gpus');
const paravirt = () => structuredClone(guest.devices[0]!);

const SHARED_UNSET = 'GGML_METAL_SHARED_BUFFERS_DISABLE unset, GGML_METAL_SHARED_BUFFERS_ENABLE unset';
const TENSOR_UNSET = 'GGML_METAL_TENSOR_DISABLE unset, GGML_METAL_TENSOR_ENABLE unset';
const ARM64_BUILD = 'arm64 host, not translated: an arm64 build';
const X86_BUILD = 'x86_64 host: an x86_64 build';
const ROSETTA_BUILD = 'under Rosetta (sysctl.proc_translated=1): an x86_64 build';
const UNKNOWN_BUILD = 'build architecture unknown (assumed arm64)';
const SETS_CREATED =
  'sets are created: only arm64 builds against the macOS 15+ SDK create them (an older SDK leaves the flag at its initial value)';
const X86_NO_SETS =
  'x86_64 builds compile residency sets out: the flag keeps its initial value (true), GGML_METAL_NO_RESIDENCY is not read, no set is created';
const X86_NO_SETS_LEGACY =
  'x86_64 builds compile residency sets out: the flag keeps its initial value (false), GGML_METAL_NO_RESIDENCY is not read, no set is created';
const ARM64_NO_LOCATION = `${'arm64 host, not translated: an arm64 build'}, which does not read the location`;
const X86_LOCATION = 'x86_64 host: an x86_64 build, which reads the location';
const CURRENT = { releases: 'v0.5.0 and later', release: null };
const BASELINE = {
  value: { tier: 'baseline', chip: null, family: null },
  reason: 'gpu_family 0: no table rows, the baseline kernels',
};
const BEFORE_MACOS_15 = 'the flag is true, but sets are created only under @available(macOS 15.0): none here';
const LEGACY_ENCODE =
  'legacy ggml-metal.m asks supportsFamily(Apple7) on every MUL_MAT encode: a capability patch must stay installed for the life of the process';
const RESIDENCY_THROWS =
  'advertising metal3 makes MLX create residency sets; the paravirtual device cannot ("Unable to construct residency set")';
const METAL3_ON_VM =
  'supportsFamily(Metal3)=YES on a virtual machine: MLX on macOS 15+ then creates residency sets and throws if the VM GPU cannot; answer Apple families only, never Metal3';

describe('llama.cpp, current rules, whole predictions', () => {
  it('the stock VM guest: every SIMD-group path off, 19 op types on the CPU', () => {
    expect(predictGates(guest.devices[0]!, 'llama.cpp', { env: {}, host: guest.host })).toEqual({
      engine: 'llama.cpp',
      rules: 'current',
      ...CURRENT,
      deviceName: 'Apple Paravirtual device',
      flags: {
        has_simdgroup_reduction: { value: false, reason: 'supportsFamily(Apple7)=NO, supportsFamily(Metal3)=NO' },
        has_simdgroup_mm: { value: false, reason: 'supportsFamily(Apple7)=NO' },
        has_bfloat: {
          value: false,
          reason: 'supportsFamily(Metal3)=NO, supportsFamily(Apple6)=NO, GGML_METAL_BF16_DISABLE unset',
        },
        has_tensor: {
          value: false,
          reason: `supportsFamily(Metal4)=NO, ${TENSOR_UNSET}, name "Apple Paravirtual device" has no M5/M6/A19/A20`,
        },
        use_residency_sets: {
          value: true,
          reason: `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, macOS 26.5.2 ≥ 15.0, ${SETS_CREATED}`,
        },
        use_shared_buffers: {
          value: true,
          reason: `hasUnifiedMemory=YES, location=builtIn, ${ARM64_NO_LOCATION}, ${SHARED_UNSET}`,
        },
        gpu_family: {
          value: 5,
          reason:
            'supportsFamily(Apple5)=YES is the highest Apple family answered YES (Apple11–Apple21 are asked too; no GPU and no profile answers them)',
        },
        device_id: {
          value: 'GGML_METAL_DEVICE_GENERIC',
          reason: 'name "Apple Paravirtual device" is not "Apple " and a chip llama.cpp knows',
        },
      },
      tuning: {
        value: { tier: 'baseline', chip: null, family: null },
        reason: 'gpu_family 5: no table rows, the baseline kernels',
      },
      consequences: {
        // Every SIMD-group flag is off: every gated op falls back (the op list is pinned below).
        cpuFallbackOps: gatedOps('current'),
        matMulKernels: 'mat-vec-only',
        flashAttentionOnGpu: false,
        bf16Ops: 'rejected',
        residencySetsCreated: true,
        summary:
          'SIMD-group reduction off: 19 op types (MUL_MAT, MUL_MAT_ID, SOFT_MAX, RMS_NORM, …) fall back to the CPU; flash attention falls back to the CPU; BF16 ops rejected.',
      },
      warnings: [],
    });
  });

  it('the bare-metal M1 Ultra: every SIMD-group path on, nothing on the CPU', () => {
    expect(predictGates(m1.devices[0]!, 'llama.cpp', { env: {}, host: m1.host })).toEqual({
      engine: 'llama.cpp',
      rules: 'current',
      ...CURRENT,
      deviceName: 'Apple M1 Ultra',
      flags: {
        has_simdgroup_reduction: { value: true, reason: 'supportsFamily(Apple7)=YES, supportsFamily(Metal3)=YES' },
        has_simdgroup_mm: { value: true, reason: 'supportsFamily(Apple7)=YES' },
        has_bfloat: {
          value: true,
          reason: 'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE unset',
        },
        has_tensor: {
          value: false,
          reason: `supportsFamily(Metal4)=NO, ${TENSOR_UNSET}, name "Apple M1 Ultra" has no M5/M6/A19/A20`,
        },
        use_residency_sets: {
          value: true,
          reason: `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, macOS 26.6.1 ≥ 15.0, ${SETS_CREATED}`,
        },
        use_shared_buffers: {
          value: true,
          reason: `hasUnifiedMemory=YES, location=builtIn, ${ARM64_NO_LOCATION}, ${SHARED_UNSET}`,
        },
        gpu_family: {
          value: 7,
          reason:
            'supportsFamily(Apple7)=YES is the highest Apple family answered YES (Apple11–Apple21 are asked too; no GPU and no profile answers them)',
        },
        device_id: { value: 'GGML_METAL_DEVICE_M1_ULTRA', reason: 'name "Apple M1 Ultra" is the M1 Ultra' },
      },
      tuning: {
        value: { tier: 'family', chip: null, family: 7 },
        reason: "gpu_family 7: llama.cpp's Apple7 table, pooled from the M1, M1 Ultra sweeps",
      },
      consequences: {
        cpuFallbackOps: [],
        matMulKernels: 'simdgroup-mm',
        flashAttentionOnGpu: true,
        bf16Ops: 'supported',
        residencySetsCreated: true,
        summary: 'MUL_MAT uses SIMD-group matrix kernels; flash attention runs on the GPU; BF16 ops supported.',
      },
      warnings: [],
    });
  });

  it('the Intel Mac’s AMD GPU (the default device) on x86_64 macOS 13: Metal3 without Apple7', () => {
    expect(predictGates(intelMac.devices[1]!, 'llama.cpp', { env: {}, host: intelMac.host })).toEqual({
      engine: 'llama.cpp',
      rules: 'current',
      ...CURRENT,
      deviceName: 'AMD Radeon Pro 5500M',
      flags: {
        has_simdgroup_reduction: { value: true, reason: 'supportsFamily(Apple7)=NO, supportsFamily(Metal3)=YES' },
        has_simdgroup_mm: { value: false, reason: 'supportsFamily(Apple7)=NO' },
        has_bfloat: {
          value: true,
          reason: 'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=NO, GGML_METAL_BF16_DISABLE unset',
        },
        has_tensor: {
          value: false,
          reason: `supportsFamily(Metal4)=NO, ${TENSOR_UNSET}, name "AMD Radeon Pro 5500M" has no M5/M6/A19/A20`,
        },
        use_residency_sets: {
          value: true,
          reason: `GGML_METAL_NO_RESIDENCY unset, ${X86_BUILD}, macOS 13.6.9 < 15.0, ${X86_NO_SETS}`,
        },
        use_shared_buffers: {
          value: false,
          reason: `hasUnifiedMemory=NO, location=builtIn, ${X86_LOCATION}, ${SHARED_UNSET}`,
        },
        gpu_family: { value: 0, reason: 'no Apple family answered YES (Apple1–Apple21)' },
        device_id: {
          value: 'GGML_METAL_DEVICE_GENERIC',
          reason: 'name "AMD Radeon Pro 5500M" is not "Apple " and a chip llama.cpp knows',
        },
      },
      tuning: BASELINE,
      consequences: {
        cpuFallbackOps: ['FLASH_ATTN_EXT'],
        matMulKernels: 'mat-vec-only',
        flashAttentionOnGpu: false,
        bf16Ops: 'supported',
        residencySetsCreated: false,
        summary: 'MUL_MAT uses mat-vec kernels only; flash attention falls back to the CPU; BF16 ops supported.',
      },
      warnings: [],
    });
  });

  it('the Intel GPU, which is not the default device: one warning, exactly', () => {
    expect(predictGates(intelMac.devices[0]!, 'llama.cpp', { env: {}, host: intelMac.host }).warnings).toEqual([
      'ggml-metal uses MTLCreateSystemDefaultDevice(); this report is device 0 ("Intel(R) UHD Graphics 630"), which llama.cpp does not pick',
    ]);
  });

  it('unanswered family queries are warned once each, before the device warning, in rule order', () => {
    const device = { ...paravirt(), index: 2, isDefault: false, name: 'Stray GPU' };
    device.families.apple6 = null;
    device.families.metal3 = null;
    device.families.apple7 = null;
    device.families.metal4 = null;
    const p = predictGates(device, 'llama.cpp', { env: {}, host: guest.host });
    const noAnswer = (f: string) =>
      `supportsFamily(${f}) has no answer in this report; predicted as NO, the engine may see otherwise`;
    expect(p.warnings).toEqual([
      noAnswer('Apple7'),
      noAnswer('Metal3'),
      noAnswer('Apple6'),
      noAnswer('Metal4'),
      'ggml-metal uses MTLCreateSystemDefaultDevice(); this report is device 2 ("Stray GPU"), which llama.cpp does not pick',
    ]);
    expect(p.flags.has_simdgroup_reduction).toEqual({
      value: false,
      reason: 'supportsFamily(Apple7)=unknown (treated as NO), supportsFamily(Metal3)=unknown (treated as NO)',
    });
  });
});

describe('llama.cpp, current rules, one input at a time', () => {
  const m1Device = () => structuredClone(m1.devices[0]!);

  it('GGML_METAL_BF16_DISABLE with a value and set empty', () => {
    expect(
      predictGates(m1Device(), 'llama.cpp', { env: { GGML_METAL_BF16_DISABLE: '1' }, host: m1.host }).flags.has_bfloat,
    ).toEqual({
      value: false,
      reason: 'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE="1"',
    });
    expect(
      predictGates(m1Device(), 'llama.cpp', { env: { GGML_METAL_BF16_DISABLE: '' }, host: m1.host }).flags.has_bfloat,
    ).toEqual({
      value: false,
      reason:
        'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE set (empty; ggml only checks that it exists)',
    });
  });

  it('an M5 with Metal4: tensor on, and bfloat warns about the tensor test-compile; without Metal4 neither note', () => {
    const m5 = { ...m1Device(), name: 'Apple M5 Max' };
    m5.families.metal4 = true;
    const p = predictGates(m5, 'llama.cpp', { env: {}, host: m1.host });
    expect(p.flags.has_tensor).toEqual({
      value: true,
      reason: `supportsFamily(Metal4)=YES, ${TENSOR_UNSET}, name "Apple M5 Max" contains M5, ggml then test-compiles a tensor kernel and clears this flag if that fails`,
    });
    expect(p.flags.has_bfloat).toEqual({
      value: true,
      reason:
        'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE unset, if has_tensor is on, ggml also test-compiles a bfloat tensor kernel and clears this when that fails',
    });
    // Metal4 but bfloat off: no bfloat note.
    const off = predictGates(m5, 'llama.cpp', { env: { GGML_METAL_BF16_DISABLE: '1' }, host: m1.host });
    expect(off.flags.has_bfloat.reason).toBe(
      'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE="1"',
    );
    // bfloat on, no Metal4: no bfloat note either.
    expect(
      predictGates({ ...m5, families: { ...m5.families, metal4: false } }, 'llama.cpp', { env: {}, host: m1.host })
        .flags.has_bfloat.reason,
    ).toBe('supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE unset');
  });

  it('tensor with Metal4 but an older chip: off unless GGML_METAL_TENSOR_ENABLE', () => {
    const older = m1Device();
    older.families.metal4 = true;
    expect(
      predictGates(older, 'llama.cpp', { env: { GGML_METAL_TENSOR_ENABLE: '' }, host: m1.host }).flags.has_tensor,
    ).toEqual({
      value: true,
      reason:
        'supportsFamily(Metal4)=YES, GGML_METAL_TENSOR_DISABLE unset, GGML_METAL_TENSOR_ENABLE set (empty; ggml only checks that it exists), name "Apple M1 Ultra" has no M5/M6/A19/A20, ggml then test-compiles a tensor kernel and clears this flag if that fails',
    });
  });

  it.each<[string, HostInfo | null, Record<string, string>, boolean, string]>([
    [
      'macOS 14 on arm64',
      { ...m1.host, osVersion: '14.5' },
      {},
      true,
      `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, macOS 14.5 < 15.0, ${BEFORE_MACOS_15}`,
    ],
    [
      'macOS 15 exactly, without a minor version',
      { ...m1.host, osVersion: '15' },
      {},
      true,
      `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, macOS 15 ≥ 15.0, ${SETS_CREATED}`,
    ],
    [
      'a version with blanks around it',
      { ...m1.host, osVersion: ' 14.5 ' },
      {},
      true,
      `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, macOS 14.5 < 15.0, ${BEFORE_MACOS_15}`,
    ],
    [
      'no host at all',
      null,
      {},
      true,
      `GGML_METAL_NO_RESIDENCY unset, ${UNKNOWN_BUILD}, unknown macOS version (no host info; assumed ≥ 15.0), ${SETS_CREATED}`,
    ],
    [
      'a host with no OS version',
      { ...m1.host, osVersion: null },
      {},
      true,
      `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, unknown macOS version (host.osVersion is null; assumed ≥ 15.0), ${SETS_CREATED}`,
    ],
    [
      'a version that does not start with a number',
      { ...m1.host, osVersion: 'v15.1' },
      {},
      true,
      `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, unknown macOS version (host.osVersion "v15.1" not parseable; assumed ≥ 15.0), ${SETS_CREATED}`,
    ],
    [
      'a host with no architecture',
      { ...m1.host, arch: null },
      {},
      true,
      `GGML_METAL_NO_RESIDENCY unset, ${UNKNOWN_BUILD}, macOS 26.6.1 ≥ 15.0, ${SETS_CREATED}`,
    ],
    [
      'GGML_METAL_NO_RESIDENCY set',
      m1.host,
      { GGML_METAL_NO_RESIDENCY: '1' },
      false,
      `GGML_METAL_NO_RESIDENCY="1", ${ARM64_BUILD}, macOS 26.6.1 ≥ 15.0, no set is created`,
    ],
    [
      'GGML_METAL_NO_RESIDENCY set empty',
      m1.host,
      { GGML_METAL_NO_RESIDENCY: '' },
      false,
      `GGML_METAL_NO_RESIDENCY set (empty; ggml only checks that it exists), ${ARM64_BUILD}, macOS 26.6.1 ≥ 15.0, no set is created`,
    ],
    [
      'an x86_64 host on macOS 15+',
      { ...m1.host, arch: 'x86_64' },
      {},
      true,
      `GGML_METAL_NO_RESIDENCY unset, ${X86_BUILD}, macOS 26.6.1 ≥ 15.0, ${X86_NO_SETS}`,
    ],
    [
      'Rosetta, where GGML_METAL_NO_RESIDENCY is not read',
      { ...m1.host, translated: true },
      { GGML_METAL_NO_RESIDENCY: '1' },
      true,
      `GGML_METAL_NO_RESIDENCY="1", ${ROSETTA_BUILD}, macOS 26.6.1 ≥ 15.0, ${X86_NO_SETS}`,
    ],
  ])('use_residency_sets: %s', (_what, host, env, value, reason) => {
    expect(predictGates(m1Device(), 'llama.cpp', { env, host }).flags.use_residency_sets).toEqual({ value, reason });
  });

  it('a host object without osVersion is accepted and reads as unknown', () => {
    const host = { osBuild: null, model: null, isVirtualMachine: null, arch: 'arm64' } as unknown as HostInfo;
    expect(predictGates(m1Device(), 'llama.cpp', { env: {}, host }).flags.use_residency_sets.reason).toBe(
      `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, unknown macOS version (host.osVersion is null; assumed ≥ 15.0), ${SETS_CREATED}`,
    );
  });

  // Under the v0.4 rules, which read the location in every build; the current rules read it in x86_64 builds only.
  it.each<[string, unknown, unknown, Record<string, string>, boolean, string]>([
    ['unified memory', true, 'builtIn', {}, true, `hasUnifiedMemory=YES, location=builtIn, ${SHARED_UNSET}`],
    ['discrete memory in a slot', false, 'slot', {}, false, `hasUnifiedMemory=NO, location=slot, ${SHARED_UNSET}`],
    ['an external GPU', false, 'external', {}, true, `hasUnifiedMemory=NO, location=external, ${SHARED_UNSET}`],
    [
      'answers the OS could not give',
      null,
      null,
      {},
      false,
      `hasUnifiedMemory=unknown (treated as NO), location=unknown, ${SHARED_UNSET}`,
    ],
    [
      'answers of the wrong type',
      'yes',
      5,
      {},
      false,
      `hasUnifiedMemory=unknown (treated as NO), location=unknown, ${SHARED_UNSET}`,
    ],
    [
      'DISABLE on unified memory',
      true,
      'builtIn',
      { GGML_METAL_SHARED_BUFFERS_DISABLE: '1' },
      false,
      'hasUnifiedMemory=YES, location=builtIn, GGML_METAL_SHARED_BUFFERS_DISABLE="1", GGML_METAL_SHARED_BUFFERS_ENABLE unset',
    ],
    [
      'ENABLE after DISABLE',
      false,
      'slot',
      { GGML_METAL_SHARED_BUFFERS_DISABLE: '1', GGML_METAL_SHARED_BUFFERS_ENABLE: '1' },
      true,
      'hasUnifiedMemory=NO, location=slot, GGML_METAL_SHARED_BUFFERS_DISABLE="1", GGML_METAL_SHARED_BUFFERS_ENABLE="1"',
    ],
  ])('use_shared_buffers: %s', (_what, unified, location, env, value, reason) => {
    const device = { ...m1Device(), hasUnifiedMemory: unified, location } as unknown as DeviceReport;
    expect(
      predictGates(device, 'llama.cpp', { env, host: m1.host, rules: 'chip-tuning' }).flags.use_shared_buffers,
    ).toEqual({ value, reason });
  });

  it.each<[string, Partial<HostInfo>, boolean, string]>([
    ['an arm64 build does not read it', {}, false, ARM64_NO_LOCATION],
    ['an x86_64 host reads it', { arch: 'x86_64' }, true, X86_LOCATION],
    [
      'Rosetta reads it',
      { translated: true },
      true,
      'under Rosetta (sysctl.proc_translated=1): an x86_64 build, which reads the location',
    ],
    [
      'an unknown architecture is taken for arm64',
      { arch: null },
      false,
      'build architecture unknown (assumed arm64), which does not read the location',
    ],
  ])('use_shared_buffers, current rules, an external GPU without unified memory: %s', (_what, host, value, build) => {
    const device = { ...m1Device(), hasUnifiedMemory: false, location: 'external' } as DeviceReport;
    expect(
      predictGates(device, 'llama.cpp', { env: {}, host: { ...m1.host, ...host } }).flags.use_shared_buffers,
    ).toEqual({
      value,
      reason: `hasUnifiedMemory=NO, location=external, ${build}, ${SHARED_UNSET}`,
    });
  });
});

describe('llama.cpp, gpu_family, device_id and the flash-attention tuning tier', () => {
  /** The stock guest's device under `name`, answering Apple1 … Apple`family` YES. */
  const named = (name: string, family: number): DeviceReport => {
    const d = { ...paravirt(), name };
    for (let n = 1; n <= 10; n++) d.families[`apple${n}` as 'apple1'] = n <= family;
    return d;
  };
  const tier = (name: string, family: number, rules: 'chip-tuning' | 'current') => {
    const p = predictGates(named(name, family), 'llama.cpp', { env: {}, host: guest.host, rules });
    return { gpu_family: p.flags.gpu_family.value, device_id: p.flags.device_id.value, tuning: p.tuning };
  };

  it.each<[string, string, number, unknown]>([
    [
      'a chip with rows: its own',
      'Apple M1 Ultra',
      7,
      { tier: 'exact', chip: 'GGML_METAL_DEVICE_M1_ULTRA', family: null },
    ],
    [
      'the VM claiming Apple9: the M4 Max, its representative',
      'Apple Paravirtual device',
      9,
      { tier: 'family', chip: 'GGML_METAL_DEVICE_M4_MAX', family: 9 },
    ],
    [
      'the VM claiming Apple7: no representative',
      'Apple Paravirtual device',
      7,
      { tier: 'baseline', chip: null, family: null },
    ],
    [
      'the M5 Ultra, which has no rows, as Apple10',
      'Apple M5 Ultra',
      10,
      { tier: 'baseline', chip: null, family: null },
    ],
    [
      'the M5 Ultra claiming Apple9',
      'Apple M5 Ultra',
      9,
      { tier: 'family', chip: 'GGML_METAL_DEVICE_M4_MAX', family: 9 },
    ],
  ])('v0.4 rules: %s', (_what, name, family, value) => {
    expect(tier(name, family, 'chip-tuning').tuning?.value).toEqual(value);
  });

  it('v0.4 rules: the reasons name the chip and the family', () => {
    expect(tier('Apple M1 Ultra', 7, 'chip-tuning').tuning?.reason).toBe("the M1 Ultra's own rows");
    expect(tier('Apple Paravirtual device', 9, 'chip-tuning').tuning?.reason).toBe(
      "device_id GENERIC; gpu_family 9's representative, the M4 Max",
    );
    expect(tier('Apple M5 Ultra', 10, 'chip-tuning').tuning?.reason).toBe(
      'no rows for the M5 Ultra; gpu_family 10 has no representative: the baseline kernels',
    );
  });

  it.each<[number, unknown, string]>([
    [6, { tier: 'baseline', chip: null, family: null }, 'gpu_family 6: no table rows, the baseline kernels'],
    [
      8,
      { tier: 'family', chip: null, family: 8 },
      "gpu_family 8: llama.cpp's Apple8 table, pooled from the M2, M2 Max, M2 Pro sweeps",
    ],
    [
      9,
      { tier: 'family', chip: null, family: 9 },
      "gpu_family 9: llama.cpp's Apple9 table, pooled from the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro sweeps",
    ],
    [
      10,
      { tier: 'family', chip: null, family: 10 },
      "gpu_family 10: llama.cpp's Apple10 table, pooled from the M5 Max sweeps",
    ],
  ])('current rules: by family alone, whatever the chip (Apple%i)', (family, value, reason) => {
    expect(tier('Apple M1 Ultra', family, 'current').tuning).toEqual({ value, reason });
    expect(tier('Apple Paravirtual device', family, 'current').tuning).toEqual({ value, reason });
  });

  it('gpu_family is the highest Apple family answered YES, past a gap and an unanswered one', () => {
    const d = named('Apple Paravirtual device', 3);
    d.families.apple8 = true;
    d.families.apple9 = null;
    expect(predictGates(d, 'llama.cpp', { env: {}, host: guest.host }).flags.gpu_family).toEqual({
      value: 8,
      reason:
        'supportsFamily(Apple8)=YES is the highest Apple family answered YES (Apple11–Apple21 are asked too; no GPU and no profile answers them)',
    });
  });

  it.each<[string, string]>([
    ['Apple M4 Max', 'GGML_METAL_DEVICE_M4_MAX'],
    ['Apple A18 Pro', 'GGML_METAL_DEVICE_A18_PRO'],
    ['Apple M1 Ultra (Virtual)', 'GGML_METAL_DEVICE_GENERIC'],
    ['Apple M1', 'GGML_METAL_DEVICE_M1'],
    ['M1', 'GGML_METAL_DEVICE_GENERIC'],
    ['Apple m1', 'GGML_METAL_DEVICE_GENERIC'],
    ['Intel M1', 'GGML_METAL_DEVICE_GENERIC'],
    ['Apple M2 Ultra', 'GGML_METAL_DEVICE_M2_ULTRA'],
  ])('device_id of %s', (name, token) => {
    expect(tier(name, 7, 'current').device_id).toBe(token);
  });

  it('gpu_family 1 for a device answering Apple1 alone, 0 for none', () => {
    expect(tier('Apple Paravirtual device', 1, 'current').gpu_family).toBe(1);
    expect(tier('Apple Paravirtual device', 0, 'current').gpu_family).toBe(0);
  });
});

describe('llama.cpp, the rule tables as audit and the CLI print them', () => {
  // [flag, source, rule, families asked, other properties read, environment read], each checked against
  // llama.cpp's own code by the conformance suite (test/conformance/).
  it('every rule of every rule set, in order', () => {
    const rows = Object.fromEntries(
      Object.entries(RULE_TABLES['llama.cpp']).map(([set, rules]) => [
        set,
        (
          rules as readonly {
            flag: string;
            source: string;
            rule: string;
            families: readonly string[];
            properties: readonly string[];
            env: readonly string[];
          }[]
        ).map((r) => [r.flag, r.source, r.rule, r.families, r.properties, r.env]),
      ]),
    );
    // b7411's rows; the device rules (b9333) add device_id after them.
    const B7411_ROWS = [
      [
        'has_simdgroup_reduction',
        'ggml-metal-device.m ggml_metal_device_init',
        'supportsFamily(Apple7) OR supportsFamily(Metal3)',
        ['apple7', 'metal3'],
        [],
        [],
      ],
      ['has_simdgroup_mm', 'ggml-metal-device.m ggml_metal_device_init', 'supportsFamily(Apple7)', ['apple7'], [], []],
      [
        'has_bfloat',
        'ggml-metal-device.m ggml_metal_device_init',
        '(supportsFamily(Metal3) OR supportsFamily(Apple6)) AND GGML_METAL_BF16_DISABLE unset',
        ['metal3', 'apple6'],
        [],
        ['GGML_METAL_BF16_DISABLE'],
      ],
      [
        'has_tensor',
        'ggml-metal-device.m ggml_metal_device_init',
        'supportsFamily(Metal4) AND GGML_METAL_TENSOR_DISABLE unset AND (name contains M5/M6/A19/A20 OR GGML_METAL_TENSOR_ENABLE set)',
        ['metal4'],
        ['name'],
        ['GGML_METAL_TENSOR_DISABLE', 'GGML_METAL_TENSOR_ENABLE'],
      ],
      [
        'use_residency_sets',
        'ggml-metal-device.m ggml_metal_device_init',
        'true; arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset (x86_64, also under Rosetta: always true). Sets are created only by such arm64 builds on macOS ≥ 15',
        [],
        ['host.osVersion', 'host.arch', 'host.translated'],
        ['GGML_METAL_NO_RESIDENCY'],
      ],
      [
        'use_shared_buffers',
        'ggml-metal-device.m ggml_metal_device_init',
        '(hasUnifiedMemory OR location == external); GGML_METAL_SHARED_BUFFERS_DISABLE → false, then GGML_METAL_SHARED_BUFFERS_ENABLE → true',
        [],
        ['hasUnifiedMemory', 'location'],
        ['GGML_METAL_SHARED_BUFFERS_DISABLE', 'GGML_METAL_SHARED_BUFFERS_ENABLE'],
      ],
    ];
    expect(rows).toEqual({
      legacy: [
        [
          'has_simdgroup_reduction',
          'ggml-metal.m ggml_backend_metal_device_acq (ggml_metal_init in 2024 builds)',
          'supportsFamily(Apple7) OR supportsFamily(Metal3)',
          ['apple7', 'metal3'],
          [],
          [],
        ],
        [
          'has_simdgroup_mm',
          'ggml-metal.m ggml_backend_metal_device_acq (ggml_metal_init in 2024 builds); ggml_metal_encode_node asks again per MUL_MAT',
          'supportsFamily(Apple7), asked at init and again on every MUL_MAT encode',
          ['apple7'],
          [],
          [],
        ],
        [
          'has_bfloat',
          'ggml-metal.m ggml_backend_metal_device_acq (ggml_metal_init in 2024 builds)',
          'supportsFamily(Metal3) OR supportsFamily(Apple6) (no environment override)',
          ['metal3', 'apple6'],
          [],
          [],
        ],
        [
          'use_bfloat',
          'ggml-metal.m ggml_backend_metal_device_acq (ggml_metal_init in 2024 builds); CMake option GGML_METAL_USE_BF16',
          "has_bfloat in builds with -DGGML_METAL_USE_BF16=ON; false in builds with the CMake default (OFF), as llama.cpp's and node-llama-cpp's are",
          ['metal3', 'apple6'],
          [],
          [],
        ],
        [
          'has_residency_sets',
          'ggml-metal.m ggml_backend_metal_device_acq (ggml_metal_init in 2024 builds)',
          "arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset; other builds (x86_64, also under Rosetta): false, the static's initial value",
          [],
          ['host.osVersion', 'host.arch', 'host.translated'],
          ['GGML_METAL_NO_RESIDENCY'],
        ],
      ],
      'device-b6673': [
        [
          'has_simdgroup_reduction',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7) OR supportsFamily(Metal3)',
          ['apple7', 'metal3'],
          [],
          [],
        ],
        [
          'has_simdgroup_mm',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7)',
          ['apple7'],
          [],
          [],
        ],
        [
          'has_bfloat',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Metal3) OR supportsFamily(Apple6) (no environment override)',
          ['metal3', 'apple6'],
          [],
          [],
        ],
        [
          'use_residency_sets',
          'ggml-metal-device.m ggml_metal_device_init',
          'true; arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset (x86_64, also under Rosetta: always true). Sets are created only by such arm64 builds on macOS ≥ 15',
          [],
          ['host.osVersion', 'host.arch', 'host.translated'],
          ['GGML_METAL_NO_RESIDENCY'],
        ],
        [
          'use_shared_buffers',
          'ggml-metal-device.m ggml_metal_device_init',
          'hasUnifiedMemory; GGML_METAL_SHARED_BUFFERS_DISABLE → false (no ENABLE switch)',
          [],
          ['hasUnifiedMemory'],
          ['GGML_METAL_SHARED_BUFFERS_DISABLE'],
        ],
      ],
      'device-b6968': [
        [
          'has_simdgroup_reduction',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7) OR supportsFamily(Metal3)',
          ['apple7', 'metal3'],
          [],
          [],
        ],
        [
          'has_simdgroup_mm',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7)',
          ['apple7'],
          [],
          [],
        ],
        [
          'has_bfloat',
          'ggml-metal-device.m ggml_metal_device_init',
          '(supportsFamily(Metal3) OR supportsFamily(Apple6)) AND GGML_METAL_BF16_DISABLE unset',
          ['metal3', 'apple6'],
          [],
          ['GGML_METAL_BF16_DISABLE'],
        ],
        [
          'has_tensor',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Metal4) AND GGML_METAL_TENSOR_DISABLE unset AND (name contains M5/M6 OR GGML_METAL_TENSOR_ENABLE set)',
          ['metal4'],
          ['name'],
          ['GGML_METAL_TENSOR_DISABLE', 'GGML_METAL_TENSOR_ENABLE'],
        ],
        [
          'use_residency_sets',
          'ggml-metal-device.m ggml_metal_device_init',
          'true; arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset (x86_64, also under Rosetta: always true). Sets are created only by such arm64 builds on macOS ≥ 15',
          [],
          ['host.osVersion', 'host.arch', 'host.translated'],
          ['GGML_METAL_NO_RESIDENCY'],
        ],
        [
          'use_shared_buffers',
          'ggml-metal-device.m ggml_metal_device_init',
          'hasUnifiedMemory; GGML_METAL_SHARED_BUFFERS_DISABLE → false (no ENABLE switch)',
          [],
          ['hasUnifiedMemory'],
          ['GGML_METAL_SHARED_BUFFERS_DISABLE'],
        ],
      ],
      'device-b7010': [
        [
          'has_simdgroup_reduction',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7) OR supportsFamily(Metal3)',
          ['apple7', 'metal3'],
          [],
          [],
        ],
        [
          'has_simdgroup_mm',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7)',
          ['apple7'],
          [],
          [],
        ],
        [
          'has_bfloat',
          'ggml-metal-device.m ggml_metal_device_init',
          '(supportsFamily(Metal3) OR supportsFamily(Apple6)) AND GGML_METAL_BF16_DISABLE unset',
          ['metal3', 'apple6'],
          [],
          ['GGML_METAL_BF16_DISABLE'],
        ],
        [
          'has_tensor',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Metal4) AND GGML_METAL_TENSOR_DISABLE unset AND (name contains M5/M6/A19/A20 OR GGML_METAL_TENSOR_ENABLE set)',
          ['metal4'],
          ['name'],
          ['GGML_METAL_TENSOR_DISABLE', 'GGML_METAL_TENSOR_ENABLE'],
        ],
        [
          'use_residency_sets',
          'ggml-metal-device.m ggml_metal_device_init',
          'true; arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset (x86_64, also under Rosetta: always true). Sets are created only by such arm64 builds on macOS ≥ 15',
          [],
          ['host.osVersion', 'host.arch', 'host.translated'],
          ['GGML_METAL_NO_RESIDENCY'],
        ],
        [
          'use_shared_buffers',
          'ggml-metal-device.m ggml_metal_device_init',
          'hasUnifiedMemory; GGML_METAL_SHARED_BUFFERS_DISABLE → false (no ENABLE switch)',
          [],
          ['hasUnifiedMemory'],
          ['GGML_METAL_SHARED_BUFFERS_DISABLE'],
        ],
      ],
      'device-b7411': B7411_ROWS,
      device: [
        ...B7411_ROWS,
        [
          'device_id',
          'ggml-metal-device.m ggml_metal_device_init (ggml_metal_device_id_parse)',
          'name is "Apple " followed by exactly one of M1, M1 Pro, M1 Max, M1 Ultra, M2, M2 Pro, M2 Max, M2 Ultra, M3, M3 Pro, M3 Max, M3 Ultra, M4, M4 Pro, M4 Max, M5, M5 Pro, M5 Max, M5 Ultra; otherwise GGML_METAL_DEVICE_GENERIC',
          [],
          ['name'],
          [],
        ],
      ],
      'chip-tuning': [
        [
          'has_simdgroup_reduction',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7) OR supportsFamily(Metal3)',
          ['apple7', 'metal3'],
          [],
          [],
        ],
        [
          'has_simdgroup_mm',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7)',
          ['apple7'],
          [],
          [],
        ],
        [
          'has_bfloat',
          'ggml-metal-device.m ggml_metal_device_init',
          '(supportsFamily(Metal3) OR supportsFamily(Apple6)) AND GGML_METAL_BF16_DISABLE unset',
          ['metal3', 'apple6'],
          [],
          ['GGML_METAL_BF16_DISABLE'],
        ],
        [
          'has_tensor',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Metal4) AND GGML_METAL_TENSOR_DISABLE unset AND (name contains M5/M6/A19/A20 OR GGML_METAL_TENSOR_ENABLE set)',
          ['metal4'],
          ['name'],
          ['GGML_METAL_TENSOR_DISABLE', 'GGML_METAL_TENSOR_ENABLE'],
        ],
        [
          'use_residency_sets',
          'ggml-metal-device.m ggml_metal_device_init',
          'true; arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset (x86_64, also under Rosetta: always true). Sets are created only by such arm64 builds on macOS ≥ 15',
          [],
          ['host.osVersion', 'host.arch', 'host.translated'],
          ['GGML_METAL_NO_RESIDENCY'],
        ],
        [
          'use_shared_buffers',
          'ggml-metal-device.m ggml_metal_device_init',
          '(hasUnifiedMemory OR location == external); GGML_METAL_SHARED_BUFFERS_DISABLE → false, then GGML_METAL_SHARED_BUFFERS_ENABLE → true',
          [],
          ['hasUnifiedMemory', 'location'],
          ['GGML_METAL_SHARED_BUFFERS_DISABLE', 'GGML_METAL_SHARED_BUFFERS_ENABLE'],
        ],
        [
          'gpu_family',
          'ggml-metal-device.m ggml_metal_device_init',
          'the highest N with supportsFamily(Apple N), asked from Apple21 down to Apple1; 0 when none',
          ['apple1', 'apple2', 'apple3', 'apple4', 'apple5', 'apple6', 'apple7', 'apple8', 'apple9', 'apple10'],
          [],
          [],
        ],
        [
          'device_id',
          'ggml-metal-device.m ggml_metal_device_init (ggml_metal_device_id_parse)',
          'name is "Apple " followed by exactly one of M1, M1 Pro, M1 Max, M1 Ultra, M2, M2 Pro, M2 Max, M2 Ultra, M3, M3 Pro, M3 Max, M3 Ultra, M4, M4 Pro, M4 Max, M5, M5 Pro, M5 Max, M5 Ultra, A18 Pro; otherwise GGML_METAL_DEVICE_GENERIC',
          [],
          ['name'],
          [],
        ],
      ],
      current: [
        [
          'has_simdgroup_reduction',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7) OR supportsFamily(Metal3)',
          ['apple7', 'metal3'],
          [],
          [],
        ],
        [
          'has_simdgroup_mm',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Apple7)',
          ['apple7'],
          [],
          [],
        ],
        [
          'has_bfloat',
          'ggml-metal-device.m ggml_metal_device_init',
          '(supportsFamily(Metal3) OR supportsFamily(Apple6)) AND GGML_METAL_BF16_DISABLE unset',
          ['metal3', 'apple6'],
          [],
          ['GGML_METAL_BF16_DISABLE'],
        ],
        [
          'has_tensor',
          'ggml-metal-device.m ggml_metal_device_init',
          'supportsFamily(Metal4) AND GGML_METAL_TENSOR_DISABLE unset AND (name contains M5/M6/A19/A20 OR GGML_METAL_TENSOR_ENABLE set)',
          ['metal4'],
          ['name'],
          ['GGML_METAL_TENSOR_DISABLE', 'GGML_METAL_TENSOR_ENABLE'],
        ],
        [
          'use_residency_sets',
          'ggml-metal-device.m ggml_metal_device_init',
          'true; arm64 builds against the macOS 15+ SDK: GGML_METAL_NO_RESIDENCY unset (x86_64, also under Rosetta: always true). Sets are created only by such arm64 builds on macOS ≥ 15',
          [],
          ['host.osVersion', 'host.arch', 'host.translated'],
          ['GGML_METAL_NO_RESIDENCY'],
        ],
        [
          'use_shared_buffers',
          'ggml-metal-device.m ggml_metal_device_init',
          '(hasUnifiedMemory OR (an x86_64 build AND location == external)); GGML_METAL_SHARED_BUFFERS_DISABLE → false, then GGML_METAL_SHARED_BUFFERS_ENABLE → true',
          [],
          ['hasUnifiedMemory', 'location', 'host.arch', 'host.translated'],
          ['GGML_METAL_SHARED_BUFFERS_DISABLE', 'GGML_METAL_SHARED_BUFFERS_ENABLE'],
        ],
        [
          'gpu_family',
          'ggml-metal-device.m ggml_metal_device_init',
          'the highest N with supportsFamily(Apple N), asked from Apple21 down to Apple1; 0 when none',
          ['apple1', 'apple2', 'apple3', 'apple4', 'apple5', 'apple6', 'apple7', 'apple8', 'apple9', 'apple10'],
          [],
          [],
        ],
        [
          'device_id',
          'ggml-metal-device.m ggml_metal_device_init (ggml_metal_device_id_parse)',
          'name is "Apple " followed by exactly one of M1, M1 Pro, M1 Max, M1 Ultra, M2, M2 Pro, M2 Max, M2 Ultra, M3, M3 Pro, M3 Max, M3 Ultra, M4, M4 Pro, M4 Max, M5, M5 Pro, M5 Max, M5 Ultra, A18 Pro; otherwise GGML_METAL_DEVICE_GENERIC',
          [],
          ['name'],
          [],
        ],
      ],
    });
  });

  it('the ops each rule set gates on a SIMD-group flag (ggml-metal-device.m supports_op; legacy: ggml-metal.m)', () => {
    const gates = Object.fromEntries(
      Object.entries(LLAMA_CPP_OP_GATES).map(([set, list]) => [
        set,
        list.map((g) => `${g.op} (${g.needs})`).join(', '),
      ]),
    );
    expect(gates).toMatchInlineSnapshot(`
      {
        "chip-tuning": "MUL_MAT (has_simdgroup_reduction), MUL_MAT_ID (has_simdgroup_reduction), SOFT_MAX (has_simdgroup_reduction), RMS_NORM (has_simdgroup_reduction), NORM (has_simdgroup_reduction), GROUP_NORM (has_simdgroup_reduction), L2_NORM (has_simdgroup_reduction), SUM (has_simdgroup_reduction), SUM_ROWS (has_simdgroup_reduction), MEAN (has_simdgroup_reduction), CUMSUM (has_simdgroup_reduction), ARGMAX (has_simdgroup_reduction), COUNT_EQUAL (has_simdgroup_reduction), SSM_CONV (has_simdgroup_reduction), SSM_SCAN (has_simdgroup_reduction), SOLVE_TRI (has_simdgroup_reduction), OPT_STEP_ADAMW (has_simdgroup_reduction), OPT_STEP_SGD (has_simdgroup_reduction), FLASH_ATTN_EXT (has_simdgroup_mm)",
        "current": "MUL_MAT (has_simdgroup_reduction), MUL_MAT_ID (has_simdgroup_reduction), SOFT_MAX (has_simdgroup_reduction), RMS_NORM (has_simdgroup_reduction), NORM (has_simdgroup_reduction), GROUP_NORM (has_simdgroup_reduction), L2_NORM (has_simdgroup_reduction), SUM (has_simdgroup_reduction), SUM_ROWS (has_simdgroup_reduction), MEAN (has_simdgroup_reduction), CUMSUM (has_simdgroup_reduction), ARGMAX (has_simdgroup_reduction), COUNT_EQUAL (has_simdgroup_reduction), SSM_CONV (has_simdgroup_reduction), SSM_SCAN (has_simdgroup_reduction), SOLVE_TRI (has_simdgroup_reduction), OPT_STEP_ADAMW (has_simdgroup_reduction), OPT_STEP_SGD (has_simdgroup_reduction), FLASH_ATTN_EXT (has_simdgroup_mm)",
        "device": "MUL_MAT (has_simdgroup_reduction), MUL_MAT_ID (has_simdgroup_reduction), SOFT_MAX (has_simdgroup_reduction), RMS_NORM (has_simdgroup_reduction), NORM (has_simdgroup_reduction), GROUP_NORM (has_simdgroup_reduction), L2_NORM (has_simdgroup_reduction), SUM (has_simdgroup_reduction), SUM_ROWS (has_simdgroup_reduction), MEAN (has_simdgroup_reduction), CUMSUM (has_simdgroup_reduction), ARGMAX (has_simdgroup_reduction), COUNT_EQUAL (has_simdgroup_reduction), SSM_CONV (has_simdgroup_reduction), SSM_SCAN (has_simdgroup_reduction), SOLVE_TRI (has_simdgroup_reduction), OPT_STEP_ADAMW (has_simdgroup_reduction), OPT_STEP_SGD (has_simdgroup_reduction), FLASH_ATTN_EXT (has_simdgroup_mm)",
        "device-b6673": "MUL_MAT (has_simdgroup_reduction), MUL_MAT_ID (has_simdgroup_reduction), SOFT_MAX (has_simdgroup_reduction), RMS_NORM (has_simdgroup_reduction), NORM (has_simdgroup_reduction), GROUP_NORM (has_simdgroup_reduction), L2_NORM (has_simdgroup_reduction), SUM (has_simdgroup_reduction), SUM_ROWS (has_simdgroup_reduction), MEAN (has_simdgroup_reduction), CUMSUM (has_simdgroup_reduction), ARGMAX (has_simdgroup_reduction), COUNT_EQUAL (has_simdgroup_reduction), SSM_CONV (has_simdgroup_reduction), SSM_SCAN (has_simdgroup_reduction), SOLVE_TRI (has_simdgroup_reduction), OPT_STEP_ADAMW (has_simdgroup_reduction), OPT_STEP_SGD (has_simdgroup_reduction), FLASH_ATTN_EXT (has_simdgroup_mm)",
        "device-b6968": "MUL_MAT (has_simdgroup_reduction), MUL_MAT_ID (has_simdgroup_reduction), SOFT_MAX (has_simdgroup_reduction), RMS_NORM (has_simdgroup_reduction), NORM (has_simdgroup_reduction), GROUP_NORM (has_simdgroup_reduction), L2_NORM (has_simdgroup_reduction), SUM (has_simdgroup_reduction), SUM_ROWS (has_simdgroup_reduction), MEAN (has_simdgroup_reduction), CUMSUM (has_simdgroup_reduction), ARGMAX (has_simdgroup_reduction), COUNT_EQUAL (has_simdgroup_reduction), SSM_CONV (has_simdgroup_reduction), SSM_SCAN (has_simdgroup_reduction), SOLVE_TRI (has_simdgroup_reduction), OPT_STEP_ADAMW (has_simdgroup_reduction), OPT_STEP_SGD (has_simdgroup_reduction), FLASH_ATTN_EXT (has_simdgroup_mm)",
        "device-b7010": "MUL_MAT (has_simdgroup_reduction), MUL_MAT_ID (has_simdgroup_reduction), SOFT_MAX (has_simdgroup_reduction), RMS_NORM (has_simdgroup_reduction), NORM (has_simdgroup_reduction), GROUP_NORM (has_simdgroup_reduction), L2_NORM (has_simdgroup_reduction), SUM (has_simdgroup_reduction), SUM_ROWS (has_simdgroup_reduction), MEAN (has_simdgroup_reduction), CUMSUM (has_simdgroup_reduction), ARGMAX (has_simdgroup_reduction), COUNT_EQUAL (has_simdgroup_reduction), SSM_CONV (has_simdgroup_reduction), SSM_SCAN (has_simdgroup_reduction), SOLVE_TRI (has_simdgroup_reduction), OPT_STEP_ADAMW (has_simdgroup_reduction), OPT_STEP_SGD (has_simdgroup_reduction), FLASH_ATTN_EXT (has_simdgroup_mm)",
        "device-b7411": "MUL_MAT (has_simdgroup_reduction), MUL_MAT_ID (has_simdgroup_reduction), SOFT_MAX (has_simdgroup_reduction), RMS_NORM (has_simdgroup_reduction), NORM (has_simdgroup_reduction), GROUP_NORM (has_simdgroup_reduction), L2_NORM (has_simdgroup_reduction), SUM (has_simdgroup_reduction), SUM_ROWS (has_simdgroup_reduction), MEAN (has_simdgroup_reduction), CUMSUM (has_simdgroup_reduction), ARGMAX (has_simdgroup_reduction), COUNT_EQUAL (has_simdgroup_reduction), SSM_CONV (has_simdgroup_reduction), SSM_SCAN (has_simdgroup_reduction), SOLVE_TRI (has_simdgroup_reduction), OPT_STEP_ADAMW (has_simdgroup_reduction), OPT_STEP_SGD (has_simdgroup_reduction), FLASH_ATTN_EXT (has_simdgroup_mm)",
        "legacy": "MUL_MAT (has_simdgroup_reduction), MUL_MAT_ID (has_simdgroup_reduction), SOFT_MAX (has_simdgroup_reduction), RMS_NORM (has_simdgroup_reduction), NORM (has_simdgroup_reduction), GROUP_NORM (has_simdgroup_reduction), L2_NORM (has_simdgroup_reduction), SUM_ROWS (has_simdgroup_reduction), MEAN (has_simdgroup_reduction), FLASH_ATTN_EXT (has_simdgroup_mm)",
      }
    `);
  });

  it.each(['legacy', 'current'] as const)(
    '%s rules: an op falls back to the CPU exactly when the flag it needs is off, in the table order',
    (rules) => {
      const devices = [guest.devices[0]!, m1.devices[0]!, ...intelMac.devices];
      const seen = new Set<string>();
      for (const device of devices) {
        const p = predictGates(device, 'llama.cpp', {
          env: {},
          host: device === m1.devices[0] ? m1.host : guest.host,
          rules,
        });
        const flags = p.flags as Record<string, { value: unknown }>;
        const off = LLAMA_CPP_OP_GATES[rules].filter((g) => flags[g.needs]!.value === false).map((g) => g.op);
        expect(p.consequences.cpuFallbackOps).toEqual(off);
        seen.add(JSON.stringify(['has_simdgroup_reduction', 'has_simdgroup_mm'].map((f) => flags[f]!.value)));
      }
      // The devices cover both flags off, reduction alone (Metal3 without Apple7) and both on.
      expect([...seen].sort()).toEqual(['[false,false]', '[true,false]', '[true,true]']);
    },
  );

  it('the switches any rule set reads, sorted: the conformance suite runs their combinations', () => {
    expect(LLAMA_CPP_SWITCHES).toMatchInlineSnapshot(`
      [
        "GGML_METAL_BF16_DISABLE",
        "GGML_METAL_NO_RESIDENCY",
        "GGML_METAL_SHARED_BUFFERS_DISABLE",
        "GGML_METAL_SHARED_BUFFERS_ENABLE",
        "GGML_METAL_TENSOR_DISABLE",
        "GGML_METAL_TENSOR_ENABLE",
      ]
    `);
  });

  it("llama.cpp's chip list, in its order", () => {
    expect(LLAMA_CPP_CHIPS).toMatchSnapshot();
  });
});

describe('llama.cpp, the rules of a release', () => {
  const p = (release: string) => predictGates(m1.devices[0]!, 'llama.cpp', { env: {}, host: m1.host, release });

  it.each<[string, string, string[]]>([
    ['b4753', 'legacy', [LEGACY_ENCODE]],
    ['b6431', 'legacy', [LEGACY_ENCODE]],
    [
      'b6500',
      'legacy',
      [
        'llama.cpp b6500 lies between b6431 (the last ggml-metal.m release seen) and b6673 (the first ggml-metal-device.m release seen): legacy rules assumed',
        LEGACY_ENCODE,
      ],
    ],
    // Each boundary from both sides: a release bN is llama.cpp build N, and the builds that changed
    // ggml_metal_device_init are 6968 (#16634), 7010 (#17087) and 7411 (#17866).
    ['b6673', 'device-b6673', []],
    ['b6967', 'device-b6673', []],
    ['b6968', 'device-b6968', []],
    ['b7009', 'device-b6968', []],
    ['b7010', 'device-b7010', []],
    ['b7410', 'device-b7010', []],
    ['b7411', 'device-b7411', []],
    ['b9332', 'device-b7411', []],
    ['b9333', 'device', []],
    ['b10361', 'device', []],
    [
      'b10362',
      'device',
      [
        "llama.cpp b10362 is newer than b10361, the newest b-numbered release seen without per-chip tuning: device rules assumed (v0.4.0's per-chip tuning may apply)",
      ],
    ],
    [
      'v0.3.9',
      'device',
      ['llama.cpp v0.3.9 is older than v0.4.0, the first release seen with per-chip tuning: device rules assumed'],
    ],
    ['v0.4.0', 'chip-tuning', []],
    ['v0.4.9', 'chip-tuning', []],
    ['v0.5.0', 'current', []],
    ['v1.0.0', 'current', []],
  ])('%s: %s rules', (release, rules, warnings) => {
    const prediction = p(release);
    expect({ rules: prediction.rules, release: prediction.release, warnings: prediction.warnings }).toEqual({
      rules,
      release,
      warnings,
    });
  });

  it.each<[string, string, boolean]>([
    ['b6967', 'b6673 to b6967 (ggml-metal-device.m, before the tensor API)', false],
    ['b6968', 'b6968 to b7009 (ggml-metal-device.m, tensor API on M5/M6 only)', true],
    ['b7010', 'b7010 to b7410 (ggml-metal-device.m, before eGPU shared buffers)', true],
    ['b8000', 'b7411 to b9332 (ggml-metal-device.m, before device_id)', true],
  ])(
    '%s: the flags of ggml-metal-device.m without gpu_family and device_id, has_tensor only from b6968',
    (release, releases, tensor) => {
      const prediction = p(release);
      expect({
        releases: prediction.releases,
        flags: Object.keys(prediction.flags),
        tuning: prediction.tuning,
      }).toEqual({
        releases,
        flags: [
          'has_simdgroup_reduction',
          'has_simdgroup_mm',
          'has_bfloat',
          ...(tensor ? ['has_tensor'] : []),
          'use_residency_sets',
          'use_shared_buffers',
        ],
        tuning: null,
      });
    },
  );
});

describe('llama.cpp, the device rules on both sides of each boundary', () => {
  // The builds that changed ggml_metal_device_init, from llama.cpp's history: 6968 (#16634: the BF16 switch and
  // has_tensor, by name for M5 and M6), 7010 (#17087: A19 and A20 too), 7411 (#17866: eGPU shared buffers and the
  // ENABLE switch). Each pair below is the last release before a change and the first with it.
  const withFamilies = (name: string, extra: Partial<DeviceReport>) =>
    ({ ...structuredClone(m1.devices[0]!), name, ...extra }) as DeviceReport;
  const metal4 = (name: string) => withFamilies(name, { families: { ...m1.devices[0]!.families, metal4: true } });
  const RESIDENCY = {
    value: true,
    reason: `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, macOS 26.6.1 ≥ 15.0, ${SETS_CREATED}`,
  };
  const ALL_ON = {
    has_simdgroup_reduction: { value: true, reason: 'supportsFamily(Apple7)=YES, supportsFamily(Metal3)=YES' },
    has_simdgroup_mm: { value: true, reason: 'supportsFamily(Apple7)=YES' },
  };
  const p = (device: DeviceReport, release: string, env: Record<string, string> = {}) =>
    predictGates(device, 'llama.cpp', { env, host: m1.host, release });

  it.each<[string, string, string | undefined]>([
    ['b9332', 'Apple M1 Ultra', undefined],
    ['b9333', 'Apple M1 Ultra', 'GGML_METAL_DEVICE_M1_ULTRA'],
    // b9333's chip table has no A18 Pro (v0.4.0 adds it, #28152): GENERIC there, the A18 Pro from v0.4.0.
    ['b9333', 'Apple A18 Pro', 'GGML_METAL_DEVICE_GENERIC'],
    ['b10361', 'Apple A18 Pro', 'GGML_METAL_DEVICE_GENERIC'],
    ['v0.4.0', 'Apple A18 Pro', 'GGML_METAL_DEVICE_A18_PRO'],
    ['b9333', 'Apple Paravirtual device', 'GGML_METAL_DEVICE_GENERIC'],
  ])('%s: device_id of %j is %s, and no gpu_family before v0.4.0', (release, name, id) => {
    const prediction = p(withFamilies(name, {}), release);
    const flags = prediction.flags as Record<string, { value: unknown } | undefined>;
    expect({
      device_id: flags.device_id?.value,
      gpu_family: flags.gpu_family === undefined ? undefined : 'set',
      tuning: prediction.tuning === null ? null : 'set',
    }).toEqual({
      device_id: id,
      gpu_family: release === 'v0.4.0' ? 'set' : undefined,
      tuning: release === 'v0.4.0' ? 'set' : null,
    });
  });

  it('b6967: no has_tensor, and GGML_METAL_BF16_DISABLE is not read, even on an M5 with Metal4', () => {
    expect(p(metal4('Apple M5'), 'b6967', { GGML_METAL_BF16_DISABLE: '1' })).toEqual({
      engine: 'llama.cpp',
      deviceName: 'Apple M5',
      releases: 'b6673 to b6967 (ggml-metal-device.m, before the tensor API)',
      release: 'b6967',
      rules: 'device-b6673',
      flags: {
        ...ALL_ON,
        has_bfloat: {
          value: true,
          reason:
            'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE is set but these rules do not read it',
        },
        use_residency_sets: RESIDENCY,
        use_shared_buffers: { value: true, reason: 'hasUnifiedMemory=YES, GGML_METAL_SHARED_BUFFERS_DISABLE unset' },
      },
      tuning: null,
      consequences: {
        cpuFallbackOps: [],
        matMulKernels: 'simdgroup-mm',
        flashAttentionOnGpu: true,
        bf16Ops: 'supported',
        residencySetsCreated: true,
        summary: 'MUL_MAT uses SIMD-group matrix kernels; flash attention runs on the GPU; BF16 ops supported.',
      },
      warnings: [
        'GGML_METAL_BF16_DISABLE is set but llama.cpp b6673 to b6967 (ggml-metal-device.m, before the tensor API) does not read it',
      ],
    });
  });

  it('b6968: has_tensor on for the M5, and GGML_METAL_BF16_DISABLE turns bfloat off', () => {
    expect(p(metal4('Apple M5'), 'b6968', { GGML_METAL_BF16_DISABLE: '1' })).toEqual({
      engine: 'llama.cpp',
      deviceName: 'Apple M5',
      releases: 'b6968 to b7009 (ggml-metal-device.m, tensor API on M5/M6 only)',
      release: 'b6968',
      rules: 'device-b6968',
      flags: {
        ...ALL_ON,
        has_bfloat: {
          value: false,
          reason: 'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE="1"',
        },
        has_tensor: {
          value: true,
          reason: `supportsFamily(Metal4)=YES, ${TENSOR_UNSET}, name "Apple M5" contains M5, ggml then test-compiles a tensor kernel and clears this flag if that fails`,
        },
        use_residency_sets: RESIDENCY,
        use_shared_buffers: { value: true, reason: 'hasUnifiedMemory=YES, GGML_METAL_SHARED_BUFFERS_DISABLE unset' },
      },
      tuning: null,
      consequences: {
        cpuFallbackOps: [],
        matMulKernels: 'simdgroup-mm',
        flashAttentionOnGpu: true,
        bf16Ops: 'rejected',
        residencySetsCreated: true,
        summary: 'MUL_MAT uses SIMD-group matrix kernels; flash attention runs on the GPU; BF16 ops rejected.',
      },
      warnings: [],
    });
  });

  it.each<[string, unknown]>([
    [
      'b7009',
      {
        value: false,
        reason: `supportsFamily(Metal4)=YES, ${TENSOR_UNSET}, name "Apple A19 Pro" has no M5/M6`,
      },
    ],
    [
      'b7010',
      {
        value: true,
        reason: `supportsFamily(Metal4)=YES, ${TENSOR_UNSET}, name "Apple A19 Pro" contains A19, ggml then test-compiles a tensor kernel and clears this flag if that fails`,
      },
    ],
  ])('%s: has_tensor for an A19 with Metal4', (release, tensor) => {
    const prediction = p(metal4('Apple A19 Pro'), release);
    const flags = prediction.flags as Record<string, unknown>;
    expect({ has_tensor: flags.has_tensor, warnings: prediction.warnings }).toEqual({
      has_tensor: tensor,
      warnings: [],
    });
  });

  it.each<[string, string, Record<string, string>, unknown, string[]]>([
    [
      'b7410',
      'external',
      {},
      { value: false, reason: 'hasUnifiedMemory=NO, GGML_METAL_SHARED_BUFFERS_DISABLE unset' },
      [],
    ],
    ['b7411', 'external', {}, { value: true, reason: `hasUnifiedMemory=NO, location=external, ${SHARED_UNSET}` }, []],
    [
      'b7410',
      'builtin',
      { GGML_METAL_SHARED_BUFFERS_ENABLE: '1' },
      {
        value: false,
        reason:
          'hasUnifiedMemory=NO, GGML_METAL_SHARED_BUFFERS_DISABLE unset, GGML_METAL_SHARED_BUFFERS_ENABLE is set but these rules do not read it',
      },
      [
        'GGML_METAL_SHARED_BUFFERS_ENABLE is set but llama.cpp b7010 to b7410 (ggml-metal-device.m, before eGPU shared buffers) does not read it',
      ],
    ],
    [
      'b7411',
      'builtin',
      { GGML_METAL_SHARED_BUFFERS_ENABLE: '1' },
      {
        value: true,
        reason:
          'hasUnifiedMemory=NO, location=builtin, GGML_METAL_SHARED_BUFFERS_DISABLE unset, GGML_METAL_SHARED_BUFFERS_ENABLE="1"',
      },
      [],
    ],
  ])(
    '%s: use_shared_buffers without unified memory, location %s, env %j',
    (release, location, env, shared, warnings) => {
      const device = withFamilies('Apple M1 Ultra', { hasUnifiedMemory: false, location } as Partial<DeviceReport>);
      const prediction = p(device, release, env);
      const flags = prediction.flags as Record<string, unknown>;
      expect({ use_shared_buffers: flags.use_shared_buffers, warnings: prediction.warnings }).toEqual({
        use_shared_buffers: shared,
        warnings,
      });
    },
  );
});

describe('llama.cpp, legacy rules, whole predictions', () => {
  it('the stock guest, with variables only the current rules read: each one warned, in a fixed order', () => {
    const env = { GGML_METAL_TENSOR_ENABLE: '', GGML_METAL_BF16_DISABLE: '1', UNRELATED: 'x' };
    expect(predictGates(guest.devices[0]!, 'llama.cpp', { env, host: guest.host, rules: 'legacy' })).toEqual({
      engine: 'llama.cpp',
      rules: 'legacy',
      releases: 'up to b6431 (ggml-metal.m)',
      release: null,
      deviceName: 'Apple Paravirtual device',
      flags: {
        has_simdgroup_reduction: { value: false, reason: 'supportsFamily(Apple7)=NO, supportsFamily(Metal3)=NO' },
        has_simdgroup_mm: {
          value: false,
          reason: 'supportsFamily(Apple7)=NO, asked again on every MUL_MAT encode to pick the matrix-matrix kernel',
        },
        has_bfloat: {
          value: false,
          reason:
            'supportsFamily(Metal3)=NO, supportsFamily(Apple6)=NO, GGML_METAL_BF16_DISABLE is set but these rules do not read it',
        },
        use_bfloat: {
          value: false,
          reason:
            'supportsFamily(Metal3)=NO, supportsFamily(Apple6)=NO, built with the CMake default GGML_METAL_USE_BF16=OFF, so false whatever the device answers (an ON build would make it false)',
        },
        has_residency_sets: {
          value: true,
          reason: `GGML_METAL_NO_RESIDENCY unset, ${ARM64_BUILD}, macOS 26.5.2 ≥ 15.0, ${SETS_CREATED}`,
        },
      },
      tuning: null,
      consequences: {
        cpuFallbackOps: [
          'MUL_MAT',
          'MUL_MAT_ID',
          'SOFT_MAX',
          'RMS_NORM',
          'NORM',
          'GROUP_NORM',
          'L2_NORM',
          'SUM_ROWS',
          'MEAN',
          'FLASH_ATTN_EXT',
        ],
        matMulKernels: 'mat-vec-only',
        flashAttentionOnGpu: false,
        bf16Ops: 'rejected',
        residencySetsCreated: true,
        summary:
          'SIMD-group reduction off: 10 op types (MUL_MAT, MUL_MAT_ID, SOFT_MAX, RMS_NORM, …) fall back to the CPU; flash attention falls back to the CPU; BF16 ops rejected.',
      },
      warnings: [
        LEGACY_ENCODE,
        'GGML_METAL_BF16_DISABLE is set but legacy ggml-metal.m does not read it',
        'GGML_METAL_TENSOR_ENABLE is set but legacy ggml-metal.m does not read it',
      ],
    });
  });

  it('without those variables only the encode warning remains, and bfloat’s reason has no note', () => {
    const p = predictGates(m1.devices[0]!, 'llama.cpp', { env: {}, host: m1.host, rules: 'legacy' });
    expect(p.warnings).toEqual([LEGACY_ENCODE]);
    expect(p.flags.has_bfloat).toEqual({
      value: true,
      reason: 'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES',
    });
    // Release builds leave GGML_METAL_USE_BF16 OFF, so ggml-metal.m rejects BF16 ops whatever the device says.
    expect(p.flags.use_bfloat).toEqual({
      value: false,
      reason:
        'supportsFamily(Metal3)=YES, supportsFamily(Apple6)=YES, built with the CMake default GGML_METAL_USE_BF16=OFF, so false whatever the device answers (an ON build would make it true)',
    });
    expect(p.consequences.summary).toBe(
      'MUL_MAT uses SIMD-group matrix kernels; flash attention runs on the GPU; BF16 ops rejected.',
    );
  });

  it("has_residency_sets: false in an x86_64 build, the initial value of ggml-metal.m's static; the arm64 build reads the switch", () => {
    const x86 = predictGates(m1.devices[0]!, 'llama.cpp', {
      env: { GGML_METAL_NO_RESIDENCY: '1' },
      host: { ...m1.host, arch: 'x86_64' },
      rules: 'legacy',
    });
    expect(x86.flags.has_residency_sets).toEqual({
      value: false,
      reason: `GGML_METAL_NO_RESIDENCY="1", ${X86_BUILD}, macOS 26.6.1 ≥ 15.0, ${X86_NO_SETS_LEGACY}`,
    });
    const arm = predictGates(m1.devices[0]!, 'llama.cpp', {
      env: { GGML_METAL_NO_RESIDENCY: '1' },
      host: m1.host,
      rules: 'legacy',
    });
    expect(arm.flags.has_residency_sets).toEqual({
      value: false,
      reason: `GGML_METAL_NO_RESIDENCY="1", ${ARM64_BUILD}, macOS 26.6.1 ≥ 15.0, no set is created`,
    });
  });
});

describe('MLX, whole predictions', () => {
  it('the stock guest: no residency sets, no architecture in the report, 0.95 × the working set', () => {
    expect(predictGates(guest.devices[0]!, 'mlx', { env: {}, host: guest.host })).toEqual({
      engine: 'mlx',
      deviceName: 'Apple Paravirtual device',
      residencySets: { value: false, reason: 'supportsFamily(Metal3)=NO, macOS 26.5.2 ≥ 15.0' },
      architectureGeneration: {
        value: null,
        reason:
          'architecture.name=unknown, not in this report (architecture.name needs macOS 14+); MLX reads it itself at init',
      },
      allocatorLimitBytes: {
        value: 11409122918,
        reason:
          'recommendedMaxWorkingSetSize=12009603072 (11453.25 MiB), 0.95 × that = 11409122918, 1.5 × that = 18014404608, hw.memsize=17179869184 (16.00 GiB), 0.95 × that = 16320875724, gc limit = 11409122918',
      },
      heapSkipped: {
        value: true,
        reason:
          'name "Apple Paravirtual device" is "Apple Paravirtual device", MLX knows it is in a VM from the name and skips its heap there on purpose (a profile with deviceName changes the name)',
      },
      warnings: [],
    });
  });

  it('the bare-metal M1 Ultra: residency sets, generation 13 (ultra), no warning', () => {
    expect(predictGates(m1.devices[0]!, 'mlx', { env: {}, host: m1.host })).toEqual({
      engine: 'mlx',
      deviceName: 'Apple M1 Ultra',
      residencySets: { value: true, reason: 'supportsFamily(Metal3)=YES, macOS 26.6.1 ≥ 15.0' },
      architectureGeneration: { value: 13, reason: 'architecture.name="applegpu_g13d", class ultra' },
      allocatorLimitBytes: {
        value: 48962627174,
        reason:
          'recommendedMaxWorkingSetSize=51539607552 (49152.00 MiB), 0.95 × that = 48962627174, 1.5 × that = 77309411328, hw.memsize=68719476736 (64.00 GiB), 0.95 × that = 65283502899, gc limit = 48962627174',
      },
      heapSkipped: {
        value: false,
        reason:
          'name "Apple M1 Ultra" is not "Apple Paravirtual device", MLX creates its heap and adds it to its residency set',
      },
      warnings: [],
    });
  });

  it('the Intel Mac’s second device: not the device MLX picks, and macOS 13 has no residency sets', () => {
    const p = predictGates(intelMac.devices[1]!, 'mlx', { env: {}, host: intelMac.host });
    expect(p.residencySets).toEqual({ value: false, reason: 'supportsFamily(Metal3)=YES, macOS 13.6.9 < 15.0' });
    expect(p.warnings).toEqual([
      'MLX uses MTLCopyAllDevices()[0]; this report is device 1 ("AMD Radeon Pro 5500M"), which MLX does not pick',
    ]);
  });

  it('Metal3 on the paravirtual device: both residency warnings, in order', () => {
    const device = paravirt();
    device.families.metal3 = true;
    expect(predictGates(device, 'mlx', { env: {}, host: guest.host }).warnings).toEqual([
      RESIDENCY_THROWS,
      METAL3_ON_VM,
    ]);
  });

  // Each sign of a virtual machine on its own: kern.hv_vmm_present, hw.model, the device name.
  it.each<[string, Partial<HostInfo> | null, string, string[]]>([
    ['kern.hv_vmm_present alone', { isVirtualMachine: true, model: 'Mac13,2' }, 'Some GPU', [METAL3_ON_VM]],
    ['hw.model alone', { isVirtualMachine: false, model: 'VirtualMac2,1' }, 'Some GPU', [METAL3_ON_VM]],
    [
      'hw.model alone, with no VM flag recorded',
      { isVirtualMachine: null, model: 'VirtualMac2,1' },
      'Some GPU',
      [METAL3_ON_VM],
    ],
    [
      'the device name alone',
      { isVirtualMachine: false, model: 'Mac13,2' },
      'Apple Paravirtual device',
      [RESIDENCY_THROWS, METAL3_ON_VM],
    ],
    ['the device name alone, no host known', null, 'Apple Paravirtual device', [RESIDENCY_THROWS, METAL3_ON_VM]],
    ['none of them', { isVirtualMachine: false, model: 'Mac13,2' }, 'Some GPU', []],
    ['a model that only ends in VirtualMac', { isVirtualMachine: false, model: 'NotAVirtualMac' }, 'Some GPU', []],
    ['no host and no name', null, 'Some GPU', []],
  ])('Metal3 answered YES, VM signal: %s', (_what, hostFacts, name, warnings) => {
    const device = { ...structuredClone(m1.devices[0]!), name };
    const host = hostFacts === null ? null : { ...m1.host, ...hostFacts };
    expect(predictGates(device, 'mlx', { env: {}, host }).warnings).toEqual(warnings);
  });

  it('below macOS 15 the name alone gives no residency-set warning, the VM warning stays', () => {
    const device = paravirt();
    device.families.metal3 = true;
    const p = predictGates(device, 'mlx', { env: {}, host: { ...guest.host, osVersion: '14.6' } });
    expect(p.residencySets).toEqual({ value: false, reason: 'supportsFamily(Metal3)=YES, macOS 14.6 < 15.0' });
    expect(p.warnings).toEqual([METAL3_ON_VM]);
  });

  it.each<[string, string | null, Record<string, string>, number | null, string]>([
    [
      'an override',
      'applegpu_g13s',
      { MLX_METAL_GPU_ARCH: 'applegpu_g16s' },
      16,
      'MLX_METAL_GPU_ARCH="applegpu_g16s" overrides architecture.name="applegpu_g13s", class max',
    ],
    [
      'an override with no reported architecture',
      null,
      { MLX_METAL_GPU_ARCH: 'applegpu_g15g' },
      15,
      'MLX_METAL_GPU_ARCH="applegpu_g15g" overrides architecture.name=unknown, class base/pro',
    ],
    [
      'an empty override',
      'applegpu_g14p',
      { MLX_METAL_GPU_ARCH: '' },
      14,
      'architecture.name="applegpu_g14p" (MLX_METAL_GPU_ARCH empty, ignored), class phone',
    ],
    [
      'an unknown class letter',
      'applegpu_g17x',
      {},
      17,
      'architecture.name="applegpu_g17x", class "x" unknown (MLX uses medium defaults)',
    ],
    ['the shortest name with two digits', '13s', {}, 13, 'architecture.name="13s", class max'],
    [
      'a name one character shorter',
      '3s',
      {},
      null,
      'architecture.name="3s", no two digits before the last character; MLX would count each non-digit as 0',
    ],
    [
      'a non-digit tens place',
      'applegpu_gx3s',
      {},
      null,
      'architecture.name="applegpu_gx3s", no two digits before the last character; MLX would count each non-digit as 0',
    ],
    [
      'a non-digit ones place',
      'applegpu_g1xs',
      {},
      null,
      'architecture.name="applegpu_g1xs", no two digits before the last character; MLX would count each non-digit as 0',
    ],
    [
      'an empty override and none reported',
      null,
      { MLX_METAL_GPU_ARCH: '' },
      null,
      'architecture.name=unknown (MLX_METAL_GPU_ARCH empty, ignored), not in this report (architecture.name needs macOS 14+); MLX reads it itself at init',
    ],
  ])('architectureGeneration: %s', (_what, architecture, env, value, reason) => {
    const device = { ...structuredClone(m1.devices[0]!), architecture };
    expect(predictGates(device, 'mlx', { env, host: m1.host }).architectureGeneration).toEqual({ value, reason });
  });

  it('a reported architecture that is not a string counts as unknown', () => {
    const device = { ...structuredClone(m1.devices[0]!), architecture: 13 } as unknown as DeviceReport;
    expect(predictGates(device, 'mlx', { env: {}, host: m1.host }).architectureGeneration.reason).toBe(
      'architecture.name=unknown, not in this report (architecture.name needs macOS 14+); MLX reads it itself at init',
    );
  });

  const RAM_64G = 'hw.memsize=68719476736 (64.00 GiB), 0.95 × that = 65283502899';
  it.each<[string, unknown, number | null, string]>([
    [
      'zero',
      0,
      0,
      `recommendedMaxWorkingSetSize=0 (0.00 MiB), 0.95 × that = 0, 1.5 × that = 0, ${RAM_64G}, gc limit = 0`,
    ],
    [
      'one MiB',
      1048576,
      996147,
      `recommendedMaxWorkingSetSize=1048576 (1.00 MiB), 0.95 × that = 996147, 1.5 × that = 1572864, ${RAM_64G}, gc limit = 996147`,
    ],
    ['negative', -1, null, 'recommendedMaxWorkingSetSize unknown'],
    ['infinite', Number.POSITIVE_INFINITY, null, 'recommendedMaxWorkingSetSize unknown'],
    ['not a number', Number.NaN, null, 'recommendedMaxWorkingSetSize unknown'],
    ['null', null, null, 'recommendedMaxWorkingSetSize unknown'],
    ['a string', '1048576', null, 'recommendedMaxWorkingSetSize unknown'],
  ])('allocatorLimitBytes for a working set that is %s', (_what, wss, value, reason) => {
    const device = { ...structuredClone(m1.devices[0]!), recommendedMaxWorkingSetSize: wss } as unknown as DeviceReport;
    expect(predictGates(device, 'mlx', { env: {}, host: m1.host }).allocatorLimitBytes).toEqual({ value, reason });
  });
});

describe('MLX allocator limit: the RAM bound', () => {
  const device = (wss: number) => ({ ...structuredClone(m1.devices[0]!), recommendedMaxWorkingSetSize: wss });

  it('wins when 0.95 × RAM is below 0.95 × the working set', () => {
    expect(
      predictGates(device(68719476736), 'mlx', { env: {}, host: { ...m1.host, memoryBytes: 34359738368 } })
        .allocatorLimitBytes,
    ).toEqual({
      value: 32641751449,
      reason:
        'recommendedMaxWorkingSetSize=68719476736 (65536.00 MiB), 0.95 × that = 65283502899, 1.5 × that = 103079215104, hw.memsize=34359738368 (32.00 GiB), 0.95 × that = 32641751449, gc limit = 32641751449',
    });
  });

  it.each<[string, unknown]>([
    ['unrecorded', null],
    ['zero', 0],
    ['not a number', '64G'],
  ])('is left out when RAM is %s', (_what, memoryBytes) => {
    const host = { ...m1.host, memoryBytes } as unknown as HostInfo;
    expect(predictGates(device(1048576), 'mlx', { env: {}, host }).allocatorLimitBytes).toEqual({
      value: 996147,
      reason:
        'recommendedMaxWorkingSetSize=1048576 (1.00 MiB), 0.95 × that = 996147, 1.5 × that = 1572864, hw.memsize unknown: the 0.95 × RAM bound is left out, so the real limit may be lower, gc limit = 996147',
    });
  });
});

describe('predictGates: the whole error for each bad argument', () => {
  const device = () => structuredClone(m1.devices[0]!);
  function thrown(fn: () => unknown): Record<string, unknown> {
    try {
      fn();
    } catch (e) {
      const err = e as Error & { code: string; option: string };
      return { name: err.constructor.name, code: err.code, option: err.option, message: err.message };
    }
    throw new Error('expected a throw');
  }
  const invalid = (option: string, message: string) => ({
    name: 'InvalidOptionsError',
    code: 'ERR_INVALID_OPTIONS',
    option,
    message,
  });
  const call = (d: unknown, engine: unknown, options?: unknown) => () =>
    predictGates(d as DeviceReport, engine as 'mlx', options as undefined);

  it.each<[string, unknown, string]>([
    ['an unknown name', 'pytorch', 'the string "pytorch"'],
    ['null', null, 'null'],
    ['an array', ['mlx'], 'an array'],
    ['a number', 5, 'number 5'],
    ['nothing', undefined, 'undefined'],
  ])('engine: %s', (_what, engine, shown) => {
    expect(thrown(call(device(), engine))).toEqual(
      invalid('engine', `engine must be one of "llama.cpp", "mlx"; got ${shown}`),
    );
  });

  it.each<[string, unknown, string]>([
    ['null', null, 'null'],
    ['a string', 'M1', 'the string "M1"'],
    ['an object without families', { name: 'x' }, 'an object without families'],
    ['families that are not an object', { name: 'x', families: 'apple7' }, 'an object without families'],
    ['families as an array', { name: 'x', families: [] }, 'an object without families'],
  ])('device: %s', (_what, d, shown) => {
    expect(thrown(call(d, 'llama.cpp'))).toEqual(
      invalid('device', `device must be a DeviceReport object with a "families" object; got ${shown}`),
    );
  });

  it('device: a family answer of the wrong type, or a name that is not a string', () => {
    expect(thrown(call({ ...device(), families: { ...device().families, apple7: 'yes' } }, 'llama.cpp'))).toEqual(
      invalid('device', 'device.families.apple7 must be true, false or null; got the string "yes"'),
    );
    expect(thrown(call({ ...device(), name: undefined }, 'llama.cpp'))).toEqual(
      invalid('device', 'device.name must be a string; got undefined'),
    );
    expect(thrown(call({ ...device(), name: 5 }, 'mlx'))).toEqual(
      invalid('device', 'device.name must be a string; got number 5'),
    );
  });

  it('options: null is no options, as for every entry point', () => {
    for (const engine of ['llama.cpp', 'mlx'] as const) {
      expect(predictGates(device(), engine, null as never)).toEqual(predictGates(device(), engine));
    }
  });

  it('device: an absent family answer and keys that name no family are accepted', () => {
    const d = device() as unknown as { families: Record<string, unknown> };
    d.families.apple7 = undefined;
    d.families.futureFamily = 'whatever';
    expect(
      predictGates(d as unknown as DeviceReport, 'llama.cpp', { env: {}, host: m1.host }).flags.has_simdgroup_mm,
    ).toEqual({
      value: false,
      reason: 'supportsFamily(Apple7)=unknown (treated as NO)',
    });
  });

  it.each<[string, unknown, string, string]>([
    ['options as a number', 5, 'options', 'predictGates() takes an options object, got number 5'],
    ['options as an array', [], 'options', 'predictGates() takes an options object, got an array'],
    [
      'an unknown option',
      { envv: {} },
      'envv',
      "predictGates() has no option 'envv' (did you mean 'env'?); its options are env, host, rules, release",
    ],
    [
      'env as a string',
      { env: 'GGML=1' },
      'env',
      'env must be an object mapping names to strings (like process.env); got the string "GGML=1"',
    ],
    [
      'env as an array',
      { env: [] },
      'env',
      'env must be an object mapping names to strings (like process.env); got an array',
    ],
    [
      'an env value that is a boolean',
      { env: { GGML_METAL_BF16_DISABLE: true } },
      'env',
      'env values must be strings or undefined; env.GGML_METAL_BF16_DISABLE is boolean true',
    ],
    [
      'host as a string',
      { host: 'macOS 15' },
      'host',
      'host must be a HostInfo object or null; got the string "macOS 15"',
    ],
    ['host as an array', { host: [] }, 'host', 'host must be a HostInfo object or null; got an array'],
    [
      'an OS version that is a number',
      { host: { osVersion: 15 } },
      'host',
      'host.osVersion must be a string or null; got number 15',
    ],
    [
      'rules as a number',
      { rules: 1 },
      'rules',
      'rules must be one of "legacy", "device-b6673", "device-b6968", "device-b7010", "device-b7411", "device", "chip-tuning", "current"; got number 1',
    ],
    [
      'an unknown rule set',
      { rules: 'old' },
      'rules',
      'rules must be one of "legacy", "device-b6673", "device-b6968", "device-b7010", "device-b7411", "device", "chip-tuning", "current"; got the string "old"',
    ],
    [
      'a release that is no tag',
      { release: 'latest' },
      'release',
      'release must be a llama.cpp release tag like "b4753" or "v0.4.0"; got the string "latest"',
    ],
    [
      'a release as a number',
      { release: 4753 },
      'release',
      'release must be a llama.cpp release tag like "b4753" or "v0.4.0"; got number 4753',
    ],
    [
      // An array holding a tag reads as that tag when turned into text: a release is a string, nothing else.
      'a release tag in an array',
      { release: ['b4753'] },
      'release',
      'release must be a llama.cpp release tag like "b4753" or "v0.4.0"; got an array',
    ],
    [
      'rules and a release',
      { rules: 'legacy', release: 'b4753' },
      'rules',
      'give either rules or release, not both: a release decides its rule set',
    ],
  ])('%s', (_what, options, option, message) => {
    expect(thrown(call(device(), 'llama.cpp', options))).toEqual(invalid(option, message));
  });

  it('legacy rules for MLX', () => {
    expect(thrown(call(device(), 'mlx', { rules: 'legacy' }))).toEqual(
      invalid('rules', 'rules "legacy" applies to engine "llama.cpp" only; MLX accepts "current" or no rules option'),
    );
  });

  it('a llama.cpp release for MLX', () => {
    expect(thrown(call(device(), 'mlx', { release: 'v0.5.0' }))).toEqual(
      invalid('release', 'release names a llama.cpp release: engine "llama.cpp" only'),
    );
  });

  it('env values left undefined and a null host are accepted', () => {
    const p = predictGates(device(), 'llama.cpp', { env: { GGML_METAL_BF16_DISABLE: undefined }, host: null });
    expect(p.flags.has_bfloat.value).toBe(true);
  });
});
