// Two paravirtual devices, and the default one (listed second) is handed out by MTLCreateSystemDefaultDevice() as an
// object of a third class, as Metal's validation layer wraps the default device. Every class is patched, and the
// default object is verified on its own, under the index of the listed device it stands for.
import { defaultObjectGuest } from '../support/apply-helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = defaultObjectGuest('default-object-guest', null);

import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { probe } from '../../lib/device/probe.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

const PER_DEVICE = FAMILY_NAMES.length + 3;
const CLASSES = ['AppleParavirtDevice', 'SimSecondParavirtDevice', 'MTLDebugDevice'];

describeSim('a wrapped default device that is not the first listed', () => {
  beforeAll(requireSimBuild);
  afterEach(() => {
    restore();
  });

  it('the default object is the wrapper; the list has both plain devices, the second one default', () => {
    expect(probe().devices.map((d) => [d.index, d.className, d.isDefault])).toEqual([[0, 'MTLDebugDevice', true]]);
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
