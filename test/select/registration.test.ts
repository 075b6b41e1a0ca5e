// registerFromEnvironment() in-process, over the simulated Metal: the bare-metal M1 Ultra (not a VM), the Tahoe guest
// whose device changes its answer under the patch, and the M1 Ultra showing exactly one VM signal (each its own
// describe block and snapshot: useSimulation).
import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { InvalidProfileError } from '../../lib/core/errors.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { applyProfile } from '../../lib/select/auto.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import { CUA_RELEASE_ON_M1_ULTRA, editedSnapshot, M1_HOST, oneSignalHost } from '../support/apply-helpers.js';
import { describeSim, loadFixture, requireSimBuild, type SimFixture } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';
import { INACTIVE_STATUS } from '../support/status.js';

let fixture: SimFixture;

describeSim('registerFromEnvironment on bare metal', () => {
  useSimulation('m1-ultra-bare-metal');
  beforeAll(() => {
    requireSimBuild();
    fixture = loadFixture();
  });

  it('reads host facts only: nothing applied, and not one Metal device created', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: '' })).toEqual({
      action: 'not-a-vm',
      host: {
        osVersion: '26.6.1',
        osBuild: null,
        model: 'Mac13,2',
        isVirtualMachine: false,
        arch: 'arm64',
        memoryBytes: 68719476736,
        translated: false,
        cpuBrand: 'Apple M1 Ultra',
        chip: 'Apple M1 Ultra',
      },
    });
    expect(fixture.deviceCalls()).toEqual({ MTLCreateSystemDefaultDevice: 0, MTLCopyAllDevices: 0 });
    expect(status().active).toBe(false);
  });

  it('off does nothing at all', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'off' })).toEqual({ action: 'off' });
  });

  it('a malformed value throws before anything else, even where nothing would be applied', () => {
    expect(() => registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'apple99' })).toThrow(InvalidProfileError);
    expect(fixture.deviceCalls()).toEqual({ MTLCreateSystemDefaultDevice: 0, MTLCopyAllDevices: 0 });
  });
});

// Inside a VM whose device changes its answer under the patch: verification fails, nothing stays installed, and
// register reports why instead of throwing.
describeSim('registerFromEnvironment when verification fails', () => {
  useSimulation(() =>
    editedSnapshot('vz-guest-m1-ultra-tahoe-stock', 'drifting-guest', (s) => {
      // Threadgroup memory answers its recorded 32768 twice (the stock read and the "before" read), then 32784.
      s.devices[0]!.simulation = { methodsOnConcreteClass: false, driftAfter: 2 };
    }),
  );
  beforeAll(requireSimBuild);

  it('not-applied, with the reason and the detail of applyProfile’s result; nothing installed', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'apple9-hw-tg' })).toEqual({
      action: 'not-applied',
      why: 'verification-failed: device 0 (AppleParavirtDevice) answered maxThreadgroupMemoryLength=32784, expected 32768; the patch was taken out',
      auto: null,
    });
    expect(status()).toEqual(INACTIVE_STATUS);
  });
});

// VM detection from kern.hv_vmm_present alone: an M1 Ultra whose hw.model and device name are a real Mac's, but
// whose kernel says it runs under a hypervisor. register applies, and the device gets its not-paravirtual warning.
describeSim('kern.hv_vmm_present = 1 alone', () => {
  useSimulation(() => oneSignalHost('hv_vmm_present'));
  beforeAll(requireSimBuild);
  afterEach(() => {
    restore();
  });

  it('register applies a raising profile: the kernel’s word is enough', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'cua-release' })).toMatchObject({
      action: 'applied',
      result: {
        applied: true,
        profile: resolveProfile('cua-release'),
        warnings: [...CUA_RELEASE_ON_M1_ULTRA],
      },
    });
    expect(status().profile).toEqual(resolveProfile('cua-release'));
  });

  it('applyProfile raises without force', () => {
    expect(applyProfile('cua-release')).toMatchObject({ applied: true, reason: null });
  });
});

// VM detection: hw.model VirtualMac2,1 alone (kern.hv_vmm_present = 0, the device an M1's) is not a VM.
// register creates no Metal device, and applyProfile refuses to raise without force.
describeSim('hw.model VirtualMac2,1 alone', () => {
  useSimulation(() => oneSignalHost('hw.model'));
  beforeAll(requireSimBuild);

  it('register: not-a-vm, and not one Metal device created', () => {
    expect(registerFromEnvironment({})).toEqual({ action: 'not-a-vm', host: { ...M1_HOST, model: 'VirtualMac2,1' } });
    expect(loadFixture().deviceCalls()).toEqual({ MTLCreateSystemDefaultDevice: 0, MTLCopyAllDevices: 0 });
    expect(status().active).toBe(false);
  });

  it('applyProfile refuses to raise without force', () => {
    expect(applyProfile('cua-release')).toMatchObject({
      applied: false,
      reason: 'refused-bare-metal',
      detail:
        'refusing to raise Metal answers: this host is not a virtual machine (hw.model VirtualMac2,1), so the GPU really is what it reports. The profile would raise device 0 (AGXG13DDevice): apple8, apple9, maxThreadgroupMemoryLength 32768 → 65536. Pass { force: true } (CLI: --force) to do it anyway; a profile that only lowers answers (mask-apple5 on an Apple GPU) needs no force.',
    });
  });
});

// VM detection: a device named "Apple Paravirtual device" alone (kern.hv_vmm_present = 0, hw.model Mac13,2) is not a VM.
// register creates no Metal device, and applyProfile refuses to raise without force.
describeSim('a paravirtual device name alone', () => {
  useSimulation(() => oneSignalHost('device-name'));
  beforeAll(requireSimBuild);

  it('register: not-a-vm, and not one Metal device created', () => {
    expect(registerFromEnvironment({})).toEqual({ action: 'not-a-vm', host: M1_HOST });
    expect(loadFixture().deviceCalls()).toEqual({ MTLCreateSystemDefaultDevice: 0, MTLCopyAllDevices: 0 });
    expect(status().active).toBe(false);
  });

  it('applyProfile refuses to raise without force', () => {
    expect(applyProfile('cua-release')).toMatchObject({
      applied: false,
      reason: 'refused-bare-metal',
      detail:
        'refusing to raise Metal answers: this host is not a virtual machine (hw.model Mac13,2), so the GPU really is what it reports. The profile would raise device 0 (AGXG13DDevice): apple8, apple9, maxThreadgroupMemoryLength 32768 → 65536. Pass { force: true } (CLI: --force) to do it anyway; a profile that only lowers answers (mask-apple5 on an Apple GPU) needs no force.',
    });
  });
});

describeSim('a threadgroup claim above every Apple GPU, in the stock guest', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');
  beforeAll(requireSimBuild);
  afterEach(() => {
    restore();
  });
  const APPLE10_64K = '{"appleFamilyMax": 1010, "maxThreadgroupMemoryLength": 65536}';

  it('is not applied, with the refusal named, unless METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE=1', () => {
    const refused = registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: APPLE10_64K });
    expect(refused.action).toBe('not-applied');
    expect(refused.action === 'not-applied' ? refused.why : '').toMatch(
      /^above-hardware: refusing the profile for llama\.cpp v0\.5\.0 and later \(current rules\): /,
    );
    expect(status().active).toBe(false);
    const allowed = registerFromEnvironment({
      METAL_CAP_SHIM_PROFILE: APPLE10_64K,
      METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE: '1',
    });
    expect(allowed.action).toBe('applied');
  });
});
