// The device's name as a profile answer on bare metal (the M1 Ultra snapshot, whose class implements its own
// queries, `name` included): the host profile names the chip the device already is, so it installs no `name` hook
// at all; another name is an identity the GPU does not have, refused without force like any raise.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'm1-ultra-bare-metal';

import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { probe } from '../../lib/device/probe.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { describeSim, loadFixture, requireSimBuild, type SimFixture } from '../support/helpers.js';

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
      profile: { ...resolveProfile('host'), appleFamilyMax: 1007, deviceName: 'Apple M1 Ultra' },
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
