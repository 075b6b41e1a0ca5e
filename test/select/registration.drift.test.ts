// register inside a VM whose device changes its answer under the patch: verification fails, nothing stays installed,
// and register reports why instead of throwing. One scenario per process (the answer drifts once and stays).
import { editedSnapshot } from '../support/apply-helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = editedSnapshot('vz-guest-m1-ultra-tahoe-stock', 'drifting-guest', (s) => {
  // Threadgroup memory answers its recorded 32768 twice (the stock read and the "before" read), then 32784.
  s.devices[0]!.simulation = { methodsOnConcreteClass: false, driftAfter: 2 };
});

import { beforeAll, expect, it } from 'vitest';
import { status } from '../../lib/patch/apply.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

describeSim('registerFromEnvironment when verification fails', () => {
  beforeAll(requireSimBuild);

  it('not-applied, with the reason and the detail of applyProfile’s result; nothing installed', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'apple9-hw-tg' })).toEqual({
      action: 'not-applied',
      why: 'verification-failed: device 0 (AppleParavirtDevice) answered maxThreadgroupMemoryLength=32784, expected 32768; the patch was taken out',
      auto: null,
    });
    expect(status()).toEqual({
      supported: true,
      active: false,
      profile: null,
      patchedClasses: [],
      hooks: [],
      tracing: false,
      trace: null,
      llamaCpp: [],
    });
  });
});
