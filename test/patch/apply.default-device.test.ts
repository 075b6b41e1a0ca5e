// A default device whose class differs from the listed one: MTLCreateSystemDefaultDevice() hands out a second object
// of another class (as Metal's validation or capture layer does), MTLCopyAllDevices() the plain one. ggml asks the
// default object, so its class must be patched and verified too.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const snapshotFile = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-default-')), 'wrapped-default.json');
{
  const base = JSON.parse(
    readFileSync(path.join(import.meta.dirname, '..', '..', 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'),
  );
  base.id = 'wrapped-default';
  base.devices[0].simulation = { methodsOnConcreteClass: false, defaultObjectClass: 'MTLDebugDevice' };
  writeFileSync(snapshotFile, simulationJson(base));
}
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = snapshotFile;

import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { probe } from '../../lib/device/probe.js';
import { describeSim, loadFixture, requireSimBuild, type SimFixture } from '../support/helpers.js';
import { simulationJson } from '../sim-metal/simulation.js';

let fixture: SimFixture;

describeSim('the default device of another class than the listed one', () => {
  beforeAll(() => {
    requireSimBuild();
    fixture = loadFixture();
  });
  afterEach(() => {
    restore();
  });

  it('the simulation hands out the wrapper as the default device and lists the plain one', () => {
    expect(probe().devices.map((d) => [d.className, d.isDefault])).toEqual([['MTLDebugDevice', true]]);
    expect(probe({ allDevices: true }).devices.map((d) => [d.className, d.isDefault])).toEqual([
      ['AppleParavirtDevice', true],
    ]);
  });

  it('applyProfile patches both classes and verifies both', () => {
    const result = applyProfile('cua-release');
    expect(result.applied).toBe(true);
    expect(result.patchedClasses.map((c) => c.className)).toEqual(['AppleParavirtDevice', 'MTLDebugDevice']);
    // Every family plus the two sizes, once for the listed device and once for the default object.
    expect(result.verification).toEqual({ ok: true, checked: 2 * (FAMILY_NAMES.length + 3), mismatches: [] });
    expect(status().patchedClasses).toEqual(['AppleParavirtDevice', 'MTLDebugDevice']);
  });

  it('an engine asking MTLCreateSystemDefaultDevice() gets the patched answers', () => {
    const stock = fixture.query() as {
      className: string;
      families: Record<string, boolean>;
      maxThreadgroupMemoryLength: number;
    };
    expect([stock.className, stock.families['1009'], stock.maxThreadgroupMemoryLength]).toEqual([
      'MTLDebugDevice',
      false,
      32768,
    ]);
    applyProfile('cua-release');
    const patched = fixture.query() as typeof stock;
    expect([
      patched.className,
      patched.families['1007'],
      patched.families['1009'],
      patched.maxThreadgroupMemoryLength,
    ]).toEqual(['MTLDebugDevice', true, true, 65536]);
    const d = probe().devices[0]!;
    expect([d.className, d.highestAppleFamily?.name, d.maxThreadgroupMemoryLength]).toEqual([
      'MTLDebugDevice',
      'apple9',
      65536,
    ]);
  });

  it('restore takes the default object’s class back to stock too', () => {
    applyProfile('cua-release');
    const restored = restore();
    expect(restored.conflicts).toEqual([]);
    expect(new Set(restored.restoredHooks.map((h) => h.className))).toEqual(
      new Set(['AppleParavirtDevice', 'MTLDebugDevice']),
    );
    const d = probe().devices[0]!;
    expect([d.className, d.highestAppleFamily?.name, d.maxThreadgroupMemoryLength]).toEqual([
      'MTLDebugDevice',
      'apple5',
      32768,
    ]);
  });
});
