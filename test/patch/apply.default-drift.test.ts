// Verification that fails on the wrapped default object alone, after another profile was applied: the previous
// profile comes back as it was (trace included), and the result keeps what failed. One scenario per process: the
// drifting answer changes once, after a fixed number of queries, and stays changed.
import { APPLE9_ABOVE_M1_ULTRA, defaultObjectGuest } from '../support/apply-helpers.js';

// Queries of the second device (listed object and wrapper together) before its answer drifts: the tenth is the last
// read of the second apply below, the wrapper's verification read.
const DRIFT_AFTER = 10;
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = defaultObjectGuest('default-object-drift', DRIFT_AFTER);

import { beforeAll, expect, it } from 'vitest';
import { status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { probe } from '../../lib/device/probe.js';
import { predictPatchedDevice, resolveProfile } from '../../lib/patch/profiles.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

const CLASSES = ['AppleParavirtDevice', 'SimSecondParavirtDevice', 'MTLDebugDevice'];
const SELECTORS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];

describeSim('verification failing on the wrapped default object only', () => {
  beforeAll(requireSimBuild);

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
