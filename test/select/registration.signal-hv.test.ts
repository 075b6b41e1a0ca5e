// VM detection from kern.hv_vmm_present alone: an M1 Ultra whose hw.model and device name are a real Mac's, but
// whose kernel says it runs under a hypervisor. register applies, and the device gets its not-paravirtual warning.
import { oneSignalHost } from '../support/apply-helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = oneSignalHost('hv_vmm_present');

import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import { CUA_RELEASE_ON_M1_ULTRA } from '../support/apply-helpers.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

describeSim('kern.hv_vmm_present = 1 alone', () => {
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
