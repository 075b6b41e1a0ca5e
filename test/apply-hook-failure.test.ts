// A device class that lacks a query cannot be hooked: applyProfile throws ERR_HOOK_FAILED with nothing left
// installed, and register, inside a VM, lets the program run unpatched with a warning. Repeatable: the class never
// gains the query.
import { editedSnapshot } from './apply-helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = editedSnapshot('vz-guest-m1-ultra-tahoe-stock', 'lacks-working-set', (s) => {
  const broken = structuredClone(s.devices[0]!);
  broken.className = 'SimBrokenDevice';
  broken.registryId = s.devices[0]!.registryId + 1;
  broken.simulation = { methodsOnConcreteClass: false, lacks: 'recommendedMaxWorkingSetSize' };
  s.devices.push(broken);
});

import { beforeAll, expect, it } from 'vitest';
import { applyProfile, status } from '../lib/apply.js';
import { NativeError } from '../lib/errors.js';
import { probe } from '../lib/probe.js';
import { registerFromEnvironment } from '../lib/registration.js';
import { importRegister } from './apply-helpers.js';
import { describeSim, requireSimBuild } from './helpers.js';

// The engine's own message (src-native/patch.mm), then applyProfile's promise that nothing changed.
const HOOK_MESSAGE =
  'cannot hook -[SimBrokenDevice recommendedMaxWorkingSetSize]: the class does not implement it (a Metal validation or capture wrapper such as MTLDebugDevice can lack it: unset MTL_DEBUG_LAYER and retry)';
const INACTIVE = { supported: true, active: false, profile: null, patchedClasses: [], hooks: [], tracing: false, trace: null };

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

  it('applyProfile throws NativeError ERR_HOOK_FAILED, strict or not, and nothing is installed', () => {
    const stock = probe({ allDevices: true });
    for (const options of [{}, { strict: true }]) {
      const err = thrownBy(() => applyProfile('cua-release', options));
      expect(err).toBeInstanceOf(NativeError);
      expect(err).toMatchObject({ code: 'ERR_HOOK_FAILED', message: `${HOOK_MESSAGE}; nothing was changed` });
      expect(status()).toEqual(INACTIVE);
      expect(probe({ allDevices: true })).toEqual(stock);
    }
  });

  it('registerFromEnvironment: not-applied, with the code and the message', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'apple7' })).toEqual({
      action: 'not-applied',
      why: `ERR_HOOK_FAILED: ${HOOK_MESSAGE}; nothing was changed`,
    });
    expect(status()).toEqual(INACTIVE);
  });

  it('register: the program goes on unpatched, with a METAL_CAP_SHIM_NOT_APPLIED warning and no exit', async () => {
    expect(await importRegister(undefined)).toEqual({
      exits: [],
      warnings: [
        [
          `metal-cap-shim/register: profile not applied (ERR_HOOK_FAILED: ${HOOK_MESSAGE}; nothing was changed)`,
          { code: 'METAL_CAP_SHIM_NOT_APPLIED' },
        ],
      ],
      stderr: '',
    });
    expect(status()).toEqual(INACTIVE);
  });
});
