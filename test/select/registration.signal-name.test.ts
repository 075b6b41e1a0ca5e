// VM detection: a device named "Apple Paravirtual device" alone (kern.hv_vmm_present = 0, hw.model Mac13,2) is not a VM.
// register creates no Metal device, and applyProfile refuses to raise without force.
import { M1_HOST, oneSignalHost } from '../support/apply-helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = oneSignalHost('device-name');

import { beforeAll, expect, it } from 'vitest';
import { status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import { describeSim, loadFixture, requireSimBuild } from '../support/helpers.js';

describeSim('a paravirtual device name alone', () => {
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
