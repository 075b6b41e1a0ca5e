// applyProfile, restore, status and register: the decisions as pure functions (warnings, the above-host-family line,
// refusal, verification) over recorded snapshots read offline, then the whole API in this process over the simulated
// Metal, one describe block per snapshot (useSimulation): the stock Tahoe guest, the two-GPU MacBook Pro, no device,
// the bare-metal M1 Ultra, the device's name as an answer, wrapped default devices and a class that cannot be hooked.
// The API on an install without the addon is apply.no-addon.test.ts (a process that never loads it).
import { describe, expect, it, afterEach, beforeAll, afterAll } from 'vitest';
import {
  aboveHostFamilyMessage,
  claimsAboveHostFamily,
  profileWarnings,
  refusalFor,
  restore,
  status,
  verifyAnswers,
} from '../../lib/patch/apply.js';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import { applyProfile } from '../../lib/select/auto.js';
import { InvalidProfileError, RefusedError, NativeError } from '../../lib/core/errors.js';
import { probeSnapshot, probe } from '../../lib/device/probe.js';
import { chipFromBrand } from '../../lib/device/chips.js';
import {
  planProfile,
  resolveProfile,
  type AnswerChange,
  type ProfileInput,
  predictPatchedDevice,
} from '../../lib/patch/profiles.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import type { DeviceReport, HostInfo } from '../../lib/device/types.js';
import type { LlamaCppRuleSet } from '../../lib/engines/index.js';
import {
  importRegister,
  invalidProfileError,
  APPLE9_ABOVE_M1_ULTRA,
  editedSnapshot,
  defaultObjectGuest,
} from '../support/apply-helpers.js';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DoctorCacheEntry } from '../../lib/doctor/cache.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import {
  describeSim,
  loadFixture,
  requireSimBuild,
  type SimFixture,
  runCli,
  thrown,
  loadLibrary,
} from '../support/helpers.js';
import { simulationJson } from '../sim-metal/simulation.js';
import { audit } from '../../lib/audit/audit.js';
import { useSimulation } from '../support/simulation.js';
import { INACTIVE_STATUS } from '../support/status.js';

const devicesOf = (snapshot: string) => probeSnapshot(snapshot, { allDevices: true }).devices;
const guest = () => devicesOf('vz-guest-m1-ultra-tahoe-stock');
const m1 = () => devicesOf('m1-ultra-bare-metal');
const twoGpus = () => devicesOf('macbookpro16-intel-amd-two-gpus');

/** profileWarnings for `input` applied to `devices` on `host`, with the changes planProfile predicts. */
function warningsFor(
  input: ProfileInput,
  devices: DeviceReport[],
  consumers: string[] = [],
  host: HostInfo | null = null,
  rules: LlamaCppRuleSet = 'current',
) {
  const profile = resolveProfile(input);
  return profileWarnings(profile, devices, planProfile(devices, profile).changes, consumers, host, rules);
}

/** A guest's host facts with the brand string `cpuBrand` (its chip parsed from it). */
const hostWith = (cpuBrand: string | null): HostInfo => ({
  ...probeSnapshot('vz-guest-m1-ultra-tahoe-stock').host,
  cpuBrand,
  chip: chipFromBrand(cpuBrand),
});

const GiB = 1024 ** 3;
const ABOVE_HARDWARE = (bytes: number) => ({
  code: 'threadgroup-memory-above-hardware',
  message: `threadgroup memory ${bytes} bytes is above 32768, which no Apple GPU exceeds: a kernel sized from it may ask for memory the GPU does not have; profile apple9-hw-tg avoids this`,
});
const METAL3 = {
  code: 'advertises-metal3',
  message:
    'the profile advertises Metal3: MLX then creates residency sets, which the paravirtual device cannot ("Unable to construct residency set")',
};
const NO_CHANGE = { code: 'no-change', message: 'the profile changes no answer on this device' };
const notParavirtual = (d: DeviceReport) => ({
  code: 'not-paravirtual',
  message: `device ${d.index} (${d.name}, ${d.className}) is not the paravirtual device; raising its answers claims features its GPU may not have`,
});
const consumerLoaded = (image: string) => ({
  code: 'consumer-already-loaded',
  message: `${image} is already loaded in this process: if that engine has initialised Metal, it cached the old answers; apply before the first getLlama() / backend load`,
});

describe('profileWarnings', () => {
  it('cua-release on the stock guest: only the threadgroup size above any Apple GPU', () => {
    expect(warningsFor('cua-release', guest())).toEqual([ABOVE_HARDWARE(65536)]);
  });

  it('threadgroup memory: 32768 is no warning, 32784 (the next legal size) is', () => {
    expect(warningsFor({ appleFamilyMax: 1009, maxThreadgroupMemoryLength: 32768 }, guest())).toEqual([]);
    expect(warningsFor({ appleFamilyMax: 1009, maxThreadgroupMemoryLength: 32784 }, guest())).toEqual([
      ABOVE_HARDWARE(32784),
    ]);
    // A profile that leaves the size alone says nothing about it.
    expect(warningsFor({ appleFamilyMax: 1009 }, guest())).toEqual([]);
  });

  it('advertising Metal3 warns; taking Metal3 away (a mask) does not', () => {
    expect(warningsFor({ families: { metal3: true } }, guest())).toEqual([METAL3]);
    // The M1 Ultra answers Metal3 YES: masking it is a change, but no raise and no advertisement.
    expect(warningsFor({ families: { metal3: false } }, m1())).toEqual([]);
  });

  it('a mask on a GPU that is not paravirtual is no claim: no not-paravirtual warning', () => {
    expect(warningsFor('mask-apple5', m1())).toEqual([]);
  });

  it('not-paravirtual names each raised device, and only those, on the two-GPU MacBook Pro', () => {
    const [intel, amd] = twoGpus() as [DeviceReport, DeviceReport];
    // 4 GiB raises the Intel GPU (1.5 GiB) and leaves the AMD one (8 GiB) as it is.
    expect(warningsFor({ recommendedMaxWorkingSetSize: 4 * GiB }, [intel, amd])).toEqual([notParavirtual(intel)]);
    // 12 GiB raises both.
    expect(warningsFor({ recommendedMaxWorkingSetSize: 12 * GiB }, [intel, amd])).toEqual([
      notParavirtual(intel),
      notParavirtual(amd),
    ]);
    // Listed the other way round, the warning still follows the raised device.
    expect(warningsFor({ recommendedMaxWorkingSetSize: 4 * GiB }, [amd, intel])).toEqual([notParavirtual(intel)]);
  });

  it('a device is paravirtual by its class name alone, or by its device name alone', () => {
    const [device] = m1() as [DeviceReport];
    const byClass = { ...device, className: 'AppleParavirtDevice' };
    const byName = { ...device, name: 'Apple Paravirtual device' };
    expect(warningsFor({ appleFamilyMax: 1009 }, [byClass])).toEqual([]);
    expect(warningsFor({ appleFamilyMax: 1009 }, [byName])).toEqual([]);
    // Neither: the M1 Ultra as it is.
    expect(warningsFor({ appleFamilyMax: 1009 }, [device])).toEqual([notParavirtual(device)]);
  });

  it('each loaded consumer is named once, in the order given', () => {
    expect(warningsFor('apple7', guest(), ['libggml-metal.so', 'libmlx.so'])).toEqual([
      consumerLoaded('libggml-metal.so'),
      consumerLoaded('libmlx.so'),
    ]);
  });

  it('a profile that changes nothing says so, after every other warning', () => {
    // The MacBook Pro's GPUs already answer 65536 bytes and Metal3: nothing changes, yet the size is above hardware.
    expect(
      warningsFor({ maxThreadgroupMemoryLength: 65536, families: { metal3: true } }, twoGpus(), ['libggml-metal.so']),
    ).toEqual([ABOVE_HARDWARE(65536), consumerLoaded('libggml-metal.so'), NO_CHANGE]);
  });

  it('every warning at once comes in a fixed order', () => {
    const [device] = m1() as [DeviceReport];
    const noMetal3 = { ...device, families: { ...device.families, metal3: false } };
    const profile = { appleFamilyMax: 1009, maxThreadgroupMemoryLength: 65536, families: { metal3: true } };
    expect(warningsFor(profile, [noMetal3], ['x'], hostWith('Apple M1 Ultra'))).toEqual([
      aboveHost('Apple9', 'Apple7', 'Apple M1 Ultra', `${APPLE9_TABLE}, not this host's Apple M1 Ultra`),
      METAL3,
      ABOVE_HARDWARE(65536),
      notParavirtual(noMetal3),
      consumerLoaded('x'),
    ]);
  });
});

/** The above-host-family warning, with what it says follows (`consequence`). */
const aboveHost = (claimed: string, family: string, chip: string, consequence: string) => ({
  code: 'above-host-family',
  message: `the profile claims ${claimed}, above ${family}, the true family of this host's ${chip}: ${consequence} (profile host claims exactly the host's)`,
});
const GENERIC = 'an engine that tunes by family tunes for a newer GPU than the one doing the work';
const APPLE9_TABLE =
  'llama.cpp v0.5.0 and later will tune with its Apple9 table (swept on the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro)';

describe('profileWarnings: a claim above the host chip’s true family', () => {
  it('cua-release on a guest of an M1 Ultra: Apple9 above Apple7, one line, first, naming the table llama.cpp tunes with', () => {
    expect(warningsFor('cua-release', guest(), [], hostWith('Apple M1 Ultra (Virtual)'))).toEqual([
      aboveHost('Apple9', 'Apple7', 'Apple M1 Ultra', `${APPLE9_TABLE}, not this host's Apple M1 Ultra`),
      ABOVE_HARDWARE(65536),
    ]);
  });

  it('under the v0.4 rules it names the chip llama.cpp tunes for: the M4 Max, Apple9’s representative', () => {
    expect(warningsFor('cua-release', guest(), [], hostWith('Apple M1 (Virtual)'), 'chip-tuning')).toEqual([
      aboveHost(
        'Apple9',
        'Apple7',
        'Apple M1',
        "llama.cpp v0.4.x and nightly builds after b10586 will tune for an M4 Max (Apple9's representative), not this host's Apple M1",
      ),
      ABOVE_HARDWARE(65536),
    ]);
  });

  it('under the v0.4 rules a claimed family without a representative chip gets the baseline kernels', () => {
    expect(warningsFor({ appleFamilyMax: 1008 }, guest(), [], hostWith('Apple M1 (Virtual)'), 'chip-tuning')).toEqual([
      aboveHost(
        'Apple8',
        'Apple7',
        'Apple M1',
        "llama.cpp v0.4.x and nightly builds after b10586 will tune with its baseline kernels, not this host's Apple M1",
      ),
    ]);
  });

  it('the tuning follows the name the profile answers: a chip name of its own is the chip llama.cpp tunes for', () => {
    const profile = { appleFamilyMax: 1008, deviceName: 'Apple M4 Max' };
    expect(warningsFor(profile, guest(), [], hostWith('Apple M1 (Virtual)'), 'chip-tuning')).toEqual([
      aboveHost(
        'Apple8',
        'Apple7',
        'Apple M1',
        "llama.cpp v0.4.x and nightly builds after b10586 will tune for an M4 Max (its own rows), not this host's Apple M1",
      ),
    ]);
  });

  it('rules without per-chip tuning, or a name that still picks the host’s own rows (bare metal), say it of engines in general', () => {
    expect(warningsFor({ appleFamilyMax: 1009 }, guest(), [], hostWith('Apple M1 (Virtual)'), 'device')).toEqual([
      aboveHost('Apple9', 'Apple7', 'Apple M1', GENERIC),
    ]);
    expect(warningsFor({ appleFamilyMax: 1009 }, guest(), [], hostWith('Apple M1 (Virtual)'), 'legacy')).toEqual([
      aboveHost('Apple9', 'Apple7', 'Apple M1', GENERIC),
    ]);
    const bare = m1() as [DeviceReport];
    expect(warningsFor({ appleFamilyMax: 1009 }, bare, [], hostWith('Apple M1 Ultra'), 'chip-tuning')).toEqual([
      aboveHost('Apple9', 'Apple7', 'Apple M1 Ultra', GENERIC),
      notParavirtual(bare[0]),
    ]);
  });

  it('up to the host’s family is no warning, one family more is', () => {
    expect(warningsFor('apple7', guest(), [], hostWith('Apple M1 (Virtual)'))).toEqual([]);
    expect(warningsFor({ appleFamilyMax: 1008 }, guest(), [], hostWith('Apple M1 (Virtual)'))).toEqual([
      aboveHost(
        'Apple8',
        'Apple7',
        'Apple M1',
        "llama.cpp v0.5.0 and later will tune with its Apple8 table (swept on the M2, M2 Max, M2 Pro), not this host's Apple M1",
      ),
    ]);
    expect(warningsFor({ appleFamilyMax: 1008 }, guest(), [], hostWith('Apple M2 Max (Virtual)'))).toEqual([]);
    expect(warningsFor('apple9-hw-tg', guest(), [], hostWith('Apple M4 Pro (Virtual)'))).toEqual([]);
    expect(warningsFor({ appleFamilyMax: 1010 }, guest(), [], hostWith('Apple M4 Pro (Virtual)'))).toEqual([
      aboveHost(
        'Apple10',
        'Apple9',
        'Apple M4 Pro',
        "llama.cpp v0.5.0 and later will tune with its Apple10 table (swept on the M5 Max), not this host's Apple M4 Pro",
      ),
    ]);
  });

  it('names the highest family the profile turns on, also through an explicit family answer', () => {
    expect(warningsFor({ families: { apple9: true, apple8: true } }, guest(), [], hostWith('Apple M1'))).toEqual([
      aboveHost('Apple9', 'Apple7', 'Apple M1', `${APPLE9_TABLE}, not this host's Apple M1`),
    ]);
  });

  it('only families the profile turns on count: a device already answering them is no claim of the profile’s', () => {
    const [device] = guest() as [DeviceReport];
    const apple9 = {
      ...device,
      families: { ...device.families, apple6: true, apple7: true, apple8: true, apple9: true },
    };
    expect(warningsFor('cua-release', [apple9], [], hostWith('Apple M1'))).toEqual([ABOVE_HARDWARE(65536)]);
  });

  it('an unknown chip, or a chip not in the family table, warns of nothing', () => {
    expect(warningsFor('cua-release', guest(), [], hostWith(null))).toEqual([ABOVE_HARDWARE(65536)]);
    expect(warningsFor('cua-release', guest(), [], hostWith('Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz'))).toEqual([
      ABOVE_HARDWARE(65536),
    ]);
    expect(warningsFor('cua-release', guest(), [], hostWith('Apple M9 (Virtual)'))).toEqual([ABOVE_HARDWARE(65536)]);
  });
});

describe('refusalFor: VM status is kern.hv_vmm_present alone', () => {
  const host = (isVirtualMachine: boolean | null, model: string | null): HostInfo => ({
    osVersion: '26.5.2',
    osBuild: null,
    model,
    isVirtualMachine,
    arch: 'arm64',
    memoryBytes: null,
    translated: false,
    cpuBrand: null,
    chip: null,
  });
  const raises = planProfile(m1(), resolveProfile('cua-release')).changes;
  const masks = planProfile(m1(), resolveProfile('mask-apple5')).changes;
  const refused = (
    where: string,
    model: string,
    className = 'AGXG13DDevice',
    raised = 'apple8, apple9, maxThreadgroupMemoryLength 32768 → 65536',
  ) =>
    `refusing to raise Metal answers: ${where} (hw.model ${model}), so the GPU really is what it reports. The profile would raise device 0 (${className}): ${raised}. Pass { force: true } (CLI: --force) to do it anyway; a profile that only lowers answers (mask-apple5 on an Apple GPU) needs no force.`;

  it('kern.hv_vmm_present = 1 alone lets a raise through, whatever hw.model says', () => {
    expect(refusalFor(host(true, 'Mac13,2'), raises, false)).toBeNull();
    expect(refusalFor(host(true, null), raises, false)).toBeNull();
  });

  it('hw.model VirtualMac2,1 alone is not enough: refused as not a VM', () => {
    expect(refusalFor(host(false, 'VirtualMac2,1'), raises, false)).toBe(
      refused('this host is not a virtual machine', 'VirtualMac2,1'),
    );
  });

  it('a paravirtual device name alone is not enough either', () => {
    const paravirtual = m1().map((d) => ({ ...d, name: 'Apple Paravirtual device', className: 'AppleParavirtDevice' }));
    const changes = planProfile(paravirtual, resolveProfile('cua-release')).changes;
    expect(refusalFor(host(false, 'Mac13,2'), changes, false)).toBe(
      refused('this host is not a virtual machine', 'Mac13,2', 'AppleParavirtDevice'),
    );
  });

  it('an unknown VM status is refused with its own reason; an unknown model reads "unknown"', () => {
    expect(refusalFor(host(null, null), raises, false)).toBe(
      refused('this host could not be identified as a virtual machine', 'unknown'),
    );
    expect(refusalFor(host(null, 'VirtualMac2,1'), raises, false)).toBe(
      refused('this host could not be identified as a virtual machine', 'VirtualMac2,1'),
    );
  });

  it('another name is an identity the device does not have: refused on bare metal like a raise; its own name is no change', () => {
    const renamed = planProfile(m1(), resolveProfile({ deviceName: 'Apple M4 Max' })).changes;
    expect(renamed).toEqual([
      { device: 0, className: 'AGXG13DDevice', field: 'name', from: 'Apple M1 Ultra', to: 'Apple M4 Max' },
    ]);
    expect(refusalFor(host(false, 'Mac13,2'), renamed, false)).toBe(
      refused('this host is not a virtual machine', 'Mac13,2', 'AGXG13DDevice', 'name Apple M1 Ultra → Apple M4 Max'),
    );
    expect(refusalFor(host(true, 'VirtualMac2,1'), renamed, false)).toBeNull();
    expect(planProfile(m1(), resolveProfile({ deviceName: 'Apple M1 Ultra' })).changes).toEqual([]);
  });

  it('force, a mask or no change at all goes ahead anywhere', () => {
    expect(refusalFor(host(false, 'Mac13,2'), raises, true)).toBeNull();
    expect(refusalFor(host(false, 'Mac13,2'), masks, false)).toBeNull();
    expect(refusalFor(host(null, null), [], false)).toBeNull();
  });

  it('mask-apple5 on an Intel or AMD GPU raises Apple1–5, which it claims no part of: refused, and the reason says so', () => {
    const exact = planProfile(twoGpus(), resolveProfile('mask-apple5')).changes;
    const apple = 'apple1, apple2, apple3, apple4, apple5';
    expect(refusalFor(host(false, 'MacBookPro16,1'), exact, false)).toBe(
      `refusing to raise Metal answers: this host is not a virtual machine (hw.model MacBookPro16,1), so the GPU really is what it reports. The profile would raise device 0 (MTLIGAccelDevice): ${apple}; device 1 (AMDRadeonX6000_AMDNavi14GraphicsDevice): ${apple}. Pass { force: true } (CLI: --force) to do it anyway; a profile that only lowers answers (mask-apple5 on an Apple GPU) needs no force.`,
    );
    expect(refusalFor(host(false, 'MacBookPro16,1'), exact, true)).toBeNull();
  });
});

describe('verifyAnswers', () => {
  const perDevice = 19 + 3;

  it('equal answers verify: every family, the name and both sizes, per device', () => {
    expect(verifyAnswers(twoGpus(), twoGpus())).toEqual({ ok: true, checked: 2 * perDevice, mismatches: [] });
  });

  it('a name the device does not answer as the profile says is a mismatch', () => {
    const expected = planProfile(guest(), resolveProfile({ deviceName: 'Apple M1 Ultra' })).expected;
    expect(verifyAnswers(expected, guest())).toEqual({
      ok: false,
      checked: perDevice,
      mismatches: [
        {
          device: 0,
          className: 'AppleParavirtDevice',
          field: 'name',
          expected: 'Apple M1 Ultra',
          actual: 'Apple Paravirtual device',
        },
      ],
    });
  });

  it('each differing answer is listed with its device, class, expected and actual value', () => {
    const expected = planProfile(twoGpus(), resolveProfile({ appleFamilyMax: 1007 })).expected;
    expect(verifyAnswers(expected, twoGpus())).toEqual({
      ok: false,
      checked: 2 * perDevice,
      mismatches: [0, 1].flatMap((device) =>
        ['apple1', 'apple2', 'apple3', 'apple4', 'apple5', 'apple6', 'apple7'].map((family) => ({
          device,
          className: device === 0 ? 'MTLIGAccelDevice' : 'AMDRadeonX6000_AMDNavi14GraphicsDevice',
          field: `families.${family}`,
          expected: true,
          actual: false,
        })),
      ),
    });
  });

  it('fails when a device went away, though every remaining answer matches', () => {
    const [intel] = twoGpus() as [DeviceReport];
    expect(verifyAnswers(twoGpus(), [intel])).toEqual({ ok: false, checked: perDevice, mismatches: [] });
  });

  it('fails when a device appeared', () => {
    const [intel] = twoGpus() as [DeviceReport];
    expect(verifyAnswers([intel], twoGpus())).toEqual({ ok: false, checked: 2 * perDevice, mismatches: [] });
  });
});

// The above-host-family warning, in-process: which answer changes count as claiming a family, which family is the
// highest claimed, and the one line that names it, the host's chip and what llama.cpp then tunes for. The CLI tests
// show the line reaches audit, exec and register; these pin the decision itself.
const guestReport = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock'));
const m1Host = (chip: string | null): HostInfo => ({ ...guestReport.host!, chip });

function change(field: string, from: AnswerChange['from'], to: AnswerChange['to']): AnswerChange {
  return { device: 0, className: 'AGXParavirtualDevice', field, from, to };
}
const raise = (family: string) => change(`families.${family}`, false, true);

describe('claimsAboveHostFamily', () => {
  it('a family raised above the chip’s true family claims above it; the true family itself does not', () => {
    // Apple M1's true family is Apple7.
    expect(claimsAboveHostFamily([raise('apple8')], m1Host('Apple M1'))).toBe(true);
    expect(claimsAboveHostFamily([raise('apple7')], m1Host('Apple M1'))).toBe(false);
    expect(claimsAboveHostFamily([raise('apple9')], m1Host('Apple M3'))).toBe(false);
    expect(claimsAboveHostFamily([raise('apple10')], m1Host('Apple M3'))).toBe(true);
  });

  it('an unknown chip or no host: nothing to compare with, never a claim', () => {
    expect(claimsAboveHostFamily([raise('apple10')], m1Host(null))).toBe(false);
    expect(claimsAboveHostFamily([raise('apple10')], null)).toBe(false);
  });

  it('only an Apple family turned from NO to YES counts', () => {
    const host = m1Host('Apple M1');
    expect(
      [
        [change('families.apple9', null, true)],
        [change('families.apple9', true, false)],
        [change('families.apple9', false, false)],
        [raise('metal3')],
        [raise('mac2')],
        [change('maxThreadgroupMemoryLength', 32768, 65536)],
        [change('name', 'Apple Paravirtual device', 'Apple M4 Max')],
        [],
      ].map((changes) => claimsAboveHostFamily(changes, host)),
    ).toEqual([false, false, false, false, false, false, false, false]);
  });
});

describe('profileWarnings: the above-host-family line', () => {
  const stock: DeviceReport[] = guestReport.devices;
  const warn = (changes: AnswerChange[], chip: string | null, deviceName: string | null = null) =>
    profileWarnings(
      { ...resolveProfile({ appleFamilyMax: 1009 }), deviceName },
      stock,
      changes,
      [],
      m1Host(chip),
      'current',
    ).filter((w) => w.code === 'above-host-family');

  it('names the highest family raised, whatever the order of the changes', () => {
    const expected = [
      { code: 'above-host-family', message: aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'current', stock[0]!.name) },
    ];
    expect(warn([raise('apple8'), raise('apple9')], 'Apple M1')).toEqual(expected);
    expect(warn([raise('apple9'), raise('apple8')], 'Apple M1')).toEqual(expected);
    expect(warn([raise('apple9'), raise('apple8'), raise('apple9')], 'Apple M1')).toEqual(expected);
  });

  it('tunes by the name the profile answers, when it has one', () => {
    expect(warn([raise('apple9')], 'Apple M1', 'Apple M1')).toEqual([
      { code: 'above-host-family', message: aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'current', 'Apple M1') },
    ]);
  });

  it('no line at or below the true family, or without a known chip', () => {
    expect([warn([raise('apple7')], 'Apple M1'), warn([raise('apple9')], null)]).toEqual([[], []]);
  });
});

describe('aboveHostFamilyMessage', () => {
  it('under rules that tune by chip: the chip llama.cpp will tune for, and the host’s', () => {
    expect(
      aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'chip-tuning', 'Apple Paravirtual device'),
    ).toMatchInlineSnapshot(
      `"the profile claims Apple9, above Apple7, the true family of this host's Apple M1: llama.cpp v0.4.x and nightly builds after b10586 will tune for an M4 Max (Apple9's representative), not this host's Apple M1 (profile host claims exactly the host's)"`,
    );
  });

  it('where the name still picks the host’s own rows (bare metal), or the rules tune by family alone: the family phrase', () => {
    expect([
      aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'chip-tuning', 'Apple M1'),
      aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'device', 'Apple Paravirtual device'),
    ]).toMatchInlineSnapshot(`
      [
        "the profile claims Apple9, above Apple7, the true family of this host's Apple M1: an engine that tunes by family tunes for a newer GPU than the one doing the work (profile host claims exactly the host's)",
        "the profile claims Apple9, above Apple7, the true family of this host's Apple M1: an engine that tunes by family tunes for a newer GPU than the one doing the work (profile host claims exactly the host's)",
      ]
    `);
  });

  it('under the current rules (tuning by family): the family llama.cpp tunes for', () => {
    expect(aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'current', 'Apple Paravirtual device')).toMatchInlineSnapshot(
      `"the profile claims Apple9, above Apple7, the true family of this host's Apple M1: llama.cpp v0.5.0 and later will tune with its Apple9 table (swept on the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro), not this host's Apple M1 (profile host claims exactly the host's)"`,
    );
  });

  it('a family the package knows by no name is given by its number', () => {
    expect(aboveHostFamilyMessage(1011, 'Apple M1', 1007, 'legacy', 'Apple Paravirtual device')).toMatchInlineSnapshot(
      `"the profile claims family 1011, above Apple7, the true family of this host's Apple M1: an engine that tunes by family tunes for a newer GPU than the one doing the work (profile host claims exactly the host's)"`,
    );
  });
});

// applyProfile, restore, status and register in this process, over the simulated stock Tahoe guest (a VM: every
// signal says so). Whole results: what a caller branches on and prints.
describeSim('the stock Tahoe guest (vz-guest-m1-ultra-tahoe-stock)', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');

  // `auto` caches its probe results here, not in the user's cache.
  process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-apply-vm-cache-'));

  const CLASS = 'AppleParavirtDevice';
  const SELECTORS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];
  const HOOKS = SELECTORS.map((selector) => ({ className: CLASS, selector }));
  const VERIFIED = { ok: true, checked: FAMILY_NAMES.length + 3, mismatches: [] };
  const ABOVE_HARDWARE = {
    code: 'threadgroup-memory-above-hardware',
    message:
      'threadgroup memory 65536 bytes is above 32768, which no Apple GPU exceeds: llama.cpp v0.5.0 and later sizes no kernel above 32768 from it on this device, but its ggml-metal.m releases do (audit --rules legacy); profile apple9-hw-tg avoids this',
  };
  // The vz guest snapshot's host is an M1 Ultra (Apple7): cua-release claims Apple9.
  const ABOVE_HOST = APPLE9_ABOVE_M1_ULTRA;
  const change = (field: string, from: boolean | number, to: boolean | number) => ({
    device: 0,
    className: CLASS,
    field,
    from,
    to,
  });
  const raised = (families: string[]) => families.map((f) => change(`families.${f}`, false, true));

  let fixture: SimFixture;

  describeSim('applyProfile, restore and status in a VM', () => {
    beforeAll(() => {
      requireSimBuild();
      fixture = loadFixture();
    });
    afterEach(() => {
      restore();
    });

    // First: nothing has been applied in this process yet (a filtered run starts a fresh process too).
    it('before any apply: status is inactive, and restore has nothing to take out and nothing to compare with', () => {
      expect(status()).toEqual(INACTIVE_STATUS);
      expect(status({ trace: true }).trace).toEqual([]);
      expect(restore()).toEqual({
        restored: false,
        reason: 'nothing-applied',
        restoredHooks: [],
        conflicts: [],
        verification: null,
      });
    });

    it('applyProfile returns the whole story: profile, classes, before, after, each change, warnings, verification', () => {
      const stock = probe({ allDevices: true });
      const result = applyProfile('cua-release');
      expect(result).toEqual({
        applied: true,
        reason: null,
        detail: null,
        profile: resolveProfile('cua-release'),
        patchedClasses: [
          {
            className: CLASS,
            selectors: SELECTORS.map((selector) => ({ selector, outcome: 'installed', mode: 'added' })),
          },
        ],
        before: stock,
        after: probe({ allDevices: true }),
        changed: [
          ...raised(['apple6', 'apple7', 'apple8', 'apple9']),
          change('maxThreadgroupMemoryLength', 32768, 65536),
        ],
        warnings: [ABOVE_HOST, ABOVE_HARDWARE],
        verification: VERIFIED,
      });
      expect(result.after?.devices[0]?.families.apple9).toBe(true);
    });

    it('applying B over A: `before` is A’s answers, `changed` goes from A to B, and B answers', () => {
      applyProfile('cua-release');
      const answeringA = probe({ allDevices: true });
      const result = applyProfile('apple7');
      expect(result).toMatchObject({ applied: true, before: answeringA, verification: VERIFIED, warnings: [] });
      expect(result.changed).toEqual([
        change('families.apple8', true, false),
        change('families.apple9', true, false),
        change('maxThreadgroupMemoryLength', 65536, 32768),
      ]);
      expect(result.patchedClasses).toEqual([
        {
          className: CLASS,
          selectors: SELECTORS.map((selector) => ({ selector, outcome: 'already-installed', mode: 'added' })),
        },
      ]);
      expect(status().profile).toEqual(resolveProfile('apple7'));
    });

    it('status while a profile is active: the profile, the classes, our hooks; the trace only when asked', () => {
      applyProfile('apple9-hw-tg', { trace: true });
      const active = {
        supported: true,
        active: true,
        profile: resolveProfile('apple9-hw-tg'),
        patchedClasses: [CLASS],
        hooks: HOOKS.map((h) => ({ ...h, mode: 'added', ours: true })),
        tracing: true,
        llamaCpp: [],
      };
      expect(status()).toEqual({ ...active, trace: null });
      fixture.query(false);
      const trace = status({ trace: true }).trace;
      expect(trace?.find((t) => t.family === 'apple9')).toEqual({
        selector: 'supportsFamily:',
        family: 'apple9',
        calls: 1,
        stock: false,
        given: true,
      });
      expect(trace?.find((t) => t.family === 'apple1')).toEqual({
        selector: 'supportsFamily:',
        family: 'apple1',
        calls: 1,
        stock: true,
        given: true,
      });
      expect(trace?.find((t) => t.selector === 'maxThreadgroupMemoryLength')).toEqual({
        selector: 'maxThreadgroupMemoryLength',
        family: null,
        calls: 1,
        stock: 32768,
        given: 32768,
      });
      expect(status({ trace: false })).toEqual({ ...active, trace: null });
    });

    it('restore takes every hook out and verifies against the stock answers; again, it has nothing left to do', () => {
      const stock = probe({ allDevices: true });
      applyProfile('cua-release');
      expect(restore()).toEqual({
        restored: true,
        reason: null,
        restoredHooks: HOOKS,
        conflicts: [],
        verification: VERIFIED,
      });
      expect(probe({ allDevices: true })).toEqual(stock);
      expect(restore()).toEqual({
        restored: false,
        reason: 'nothing-applied',
        restoredHooks: [],
        conflicts: [],
        verification: VERIFIED,
      });
      expect(status()).toEqual(INACTIVE_STATUS);
    });

    it('a hook on top of ours: restore leaves it working, reports the conflict, and verification fails on its answer', () => {
      applyProfile('cua-release');
      expect(fixture.installForeignHook(CLASS, 12345)).toBe(true);
      const mismatch = {
        device: 0,
        className: CLASS,
        field: 'maxThreadgroupMemoryLength',
        expected: 32768,
        actual: 12345,
      };
      const conflicts = [{ className: CLASS, selector: 'maxThreadgroupMemoryLength' }];
      expect(restore()).toEqual({
        restored: true,
        reason: null,
        restoredHooks: [HOOKS[0], HOOKS[2]],
        conflicts,
        verification: { ok: false, checked: FAMILY_NAMES.length + 3, mismatches: [mismatch] },
      });
      expect(restore()).toEqual({
        restored: false,
        reason: 'conflicts',
        restoredHooks: [],
        conflicts,
        verification: { ok: false, checked: FAMILY_NAMES.length + 3, mismatches: [mismatch] },
      });
      expect(fixture.removeForeignHook(CLASS)).toBe(true);
      expect(restore()).toEqual({
        restored: true,
        reason: null,
        restoredHooks: [HOOKS[1]],
        conflicts: [],
        verification: VERIFIED,
      });
    });

    it('strict changes nothing when the profile applies', () => {
      expect(applyProfile('apple7', { strict: true })).toMatchObject({ applied: true, verification: VERIFIED });
    });
  });

  describeSim('register in a VM', () => {
    beforeAll(requireSimBuild);
    afterEach(() => {
      restore();
    });

    it('unset, empty or blank: applies host-family (Apple7 on this M1 Ultra guest), the whole applyProfile result', () => {
      for (const env of [{}, { METAL_CAP_SHIM_PROFILE: '' }, { METAL_CAP_SHIM_PROFILE: ' \t' }]) {
        const stock = probe({ allDevices: true });
        const outcome = registerFromEnvironment(env);
        expect(outcome).toEqual({
          action: 'applied',
          result: {
            applied: true,
            reason: null,
            detail: null,
            profile: { ...resolveProfile('host-family'), appleFamilyMax: 1007, mlxArchitecture: 'applegpu_g13d' },
            patchedClasses: [
              {
                className: CLASS,
                selectors: SELECTORS.map((selector) => ({ selector, outcome: 'installed', mode: 'added' })),
              },
            ],
            before: stock,
            after: probe({ allDevices: true }),
            changed: raised(['apple6', 'apple7']),
            warnings: [],
            verification: VERIFIED,
          },
        });
        restore();
      }
    });

    it('a built-in name (spaces around it are ignored) or a JSON profile is applied as given', () => {
      for (const value of ['apple7', '  apple7\n']) {
        expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toMatchObject({
          action: 'applied',
          result: { applied: true, profile: resolveProfile('apple7') },
        });
        expect(status().profile).toEqual(resolveProfile('apple7'));
        restore();
      }
      const json = '{"appleFamilyMax":1008,"maxThreadgroupMemoryLength":49152}';
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: json })).toMatchObject({
        action: 'applied',
        result: { applied: true, profile: resolveProfile(json) },
      });
      expect(probe().devices[0]).toMatchObject({
        maxThreadgroupMemoryLength: 49152,
        families: { apple8: true, apple9: false },
      });
    });

    it('auto applies the verified profile and says where it came from', () => {
      const outcome = registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: ' auto ' });
      expect(outcome).toMatchObject({ action: 'applied', result: { applied: true, auto: { from: 'doctor' } } });
      expect(status().active).toBe(true);
    });

    it('auto with nothing cached while a profile is applied: the probe runner measures stock answers all the same, and the verified profile replaces the applied one', async () => {
      const saved = process.env.XDG_CACHE_HOME;
      process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-apply-vm-empty-cache-'));
      try {
        applyProfile('apple7');
        expect(status().profile).toMatchObject({ appleFamilyMax: 1007, deviceName: null });
        const outcome = registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'auto' });
        expect(outcome.action).toBe('applied');
        if (outcome.action !== 'applied') throw new Error('unreachable');
        expect(outcome.result.auto?.from).toBe('doctor');
        // The runner saw the guest's own answers (Apple5, no residency set), not apple7's: the verified profile is what
        // the stock guest proves, with the host chip's name that the heap probe allows.
        expect(status().profile).toEqual({
          name: null,
          appleFamilyMax: 1007,
          maxThreadgroupMemoryLength: null,
          recommendedMaxWorkingSetSize: null,
          deviceName: 'Apple M1 Ultra',
          families: {},
          mode: 'raise',
        });
      } finally {
        process.env.XDG_CACHE_HOME = saved;
      }
    });

    /** importRegister('auto') with the doctor cache under `cache`; then the profile it left applied. */
    const registerAutoWith = async (cache: string) => {
      const saved = process.env.XDG_CACHE_HOME;
      process.env.XDG_CACHE_HOME = cache;
      try {
        return { effects: await importRegister('auto'), profile: status().profile };
      } finally {
        process.env.XDG_CACHE_HOME = saved;
      }
    };

    it('register with auto: a cache folder that cannot be created (/proc/nope) applies all the same, with one METAL_CAP_SHIM_CACHE_NOT_WRITTEN warning', async () => {
      const { effects, profile } = await registerAutoWith('/proc/nope');
      expect(effects).toEqual({
        exits: [],
        warnings: [
          [
            "metal-cap-shim/register: profile auto: the doctor cache could not be written: ENOENT: no such file or directory, mkdir '/proc/nope'",
            { code: 'METAL_CAP_SHIM_CACHE_NOT_WRITTEN' },
          ],
        ],
        stderr: '',
      });
      expect(profile).toMatchObject({ appleFamilyMax: 1007, maxThreadgroupMemoryLength: null });
    });

    it('register with auto: a planted cache folder (mode 0777) is ignored with a METAL_CAP_SHIM_CACHE_IGNORED warning, nothing is written there, and its values are not applied', async () => {
      const cache = mkdtempSync(path.join(tmpdir(), 'mcs-apply-vm-planted-'));
      const first = await registerAutoWith(cache);
      restore();
      const folder = path.join(cache, 'metal-cap-shim');
      const [name] = readdirSync(folder);
      const file = path.join(folder, name!);
      const entry = JSON.parse(readFileSync(file, 'utf8')) as DoctorCacheEntry;
      entry.result.verifiedProfile = { ...entry.result.verifiedProfile, appleFamilyMax: 1010 };
      writeFileSync(file, JSON.stringify(entry));
      chmodSync(folder, 0o777);
      const { effects, profile } = await registerAutoWith(cache);
      const planted = `the cache folder ${folder} can be written by other users (mode 0777)`;
      expect(effects).toEqual({
        exits: [],
        warnings: [
          [
            `metal-cap-shim/register: profile auto ignored the cache file ${file}: ${planted}; the device was measured again`,
            { code: 'METAL_CAP_SHIM_CACHE_IGNORED' },
          ],
          [
            `metal-cap-shim/register: profile auto: the doctor cache could not be written: ${planted}, so nothing is written there`,
            { code: 'METAL_CAP_SHIM_CACHE_NOT_WRITTEN' },
          ],
        ],
        stderr: '',
      });
      expect([first.effects.warnings, profile]).toEqual([[], first.profile]);
    });

    it('off applies nothing, even in a VM, in any case', () => {
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'off' })).toEqual({ action: 'off' });
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'OFF' })).toEqual({ action: 'off' });
      expect(status().active).toBe(false);
    });

    it('a malformed value throws the profile’s own error and installs nothing', () => {
      for (const value of ['apple99', '{"appleFamilyMax":', '{"appleFamilyMax":2000}', '{"mode":"lower"}']) {
        expect(() => registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toThrow(invalidProfileError(value));
        expect(status().active).toBe(false);
      }
      expect(() => registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'apple99' })).toThrow(InvalidProfileError);
    });

    it('importing register applies with one warning when the profile claims above the host’s family, none otherwise; a malformed value exits 1 with its code and message', async () => {
      expect(await importRegister(undefined)).toEqual({ exits: [], warnings: [], stderr: '' });
      expect(status().profile).toEqual({
        ...resolveProfile('host-family'),
        appleFamilyMax: 1007,
        mlxArchitecture: 'applegpu_g13d',
      });
      restore();
      expect(await importRegister('cua-release')).toEqual({
        exits: [],
        warnings: [[`metal-cap-shim/register: ${ABOVE_HOST.message}`, { code: 'METAL_CAP_SHIM_ABOVE_HOST_FAMILY' }]],
        stderr: '',
      });
      expect(status().profile).toEqual(resolveProfile('cua-release'));
      restore();
      expect(await importRegister('apple7')).toEqual({ exits: [], warnings: [], stderr: '' });
      expect(status().profile).toEqual(resolveProfile('apple7'));
      restore();
      expect(await importRegister('off')).toEqual({ exits: [], warnings: [], stderr: '' });
      expect(status().active).toBe(false);
      expect(await importRegister('apple99')).toEqual({
        exits: [1],
        warnings: [],
        stderr: `metal-cap-shim/register: ERR_INVALID_PROFILE: ${invalidProfileError('apple99').message}\n`,
      });
      expect(status().active).toBe(false);
    });
  });
});

// applyProfile on the two-GPU Intel MacBook Pro (bare metal, default device listed second): warnings follow the
// device they are about, the refusal names the host, and the default device, being listed, is verified once.
describeSim('the two-GPU MacBook Pro (macbookpro16-intel-amd-two-gpus)', () => {
  useSimulation('macbookpro16-intel-amd-two-gpus');

  const GiB = 1024 ** 3;
  const INTEL = 'MTLIGAccelDevice';
  const AMD = 'AMDRadeonX6000_AMDNavi14GraphicsDevice';
  const VERIFIED = { ok: true, checked: 2 * (FAMILY_NAMES.length + 3), mismatches: [] };
  const REFUSAL =
    'refusing to raise Metal answers: this host is not a virtual machine (hw.model MacBookPro16,1), so the GPU really is what it reports. The profile would raise device 0 (MTLIGAccelDevice): recommendedMaxWorkingSetSize 1610612736 → 4294967296. Pass { force: true } (CLI: --force) to do it anyway; a profile that only lowers answers (mask-apple5 on an Apple GPU) needs no force.';

  const notParavirtual = (index: number, name: string, className: string) => ({
    code: 'not-paravirtual',
    message: `device ${index} (${name}, ${className}) is not the paravirtual device; raising its answers claims features its GPU may not have`,
  });

  describeSim('two GPUs on bare metal', () => {
    beforeAll(requireSimBuild);
    afterEach(() => {
      restore();
    });

    it('a raise of the Intel GPU alone warns about the Intel GPU alone', () => {
      const result = applyProfile({ recommendedMaxWorkingSetSize: 4 * GiB }, { force: true });
      expect(result).toMatchObject({
        applied: true,
        changed: [{ device: 0, className: INTEL, field: 'recommendedMaxWorkingSetSize', from: 1.5 * GiB, to: 4 * GiB }],
        warnings: [notParavirtual(0, 'Intel(R) UHD Graphics 630', INTEL)],
        verification: VERIFIED,
      });
    });

    it('a raise of both warns about both, in device order', () => {
      const result = applyProfile({ recommendedMaxWorkingSetSize: 12 * GiB }, { force: true });
      expect(result.warnings).toEqual([
        notParavirtual(0, 'Intel(R) UHD Graphics 630', INTEL),
        notParavirtual(1, 'AMD Radeon Pro 5500M', AMD),
      ]);
      expect(result.verification).toEqual(VERIFIED);
    });

    it('without force a raise is refused, naming the host; with strict it throws RefusedError', () => {
      expect(applyProfile({ recommendedMaxWorkingSetSize: 4 * GiB })).toEqual({
        applied: false,
        reason: 'refused-bare-metal',
        detail: REFUSAL,
        profile: resolveProfile({ recommendedMaxWorkingSetSize: 4 * GiB }),
        patchedClasses: [],
        before: null,
        after: null,
        changed: [],
        warnings: [],
        verification: null,
      });
      let thrown: unknown;
      try {
        applyProfile('apple7', { strict: true });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(RefusedError);
      const apple7 = 'apple1, apple2, apple3, apple4, apple5, apple6, apple7';
      expect(thrown).toMatchObject({
        code: 'ERR_REFUSED_BARE_METAL',
        message: REFUSAL.replace(
          'device 0 (MTLIGAccelDevice): recommendedMaxWorkingSetSize 1610612736 → 4294967296',
          `device 0 (${INTEL}): ${apple7}; device 1 (${AMD}): ${apple7}`,
        ),
      });
    });

    it('a mask needs no force and warns about nothing', () => {
      expect(applyProfile({ families: { metal3: false } })).toMatchObject({
        applied: true,
        changed: [
          { device: 0, className: INTEL, field: 'families.metal3', from: true, to: false },
          { device: 1, className: AMD, field: 'families.metal3', from: true, to: false },
        ],
        warnings: [],
        verification: VERIFIED,
      });
    });
  });
});

// The native module loads, but Metal has no device (the simulated Metal with no snapshot selected; on a Mac, a
// headless session or a VM without a paravirtual GPU).
describeSim('no snapshot: no Metal device', () => {
  useSimulation('');

  describeSim('no Metal device', () => {
    beforeAll(requireSimBuild);

    it('applyProfile does not apply: reason no-device, with the probe’s own detail', () => {
      const { detail } = probe();
      expect(detail).toContain('METAL_CAP_SHIM_SIM_SNAPSHOT');
      expect(applyProfile('apple7')).toEqual({
        applied: false,
        reason: 'no-device',
        detail,
        profile: resolveProfile('apple7'),
        patchedClasses: [],
        before: null,
        after: null,
        changed: [],
        warnings: [],
        verification: null,
      });
    });

    it('with strict it throws NativeError ERR_NO_DEVICE', () => {
      let thrown: unknown;
      try {
        applyProfile('apple7', { strict: true });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(NativeError);
      expect(thrown).toMatchObject({ code: 'ERR_NO_DEVICE', message: probe().detail });
    });

    it('an apply that found no device leaves nothing behind: restore has nothing to take out or compare with; status is inactive', () => {
      expect(applyProfile('apple7')).toMatchObject({ applied: false, reason: 'no-device' });
      expect(restore()).toEqual({
        restored: false,
        reason: 'nothing-applied',
        restoredHooks: [],
        conflicts: [],
        verification: null,
      });
      expect(status({ trace: true })).toEqual({ ...INACTIVE_STATUS, trace: [] });
    });

    it('register: a host with no recorded VM status is not taken for a VM', () => {
      expect(registerFromEnvironment({})).toEqual({
        action: 'not-a-vm',
        host: {
          osVersion: null,
          osBuild: null,
          model: null,
          isVirtualMachine: null,
          arch: null,
          memoryBytes: null,
          translated: null,
          cpuBrand: null,
          chip: null,
        },
      });
    });
  });
});

// The device's name as a profile answer on bare metal (the M1 Ultra snapshot, whose class implements its own
// queries, `name` included): the host profile names the chip the device already is, so it installs no `name` hook
// at all; another name is an identity the GPU does not have, refused without force like any raise.
describeSim('the device name as an answer on the bare-metal M1 Ultra (m1-ultra-bare-metal)', () => {
  useSimulation('m1-ultra-bare-metal');

  const CLASS = 'AGXG13DDevice';
  const ANSWERS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];
  const VERIFIED = { ok: true, checked: FAMILY_NAMES.length + 3, mismatches: [] };

  let fixture: SimFixture;

  describeSim('a name on bare metal', () => {
    beforeAll(() => {
      requireSimBuild();
      fixture = loadFixture();
    });
    afterEach(() => {
      restore();
    });

    it('host: the stock name and the stock family, so nothing changes, nothing is refused and no name hook goes in', () => {
      const stock = probe({ allDevices: true });
      const r = applyProfile('host');
      expect(r).toMatchObject({
        applied: true,
        // On bare metal MLX reads the GPU's own architecture: nothing is offered, so the bound profile has no field.
        profile: (({ mlxArchitecture: _, ...bound }) => bound)({
          ...resolveProfile('host'),
          appleFamilyMax: 1007,
          deviceName: 'Apple M1 Ultra',
        }),
        changed: [],
        warnings: [{ code: 'no-change', message: 'the profile changes no answer on this device' }],
        verification: VERIFIED,
      });
      expect(r.patchedClasses).toEqual([
        {
          className: CLASS,
          selectors: ANSWERS.map((selector) => ({ selector, outcome: 'installed', mode: 'replaced' })),
        },
      ]);
      expect(status().hooks.map((h) => h.selector)).toEqual(ANSWERS);
      expect(probe({ allDevices: true })).toEqual(stock);
    });

    it('another name without force: refused, as a raise is', () => {
      const r = applyProfile({ deviceName: 'Apple M4 Max' });
      expect([r.applied, r.reason, status().active]).toEqual([false, 'refused-bare-metal', false]);
    });

    it('another name with force: the class’s own `name` is replaced, the name verified, and restore brings the chip’s back', () => {
      const r = applyProfile({ deviceName: 'Apple M4 Max' }, { force: true });
      expect(r).toMatchObject({
        applied: true,
        changed: [{ device: 0, className: CLASS, field: 'name', from: 'Apple M1 Ultra', to: 'Apple M4 Max' }],
        verification: VERIFIED,
      });
      expect(r.patchedClasses[0]!.selectors.find((s) => s.selector === 'name')).toEqual({
        selector: 'name',
        outcome: 'installed',
        mode: 'replaced',
      });
      expect(r.warnings.map((w) => w.code)).toEqual(['not-paravirtual']);
      expect((fixture.query() as { name: string }).name).toBe('Apple M4 Max');
      expect(restore()).toMatchObject({ restored: true, verification: VERIFIED });
      expect((fixture.query() as { name: string }).name).toBe('Apple M1 Ultra');
    });
  });
});

// The device's name as a profile answer, in this process, over the simulated macos-14 arm64 runner: a guest whose host
// is an M1 ("Apple M1 (Virtual)"). The host profile claims that chip's family and name; the name is hooked per class
// like the other answers, verified on fresh devices, traced, and taken out again by restore().
describeSim('the device name as an answer in a guest of an M1 (github-macos-14-arm64-runner)', () => {
  useSimulation('github-macos-14-arm64-runner');

  const CLASS = 'AppleParavirtDevice';
  const STOCK_NAME = 'Apple Paravirtual device';
  const ANSWERS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];
  const VERIFIED = { ok: true, checked: FAMILY_NAMES.length + 3, mismatches: [] };
  const HOST = {
    ...resolveProfile('host'),
    appleFamilyMax: 1007,
    deviceName: 'Apple M1',
    mlxArchitecture: 'applegpu_g13g',
  };

  let fixture: SimFixture;

  describeSim('the host profile in a guest of an M1', () => {
    /** The chip's name in place of the paravirtual device's: MLX creates the heap it skips in a VM (as audit says). */
    const HEAP_IN_VM = {
      code: 'heap-in-vm',
      message:
        'MLX: the device answers "Apple M1" instead of "Apple Paravirtual device", so in this VM MLX creates the buffer heap it skips there on purpose and adds it to its residency set; check it with doctor\'s heap probe, or leave deviceName null where MLX runs',
    };
    beforeAll(() => {
      requireSimBuild();
      fixture = loadFixture();
    });
    afterEach(() => {
      restore();
    });

    it('claims Apple7 and the name "Apple M1", verified on fresh devices: the name among the answers checked', () => {
      const stock = probe({ allDevices: true });
      const r = applyProfile('host');
      expect(r).toMatchObject({ applied: true, profile: HOST, verification: VERIFIED, warnings: [HEAP_IN_VM] });
      expect(r.patchedClasses).toEqual([
        {
          className: CLASS,
          selectors: [...ANSWERS, 'name'].map((selector) => ({ selector, outcome: 'installed', mode: 'added' })),
        },
      ]);
      expect(r.changed).toEqual([
        { device: 0, className: CLASS, field: 'name', from: STOCK_NAME, to: 'Apple M1' },
        ...['apple1', 'apple2', 'apple3', 'apple4', 'apple5', 'apple6', 'apple7'].map((f) => ({
          device: 0,
          className: CLASS,
          field: `families.${f}`,
          from: false,
          to: true,
        })),
      ]);
      expect(r.before).toEqual(stock);
      expect(fixture.query()).toMatchObject({ className: CLASS, name: 'Apple M1', maxThreadgroupMemoryLength: 32768 });
      expect(status().profile).toEqual(HOST);
    });

    it('restore() takes the name hook out with the others, and the stock name is back, verified', () => {
      applyProfile('host');
      expect(restore()).toEqual({
        restored: true,
        reason: null,
        restoredHooks: [...ANSWERS, 'name'].map((selector) => ({ className: CLASS, selector })),
        conflicts: [],
        verification: VERIFIED,
      });
      expect((fixture.query() as { name: string }).name).toBe(STOCK_NAME);
      expect(probe().devices[0]!.name).toBe(STOCK_NAME);
    });

    it('traced: how often the program asked the name, the stock name and the name it was given', () => {
      applyProfile('host', { trace: true });
      fixture.query();
      fixture.query();
      expect(status({ trace: true }).trace?.find((t) => t.selector === 'name')).toEqual({
        selector: 'name',
        family: null,
        calls: 2,
        stock: STOCK_NAME,
        given: 'Apple M1',
      });
    });

    it('a profile without a name swapped in over it: the name hook stays, and answers the stock name again', () => {
      applyProfile('host', { trace: true });
      const r = applyProfile('apple7', { trace: true });
      expect(r).toMatchObject({ applied: true, verification: VERIFIED });
      expect(r.changed).toEqual([{ device: 0, className: CLASS, field: 'name', from: 'Apple M1', to: STOCK_NAME }]);
      expect(r.patchedClasses[0]!.selectors.map((s) => [s.selector, s.outcome])).toEqual(
        ANSWERS.map((selector) => [selector, 'already-installed']),
      );
      expect(status().hooks.map((h) => h.selector)).toEqual([...ANSWERS, 'name']);
      expect((fixture.query() as { name: string }).name).toBe(STOCK_NAME);
      // Traced while passing through: the stock name given.
      expect(status({ trace: true }).trace?.find((t) => t.selector === 'name')).toEqual({
        selector: 'name',
        family: null,
        calls: 1,
        stock: STOCK_NAME,
        given: STOCK_NAME,
      });
    });

    it('another name over the host profile: the same hook answers it', () => {
      applyProfile('host');
      const r = applyProfile({ ...HOST, deviceName: 'Apple M1 Max' });
      expect(r).toMatchObject({ applied: true, verification: VERIFIED });
      expect(r.patchedClasses[0]!.selectors.map((s) => [s.selector, s.outcome])).toEqual(
        [...ANSWERS, 'name'].map((selector) => [selector, 'already-installed']),
      );
      expect((fixture.query() as { name: string }).name).toBe('Apple M1 Max');
    });
  });
});

// The host profile where the host's chip is unknown: the stock Tahoe guest with no brand string recorded. Resolving
// it is a result (`host-unknown`), never a guess: applyProfile, strict, register and a custom 'host' value alike.
describeSim('a guest whose host chip is unknown (the Tahoe guest without a brand string)', () => {
  useSimulation(() =>
    editedSnapshot('vz-guest-m1-ultra-tahoe-stock', 'guest-of-an-unknown-host', (s) => {
      s.host.cpuBrand = null;
      s.host.chip = null;
      s.host.provenance.cpuBrand = 'unrecorded';
      s.host.provenance.chip = 'unrecorded';
    }),
  );

  const DETAIL =
    'host claims the host chip’s own answers, but this host’s chip is unknown (it reports no machdep.cpu.brand_string), so nothing is claimed rather than a guess';

  describeSim('the host profile where the chip is unknown', () => {
    beforeAll(requireSimBuild);
    afterEach(() => {
      restore();
    });

    it('applyProfile: not applied, reason host-unknown, nothing installed', () => {
      expect(applyProfile('host')).toEqual({
        applied: false,
        reason: 'host-unknown',
        detail: DETAIL,
        profile: resolveProfile('host'),
        patchedClasses: [],
        before: null,
        after: null,
        changed: [],
        warnings: [],
        verification: null,
      });
      expect(status()).toMatchObject({ active: false, hooks: [] });
    });

    it('strict: RefusedError ERR_HOST_UNKNOWN', () => {
      expect(thrown(() => applyProfile('host', { strict: true }))).toEqual(
        new RefusedError(DETAIL, 'ERR_HOST_UNKNOWN'),
      );
      expect(status().active).toBe(false);
    });

    it('a custom profile with one "host" value is refused the same way; one without applies', () => {
      const custom = applyProfile({ appleFamilyMax: 1007, deviceName: 'host' });
      expect([custom.applied, custom.reason, custom.detail]).toEqual([
        false,
        'host-unknown',
        DETAIL.replace('host claims', 'the profile claims'),
      ]);
      expect(applyProfile({ appleFamilyMax: 1007, deviceName: 'Apple M1' }).applied).toBe(true);
    });

    it('exec: refused with exit 125 (a failure of exec itself) before the program starts; --allow-unpatched runs it', () => {
      const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: process.env.METAL_CAP_SHIM_SIM_SNAPSHOT };
      const refused = runCli(['exec', '--profile', 'host', '--', process.execPath, '-e', 'console.log("ran")'], env);
      expect([refused.status, refused.stdout, refused.stderr]).toEqual([
        125,
        '',
        `metal-cap-shim: ERR_HOST_UNKNOWN: ${DETAIL} (--allow-unpatched runs the program unpatched)\n`,
      ]);
      const unpatched = runCli(
        ['exec', '--allow-unpatched', '--profile', 'host', '--', process.execPath, '-e', 'console.log("ran")'],
        env,
      );
      expect([unpatched.status, unpatched.stdout]).toEqual([0, 'ran\n']);
    });

    /** The fallback, and what llama.cpp then tunes for (said aloud: the fallback alone, SAID_ONCE). */
    const FALLBACK_WARNINGS = [
      {
        code: 'host-unknown-fallback',
        message:
          'host-family claims the host chip’s own family, but this host’s chip is unknown (it reports no machdep.cpu.brand_string): profile apple7 is used instead (name a profile to choose another)',
      },
      {
        code: 'tuned-for-other-chip',
        message:
          "llama.cpp v0.5.0 and later: with Apple7 claimed, flash attention is tuned with its Apple7 table (swept on the M1, M1 Ultra); stock tuning: with its baseline kernels; this host's chip is unknown (its brand string names no Apple chip, or was not recorded), so that tuning may be for another chip",
      },
    ];

    it('the default (host-family) falls back to apple7 and says so once: applyProfile, exec and audit alike', () => {
      const FALLBACK =
        'host-family claims the host chip’s own family, but this host’s chip is unknown (it reports no machdep.cpu.brand_string): profile apple7 is used instead (name a profile to choose another)';
      const r = applyProfile();
      expect([r.applied, r.profile, r.warnings]).toEqual([true, resolveProfile('apple7'), FALLBACK_WARNINGS]);
      restore();
      const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: process.env.METAL_CAP_SHIM_SIM_SNAPSHOT };
      const ran = runCli(['exec', '--', process.execPath, '-e', 'console.log("ran")'], env);
      expect([ran.status, ran.stdout, ran.stderr]).toEqual([0, 'ran\n', `metal-cap-shim: warning: ${FALLBACK}\n`]);
      const quiet = runCli(['exec', '-q', '--', process.execPath, '-e', 'console.log("ran")'], env);
      expect([quiet.status, quiet.stdout, quiet.stderr]).toEqual([
        0,
        'ran\n',
        `metal-cap-shim: warning: ${FALLBACK}\n`,
      ]);
      const audit = JSON.parse(
        runCli(['audit', '--json', '--snapshot', process.env.METAL_CAP_SHIM_SIM_SNAPSHOT!], env).stdout,
      );
      expect([audit.profile, audit.warnings]).toEqual([resolveProfile('apple7'), FALLBACK_WARNINGS]);
    });

    it('doctor names the profile it ran under, the fallback, and says why: live and replayed alike', () => {
      const FALLBACK =
        'host-family claims the host chip’s own family, but this host’s chip is unknown (it reports no machdep.cpu.brand_string): profile apple7 is used instead (name a profile to choose another)';
      const file = process.env.METAL_CAP_SHIM_SIM_SNAPSHOT!;
      const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: file, XDG_CACHE_HOME: mkdtempSync(path.join(tmpdir(), 'mcs-cache-')) };
      const live = runCli(['doctor', '--json', '--mmap-size', '1M'], env);
      const replayed = runCli(['doctor', '--json', '--snapshot', file], env);
      // Exit 1 for both: the stock guest's recorded residency-set failure is a fault found.
      for (const r of [live, replayed]) {
        const report = JSON.parse(r.stdout);
        expect([r.status, report.candidateProfile, report.candidateWarnings]).toEqual([
          1,
          resolveProfile('apple7'),
          FALLBACK_WARNINGS,
        ]);
      }
      const text = runCli(['doctor', '--mmap-size', '1M'], env).stdout.split('\n');
      expect(text.filter((l) => l.startsWith('Patched runs') || l.includes('[host-unknown-fallback]'))).toEqual([
        'Patched runs: under apple7, then restored',
        `  ! ${FALLBACK} [host-unknown-fallback]`,
      ]);
    });

    it('register: not applied, and why', () => {
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'host' })).toEqual({
        action: 'not-applied',
        why: `host-unknown: ${DETAIL}`,
        auto: null,
      });
      expect(status().active).toBe(false);
    });
  });
});

// Two paravirtual devices, and the default one (listed second) is handed out by MTLCreateSystemDefaultDevice() as an
// object of a third class, as Metal's validation layer wraps the default device. Every class is patched, and the
// default object is verified on its own, under the index of the listed device it stands for.
// The engine lists hooks in the order their (class, selector) was first hooked in the process: the blocks
// that hook SimSecondParavirtDevice come before the one that hooks MTLDebugDevice alone.
describeSim('a wrapped default device listed second (two paravirtual devices)', () => {
  useSimulation(() => defaultObjectGuest('default-object-guest', null));

  const PER_DEVICE = FAMILY_NAMES.length + 3;
  const CLASSES = ['AppleParavirtDevice', 'SimSecondParavirtDevice', 'MTLDebugDevice'];

  describeSim('a wrapped default device that is not the first listed', () => {
    beforeAll(requireSimBuild);
    afterEach(() => {
      restore();
    });

    it('the default object is the wrapper; the list has both plain devices, the second one default', () => {
      // The wrapper keeps the number of the device it wraps (found by registry ID), as --device and audit number it.
      expect(probe().devices.map((d) => [d.index, d.className, d.isDefault])).toEqual([[1, 'MTLDebugDevice', true]]);
      expect(probe({ allDevices: true }).devices.map((d) => [d.index, d.className, d.isDefault])).toEqual([
        [0, 'AppleParavirtDevice', false],
        [1, 'SimSecondParavirtDevice', true],
      ]);
    });

    it('applyProfile patches all three classes and verifies the two listed devices and the wrapper', () => {
      const result = applyProfile('cua-release');
      expect(result.patchedClasses.map((c) => c.className)).toEqual(CLASSES);
      expect(result.verification).toEqual({ ok: true, checked: 3 * PER_DEVICE, mismatches: [] });
      expect(status().patchedClasses).toEqual(CLASSES);
    });

    it('B over A: the wrapper is expected to answer as B says, from its stock answers (not A’s)', () => {
      applyProfile('cua-release');
      const result = applyProfile('apple7');
      expect(result).toMatchObject({
        applied: true,
        verification: { ok: true, checked: 3 * PER_DEVICE, mismatches: [] },
      });
      expect(probe().devices[0]).toMatchObject({
        className: 'MTLDebugDevice',
        families: { apple7: true, apple8: false },
      });
    });
  });
});

// Verification that fails on the wrapped default object alone, after another profile was applied: the previous
// profile comes back as it was (trace included), and the result keeps what failed. One scenario per snapshot loaded:
// the drifting answer changes once, after a fixed number of queries, and stays changed.
describeSim('a wrapped default device whose answer drifts', () => {
  useSimulation(() => defaultObjectGuest('default-object-drift', DRIFT_AFTER));

  // Queries of the second device (listed object and wrapper together) before its answer drifts: the tenth is the last
  // read of the second apply below, the wrapper's verification read.
  const DRIFT_AFTER = 10;

  const CLASSES = ['AppleParavirtDevice', 'SimSecondParavirtDevice', 'MTLDebugDevice'];
  const SELECTORS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];

  describeSim('verification failing on the wrapped default object only', () => {
    beforeAll(requireSimBuild);
    afterAll(() => {
      restore();
    });

    it('not applied, the mismatch under the default device’s index, and the previous profile back with its trace', () => {
      expect(applyProfile('apple7', { trace: true })).toMatchObject({ applied: true });
      const answeringA = probe({ allDevices: true });
      const result = applyProfile('apple9-hw-tg');
      expect(result).toEqual({
        applied: false,
        reason: 'verification-failed',
        detail:
          'device 1 (MTLDebugDevice) answered maxThreadgroupMemoryLength=32784, expected 32768; the patch was taken out',
        profile: resolveProfile('apple9-hw-tg'),
        patchedClasses: [],
        before: answeringA,
        after: {
          ...answeringA,
          devices: answeringA.devices.map((d) => predictPatchedDevice(d, resolveProfile('apple9-hw-tg'))),
        },
        changed: [],
        warnings: [APPLE9_ABOVE_M1_ULTRA],
        verification: {
          ok: false,
          checked: 3 * (FAMILY_NAMES.length + 3),
          mismatches: [
            {
              device: 1,
              className: 'MTLDebugDevice',
              field: 'maxThreadgroupMemoryLength',
              expected: 32768,
              actual: 32784,
            },
          ],
        },
      });
      expect(status()).toEqual({
        supported: true,
        active: true,
        profile: resolveProfile('apple7'),
        patchedClasses: CLASSES,
        hooks: CLASSES.flatMap((className) =>
          SELECTORS.map((selector) => ({
            className,
            selector,
            mode: className === 'SimSecondParavirtDevice' ? 'replaced' : 'added',
            ours: true,
          })),
        ),
        tracing: true,
        trace: null,
        llamaCpp: [],
      });
      expect(probe({ allDevices: true }).devices.map((d) => d.families)).toEqual(
        answeringA.devices.map((d) => d.families),
      );
    });
  });
});

// A default device whose class differs from the listed one: MTLCreateSystemDefaultDevice() hands out a second object
// of another class (as Metal's validation or capture layer does), MTLCopyAllDevices() the plain one. ggml asks the
// default object, so its class must be patched and verified too.
describeSim('a wrapped default device (the Tahoe guest under a validation layer)', () => {
  useSimulation(() => snapshotFile);

  const snapshotFile = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-default-')), 'wrapped-default.json');
  {
    const base = JSON.parse(
      readFileSync(
        path.join(import.meta.dirname, '..', '..', 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'),
        'utf8',
      ),
    );
    base.id = 'wrapped-default';
    base.devices[0].simulation = { methodsOnConcreteClass: false, defaultObjectClass: 'MTLDebugDevice' };
    writeFileSync(snapshotFile, simulationJson(base));
  }

  let fixture: SimFixture;

  describeSim('the default device of another class than the listed one', () => {
    beforeAll(() => {
      requireSimBuild();
      fixture = loadFixture();
    });
    afterEach(() => {
      restore();
    });

    it('the simulation hands out the wrapper as the default device and lists the plain one', () => {
      expect(probe().devices.map((d) => [d.className, d.isDefault])).toEqual([['MTLDebugDevice', true]]);
      expect(probe({ allDevices: true }).devices.map((d) => [d.className, d.isDefault])).toEqual([
        ['AppleParavirtDevice', true],
      ]);
    });

    it('applyProfile patches both classes and verifies both', () => {
      const result = applyProfile('cua-release');
      expect(result.applied).toBe(true);
      expect(result.patchedClasses.map((c) => c.className)).toEqual(['AppleParavirtDevice', 'MTLDebugDevice']);
      // Every family plus the two sizes, once for the listed device and once for the default object.
      expect(result.verification).toEqual({ ok: true, checked: 2 * (FAMILY_NAMES.length + 3), mismatches: [] });
      expect(status().patchedClasses).toEqual(['AppleParavirtDevice', 'MTLDebugDevice']);
    });

    it('an engine asking MTLCreateSystemDefaultDevice() gets the patched answers', () => {
      const stock = fixture.query() as {
        className: string;
        families: Record<string, boolean>;
        maxThreadgroupMemoryLength: number;
      };
      expect([stock.className, stock.families['1009'], stock.maxThreadgroupMemoryLength]).toEqual([
        'MTLDebugDevice',
        false,
        32768,
      ]);
      applyProfile('cua-release');
      const patched = fixture.query() as typeof stock;
      expect([
        patched.className,
        patched.families['1007'],
        patched.families['1009'],
        patched.maxThreadgroupMemoryLength,
      ]).toEqual(['MTLDebugDevice', true, true, 65536]);
      const d = probe().devices[0]!;
      expect([d.className, d.highestAppleFamily?.name, d.maxThreadgroupMemoryLength]).toEqual([
        'MTLDebugDevice',
        'apple9',
        65536,
      ]);
    });

    it('restore takes the default object’s class back to stock too', () => {
      applyProfile('cua-release');
      const restored = restore();
      expect(restored.conflicts).toEqual([]);
      expect(new Set(restored.restoredHooks.map((h) => h.className))).toEqual(
        new Set(['AppleParavirtDevice', 'MTLDebugDevice']),
      );
      const d = probe().devices[0]!;
      expect([d.className, d.highestAppleFamily?.name, d.maxThreadgroupMemoryLength]).toEqual([
        'MTLDebugDevice',
        'apple5',
        32768,
      ]);
    });
  });
});

// A device class that lacks a query cannot be hooked: applyProfile returns `applied: false` with reason
// 'hook-failed' and nothing installed (strict: true throws NativeError ERR_HOOK_FAILED), register, inside a VM, lets
// the program run unpatched with a warning, and a live audit, which has no patched side to show, fails with
// ERR_HOOK_FAILED. Repeatable: the class never gains the query.
describeSim('a device class that lacks a query (the Tahoe guest and SimBrokenDevice)', () => {
  useSimulation(() =>
    editedSnapshot('vz-guest-m1-ultra-tahoe-stock', 'lacks-working-set', (s) => {
      const broken = structuredClone(s.devices[0]!);
      broken.className = 'SimBrokenDevice';
      broken.registryId = s.devices[0]!.registryId + 1;
      broken.simulation = { methodsOnConcreteClass: false, lacks: 'recommendedMaxWorkingSetSize' };
      s.devices.push(broken);
    }),
  );

  // The engine's own message (src-native/engine/patch.mm), then applyProfile's promise that nothing changed.
  const HOOK_MESSAGE =
    'cannot hook -[SimBrokenDevice recommendedMaxWorkingSetSize]: the class does not implement it (a Metal validation or capture wrapper such as MTLDebugDevice can lack it: unset MTL_DEBUG_LAYER and retry)';
  const DETAIL = `${HOOK_MESSAGE}; nothing was changed`;
  const ABOVE_HARDWARE = {
    code: 'threadgroup-memory-above-hardware',
    message:
      'threadgroup memory 65536 bytes is above 32768, which no Apple GPU exceeds: llama.cpp v0.5.0 and later sizes no kernel above 32768 from it on this device, but its ggml-metal.m releases do (audit --rules legacy); profile apple9-hw-tg avoids this',
  };
  const INACTIVE = INACTIVE_STATUS;

  function thrownBy(fn: () => unknown): unknown {
    try {
      fn();
    } catch (err) {
      return err;
    }
    return null;
  }

  describeSim('a device class that cannot be hooked', () => {
    beforeAll(requireSimBuild);

    it('applyProfile without strict: a not-applied result with reason hook-failed, and nothing is installed', () => {
      const stock = probe({ allDevices: true });
      for (const options of [{}, { trace: true }, { strict: false }]) {
        expect(applyProfile('cua-release', options)).toEqual({
          applied: false,
          reason: 'hook-failed',
          detail: DETAIL,
          profile: resolveProfile('cua-release'),
          patchedClasses: [],
          before: null,
          after: null,
          changed: [],
          warnings: [APPLE9_ABOVE_M1_ULTRA, ABOVE_HARDWARE],
          verification: null,
        });
        expect(status()).toEqual(INACTIVE);
        expect(probe({ allDevices: true })).toEqual(stock);
      }
    });

    it('applyProfile with strict: true throws NativeError ERR_HOOK_FAILED, and nothing is installed', () => {
      const stock = probe({ allDevices: true });
      const err = thrownBy(() => applyProfile('apple7', { strict: true }));
      expect(err).toBeInstanceOf(NativeError);
      expect(err).toMatchObject({ name: 'NativeError', code: 'ERR_HOOK_FAILED', message: DETAIL });
      expect(status()).toEqual(INACTIVE);
      expect(probe({ allDevices: true })).toEqual(stock);
    });

    it('a live audit has no patched side to show: it throws NativeError ERR_HOOK_FAILED, and nothing is installed', () => {
      const err = thrownBy(() => audit({ profile: 'apple7' }));
      expect(err).toBeInstanceOf(NativeError);
      expect(err).toMatchObject({ code: 'ERR_HOOK_FAILED', message: DETAIL });
      expect(status()).toEqual(INACTIVE);
    });

    it('CLI audit --json: exit 1, the error as JSON on stdout and the line on stderr', () => {
      const r = runCli(['audit', '--json', '--profile', 'apple7'], {
        METAL_CAP_SHIM_SIM_SNAPSHOT: process.env.METAL_CAP_SHIM_SIM_SNAPSHOT,
      });
      expect(r.status).toBe(1);
      expect(JSON.parse(r.stdout)).toEqual({ error: { code: 'ERR_HOOK_FAILED', message: DETAIL } });
      expect(r.stderr).toBe(`metal-cap-shim: ERR_HOOK_FAILED: ${DETAIL}\n`);
    });

    it('registerFromEnvironment: not-applied, with the code and the message', () => {
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'apple7' })).toEqual({
        action: 'not-applied',
        why: `hook-failed: ${DETAIL}`,
        auto: null,
      });
      expect(status()).toEqual(INACTIVE);
    });

    it('register with auto, not applied: the cache warning is said too (XDG_CACHE_HOME=/proc/nope)', async () => {
      const saved = process.env.XDG_CACHE_HOME;
      process.env.XDG_CACHE_HOME = '/proc/nope';
      try {
        const effects = await importRegister('auto');
        expect(effects.warnings.map(([, o]) => o)).toEqual([
          { code: 'METAL_CAP_SHIM_NOT_APPLIED' },
          { code: 'METAL_CAP_SHIM_CACHE_NOT_WRITTEN' },
        ]);
        expect(effects.warnings[1]![0]).toBe(
          "metal-cap-shim/register: profile auto: the doctor cache could not be written: ENOENT: no such file or directory, mkdir '/proc/nope'",
        );
      } finally {
        process.env.XDG_CACHE_HOME = saved;
      }
      expect(status()).toEqual(INACTIVE);
    });

    it('register: the program goes on unpatched, with a METAL_CAP_SHIM_NOT_APPLIED warning and no exit', async () => {
      expect(await importRegister(undefined)).toEqual({
        exits: [],
        warnings: [
          [
            `metal-cap-shim/register: profile not applied (hook-failed: ${DETAIL})`,
            { code: 'METAL_CAP_SHIM_NOT_APPLIED' },
          ],
        ],
        stderr: '',
      });
      expect(status()).toEqual(INACTIVE);
    });
  });
});

// Guards and warnings, over the simulated bare-metal M1 Ultra (not a VM).
// Last: one of its tests loads a Metal consumer into the process for good, which every later apply would name.
describeSim('guards on the bare-metal M1 Ultra (m1-ultra-bare-metal)', () => {
  useSimulation('m1-ultra-bare-metal');

  describeSim('guards on a host that is not a VM', () => {
    beforeAll(requireSimBuild);
    afterEach(() => {
      restore();
    });

    it('raising is refused without force: a result with reason refused-bare-metal, and nothing is installed', () => {
      const result = applyProfile('cua-release');
      expect(result).toEqual({
        applied: false,
        reason: 'refused-bare-metal',
        detail: expect.stringContaining('Pass { force: true }'),
        profile: resolveProfile('cua-release'),
        patchedClasses: [],
        before: null,
        after: null,
        changed: [],
        warnings: [],
        verification: null,
      });
      expect(status()).toMatchObject({ active: false, hooks: [] });
    });

    it('with strict: true the refusal throws RefusedError (ERR_REFUSED_BARE_METAL), and nothing is installed', () => {
      let thrown: unknown;
      try {
        applyProfile('cua-release', { strict: true });
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(RefusedError);
      expect((thrown as RefusedError).code).toBe('ERR_REFUSED_BARE_METAL');
      expect((thrown as Error).message).toContain('force');
      expect(status()).toMatchObject({ active: false, hooks: [] });
    });

    it('raising is allowed with force', () => {
      const result = applyProfile('cua-release', { force: true });
      expect(result.applied).toBe(true);
      expect(result.after!.devices[0]!.families.apple9).toBe(true);
      expect(result.warnings.map((w) => w.code)).toEqual(
        expect.arrayContaining(['not-paravirtual', 'threadgroup-memory-above-hardware']),
      );
    });

    it('masking (mask-apple5) is allowed without force and reports a stock guest’s answers', () => {
      const result = applyProfile('mask-apple5');
      expect(result.applied).toBe(true);
      const d = result.after!.devices[0]!;
      expect(d.highestAppleFamily?.name).toBe('apple5');
      expect([d.families.apple6, d.families.apple7, d.families.mac2, d.families.metal3]).toEqual([
        false,
        false,
        false,
        false,
      ]);
      expect(d.families.common3).toBe(true);
      expect(d.maxThreadgroupMemoryLength).toBe(32768);
      expect(d.simd.reduction.value).toBe(false);
    });

    it('warns once when a Metal consumer (ggml-metal) is already loaded RTLD_GLOBAL: its image, not also its symbol', () => {
      // The M1 Ultra already answers Apple7.
      const noChange = { code: 'no-change', message: 'the profile changes no answer on this device' };
      expect(applyProfile('apple7', { force: true }).warnings).toEqual([noChange]);
      restore();
      // RTLD_GLOBAL puts ggml_backend_metal_reg in the global scope too: the image's name already says it.
      const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-guards-')));
      const file = loadLibrary(dir, 'libggml-metal.so', ['ggml_backend_metal_reg', 'ggml_backend_metal_init'], true);
      expect(applyProfile('apple7', { force: true }).warnings).toEqual([
        {
          code: 'consumer-already-loaded',
          message: `libggml-metal.so (${file}) is already loaded in this process: if that engine has initialised Metal, it cached the old answers; apply before the first getLlama() / backend load`,
        },
        noChange,
      ]);
    });

    it('raising only threadgroup memory is a raise too: refused without force', () => {
      expect(applyProfile({ maxThreadgroupMemoryLength: 65536 })).toMatchObject({
        applied: false,
        reason: 'refused-bare-metal',
      });
      expect(() => applyProfile({ maxThreadgroupMemoryLength: 65536 }, { strict: true })).toThrow(RefusedError);
      expect(status().active).toBe(false);
    });

    it('raise mode never lowers an answer: a ceiling below the device keeps its higher families', () => {
      // Nothing is raised here, so no force is needed; the M1 Ultra stays Apple7.
      const result = applyProfile({ appleFamilyMax: 1005 });
      expect(result.applied).toBe(true);
      expect(result.after!.devices[0]!.families.apple7).toBe(true);
      expect(result.after!.devices[0]!.families.apple6).toBe(true);
      expect(result.warnings.map((w) => w.code)).toContain('no-change');
      expect(result.changed).toEqual([]);
    });

    it('exact mode with the same ceiling masks them', () => {
      const result = applyProfile({ appleFamilyMax: 1005, mode: 'exact' });
      expect(result.applied).toBe(true);
      expect(result.after!.devices[0]!.families.apple6).toBe(false);
      expect(result.after!.devices[0]!.families.apple5).toBe(true);
      expect(result.changed.map((c) => c.field)).toEqual(['families.apple6', 'families.apple7']);
    });
  });
});
