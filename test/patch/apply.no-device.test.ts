// The native module loads, but Metal has no device (the simulated Metal with no snapshot selected; on a Mac, a
// headless session or a VM without a paravirtual GPU).
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = '';

import { beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { NativeError } from '../../lib/core/errors.js';
import { probe } from '../../lib/device/probe.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

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
    expect(status({ trace: true })).toEqual({
      supported: true,
      active: false,
      profile: null,
      patchedClasses: [],
      hooks: [],
      tracing: false,
      trace: [],
      llamaCpp: [],
    });
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
