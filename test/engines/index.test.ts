import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import {
  predictGates,
  ENGINES,
  LLAMA_CPP_OP_GATES,
  LLAMA_CPP_RULES,
  MLX_RULES,
  type LlamaCppCurrentPrediction,
  type LlamaCppLegacyPrediction,
  type LlamaCppRuleSet,
  type OpGate,
} from '../../lib/engines/index.js';
import { FAMILY_NAMES, type FamilyName } from '../../lib/core/families.js';
import type { DeviceReport, FamilyAnswers, HostInfo } from '../../lib/device/types.js';
import { InvalidOptionsError } from '../../lib/core/errors.js';

interface DeviceOpts {
  yes?: FamilyName[];
  unknown?: FamilyName[];
  name?: string;
  index?: number;
  isDefault?: boolean;
  hasUnifiedMemory?: boolean | null;
  location?: DeviceReport['location'];
  architecture?: string | null;
  recommendedMaxWorkingSetSize?: number | null;
}

/** A DeviceReport whose families are all NO unless listed in `yes` (or null when listed in `unknown`). */
function device(opts: DeviceOpts = {}): DeviceReport {
  const families = Object.fromEntries(FAMILY_NAMES.map((n) => [n, false])) as FamilyAnswers;
  for (const f of opts.yes ?? []) families[f] = true;
  for (const f of opts.unknown ?? []) families[f] = null;
  const flag = { value: null, rule: 'test fixture' };
  return {
    index: opts.index ?? 0,
    isDefault: opts.isDefault ?? true,
    name: opts.name ?? 'Test GPU',
    className: 'TestDevice',
    registryId: 1,
    families,
    highestAppleFamily: null,
    maxThreadgroupMemoryLength: 32768,
    maxThreadsPerThreadgroup: { width: 1024, height: 1024, depth: 1024 },
    recommendedMaxWorkingSetSize:
      opts.recommendedMaxWorkingSetSize === undefined ? 12_009_603_072 : opts.recommendedMaxWorkingSetSize,
    maxBufferLength: 8_589_934_592,
    hasUnifiedMemory: opts.hasUnifiedMemory === undefined ? true : opts.hasUnifiedMemory,
    location: opts.location === undefined ? 'builtIn' : opts.location,
    architecture: opts.architecture === undefined ? 'applegpu_g13s' : opts.architecture,
    simd: { reduction: flag, matrix: flag, bfloat16: flag },
  };
}

function host(osVersion: string | null, extra: Partial<HostInfo> = {}): HostInfo {
  return {
    osVersion,
    osBuild: null,
    model: 'Mac13,2',
    isVirtualMachine: false,
    arch: 'arm64',
    memoryBytes: null,
    translated: false,
    cpuBrand: null,
    chip: null,
    ...extra,
  };
}

const APPLE_1_5: FamilyName[] = ['apple1', 'apple2', 'apple3', 'apple4', 'apple5'];
const STOCK_GUEST: FamilyName[] = [...APPLE_1_5, 'common1', 'common2', 'common3'];
const M1_LIKE: FamilyName[] = [...APPLE_1_5, 'apple6', 'apple7', 'mac2', 'common1', 'common2', 'common3', 'metal3'];
const TAHOE = host('26.5.2');
const VM_HOST = host('26.5.2', { model: 'VirtualMac2,1', isVirtualMachine: true });

/** The op types a rule set's supports_op gates on a SIMD-group flag (on `needs` alone, if given), in its order. */
const gatedOps = (set: LlamaCppRuleSet, needs?: OpGate['needs']) =>
  LLAMA_CPP_OP_GATES[set].filter((g) => needs === undefined || g.needs === needs).map((g) => g.op);

function llama(
  dev: DeviceReport,
  env: Record<string, string | undefined> = {},
  h: HostInfo | null = TAHOE,
): LlamaCppCurrentPrediction {
  return predictGates(dev, 'llama.cpp', { env, host: h });
}

function legacy(
  dev: DeviceReport,
  env: Record<string, string | undefined> = {},
  h: HostInfo | null = TAHOE,
): LlamaCppLegacyPrediction {
  return predictGates(dev, 'llama.cpp', { env, host: h, rules: 'legacy' });
}

function expectInvalid(fn: () => unknown, option: string, messagePart?: RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(InvalidOptionsError);
  const err = caught as InvalidOptionsError;
  expect(err.code).toBe('ERR_INVALID_OPTIONS');
  expect(err.option).toBe(option);
  if (messagePart) expect(err.message).toMatch(messagePart);
}

describe('predictGates: llama.cpp current rules', () => {
  it('stock guest (Apple1–5, Common1–3): SIMD-group reduction, mm and bfloat all off, ops on the CPU', () => {
    const p = llama(device({ yes: STOCK_GUEST, name: 'Apple Paravirtual device' }));
    expect(p.engine).toBe('llama.cpp');
    expect(p.rules).toBe('current');
    expect(p.flags.has_simdgroup_reduction.value).toBe(false);
    expect(p.flags.has_simdgroup_mm.value).toBe(false);
    expect(p.flags.has_bfloat.value).toBe(false);
    expect(p.flags.has_simdgroup_reduction.reason).toBe('supportsFamily(Apple7)=NO, supportsFamily(Metal3)=NO');
    expect(p.flags.has_simdgroup_mm.reason).toContain('supportsFamily(Apple7)=NO');
    expect(p.flags.has_bfloat.reason).toContain('supportsFamily(Apple6)=NO');

    const c = p.consequences;
    // Both SIMD-group flags off: every op supports_op gates goes to the CPU, in the table's order.
    expect(c.cpuFallbackOps).toEqual(gatedOps('current'));
    expect(c.matMulKernels).toBe('mat-vec-only');
    expect(c.flashAttentionOnGpu).toBe(false);
    expect(c.bf16Ops).toBe('rejected');
    expect(c.summary).toMatch(/fall back to the CPU/);
    expect(c.summary).toMatch(/MUL_MAT/);
    expect(p.deviceName).toBe('Apple Paravirtual device');
  });

  it('Apple7: reduction, mm and bfloat all on, nothing on the CPU', () => {
    const p = llama(device({ yes: [...APPLE_1_5, 'apple6', 'apple7'] }));
    expect(p.flags.has_simdgroup_reduction.value).toBe(true);
    expect(p.flags.has_simdgroup_mm.value).toBe(true);
    expect(p.flags.has_bfloat.value).toBe(true);
    expect(p.flags.has_simdgroup_reduction.reason).toContain('supportsFamily(Apple7)=YES');
    expect(p.consequences.cpuFallbackOps).toEqual([]);
    expect(p.consequences.matMulKernels).toBe('simdgroup-mm');
    expect(p.consequences.flashAttentionOnGpu).toBe(true);
    expect(p.consequences.bf16Ops).toBe('supported');
    expect(p.consequences.summary).not.toMatch(/CPU/);
  });

  it('Apple7 alone (no Apple6, no Metal3) still gives all three only through reduction/mm; bfloat needs Apple6 or Metal3', () => {
    const p = llama(device({ yes: ['apple7'] }));
    expect(p.flags.has_simdgroup_reduction.value).toBe(true);
    expect(p.flags.has_simdgroup_mm.value).toBe(true);
    expect(p.flags.has_bfloat.value).toBe(false);
  });

  it('Apple6 only: bfloat, but neither reduction nor mm', () => {
    const p = llama(device({ yes: [...APPLE_1_5, 'apple6'] }));
    expect(p.flags.has_simdgroup_reduction.value).toBe(false);
    expect(p.flags.has_simdgroup_mm.value).toBe(false);
    expect(p.flags.has_bfloat.value).toBe(true);
    expect(p.flags.has_bfloat.reason).toContain('supportsFamily(Apple6)=YES');
    expect(p.consequences.bf16Ops).toBe('supported');
    expect(p.consequences.cpuFallbackOps).toEqual(gatedOps('current'));
  });

  it('Metal3 without Apple7: reduction and bfloat, not mm; only flash attention leaves the GPU', () => {
    const p = llama(device({ yes: [...APPLE_1_5, 'metal3'] }));
    expect(p.flags.has_simdgroup_reduction.value).toBe(true);
    expect(p.flags.has_simdgroup_mm.value).toBe(false);
    expect(p.flags.has_bfloat.value).toBe(true);
    expect(p.flags.has_simdgroup_reduction.reason).toBe('supportsFamily(Apple7)=NO, supportsFamily(Metal3)=YES');
    expect(p.consequences.cpuFallbackOps).toEqual(gatedOps('current', 'has_simdgroup_mm'));
    expect(p.consequences.matMulKernels).toBe('mat-vec-only');
    expect(p.consequences.flashAttentionOnGpu).toBe(false);
    expect(p.consequences.summary).toMatch(/mat-vec/);
  });

  it('GGML_METAL_BF16_DISABLE turns bfloat off, even when set to the empty string', () => {
    const dev = device({ yes: M1_LIKE });
    const off = llama(dev, { GGML_METAL_BF16_DISABLE: '1' });
    expect(off.flags.has_bfloat.value).toBe(false);
    expect(off.flags.has_bfloat.reason).toContain('GGML_METAL_BF16_DISABLE');
    expect(off.consequences.bf16Ops).toBe('rejected');
    // ggml checks getenv != NULL, so presence is what counts.
    expect(llama(dev, { GGML_METAL_BF16_DISABLE: '' }).flags.has_bfloat.value).toBe(false);
    expect(llama(dev, { GGML_METAL_BF16_DISABLE: undefined }).flags.has_bfloat.value).toBe(true);
    // the other flags are untouched
    expect(off.flags.has_simdgroup_reduction.value).toBe(true);
  });

  it('has_tensor: Metal4 plus an M5-class name; DISABLE wins; ENABLE opens older chips', () => {
    const m5 = device({ yes: [...M1_LIKE, 'apple8', 'apple9', 'apple10', 'metal4'], name: 'Apple M5 Max' });
    const on = llama(m5);
    expect(on.flags.has_tensor.value).toBe(true);
    expect(on.flags.has_tensor.reason).toContain('supportsFamily(Metal4)=YES');
    expect(on.flags.has_tensor.reason).toContain('contains M5');

    const disabled = llama(m5, { GGML_METAL_TENSOR_DISABLE: '1' });
    expect(disabled.flags.has_tensor.value).toBe(false);
    expect(disabled.flags.has_tensor.reason).toContain('GGML_METAL_TENSOR_DISABLE');
    expect(llama(m5, { GGML_METAL_TENSOR_DISABLE: '1', GGML_METAL_TENSOR_ENABLE: '1' }).flags.has_tensor.value).toBe(
      false,
    );

    const m1 = device({ yes: [...M1_LIKE, 'metal4'], name: 'Apple M1 Ultra' });
    expect(llama(m1).flags.has_tensor.value).toBe(false);
    expect(llama(m1).flags.has_tensor.reason).toContain('has no M5/M6/A19/A20');
    expect(llama(m1, { GGML_METAL_TENSOR_ENABLE: '1' }).flags.has_tensor.value).toBe(true);
    expect(
      llama(device({ yes: M1_LIKE, name: 'Apple M5' }), { GGML_METAL_TENSOR_ENABLE: '1' }).flags.has_tensor.value,
    ).toBe(false);
    expect(llama(device({ yes: ['metal4'], name: 'Apple A19 Pro' })).flags.has_tensor.value).toBe(true);
  });

  it('use_residency_sets is true by default; sets are created only by arm64 builds on macOS 15+, and it says so', () => {
    const dev = device({ yes: M1_LIKE });
    const residency = (env: Record<string, string>, h: HostInfo) => {
      const p = llama(dev, env, h);
      return { flag: p.flags.use_residency_sets, created: p.consequences.residencySetsCreated };
    };
    expect(residency({}, host('15.0'))).toEqual({
      flag: {
        value: true,
        reason:
          'GGML_METAL_NO_RESIDENCY unset, arm64 host, not translated: an arm64 build, macOS 15.0 ≥ 15.0, sets are created: only arm64 builds against the macOS 15+ SDK create them (an older SDK leaves the flag at its initial value)',
      },
      created: true,
    });
    // The flag is set before ggml's @available(macOS 15.0) check, so it stays true on macOS 14 while no set exists.
    expect(residency({}, host('14.5'))).toEqual({
      flag: {
        value: true,
        reason:
          'GGML_METAL_NO_RESIDENCY unset, arm64 host, not translated: an arm64 build, macOS 14.5 < 15.0, the flag is true, but sets are created only under @available(macOS 15.0): none here',
      },
      created: false,
    });
    expect(residency({ GGML_METAL_NO_RESIDENCY: '1' }, host('26.5.2'))).toEqual({
      flag: {
        value: false,
        reason:
          'GGML_METAL_NO_RESIDENCY="1", arm64 host, not translated: an arm64 build, macOS 26.5.2 ≥ 15.0, no set is created',
      },
      created: false,
    });
  });

  it('use_residency_sets on x86_64: true, GGML_METAL_NO_RESIDENCY not read, no set created', () => {
    const dev = device({ yes: M1_LIKE });
    const x86 = llama(dev, { GGML_METAL_NO_RESIDENCY: '1' }, host('13.6.9', { arch: 'x86_64' }));
    expect(x86.flags.use_residency_sets).toEqual({
      value: true,
      reason:
        'GGML_METAL_NO_RESIDENCY="1", x86_64 host: an x86_64 build, macOS 13.6.9 < 15.0, x86_64 builds compile residency sets out: the flag keeps its initial value (true), GGML_METAL_NO_RESIDENCY is not read, no set is created',
    });
    expect(x86.consequences.residencySetsCreated).toBe(false);
  });

  it('under Rosetta (translated) an Apple-silicon host is predicted as for an x86_64 build', () => {
    const dev = device({ yes: M1_LIKE });
    const rosetta = llama(dev, {}, host('26.5.2', { arch: 'arm64', translated: true }));
    expect(rosetta.flags.use_residency_sets).toEqual({
      value: true,
      reason:
        'GGML_METAL_NO_RESIDENCY unset, under Rosetta (sysctl.proc_translated=1): an x86_64 build, macOS 26.5.2 ≥ 15.0, x86_64 builds compile residency sets out: the flag keeps its initial value (true), GGML_METAL_NO_RESIDENCY is not read, no set is created',
    });
    expect(rosetta.consequences.residencySetsCreated).toBe(false);
    // The same host not translated creates sets: only `translated` differs.
    expect(llama(dev, {}, host('26.5.2', { arch: 'arm64', translated: false })).consequences.residencySetsCreated).toBe(
      true,
    );
    expect(
      llama(dev, { GGML_METAL_NO_RESIDENCY: '1' }, host('26.5.2', { translated: true })).flags.use_residency_sets.value,
    ).toBe(true);
    expect(
      llama(dev, { GGML_METAL_NO_RESIDENCY: '1' }, host('26.5.2', { translated: false })).flags.use_residency_sets
        .value,
    ).toBe(false);
  });

  it('use_residency_sets with no host: assumes the macOS minimum is met and says so', () => {
    const dev = device({ yes: M1_LIKE });
    const none = llama(dev, {}, null);
    expect(none.flags.use_residency_sets.value).toBe(true);
    expect(none.flags.use_residency_sets.reason).toContain('unknown macOS version');
    const absent = predictGates(dev, 'llama.cpp', { env: {} });
    expect(absent.flags.use_residency_sets.reason).toContain('unknown macOS version');
    const garbled = llama(dev, {}, host('not-a-version'));
    expect(garbled.flags.use_residency_sets.value).toBe(true);
    expect(garbled.flags.use_residency_sets.reason).toContain('unknown macOS version');
    expect(llama(dev, {}, host(null)).flags.use_residency_sets.reason).toContain('unknown macOS version');
  });

  it('use_shared_buffers: unified memory, or an external GPU in an x86_64 build; DISABLE then ENABLE overrides', () => {
    const uma = device({ yes: M1_LIKE });
    expect(llama(uma).flags.use_shared_buffers.value).toBe(true);
    expect(llama(uma).flags.use_shared_buffers.reason).toContain('hasUnifiedMemory=YES');
    const disabled = llama(uma, { GGML_METAL_SHARED_BUFFERS_DISABLE: '1' });
    expect(disabled.flags.use_shared_buffers.value).toBe(false);
    expect(disabled.flags.use_shared_buffers.reason).toContain('GGML_METAL_SHARED_BUFFERS_DISABLE');
    // ENABLE is applied after DISABLE
    expect(
      llama(uma, { GGML_METAL_SHARED_BUFFERS_DISABLE: '1', GGML_METAL_SHARED_BUFFERS_ENABLE: '1' }).flags
        .use_shared_buffers.value,
    ).toBe(true);

    const discrete = device({
      yes: ['mac2', 'metal3'],
      hasUnifiedMemory: false,
      location: 'slot',
      name: 'AMD Radeon Pro 5500M',
    });
    expect(llama(discrete).flags.use_shared_buffers.value).toBe(false);
    expect(llama(discrete, { GGML_METAL_SHARED_BUFFERS_ENABLE: '' }).flags.use_shared_buffers.value).toBe(true);
    const egpu = device({ yes: ['mac2', 'metal3'], hasUnifiedMemory: false, location: 'external' });
    // v0.5.0 reads the location in x86_64 builds only; v0.4 in every build.
    expect(llama(egpu, {}, host('13.6.9', { arch: 'x86_64' })).flags.use_shared_buffers.value).toBe(true);
    expect(llama(egpu, {}, host('15.1', { arch: 'arm64' })).flags.use_shared_buffers.value).toBe(false);
    expect(
      predictGates(egpu, 'llama.cpp', { env: {}, host: host('15.1', { arch: 'arm64' }), rules: 'chip-tuning' }).flags
        .use_shared_buffers.value,
    ).toBe(true);
    expect(llama(device({ hasUnifiedMemory: null, location: null })).flags.use_shared_buffers.value).toBe(false);
  });

  it('defaults env to process.env', () => {
    const dev = device({ yes: M1_LIKE });
    const before = process.env.GGML_METAL_BF16_DISABLE;
    process.env.GGML_METAL_BF16_DISABLE = '1';
    try {
      expect(predictGates(dev, 'llama.cpp').flags.has_bfloat.value).toBe(false);
    } finally {
      if (before === undefined) delete process.env.GGML_METAL_BF16_DISABLE;
      else process.env.GGML_METAL_BF16_DISABLE = before;
    }
  });

  it('warns about unanswered family queries and about a non-default device', () => {
    const p = llama(device({ yes: APPLE_1_5, unknown: ['apple7'], isDefault: false, index: 1, name: 'AMD Radeon' }));
    expect(p.flags.has_simdgroup_mm.value).toBe(false);
    expect(p.flags.has_simdgroup_mm.reason).toContain('supportsFamily(Apple7)=unknown');
    expect(p.warnings).toEqual([
      'supportsFamily(Apple7) has no answer in this report; predicted as NO, the engine may see otherwise',
      'ggml-metal uses MTLCreateSystemDefaultDevice(); this report is device 1 ("AMD Radeon"), which llama.cpp does not pick',
    ]);
    expect(llama(device({ yes: M1_LIKE })).warnings).toEqual([]);
  });
});

describe('predictGates: llama.cpp legacy rules', () => {
  it('is selectable and names the flags as ggml-metal.m did', () => {
    const p = legacy(device({ yes: M1_LIKE }));
    expect(p.rules).toBe('legacy');
    expect(Object.keys(p.flags).sort()).toEqual(
      [
        'has_bfloat',
        'has_residency_sets',
        'has_simdgroup_mm',
        'has_simdgroup_reduction',
        'max_working_set_size',
        'use_bfloat',
      ].sort(),
    );
    expect('has_tensor' in p.flags).toBe(false);
    expect('use_shared_buffers' in p.flags).toBe(false);
    expect(p.flags.has_simdgroup_reduction.value).toBe(true);
    expect(p.flags.has_simdgroup_mm.value).toBe(true);
    expect(p.flags.has_simdgroup_mm.reason).toContain('every MUL_MAT encode');
    expect(p.flags.use_bfloat.reason).toContain('GGML_METAL_USE_BF16');
    expect(p.warnings).toEqual([
      'legacy ggml-metal.m asks supportsFamily(Apple7) on every MUL_MAT encode: a capability patch must stay installed for the life of the process',
    ]);
  });

  it('agrees with current rules on the SIMD-group family predicates', () => {
    for (const yes of [STOCK_GUEST, [...APPLE_1_5, 'apple6'], [...APPLE_1_5, 'metal3'], M1_LIKE] as FamilyName[][]) {
      const cur = llama(device({ yes }));
      const old = legacy(device({ yes }));
      expect(old.flags.has_simdgroup_reduction.value).toBe(cur.flags.has_simdgroup_reduction.value);
      expect(old.flags.has_simdgroup_mm.value).toBe(cur.flags.has_simdgroup_mm.value);
      expect(old.flags.has_bfloat.value).toBe(cur.flags.has_bfloat.value);
    }
  });

  it('differs where ggml changed: BF16_DISABLE is not read, ARGMAX is not gated, fewer ops gated', () => {
    const dev = device({ yes: M1_LIKE });
    const old = legacy(dev, { GGML_METAL_BF16_DISABLE: '1' });
    const cur = llama(dev, { GGML_METAL_BF16_DISABLE: '1' });
    expect(cur.flags.has_bfloat.value).toBe(false);
    expect(old.flags.has_bfloat.value).toBe(true);
    // Built with the CMake default GGML_METAL_USE_BF16=OFF: ggml-metal.m rejects BF16 ops on any device.
    expect(old.flags.use_bfloat.value).toBe(false);
    expect(old.consequences.bf16Ops).toBe('rejected');
    expect(old.flags.has_bfloat.reason).toContain('do not read');
    expect(old.warnings).toEqual([
      'legacy ggml-metal.m asks supportsFamily(Apple7) on every MUL_MAT encode: a capability patch must stay installed for the life of the process',
      'GGML_METAL_BF16_DISABLE is set but legacy ggml-metal.m does not read it',
    ]);

    const stockOld = legacy(device({ yes: STOCK_GUEST }));
    const stockCur = llama(device({ yes: STOCK_GUEST }));
    expect(stockOld.consequences.cpuFallbackOps).toEqual(gatedOps('legacy'));
    expect(stockCur.consequences.cpuFallbackOps).toEqual(gatedOps('current'));
    expect(stockOld.consequences.cpuFallbackOps).not.toContain('ARGMAX');
    expect(stockCur.consequences.cpuFallbackOps).toContain('ARGMAX');
    expect(stockOld.consequences.cpuFallbackOps.length).toBeLessThan(stockCur.consequences.cpuFallbackOps.length);
  });

  it("has_residency_sets follows the same creation rule; an x86_64 build keeps the static's false", () => {
    const dev = device({ yes: M1_LIKE });
    const residency = (env: Record<string, string>, h: HostInfo) => {
      const p = legacy(dev, env, h);
      return [p.flags.has_residency_sets.value, p.consequences.residencySetsCreated];
    };
    expect(residency({}, host('14.5'))).toEqual([true, false]);
    expect(residency({}, host('15.1'))).toEqual([true, true]);
    expect(residency({ GGML_METAL_NO_RESIDENCY: '1' }, host('15.1'))).toEqual([false, false]);
    expect(residency({ GGML_METAL_NO_RESIDENCY: '1' }, host('15.1', { arch: 'x86_64' }))).toEqual([false, false]);
    expect(residency({}, host('15.1', { arch: 'x86_64' }))).toEqual([false, false]);
  });
});

describe('predictGates: MLX', () => {
  it('metal3 on a paravirtual device: residency sets on, with the residency-set warning', () => {
    const p = predictGates(
      device({ yes: [...APPLE_1_5, 'apple6', 'apple7', 'metal3'], name: 'Apple Paravirtual device' }),
      'mlx',
      {
        env: {},
        host: VM_HOST,
      },
    );
    expect(p.engine).toBe('mlx');
    expect(p.flags.residencySets.value).toBe(true);
    expect(p.flags.residencySets.reason).toContain('supportsFamily(Metal3)=YES');
    expect(p.warnings).toEqual([
      'advertising metal3 makes MLX create residency sets; the paravirtual device cannot ("Unable to construct residency set")',
      'supportsFamily(Metal3)=YES on a virtual machine: MLX on macOS 15+ then creates residency sets and throws if the VM GPU cannot; answer Apple families only, never Metal3',
    ]);
  });

  it('metal3 on any VM host warns, even when the name is not Paravirtual or macOS is < 15', () => {
    const p = predictGates(device({ yes: ['apple7', 'metal3'], name: 'Some GPU' }), 'mlx', {
      env: {},
      host: host('14.6', { isVirtualMachine: true }),
    });
    expect(p.flags.residencySets.value).toBe(false);
    expect(p.warnings).toEqual([
      'supportsFamily(Metal3)=YES on a virtual machine: MLX on macOS 15+ then creates residency sets and throws if the VM GPU cannot; answer Apple families only, never Metal3',
    ]);
  });

  it('without metal3: no residency sets and no residency warnings', () => {
    const p = predictGates(device({ yes: STOCK_GUEST, name: 'Apple Paravirtual device' }), 'mlx', {
      env: {},
      host: VM_HOST,
    });
    expect(p.flags.residencySets.value).toBe(false);
    expect(p.flags.residencySets.reason).toContain('supportsFamily(Metal3)=NO');
    expect(p.warnings).toEqual([]);
  });

  it('bare-metal metal3 on macOS 15+: residency sets on, no warning', () => {
    const p = predictGates(device({ yes: M1_LIKE, name: 'Apple M1 Ultra' }), 'mlx', { env: {}, host: TAHOE });
    expect(p.flags.residencySets.value).toBe(true);
    expect(p.warnings).toEqual([]);
    const unknownHost = predictGates(device({ yes: M1_LIKE }), 'mlx', { env: {} });
    expect(unknownHost.flags.residencySets.value).toBe(true);
    expect(unknownHost.flags.residencySets.reason).toContain('unknown macOS version');
  });

  it('allocator gc limit is min(0.95 × wss, 1.5 × wss, 0.95 × RAM), each term truncated as MLX does', () => {
    const lim = (bytes: number | null, memoryBytes: number | null = null) =>
      predictGates(device({ recommendedMaxWorkingSetSize: bytes }), 'mlx', {
        env: {},
        host: host('26.5.2', { memoryBytes }),
      }).flags.allocatorLimitBytes;
    // RAM large enough: the working-set term decides.
    expect(lim(12_009_603_072, 17_179_869_184)).toEqual({
      value: 11_409_122_918,
      reason:
        'recommendedMaxWorkingSetSize=12009603072 (11453.25 MiB), 0.95 × that = 11409122918, 1.5 × that = 18014404608, hw.memsize=17179869184 (16.00 GiB), 0.95 × that = 16320875724, gc limit = 11409122918',
    });
    // A working set the size of RAM: 0.95 × RAM equals 0.95 × wss, so either term gives the same limit.
    expect(lim(16_000_000_000, 16_000_000_000).value).toBe(15_200_000_000);
    // RAM smaller than the working set (a profile that raised wss above RAM): 0.95 × RAM decides.
    expect(lim(17_179_869_184, 8_589_934_592).value).toBe(8_160_437_862);
    // One byte either side of the crossover where 0.95 × RAM meets 0.95 × wss.
    expect(lim(1_000_000_000, 999_999_999).value).toBe(949_999_999);
    expect(lim(1_000_000_000, 1_000_000_001).value).toBe(950_000_000);
    expect(lim(101, 1_000_000).value).toBe(95);
  });

  it('allocator gc limit without hw.memsize: the RAM bound is left out and the reason says so', () => {
    const lim = (bytes: number | null) =>
      predictGates(device({ recommendedMaxWorkingSetSize: bytes }), 'mlx', { env: {}, host: null }).flags
        .allocatorLimitBytes;
    expect(lim(1_000_000_000)).toEqual({
      value: 950_000_000,
      reason:
        'recommendedMaxWorkingSetSize=1000000000 (953.67 MiB), 0.95 × that = 950000000, 1.5 × that = 1500000000, hw.memsize unknown: the 0.95 × RAM bound is left out, so the real limit may be lower, gc limit = 950000000',
    });
    expect(lim(null)).toEqual({ value: null, reason: 'recommendedMaxWorkingSetSize unknown' });
  });

  it('reports that MLX skips its heap when the name is exactly "Apple Paravirtual device"', () => {
    const heap = (name: string) => predictGates(device({ name }), 'mlx', { env: {}, host: VM_HOST }).flags.heapSkipped;
    expect(heap('Apple Paravirtual device')).toEqual({
      value: true,
      reason:
        'name "Apple Paravirtual device" is "Apple Paravirtual device", MLX knows it is in a VM from the name and skips its heap there on purpose (a profile with deviceName changes the name)',
    });
    // In a VM, the name a profile answers decides: a chip's name makes MLX create its heap there.
    expect(heap('Apple M1 Ultra')).toEqual({
      value: false,
      reason:
        'name "Apple M1 Ultra" is not "Apple Paravirtual device", in this VM MLX creates its heap and adds it to its residency set: the name no longer tells it it is in a VM, and it skips the heap there on purpose (doctor\'s heap probe tests that path)',
    });
    expect(predictGates(device({ name: 'Apple M1 Ultra' }), 'mlx', { env: {}, host: null }).flags.heapSkipped).toEqual({
      value: false,
      reason:
        'name "Apple M1 Ultra" is not "Apple Paravirtual device", MLX creates its heap and adds it to its residency set',
    });
    // Exact comparison, as MLX makes it: no substring or case folding.
    expect(heap('Apple Paravirtual Device').value).toBe(false);
    expect(heap('Apple Paravirtual device ').value).toBe(false);
  });

  it('warns when the report is not MTLCopyAllDevices()[0]', () => {
    const p = predictGates(device({ index: 1, name: 'AMD' }), 'mlx', { env: {} });
    expect(p.warnings).toEqual([
      'MLX uses MTLCopyAllDevices()[0]; this report is device 1 ("AMD"), which MLX does not pick',
    ]);
  });
});

describe('predictGates: invalid arguments', () => {
  const dev = device({ yes: M1_LIKE });

  it('rejects an unknown engine, listing the accepted ones', () => {
    expectInvalid(() => predictGates(dev, 'pytorch' as unknown as 'mlx'), 'engine', /"llama\.cpp", "mlx"/);
    expectInvalid(() => predictGates(dev, undefined as unknown as 'mlx'), 'engine', /must be one of/);
  });

  it('rejects a device that is not an object with families', () => {
    expectInvalid(() => predictGates(null as unknown as DeviceReport, 'mlx'), 'device', /families/);
    expectInvalid(() => predictGates({ name: 'x' } as unknown as DeviceReport, 'llama.cpp'), 'device', /families/);
    expectInvalid(
      () => predictGates({ name: 'x', families: 'apple7' } as unknown as DeviceReport, 'llama.cpp'),
      'device',
    );
    const badFamily = { ...dev, families: { ...dev.families, apple7: 'yes' } } as unknown as DeviceReport;
    expectInvalid(() => predictGates(badFamily, 'llama.cpp'), 'device', /apple7/);
  });

  it('rejects a non-object env, or non-string env values', () => {
    expectInvalid(
      () => predictGates(dev, 'llama.cpp', { env: 'GGML=1' as unknown as Record<string, string> }),
      'env',
      /object/,
    );
    expectInvalid(() => predictGates(dev, 'llama.cpp', { env: null as unknown as Record<string, string> }), 'env');
    expectInvalid(() => predictGates(dev, 'llama.cpp', { env: [] as unknown as Record<string, string> }), 'env');
    expectInvalid(
      () =>
        predictGates(dev, 'llama.cpp', { env: { GGML_METAL_BF16_DISABLE: true } as unknown as Record<string, string> }),
      'env',
      /GGML_METAL_BF16_DISABLE/,
    );
  });

  it('rejects a bad rules value, naming the accepted values', () => {
    expectInvalid(
      () => predictGates(dev, 'llama.cpp', { rules: 'old' as unknown as 'legacy' }),
      'rules',
      /"legacy-b0", "legacy-b1853", "legacy-b4040", "legacy-b4053", "legacy", "device-b6501", "device-b6968", "device-b7010", "device-b7411", "device", "chip-tuning", "current"/,
    );
    expectInvalid(() => predictGates(dev, 'mlx', { rules: 'legacy' }), 'rules', /llama\.cpp/);
    expect(predictGates(dev, 'mlx', { rules: 'current', env: {} }).engine).toBe('mlx');
  });

  it('rejects non-object options, unknown option names and a bad host', () => {
    expectInvalid(() => predictGates(dev, 'llama.cpp', 5 as unknown as object), 'options');
    expectInvalid(
      () => predictGates(dev, 'llama.cpp', { envv: {} } as unknown as object),
      'envv',
      /env, host, rules, release/,
    );
    expectInvalid(() => predictGates(dev, 'llama.cpp', { host: 'macOS 15' as unknown as HostInfo }), 'host');
    expectInvalid(
      () => predictGates(dev, 'llama.cpp', { host: { osVersion: 15 } as unknown as HostInfo }),
      'host',
      /osVersion/,
    );
  });
});

describe('rule tables', () => {
  it('ENGINES lists both engines', () => {
    expect([...ENGINES]).toEqual(['llama.cpp', 'mlx']);
  });

  it('each flag appears exactly once per table, with a source and a rule', () => {
    const tables: readonly (readonly { flag: string; source: string; rule: string }[])[] = [
      ...Object.values(LLAMA_CPP_RULES),
      MLX_RULES,
    ];
    for (const table of tables) {
      const flags = table.map((r) => r.flag);
      expect(new Set(flags).size).toBe(flags.length);
      for (const r of table) {
        expect(r.source.length).toBeGreaterThan(0);
        expect(r.rule.length).toBeGreaterThan(0);
      }
    }
    const deviceFlags = [
      'has_simdgroup_reduction',
      'has_simdgroup_mm',
      'has_bfloat',
      'has_tensor',
      'use_residency_sets',
      'use_shared_buffers',
    ];
    const memory = 'max_working_set_size';
    expect(LLAMA_CPP_RULES['device-b7411'].map((r) => r.flag)).toEqual([...deviceFlags, memory]);
    expect(LLAMA_CPP_RULES.device.map((r) => r.flag)).toEqual([...deviceFlags, 'device_id', memory]);
    expect(LLAMA_CPP_RULES['chip-tuning'].map((r) => r.flag)).toEqual([
      ...deviceFlags,
      'gpu_family',
      'device_id',
      memory,
    ]);
    expect(LLAMA_CPP_RULES.current.map((r) => r.flag)).toEqual([...deviceFlags, 'gpu_family', 'device_id', memory]);
    // Every flag is computed at init but the working set, which get_memory reads when llama.cpp asks.
    expect(LLAMA_CPP_RULES.current.map((r) => r.source.split(' ').slice(0, 2).join(' '))).toEqual([
      ...Array(8).fill('ggml-metal-device.m ggml_metal_device_init'),
      'ggml-metal-device.m ggml_metal_device_get_memory',
    ]);
    expect(Object.keys(predictGates(device(), 'mlx', { env: {} }).flags)).toEqual(MLX_RULES.map((r) => r.flag));
  });

  it('the prediction carries exactly the flags of its table', () => {
    const p = llama(device());
    expect(Object.keys(p.flags)).toEqual(LLAMA_CPP_RULES.current.map((r) => r.flag));
    const q = legacy(device());
    expect(Object.keys(q.flags)).toEqual(LLAMA_CPP_RULES.legacy.map((r) => r.flag));
  });

  it('op gates only name the two SIMD-group flags', () => {
    for (const set of ['current', 'chip-tuning', 'device', 'legacy'] as const) {
      for (const g of LLAMA_CPP_OP_GATES[set])
        expect(['has_simdgroup_reduction', 'has_simdgroup_mm']).toContain(g.needs);
    }
  });
});

describe('properties', () => {
  const answer = fc.constantFrom<boolean | null>(true, false, null);
  const familiesArb = fc.record(
    Object.fromEntries(FAMILY_NAMES.map((n) => [n, answer])) as Record<FamilyName, fc.Arbitrary<boolean | null>>,
  );

  it('for any family answers: mm implies reduction, and the CPU list is empty exactly when both are on', () => {
    fc.assert(
      fc.property(familiesArb, fc.constantFrom<'current' | 'legacy'>('current', 'legacy'), (families, rules) => {
        const dev = { ...device(), families: families as FamilyAnswers };
        const p = predictGates(dev, 'llama.cpp', { env: {}, host: TAHOE, rules });
        const red = p.flags.has_simdgroup_reduction.value;
        const mm = p.flags.has_simdgroup_mm.value;
        expect(!mm || red).toBe(true);
        expect(p.consequences.cpuFallbackOps.length === 0).toBe(red && mm);
        expect(p.consequences.flashAttentionOnGpu).toBe(mm);
        expect(red).toBe(families.apple7 === true || families.metal3 === true);
      }),
    );
  });
});
