// The device's name as a profile answer, in this process, over the simulated macos-14 arm64 runner: a guest whose host
// is an M1 ("Apple M1 (Virtual)"). The host profile claims that chip's family and name; the name is hooked per class
// like the other answers, verified on fresh devices, traced, and taken out again by restore().
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'github-macos-14-arm64-runner';

import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { probe } from '../../lib/device/probe.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { describeSim, loadFixture, requireSimBuild, type SimFixture } from '../support/helpers.js';

const CLASS = 'AppleParavirtDevice';
const STOCK_NAME = 'Apple Paravirtual device';
const ANSWERS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];
const VERIFIED = { ok: true, checked: FAMILY_NAMES.length + 3, mismatches: [] };
const HOST = { ...resolveProfile('host'), appleFamilyMax: 1007, deviceName: 'Apple M1' };

let fixture: SimFixture;

describeSim('the host profile in a guest of an M1', () => {
  beforeAll(() => {
    requireSimBuild();
    fixture = loadFixture();
  });
  afterEach(() => {
    restore();
  });

  it('claims Apple7 and the name "Apple M1", verified on fresh devices: the name among the answers checked', () => {
    const stock = probe({ allDevices: true });
    const r = applyProfile('host');
    expect(r).toMatchObject({ applied: true, profile: HOST, verification: VERIFIED, warnings: [] });
    expect(r.patchedClasses).toEqual([
      {
        className: CLASS,
        selectors: [...ANSWERS, 'name'].map((selector) => ({ selector, outcome: 'installed', mode: 'added' })),
      },
    ]);
    expect(r.changed).toEqual([
      { device: 0, className: CLASS, field: 'name', from: STOCK_NAME, to: 'Apple M1' },
      ...['apple1', 'apple2', 'apple3', 'apple4', 'apple5', 'apple6', 'apple7'].map((f) => ({
        device: 0,
        className: CLASS,
        field: `families.${f}`,
        from: false,
        to: true,
      })),
    ]);
    expect(r.before).toEqual(stock);
    expect(fixture.query()).toMatchObject({ className: CLASS, name: 'Apple M1', maxThreadgroupMemoryLength: 32768 });
    expect(status().profile).toEqual(HOST);
  });

  it('restore() takes the name hook out with the others, and the stock name is back, verified', () => {
    applyProfile('host');
    expect(restore()).toEqual({
      restored: true,
      reason: null,
      restoredHooks: [...ANSWERS, 'name'].map((selector) => ({ className: CLASS, selector })),
      conflicts: [],
      verification: VERIFIED,
    });
    expect((fixture.query() as { name: string }).name).toBe(STOCK_NAME);
    expect(probe().devices[0]!.name).toBe(STOCK_NAME);
  });

  it('traced: how often the program asked the name, the stock name and the name it was given', () => {
    applyProfile('host', { trace: true });
    fixture.query();
    fixture.query();
    expect(status({ trace: true }).trace?.find((t) => t.selector === 'name')).toEqual({
      selector: 'name',
      family: null,
      calls: 2,
      stock: STOCK_NAME,
      given: 'Apple M1',
    });
  });

  it('a profile without a name swapped in over it: the name hook stays, and answers the stock name again', () => {
    applyProfile('host', { trace: true });
    const r = applyProfile('apple7', { trace: true });
    expect(r).toMatchObject({ applied: true, verification: VERIFIED });
    expect(r.changed).toEqual([{ device: 0, className: CLASS, field: 'name', from: 'Apple M1', to: STOCK_NAME }]);
    expect(r.patchedClasses[0]!.selectors.map((s) => [s.selector, s.outcome])).toEqual(
      ANSWERS.map((selector) => [selector, 'already-installed']),
    );
    expect(status().hooks.map((h) => h.selector)).toEqual([...ANSWERS, 'name']);
    expect((fixture.query() as { name: string }).name).toBe(STOCK_NAME);
    // Traced while passing through: the stock name given.
    expect(status({ trace: true }).trace?.find((t) => t.selector === 'name')).toEqual({
      selector: 'name',
      family: null,
      calls: 1,
      stock: STOCK_NAME,
      given: STOCK_NAME,
    });
  });

  it('another name over the host profile: the same hook answers it', () => {
    applyProfile('host');
    const r = applyProfile({ ...HOST, deviceName: 'Apple M1 Max' });
    expect(r).toMatchObject({ applied: true, verification: VERIFIED });
    expect(r.patchedClasses[0]!.selectors.map((s) => [s.selector, s.outcome])).toEqual(
      [...ANSWERS, 'name'].map((selector) => [selector, 'already-installed']),
    );
    expect((fixture.query() as { name: string }).name).toBe('Apple M1 Max');
  });
});
