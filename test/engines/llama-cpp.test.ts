// predictGates compared as whole values: every flag with its reason, the consequences and the full warning list,
// for the recorded devices and for one change at a time. A reason is what `audit` prints, so its words are behaviour:
// each whole output is pinned in a file of its own under __snapshots__/llama-cpp/ (JSON a reviewer reads and diffs;
// a changed word fails the test), and the test source states what the rules decide (which flag flips, which ops
// leave the GPU, which warnings appear), derived from the rule tables instead of retyped.
// lib/engines/ is imported afresh before each test, so its module-level tables (the ops each gate sends to the CPU,
// the variables each rule reads) are built inside the test: a change to one of them shows here. Imported once at the
// top, they would be built before any test, and Stryker could only leave their mutants out as static.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type {
  predictGates as PredictGates,
  LLAMA_CPP_CHIPS as Chips,
  LLAMA_CPP_RULE_SET_INFO as RuleSetInfo,
  LLAMA_CPP_RULE_SETS as RuleSets,
  LLAMA_CPP_SWITCHES as Switches,
  LlamaCppPrediction,
  LlamaCppRuleSet,
  RULE_TABLES as RuleTables,
} from '../../lib/engines/index.js';
import type { LLAMA_CPP_OP_GATES as OpGates, OpGate } from '../../lib/engines/llama-cpp.js';
// The rule sets' names only title the tests below; every table a test reads comes from the fresh import.
import { LLAMA_CPP_RULE_SETS } from '../../lib/engines/llama-cpp-releases.js';
import { familyLabel, type FamilyName } from '../../lib/core/families.js';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import type { DeviceReport, HostInfo } from '../../lib/device/types.js';

let predictGates: typeof PredictGates;
let LLAMA_CPP_CHIPS: typeof Chips;
let RULE_TABLES: typeof RuleTables;
let LLAMA_CPP_SWITCHES: typeof Switches;
let LLAMA_CPP_OP_GATES: typeof OpGates;
let LLAMA_CPP_RULE_SET_INFO: typeof RuleSetInfo;
let RULE_SETS: typeof RuleSets;
beforeEach(async () => {
  vi.resetModules();
  ({
    predictGates,
    LLAMA_CPP_CHIPS,
    RULE_TABLES,
    LLAMA_CPP_SWITCHES,
    LLAMA_CPP_RULE_SET_INFO,
    LLAMA_CPP_RULE_SETS: RULE_SETS,
  } = await import('../../lib/engines/index.js'));
  ({ LLAMA_CPP_OP_GATES } = await import('../../lib/engines/llama-cpp.js'));
});

/** Pins `value` whole in __snapshots__/llama-cpp/<name>.json. */
async function pinned(name: string, value: unknown): Promise<void> {
  await expect(`${JSON.stringify(value, null, 2)}\n`).toMatchFileSnapshot(`./__snapshots__/llama-cpp/${name}.json`);
}

/** The op types a rule set's supports_op gates on a SIMD-group flag (on `needs` alone, if given), in its order. */
const gatedOps = (set: LlamaCppRuleSet, needs?: OpGate['needs']) =>
  LLAMA_CPP_OP_GATES[set].filter((g) => needs === undefined || g.needs === needs).map((g) => g.op);

/** The flags a rule set computes, in its table's order. */
const tableFlags = (set: LlamaCppRuleSet) =>
  (RULE_TABLES['llama.cpp'][set] as readonly { flag: string }[]).map((r) => r.flag);

/** The two SIMD-group gates of a prediction, and the ops it sends to the CPU. */
const simdgroup = (p: LlamaCppPrediction) => ({
  reduction: p.flags.has_simdgroup_reduction?.value,
  mm: p.flags.has_simdgroup_mm.value,
  cpuFallbackOps: p.consequences.cpuFallbackOps,
});

function recorded(name: string): { devices: DeviceReport[]; host: HostInfo } {
  const report = reportFromSnapshot(loadSnapshot(name), { allDevices: true });
  return { devices: report.devices, host: report.host! };
}

const guest = recorded('vz-guest-m1-ultra-tahoe-stock');
const m1 = recorded('m1-ultra-bare-metal');
const intelMac = recorded('macbookpro16-intel-amd-two-gpus');
const paravirt = () => structuredClone(guest.devices[0]!);

describe('llama.cpp, current rules, whole predictions', () => {
  it('the stock VM guest: every SIMD-group path off, every gated op type on the CPU', async () => {
    const p = predictGates(guest.devices[0]!, 'llama.cpp', { env: {}, host: guest.host });
    expect(simdgroup(p)).toEqual({ reduction: false, mm: false, cpuFallbackOps: gatedOps('current') });
    await pinned('current/vz-guest', p);
  });

  it('the bare-metal M1 Ultra: every SIMD-group path on, nothing on the CPU', async () => {
    const p = predictGates(m1.devices[0]!, 'llama.cpp', { env: {}, host: m1.host });
    expect(simdgroup(p)).toEqual({ reduction: true, mm: true, cpuFallbackOps: [] });
    await pinned('current/m1-ultra', p);
  });

  it('the Intel Mac’s AMD GPU (the default device) on x86_64 macOS 13: Metal3 without Apple7', async () => {
    const p = predictGates(intelMac.devices[1]!, 'llama.cpp', { env: {}, host: intelMac.host });
    expect(simdgroup(p)).toEqual({
      reduction: true,
      mm: false,
      cpuFallbackOps: gatedOps('current', 'has_simdgroup_mm'),
    });
    await pinned('current/intel-amd-default', p);
  });

  it('the Intel GPU, which is not the default device: one warning, exactly', async () => {
    const p = predictGates(intelMac.devices[0]!, 'llama.cpp', { env: {}, host: intelMac.host });
    expect(p.warnings).toHaveLength(1);
    await pinned('current/intel-uhd-not-default', p);
  });

  it('unanswered family queries are warned once each, before the device warning, in rule order', async () => {
    const device = { ...paravirt(), index: 2, isDefault: false, name: 'Stray GPU' };
    const unanswered: FamilyName[] = ['apple6', 'metal3', 'apple7', 'metal4'];
    for (const f of unanswered) device.families[f] = null;
    const p = predictGates(device, 'llama.cpp', { env: {}, host: guest.host });
    const inRuleOrder = [
      ...new Set(
        (RULE_TABLES['llama.cpp'].current as readonly { families: readonly FamilyName[] }[]).flatMap((r) => r.families),
      ),
    ].filter((f) => unanswered.includes(f));
    expect(p.warnings.map((w) => /^supportsFamily\((\w+)\) has no answer/.exec(w)?.[1] ?? 'other')).toEqual([
      ...inRuleOrder.map(familyLabel),
      'other',
    ]);
    expect(p.flags.has_simdgroup_reduction.value).toBe(false);
    await pinned('current/unanswered-families', p);
  });
});

describe('llama.cpp, current rules, one input at a time', () => {
  const m1Device = () => structuredClone(m1.devices[0]!);

  it('GGML_METAL_BF16_DISABLE with a value and set empty: bfloat off either way', async () => {
    const bfloat = (value: string) =>
      predictGates(m1Device(), 'llama.cpp', { env: { GGML_METAL_BF16_DISABLE: value }, host: m1.host }).flags
        .has_bfloat;
    const cases = { 'set to "1"': bfloat('1'), 'set empty': bfloat('') };
    expect(Object.values(cases).map((c) => c.value)).toEqual([false, false]);
    await pinned('current/bf16-disable', cases);
  });

  it('an M5 with Metal4: tensor on, and bfloat notes the tensor test-compile; with bfloat off or no Metal4, no note', async () => {
    const m5 = { ...m1Device(), name: 'Apple M5 Max' };
    m5.families.metal4 = true;
    const p = predictGates(m5, 'llama.cpp', { env: {}, host: m1.host });
    const bf16Off = predictGates(m5, 'llama.cpp', { env: { GGML_METAL_BF16_DISABLE: '1' }, host: m1.host }).flags
      .has_bfloat;
    const noMetal4 = predictGates({ ...m5, families: { ...m5.families, metal4: false } }, 'llama.cpp', {
      env: {},
      host: m1.host,
    }).flags.has_bfloat;
    expect([p.flags.has_tensor.value, p.flags.has_bfloat.value, bf16Off.value, noMetal4.value]).toEqual([
      true,
      true,
      false,
      true,
    ]);
    // The note is one part more than the same answers without Metal4 give.
    expect(p.flags.has_bfloat.reason.startsWith(`${noMetal4.reason}, `)).toBe(true);
    await pinned('current/m5-metal4', {
      has_tensor: p.flags.has_tensor,
      has_bfloat: p.flags.has_bfloat,
      'has_bfloat, GGML_METAL_BF16_DISABLE=1': bf16Off,
      'has_bfloat, no Metal4': noMetal4,
    });
  });

  it('tensor with Metal4 but an older chip: on with GGML_METAL_TENSOR_ENABLE', async () => {
    const older = m1Device();
    older.families.metal4 = true;
    const tensor = predictGates(older, 'llama.cpp', { env: { GGML_METAL_TENSOR_ENABLE: '' }, host: m1.host }).flags
      .has_tensor;
    expect(tensor.value).toBe(true);
    await pinned('current/tensor-enable-older-chip', tensor);
  });

  const residency = (host: HostInfo | null, env: Record<string, string>) =>
    predictGates(m1Device(), 'llama.cpp', { env, host }).flags.use_residency_sets;
  const RESIDENCY: [string, HostInfo | null, Record<string, string>, boolean][] = [
    ['macOS 14 on arm64', { ...m1.host, osVersion: '14.5' }, {}, true],
    ['macOS 15 exactly, without a minor version', { ...m1.host, osVersion: '15' }, {}, true],
    ['a version with blanks around it', { ...m1.host, osVersion: ' 14.5 ' }, {}, true],
    ['no host at all', null, {}, true],
    ['a host with no OS version', { ...m1.host, osVersion: null }, {}, true],
    ['a version that does not start with a number', { ...m1.host, osVersion: 'v15.1' }, {}, true],
    ['a host with no architecture', { ...m1.host, arch: null }, {}, true],
    ['GGML_METAL_NO_RESIDENCY set', m1.host, { GGML_METAL_NO_RESIDENCY: '1' }, false],
    ['GGML_METAL_NO_RESIDENCY set empty', m1.host, { GGML_METAL_NO_RESIDENCY: '' }, false],
    ['an x86_64 host on macOS 15+', { ...m1.host, arch: 'x86_64' }, {}, true],
    [
      'Rosetta, where GGML_METAL_NO_RESIDENCY is not read',
      { ...m1.host, translated: true },
      { GGML_METAL_NO_RESIDENCY: '1' },
      true,
    ],
  ];
  it.each(RESIDENCY)('use_residency_sets: %s', (_what, host, env, value) => {
    expect(residency(host, env).value).toBe(value);
  });
  it('use_residency_sets: the value and reason of each case above', async () => {
    await pinned(
      'current/use-residency-sets',
      Object.fromEntries(RESIDENCY.map(([what, host, env]) => [what, residency(host, env)])),
    );
  });

  it('a host object without osVersion reads as one whose osVersion is null', () => {
    const host = { osBuild: null, model: null, isVirtualMachine: null, arch: 'arm64' } as unknown as HostInfo;
    expect(residency(host, {})).toEqual(residency({ ...m1.host, osVersion: null }, {}));
  });

  // Under the v0.4 rules, which read the location in every build; the current rules read it in x86_64 builds only.
  const shared = (unified: unknown, location: unknown, env: Record<string, string>) => {
    const device = { ...m1Device(), hasUnifiedMemory: unified, location } as unknown as DeviceReport;
    return predictGates(device, 'llama.cpp', { env, host: m1.host, rules: 'chip-tuning' }).flags.use_shared_buffers;
  };
  const SHARED: [string, unknown, unknown, Record<string, string>, boolean][] = [
    ['unified memory', true, 'builtIn', {}, true],
    ['discrete memory in a slot', false, 'slot', {}, false],
    ['an external GPU', false, 'external', {}, true],
    ['answers the OS could not give', null, null, {}, false],
    ['answers of the wrong type', 'yes', 5, {}, false],
    ['DISABLE on unified memory', true, 'builtIn', { GGML_METAL_SHARED_BUFFERS_DISABLE: '1' }, false],
    [
      'ENABLE after DISABLE',
      false,
      'slot',
      { GGML_METAL_SHARED_BUFFERS_DISABLE: '1', GGML_METAL_SHARED_BUFFERS_ENABLE: '1' },
      true,
    ],
  ];
  it.each(SHARED)('use_shared_buffers: %s', (_what, unified, location, env, value) => {
    expect(shared(unified, location, env).value).toBe(value);
  });
  it('use_shared_buffers: the value and reason of each case above', async () => {
    await pinned(
      'chip-tuning/use-shared-buffers',
      Object.fromEntries(SHARED.map(([what, unified, location, env]) => [what, shared(unified, location, env)])),
    );
  });
  it('use_shared_buffers: answers the OS could not give read as answers of the wrong type', () => {
    expect(shared(null, null, {})).toEqual(shared('yes', 5, {}));
  });

  const external = (host: Partial<HostInfo>) => {
    const device = { ...m1Device(), hasUnifiedMemory: false, location: 'external' } as DeviceReport;
    return predictGates(device, 'llama.cpp', { env: {}, host: { ...m1.host, ...host } }).flags.use_shared_buffers;
  };
  const EXTERNAL: [string, Partial<HostInfo>, boolean][] = [
    ['an arm64 build does not read it', {}, false],
    ['an x86_64 host reads it', { arch: 'x86_64' }, true],
    ['Rosetta reads it', { translated: true }, true],
    ['an unknown architecture is taken for arm64', { arch: null }, false],
  ];
  it.each(EXTERNAL)(
    'use_shared_buffers, current rules, an external GPU without unified memory: %s',
    (_what, host, value) => {
      expect(external(host).value).toBe(value);
    },
  );
  it('use_shared_buffers, current rules, an external GPU: the value and reason of each case above', async () => {
    await pinned(
      'current/use-shared-buffers-external-gpu',
      Object.fromEntries(EXTERNAL.map(([what, host]) => [what, external(host)])),
    );
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

  it('v0.4 rules: the reasons name the chip and the family', async () => {
    await pinned('tuning/chip-tuning', {
      'Apple M1 Ultra, Apple7': tier('Apple M1 Ultra', 7, 'chip-tuning').tuning,
      'Apple Paravirtual device, Apple9': tier('Apple Paravirtual device', 9, 'chip-tuning').tuning,
      'Apple M5 Ultra, Apple10': tier('Apple M5 Ultra', 10, 'chip-tuning').tuning,
    });
  });

  const BY_FAMILY: [number, unknown][] = [
    [6, { tier: 'baseline', chip: null, family: null }],
    [8, { tier: 'family', chip: null, family: 8 }],
    [9, { tier: 'family', chip: null, family: 9 }],
    [10, { tier: 'family', chip: null, family: 10 }],
  ];
  it.each(BY_FAMILY)('current rules: by family alone, whatever the chip (Apple%i)', (family, value) => {
    const chip = tier('Apple M1 Ultra', family, 'current').tuning;
    expect(chip?.value).toEqual(value);
    expect(chip).toEqual(tier('Apple Paravirtual device', family, 'current').tuning);
  });
  it('current rules: the tier and reason for each family above', async () => {
    await pinned(
      'tuning/current',
      Object.fromEntries(
        BY_FAMILY.map(([family]) => [`Apple${family}`, tier('Apple M1 Ultra', family, 'current').tuning]),
      ),
    );
  });

  it('gpu_family is the highest Apple family answered YES, past a gap and an unanswered one', async () => {
    const d = named('Apple Paravirtual device', 3);
    d.families.apple8 = true;
    d.families.apple9 = null;
    const gpuFamily = predictGates(d, 'llama.cpp', { env: {}, host: guest.host }).flags.gpu_family;
    expect(gpuFamily.value).toBe(8);
    await pinned('tuning/gpu-family-past-a-gap', gpuFamily);
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
  // Each rule's flag, source, rule in words, families asked, other properties read and environment read, each checked
  // against llama.cpp's own code by the conformance suite (test/conformance/): one file per rule set.
  it.each(LLAMA_CPP_RULE_SETS)('every rule of the %s rules, in order', async (set) => {
    const rules = RULE_TABLES['llama.cpp'][set] as readonly {
      flag: string;
      source: string;
      rule: string;
      families: readonly string[];
      properties: readonly string[];
      env: readonly string[];
    }[];
    await pinned(
      `rule-tables/${set}`,
      rules.map(({ flag, source, rule, families, properties, env }) => ({
        flag,
        source,
        rule,
        families,
        properties,
        env,
      })),
    );
  });

  it('the ops each rule set gates on a SIMD-group flag (ggml-metal-device.m supports_op; legacy: ggml-metal.m)', async () => {
    await pinned(
      'op-gates',
      Object.fromEntries(
        Object.entries(LLAMA_CPP_OP_GATES).map(([set, list]) => [set, list.map((g) => `${g.op} needs ${g.needs}`)]),
      ),
    );
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

  // [release, its rule set, how many warnings]: the legacy rules warn about the encode, and a release outside every
  // range seen warns that its rules are assumed. The warnings' words are pinned below.
  const RELEASES: [string, LlamaCppRuleSet, number][] = [
    // Each boundary from both sides: a release bN is llama.cpp build N, and the first build of each rule set is
    // pinned to the commit that brought it below.
    ['b1852', 'legacy-b0', 1],
    ['b1853', 'legacy-b1853', 1],
    ['b4039', 'legacy-b1853', 1],
    ['b4040', 'legacy-b4040', 1],
    ['b4052', 'legacy-b4040', 1],
    ['b4053', 'legacy-b4053', 1],
    ['b4561', 'legacy-b4053', 1],
    ['b4562', 'legacy', 1],
    ['b4753', 'legacy', 1],
    ['b6431', 'legacy', 1],
    ['b6500', 'legacy', 1],
    ['b6501', 'device-b6501', 0],
    ['b6967', 'device-b6501', 0],
    ['b6968', 'device-b6968', 0],
    ['b7009', 'device-b6968', 0],
    ['b7010', 'device-b7010', 0],
    ['b7410', 'device-b7010', 0],
    ['b7411', 'device-b7411', 0],
    ['b9332', 'device-b7411', 0],
    ['b9333', 'device', 0],
    ['b10361', 'device', 0],
    ['b10586', 'device', 0],
    // The tuning arrived after b10586 in a nightly build not pinned here: warned.
    ['b10587', 'chip-tuning', 1],
    ['v0.3.9', 'device', 1],
    ['v0.4.0', 'chip-tuning', 0],
    ['v0.4.9', 'chip-tuning', 0],
    ['v0.5.0', 'current', 0],
    ['v1.0.0', 'current', 0],
  ];
  it.each(RELEASES)('%s: %s rules', (release, rules, warnings) => {
    const prediction = p(release);
    expect({ rules: prediction.rules, release: prediction.release, warnings: prediction.warnings.length }).toEqual({
      rules,
      release,
      warnings,
    });
  });
  it('the warnings of each release above', async () => {
    await pinned('releases/warnings', Object.fromEntries(RELEASES.map(([release]) => [release, p(release).warnings])));
  });
  it('the legacy releases warn the same about the encode, and only about it on a device with the reduction', () => {
    for (const release of ['b1852', 'b1853', 'b4040', 'b4053', 'b6431', 'b6500'])
      expect(p(release).warnings).toEqual(p('b4753').warnings);
  });

  // The commit that opens each b-numbered rule set, as llama.cpp's history has it (`git log -S` at the b-tags).
  const CITED: [LlamaCppRuleSet, number, string | null, string | null][] = [
    ['legacy-b1853', 1853, 'b38b5e9', null],
    ['legacy-b4040', 4040, null, '#8439'],
    ['legacy-b4053', 4053, 'ec450d3', null],
    ['legacy', 4562, '178a7eb', null],
    ['device-b6501', 6501, '0320ac5', '#15995'],
    ['device-b6968', 6968, '5b180c3', '#16634'],
    ['device-b7010', 7010, 'c27efd2', '#17087'],
    ['device-b7411', 7411, '165caaf', '#17866'],
    ['device', 9333, '35c9b1f', '#23566'],
  ];
  it.each(CITED)(
    '%s opens at b%i with its commit %s (%s): the build before gets the rule set before',
    (set, build, commit, pr) => {
      const index = RULE_SETS.indexOf(set);
      expect({
        first: LLAMA_CPP_RULE_SET_INFO[set].first,
        opened: LLAMA_CPP_RULE_SET_INFO[set].opened,
        before: p(`b${build - 1}`).rules,
        at: p(`b${build}`).rules,
      }).toEqual({ first: { build }, opened: { commit, pr }, before: RULE_SETS[index - 1], at: set });
    },
  );
  it('every b-numbered rule set but the oldest is cited above, so a new boundary needs its citation', () => {
    const byBuild = RULE_SETS.filter((set) => 'build' in LLAMA_CPP_RULE_SET_INFO[set].first);
    expect(byBuild).toEqual(['legacy-b0', ...CITED.map(([set]) => set)]);
  });

  it('b6550 (ggml-metal-device.m from b6501): BF16 supported on an M1, not rejected as under the legacy rules', () => {
    expect([p('b6550').consequences.bf16Ops, p('b6500').consequences.bf16Ops]).toEqual(['supported', 'rejected']);
  });
  it('b4045: the BF16 kernels on wherever has_bfloat (before b4053 brought GGML_METAL_USE_BF16), off from b4053', () => {
    const at = (release: string) => {
      const q = p(release);
      const flags = q.flags as Partial<Record<string, { value: unknown }>>;
      return { use_bfloat: flags.use_bfloat?.value, bf16Ops: q.consequences.bf16Ops };
    };
    expect([at('b4039'), at('b4045'), at('b4053')]).toEqual([
      { use_bfloat: undefined, bf16Ops: 'rejected' },
      { use_bfloat: true, bf16Ops: 'supported' },
      { use_bfloat: false, bf16Ops: 'rejected' },
    ]);
  });
  it('b4000: no residency flag, and GGML_METAL_NO_RESIDENCY is warned as unread; b4562 reads it', () => {
    const q = predictGates(m1.devices[0]!, 'llama.cpp', {
      env: { GGML_METAL_NO_RESIDENCY: '1' },
      host: m1.host,
      release: 'b4000',
    });
    const r = predictGates(m1.devices[0]!, 'llama.cpp', {
      env: { GGML_METAL_NO_RESIDENCY: '1' },
      host: m1.host,
      release: 'b4562',
    });
    expect({
      b4000: [Object.keys(q.flags), q.consequences.residencySetsCreated, q.warnings.at(-1)],
      b4562: [r.rules === 'legacy' && r.flags.has_residency_sets.value, r.warnings.length],
    }).toEqual({
      b4000: [
        ['has_simdgroup_reduction', 'has_simdgroup_mm'],
        false,
        'GGML_METAL_NO_RESIDENCY is set but llama.cpp b1853 to b4039 (ggml-metal.m, before has_bfloat) does not read it',
      ],
      b4562: [false, 1],
    });
  });
  it('a nightly after the tuning arrived: gpu_family and the per-chip tuning, with the uncertainty warned', () => {
    const q = p('b10700');
    expect({
      rules: q.rules,
      gpu_family: q.rules === 'chip-tuning' ? q.flags.gpu_family.value : null,
      tuning: q.tuning?.value.tier,
      warnings: q.warnings,
    }).toEqual({
      rules: 'chip-tuning',
      gpu_family: 7,
      tuning: 'exact',
      warnings: [
        'llama.cpp b10700 is a nightly build after b10586, after which #26570 brought the chip-tuning rules; its first build is not pinned, so chip-tuning rules assumed; the changes of current may apply too',
      ],
    });
  });
  it('before b1853 no op waits on the reduction: a device without it is warned, not sent to the CPU', () => {
    const q = predictGates(guest.devices[0]!, 'llama.cpp', { env: {}, host: guest.host, release: 'b1800' });
    expect({ cpu: q.consequences.cpuFallbackOps, warnings: q.warnings }).toEqual({
      cpu: [],
      warnings: [
        'legacy ggml-metal.m asks supportsFamily(Apple7) on every MUL_MAT encode: a capability patch must stay installed for the life of the process',
        'llama.cpp up to b1852 (ggml-metal.m, before the SIMD-group reduction gate) refuses no op for a missing SIMD-group reduction (supportsFamily(Apple7)=NO, supportsFamily(Metal3)=NO): its reduction kernels are dispatched anyway and fail on this device',
      ],
    });
  });

  it.each<[string, LlamaCppRuleSet, boolean]>([
    ['b6967', 'device-b6501', false],
    ['b6968', 'device-b6968', true],
    ['b7010', 'device-b7010', true],
    ['b8000', 'device-b7411', true],
  ])(
    '%s: the flags of ggml-metal-device.m without gpu_family and device_id, has_tensor only from b6968',
    (release, set, tensor) => {
      const prediction = p(release);
      expect({
        releases: prediction.releases,
        flags: Object.keys(prediction.flags),
        tuning: prediction.tuning,
      }).toEqual({
        releases: LLAMA_CPP_RULE_SET_INFO[set].releases,
        flags: [
          'has_simdgroup_reduction',
          'has_simdgroup_mm',
          'has_bfloat',
          ...(tensor ? ['has_tensor'] : []),
          'use_residency_sets',
          'use_shared_buffers',
          'max_working_set_size',
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

  it('b6967: no has_tensor, and GGML_METAL_BF16_DISABLE is not read, even on an M5 with Metal4', async () => {
    const prediction = p(metal4('Apple M5'), 'b6967', { GGML_METAL_BF16_DISABLE: '1' });
    expect({
      rules: prediction.rules,
      flags: Object.keys(prediction.flags),
      has_bfloat: prediction.flags.has_bfloat?.value,
      ...simdgroup(prediction),
      warnings: prediction.warnings.length,
    }).toEqual({
      rules: 'device-b6501',
      flags: tableFlags('device-b6501'),
      has_bfloat: true,
      reduction: true,
      mm: true,
      cpuFallbackOps: [],
      // The switch, set here, is one these rules do not read.
      warnings: 1,
    });
    await pinned('boundaries/b6967-m5-metal4-bf16-disable', prediction);
  });

  it('b6968: has_tensor on for the M5, and GGML_METAL_BF16_DISABLE turns bfloat off', async () => {
    const prediction = p(metal4('Apple M5'), 'b6968', { GGML_METAL_BF16_DISABLE: '1' });
    const flags = prediction.flags as Record<string, { value: unknown }>;
    expect({
      rules: prediction.rules,
      flags: Object.keys(prediction.flags),
      has_bfloat: flags.has_bfloat!.value,
      has_tensor: flags.has_tensor!.value,
      bf16Ops: prediction.consequences.bf16Ops,
      warnings: prediction.warnings,
    }).toEqual({
      rules: 'device-b6968',
      flags: tableFlags('device-b6968'),
      has_bfloat: false,
      has_tensor: true,
      bf16Ops: 'rejected',
      warnings: [],
    });
    await pinned('boundaries/b6968-m5-metal4-bf16-disable', prediction);
  });

  const a19Tensor = (release: string) => {
    const prediction = p(metal4('Apple A19 Pro'), release);
    return { has_tensor: (prediction.flags as Record<string, unknown>).has_tensor, warnings: prediction.warnings };
  };
  it.each<[string, boolean]>([
    ['b7009', false],
    ['b7010', true],
  ])('%s: has_tensor for an A19 with Metal4', (release, tensor) => {
    const { has_tensor, warnings } = a19Tensor(release);
    expect({ value: (has_tensor as { value: boolean }).value, warnings }).toEqual({ value: tensor, warnings: [] });
  });
  it('has_tensor for an A19 with Metal4: the reason on each side', async () => {
    await pinned('boundaries/a19-metal4-has-tensor', { b7009: a19Tensor('b7009'), b7010: a19Tensor('b7010') });
  });

  const sharedBuffers = (release: string, location: string, env: Record<string, string>) => {
    const device = withFamilies('Apple M1 Ultra', { hasUnifiedMemory: false, location } as Partial<DeviceReport>);
    const prediction = p(device, release, env);
    const flags = prediction.flags as Record<string, { value: boolean; reason: string }>;
    return { use_shared_buffers: flags.use_shared_buffers!, warnings: prediction.warnings };
  };
  // [release, location, env, use_shared_buffers, how many warnings: a switch set that these rules do not read]
  const SHARED_BUFFERS: [string, string, Record<string, string>, boolean, number][] = [
    ['b7410', 'external', {}, false, 0],
    ['b7411', 'external', {}, true, 0],
    ['b7410', 'builtin', { GGML_METAL_SHARED_BUFFERS_ENABLE: '1' }, false, 1],
    ['b7411', 'builtin', { GGML_METAL_SHARED_BUFFERS_ENABLE: '1' }, true, 0],
  ];
  it.each(SHARED_BUFFERS)(
    '%s: use_shared_buffers without unified memory, location %s, env %j',
    (release, location, env, value, warnings) => {
      const r = sharedBuffers(release, location, env);
      expect({ value: r.use_shared_buffers.value, warnings: r.warnings.length }).toEqual({ value, warnings });
    },
  );
  it('use_shared_buffers without unified memory: the reasons and warnings of each case above', async () => {
    await pinned(
      'boundaries/use-shared-buffers',
      Object.fromEntries(
        SHARED_BUFFERS.map(([release, location, env]) => [
          `${release}, location ${location}, env ${JSON.stringify(env)}`,
          sharedBuffers(release, location, env),
        ]),
      ),
    );
  });
});

describe('llama.cpp, legacy rules, whole predictions', () => {
  it('the stock guest, with variables only the current rules read: each one warned, in a fixed order', async () => {
    const env = { GGML_METAL_TENSOR_ENABLE: '', GGML_METAL_BF16_DISABLE: '1', UNRELATED: 'x' };
    const p = predictGates(guest.devices[0]!, 'llama.cpp', { env, host: guest.host, rules: 'legacy' });
    expect({
      flags: Object.keys(p.flags),
      ...simdgroup(p),
      // After the encode warning, one per switch set here that ggml-metal.m does not read, in LLAMA_CPP_SWITCHES order.
      unread: p.warnings.slice(1).map((w) => w.split(' ')[0]),
    }).toEqual({
      flags: tableFlags('legacy'),
      reduction: false,
      mm: false,
      cpuFallbackOps: gatedOps('legacy'),
      unread: LLAMA_CPP_SWITCHES.filter((name) => name in env),
    });
    await pinned('legacy/vz-guest-current-switches-set', p);
  });

  it('without those variables only the encode warning remains, and bfloat’s reason has no note', async () => {
    const p = predictGates(m1.devices[0]!, 'llama.cpp', { env: {}, host: m1.host, rules: 'legacy' });
    const withSwitches = predictGates(m1.devices[0]!, 'llama.cpp', {
      env: { GGML_METAL_BF16_DISABLE: '1' },
      host: m1.host,
      rules: 'legacy',
    });
    expect(p.warnings).toEqual(withSwitches.warnings.slice(0, 1));
    // Release builds leave GGML_METAL_USE_BF16 OFF, so ggml-metal.m rejects BF16 ops whatever the device says.
    expect({
      has_bfloat: p.flags.has_bfloat.value,
      use_bfloat: p.flags.use_bfloat.value,
      bf16Ops: p.consequences.bf16Ops,
    }).toEqual({ has_bfloat: true, use_bfloat: false, bf16Ops: 'rejected' });
    // The switch adds its note to bfloat's reason, after the family answers.
    expect(withSwitches.flags.has_bfloat.reason.startsWith(`${p.flags.has_bfloat.reason}, `)).toBe(true);
    await pinned('legacy/m1-ultra', p);
  });

  it("has_residency_sets: false in an x86_64 build, the initial value of ggml-metal.m's static; the arm64 build reads the switch", async () => {
    const residency = (host: HostInfo) =>
      predictGates(m1.devices[0]!, 'llama.cpp', { env: { GGML_METAL_NO_RESIDENCY: '1' }, host, rules: 'legacy' }).flags
        .has_residency_sets;
    const x86 = residency({ ...m1.host, arch: 'x86_64' });
    const arm = residency(m1.host);
    expect([x86.value, arm.value]).toEqual([false, false]);
    await pinned('legacy/has-residency-sets-no-residency', { x86_64: x86, arm64: arm });
  });
});

describe('MLX, whole predictions', () => {
  const values = (p: ReturnType<typeof mlx>) => ({
    residencySets: p.flags.residencySets.value,
    architectureGeneration: p.flags.architectureGeneration.value,
    allocatorLimitBytes: p.flags.allocatorLimitBytes.value,
    heapSkipped: p.flags.heapSkipped.value,
    warnings: p.warnings.length,
  });
  const mlx = (device: DeviceReport, host: HostInfo | null, env: Record<string, string> = {}) =>
    predictGates(device, 'mlx', { env, host });
  /** The two warnings of Metal3 on the paravirtual device: MLX's residency sets throw there, and Metal3 on a VM. */
  const metal3OnVm = () => {
    const device = paravirt();
    device.families.metal3 = true;
    const [residencyThrows, metal3OnVmWarning] = mlx(device, guest.host).warnings;
    return { residencyThrows: residencyThrows!, vm: metal3OnVmWarning! };
  };

  it('the stock guest: no residency sets, no architecture in the report, 0.95 × the working set', async () => {
    const p = mlx(guest.devices[0]!, guest.host);
    expect(values(p)).toEqual({
      residencySets: false,
      architectureGeneration: null,
      allocatorLimitBytes: 11409122918,
      heapSkipped: true,
      warnings: 0,
    });
    await pinned('mlx/vz-guest', p);
  });

  it('the bare-metal M1 Ultra: residency sets, generation 13 (ultra), no warning', async () => {
    const p = mlx(m1.devices[0]!, m1.host);
    expect(values(p)).toEqual({
      residencySets: true,
      architectureGeneration: 13,
      allocatorLimitBytes: 48962627174,
      heapSkipped: false,
      warnings: 0,
    });
    await pinned('mlx/m1-ultra', p);
  });

  it('the Intel Mac’s second device: not the device MLX picks, and macOS 13 has no residency sets', async () => {
    const p = mlx(intelMac.devices[1]!, intelMac.host);
    expect({ residencySets: p.flags.residencySets.value, warnings: p.warnings.length }).toEqual({
      residencySets: false,
      warnings: 1,
    });
    await pinned('mlx/intel-amd-not-picked', p);
  });

  it('Metal3 on the paravirtual device: both residency warnings, in order', async () => {
    const device = paravirt();
    device.families.metal3 = true;
    const p = mlx(device, guest.host);
    expect(p.warnings).toHaveLength(2);
    await pinned('mlx/vz-guest-metal3', p);
  });

  // Each sign of a virtual machine on its own: kern.hv_vmm_present, hw.model, the device name.
  it.each<[string, Partial<HostInfo> | null, string, ('residencyThrows' | 'vm')[]]>([
    ['kern.hv_vmm_present alone', { isVirtualMachine: true, model: 'Mac13,2' }, 'Some GPU', ['vm']],
    ['hw.model alone', { isVirtualMachine: false, model: 'VirtualMac2,1' }, 'Some GPU', ['vm']],
    [
      'hw.model alone, with no VM flag recorded',
      { isVirtualMachine: null, model: 'VirtualMac2,1' },
      'Some GPU',
      ['vm'],
    ],
    [
      'the device name alone',
      { isVirtualMachine: false, model: 'Mac13,2' },
      'Apple Paravirtual device',
      ['residencyThrows', 'vm'],
    ],
    ['the device name alone, no host known', null, 'Apple Paravirtual device', ['residencyThrows', 'vm']],
    ['none of them', { isVirtualMachine: false, model: 'Mac13,2' }, 'Some GPU', []],
    ['a model that only ends in VirtualMac', { isVirtualMachine: false, model: 'NotAVirtualMac' }, 'Some GPU', []],
    ['no host and no name', null, 'Some GPU', []],
  ])('Metal3 answered YES, VM signal: %s', (_what, hostFacts, name, warnings) => {
    const device = { ...structuredClone(m1.devices[0]!), name };
    const host = hostFacts === null ? null : { ...m1.host, ...hostFacts };
    const words = metal3OnVm();
    expect(mlx(device, host).warnings).toEqual(warnings.map((w) => words[w]));
  });

  it('below macOS 15 the name alone gives no residency-set warning, the VM warning stays', async () => {
    const device = paravirt();
    device.families.metal3 = true;
    const p = mlx(device, { ...guest.host, osVersion: '14.6' });
    expect({ residencySets: p.flags.residencySets.value, warnings: p.warnings }).toEqual({
      residencySets: false,
      warnings: [metal3OnVm().vm],
    });
    await pinned('mlx/vz-guest-metal3-macos-14', p);
  });

  const generation = (architecture: unknown, env: Record<string, string>) =>
    mlx({ ...structuredClone(m1.devices[0]!), architecture } as DeviceReport, m1.host, env).flags
      .architectureGeneration;
  const GENERATIONS: [string, string | null, Record<string, string>, number | null][] = [
    ['an override', 'applegpu_g13s', { MLX_METAL_GPU_ARCH: 'applegpu_g16s' }, 16],
    ['an override with no reported architecture', null, { MLX_METAL_GPU_ARCH: 'applegpu_g15g' }, 15],
    ['an empty override', 'applegpu_g14p', { MLX_METAL_GPU_ARCH: '' }, 14],
    ['an unknown class letter', 'applegpu_g17x', {}, 17],
    ['the shortest name with two digits', '13s', {}, 13],
    // The newest rules count a name shorter than 3 as generation 0, and a character that is no digit as 0.
    ['a name one character shorter', '3s', {}, 0],
    ['a non-digit tens place', 'applegpu_gx3s', {}, 3],
    ['a non-digit ones place', 'applegpu_g1xs', {}, 10],
    ['an empty override and none reported', null, { MLX_METAL_GPU_ARCH: '' }, null],
  ];
  it.each(GENERATIONS)('architectureGeneration: %s', (_what, architecture, env, value) => {
    expect(generation(architecture, env).value).toBe(value);
  });
  it('architectureGeneration: the value and reason of each case above', async () => {
    await pinned(
      'mlx/architecture-generation',
      Object.fromEntries(GENERATIONS.map(([what, architecture, env]) => [what, generation(architecture, env)])),
    );
  });

  it('a reported architecture that is not a string counts as unknown', () => {
    expect(generation(13, {})).toEqual(generation(null, {}));
  });

  const allocator = (wss: unknown) =>
    mlx({ ...structuredClone(m1.devices[0]!), recommendedMaxWorkingSetSize: wss } as unknown as DeviceReport, m1.host)
      .flags.allocatorLimitBytes;
  const WORKING_SETS: [string, unknown, number | null][] = [
    ['zero', 0, 0],
    ['one MiB', 1048576, 996147],
    ['negative', -1, null],
    ['infinite', Number.POSITIVE_INFINITY, null],
    ['not a number', Number.NaN, null],
    ['null', null, null],
    ['a string', '1048576', null],
  ];
  it.each(WORKING_SETS)('allocatorLimitBytes for a working set that is %s', (_what, wss, value) => {
    expect(allocator(wss).value).toBe(value);
  });
  it('allocatorLimitBytes: the value and reason for each working set above', async () => {
    await pinned('mlx/allocator-limit', Object.fromEntries(WORKING_SETS.map(([what, wss]) => [what, allocator(wss)])));
  });
  it('allocatorLimitBytes: every working set that is no size reads the same', () => {
    const unknown = WORKING_SETS.filter(([, , value]) => value === null).map(([, wss]) => allocator(wss));
    expect(unknown).toEqual(unknown.map(() => allocator(null)));
  });
});

describe('MLX allocator limit: the RAM bound', () => {
  const limit = (wss: number, memoryBytes: unknown) =>
    predictGates({ ...structuredClone(m1.devices[0]!), recommendedMaxWorkingSetSize: wss }, 'mlx', {
      env: {},
      host: { ...m1.host, memoryBytes } as unknown as HostInfo,
    }).flags.allocatorLimitBytes;

  it('wins when 0.95 × RAM is below 0.95 × the working set', async () => {
    const bound = limit(68719476736, 34359738368);
    expect(bound.value).toBe(32641751449);
    await pinned('mlx/allocator-limit-ram-bound', bound);
  });

  const NO_RAM: [string, unknown][] = [
    ['unrecorded', null],
    ['zero', 0],
    ['not a number', '64G'],
  ];
  it.each(NO_RAM)('is left out when RAM is %s', (_what, memoryBytes) => {
    expect(limit(1048576, memoryBytes)).toEqual(limit(1048576, null));
    expect(limit(1048576, memoryBytes).value).toBe(996147);
  });
  it('is left out when RAM is unknown: the reason says so', async () => {
    await pinned('mlx/allocator-limit-no-ram', limit(1048576, null));
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

  it('device: an absent family answer and keys that name no family are accepted, the answer read as unanswered', () => {
    const d = device() as unknown as { families: Record<string, unknown> };
    d.families.apple7 = undefined;
    d.families.futureFamily = 'whatever';
    const unanswered = device();
    unanswered.families.apple7 = null;
    const mm = (x: unknown) =>
      predictGates(x as DeviceReport, 'llama.cpp', { env: {}, host: m1.host }).flags.has_simdgroup_mm;
    expect(mm(d).value).toBe(false);
    expect(mm(d)).toEqual(mm(unanswered));
  });

  it.each<[string, unknown, string, string]>([
    ['options as a number', 5, 'options', 'predictGates() takes an options object, got number 5'],
    ['options as an array', [], 'options', 'predictGates() takes an options object, got an array'],
    [
      'an unknown option',
      { envv: {} },
      'envv',
      "predictGates() has no option 'envv' (did you mean 'env'?); its options are env, host, rules, release, mlxArchitecture",
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
      'rules must be one of "legacy-b0", "legacy-b1853", "legacy-b4040", "legacy-b4053", "legacy", "device-b6501", "device-b6968", "device-b7010", "device-b7411", "device", "chip-tuning", "current"; got number 1',
    ],
    [
      'an unknown rule set',
      { rules: 'old' },
      'rules',
      'rules must be one of "legacy-b0", "legacy-b1853", "legacy-b4040", "legacy-b4053", "legacy", "device-b6501", "device-b6968", "device-b7010", "device-b7411", "device", "chip-tuning", "current"; got the string "old"',
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
    expect(thrown(call(device(), 'mlx', { release: 'b4753' }))).toEqual(
      invalid('release', 'release must be an MLX release like "v0.31.0" or "0.31.0"; got the string "b4753"'),
    );
  });

  it('env values left undefined and a null host are accepted', () => {
    const p = predictGates(device(), 'llama.cpp', { env: { GGML_METAL_BF16_DISABLE: undefined }, host: null });
    expect(p.flags.has_bfloat.value).toBe(true);
  });
});
