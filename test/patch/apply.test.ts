// applyProfile's decisions as pure functions (warnings, the above-host-family line, refusal, verification), and the
// whole API and register on an install without the addon (any non-Mac install: no METAL_CAP_SHIM_SIM_SNAPSHOT). Runs on
// every OS; the devices are recorded snapshots read offline. The suites over the simulated Metal, each in a process of
// its own for its snapshot, are the other test/patch/apply.*.test.ts files.
delete process.env.METAL_CAP_SHIM_SIM_SNAPSHOT;

import { describe, expect, it } from 'vitest';
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
import { InvalidOptionsError, InvalidProfileError, UnsupportedPlatformError } from '../../lib/core/errors.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import { chipFromBrand } from '../../lib/device/chips.js';
import { planProfile, resolveProfile, type AnswerChange, type ProfileInput } from '../../lib/patch/profiles.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import type { DeviceReport, HostInfo } from '../../lib/device/types.js';
import type { LlamaCppRuleSet } from '../../lib/engines/index.js';
import { importRegister, invalidProfileError } from '../support/apply-helpers.js';

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
  message: `threadgroup memory ${bytes} bytes is above 32768, which no Apple GPU exceeds; a kernel sized from it may ask for memory the GPU does not have (profile apple9-hw-tg avoids this)`,
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
        "llama.cpp v0.4.x will tune for an M4 Max (Apple9's representative), not this host's Apple M1",
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
        "llama.cpp v0.4.x will tune with its baseline kernels, not this host's Apple M1",
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
        "llama.cpp v0.4.x will tune for an M4 Max (its own rows), not this host's Apple M1",
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

describe('without the addon (not macOS, no simulated Metal)', () => {
  const detail = `Metal exists only on macOS; this is ${process.platform}`;
  const unsupported = (input: ProfileInput) => ({
    applied: false,
    reason: 'unsupported-platform',
    detail,
    profile: resolveProfile(input),
    patchedClasses: [],
    before: null,
    after: null,
    changed: [],
    warnings: [],
    verification: null,
  });

  it('applyProfile() does not apply, and says why; the default profile is host-family', () => {
    expect(applyProfile()).toEqual(unsupported('host-family'));
    expect(applyProfile('apple7', { force: true, trace: true })).toEqual(unsupported('apple7'));
  });

  it('with strict it throws UnsupportedPlatformError', () => {
    let thrown: unknown;
    try {
      applyProfile('apple7', { strict: true });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UnsupportedPlatformError);
    expect(thrown).toMatchObject({ code: 'ERR_UNSUPPORTED_PLATFORM', message: detail });
  });

  it('a bad profile or bad options still throw first', () => {
    // @ts-expect-error a misspelt name does not compile; at run time it is a typed error
    expect(() => applyProfile('apple99')).toThrow(InvalidProfileError);
    for (const option of ['force', 'trace', 'strict']) {
      expect(() => applyProfile('apple7', { [option]: 'yes' })).toThrow(
        new InvalidOptionsError(option, `applyProfile() option '${option}' must be a boolean, got the string "yes"`),
      );
    }
    expect(() => applyProfile('apple7', { dryRun: true } as never)).toThrow(
      "applyProfile() has no option 'dryRun'; its options are force, trace, strict",
    );
  });

  it('restore() restores nothing and says why', () => {
    expect(restore()).toEqual({
      restored: false,
      reason: 'unsupported-platform',
      restoredHooks: [],
      conflicts: [],
      verification: null,
    });
  });

  it('status() is unsupported, with or without the trace', () => {
    const none = {
      supported: false,
      active: false,
      profile: null,
      patchedClasses: [],
      hooks: [],
      tracing: false,
      trace: null,
      llamaCpp: [],
    };
    expect(status()).toEqual(none);
    expect(status({ trace: true })).toEqual(none);
    expect(() => status({ trace: 1 } as never)).toThrow("status() option 'trace' must be a boolean, got number 1");
  });

  it('registerFromEnvironment: off (any case) is off; any valid value finds no native module; a malformed one is returned, not thrown', () => {
    expect(registerFromEnvironment({})).toEqual({ action: 'no-native', ignored: null });
    for (const value of ['off', '  off\n', 'OFF', 'Off'])
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toEqual({ action: 'off' });
    for (const value of ['', ' ', 'apple7', ' apple7 ', 'auto', 'AUTO', '{"appleFamilyMax":1008}']) {
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toEqual({
        action: 'no-native',
        ignored: null,
      });
    }
    for (const value of ['apple99', '{"appleFamilyMax":', '{"appleFamilyMax":2000}', 'OFFF']) {
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toEqual({
        action: 'no-native',
        ignored: invalidProfileError(value),
      });
    }
  });

  it('register where there is no Metal: nothing to do is silent; a malformed value is one warning, and the program runs', async () => {
    expect(await importRegister(undefined)).toEqual({ exits: [], warnings: [], stderr: '' });
    expect(await importRegister('off')).toEqual({ exits: [], warnings: [], stderr: '' });
    expect(await importRegister('{"appleFamilyMax":')).toEqual({
      exits: [],
      warnings: [
        [
          `metal-cap-shim/register: ERR_INVALID_PROFILE: ${invalidProfileError('{"appleFamilyMax":').message} (ignored: no Metal here)`,
          { code: 'METAL_CAP_SHIM_INVALID_PROFILE' },
        ],
      ],
      stderr: '',
    });
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
      `"the profile claims Apple9, above Apple7, the true family of this host's Apple M1: llama.cpp v0.4.x will tune for an M4 Max (Apple9's representative), not this host's Apple M1 (profile host claims exactly the host's)"`,
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
