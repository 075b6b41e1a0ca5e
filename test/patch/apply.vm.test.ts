// applyProfile, restore, status and register in this process, over the simulated stock Tahoe guest (a VM: every
// signal says so). Whole results: what a caller branches on and prints.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'vz-guest-m1-ultra-tahoe-stock';

import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import type { DoctorCacheEntry } from '../../lib/doctor/cache.js';
import { InvalidProfileError } from '../../lib/core/errors.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { probe } from '../../lib/device/probe.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import { APPLE9_ABOVE_M1_ULTRA, importRegister, invalidProfileError } from '../support/apply-helpers.js';
import { describeSim, loadFixture, requireSimBuild, type SimFixture } from '../support/helpers.js';

// `auto` caches its probe results here, not in the user's cache.
process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-apply-vm-cache-'));

const CLASS = 'AppleParavirtDevice';
const SELECTORS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];
const HOOKS = SELECTORS.map((selector) => ({ className: CLASS, selector }));
const VERIFIED = { ok: true, checked: FAMILY_NAMES.length + 3, mismatches: [] };
const ABOVE_HARDWARE = {
  code: 'threadgroup-memory-above-hardware',
  message:
    'threadgroup memory 65536 bytes is above 32768, which no Apple GPU exceeds; a kernel sized from it may ask for memory the GPU does not have (profile apple9-hw-tg avoids this)',
};
// The vz guest snapshot's host is an M1 Ultra (Apple7): cua-release claims Apple9.
const ABOVE_HOST = APPLE9_ABOVE_M1_ULTRA;
const change = (field: string, from: boolean | number, to: boolean | number) => ({
  device: 0,
  className: CLASS,
  field,
  from,
  to,
});
const raised = (families: string[]) => families.map((f) => change(`families.${f}`, false, true));

let fixture: SimFixture;

describeSim('applyProfile, restore and status in a VM', () => {
  beforeAll(() => {
    requireSimBuild();
    fixture = loadFixture();
  });
  afterEach(() => {
    restore();
  });

  // First: nothing has been applied in this process yet (a filtered run starts a fresh process too).
  it('before any apply: status is inactive, and restore has nothing to take out and nothing to compare with', () => {
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
    expect(status({ trace: true }).trace).toEqual([]);
    expect(restore()).toEqual({
      restored: false,
      reason: 'nothing-applied',
      restoredHooks: [],
      conflicts: [],
      verification: null,
    });
  });

  it('applyProfile returns the whole story: profile, classes, before, after, each change, warnings, verification', () => {
    const stock = probe({ allDevices: true });
    const result = applyProfile('cua-release');
    expect(result).toEqual({
      applied: true,
      reason: null,
      detail: null,
      profile: resolveProfile('cua-release'),
      patchedClasses: [
        {
          className: CLASS,
          selectors: SELECTORS.map((selector) => ({ selector, outcome: 'installed', mode: 'added' })),
        },
      ],
      before: stock,
      after: probe({ allDevices: true }),
      changed: [
        ...raised(['apple6', 'apple7', 'apple8', 'apple9']),
        change('maxThreadgroupMemoryLength', 32768, 65536),
      ],
      warnings: [ABOVE_HOST, ABOVE_HARDWARE],
      verification: VERIFIED,
    });
    expect(result.after?.devices[0]?.families.apple9).toBe(true);
  });

  it('applying B over A: `before` is A’s answers, `changed` goes from A to B, and B answers', () => {
    applyProfile('cua-release');
    const answeringA = probe({ allDevices: true });
    const result = applyProfile('apple7');
    expect(result).toMatchObject({ applied: true, before: answeringA, verification: VERIFIED, warnings: [] });
    expect(result.changed).toEqual([
      change('families.apple8', true, false),
      change('families.apple9', true, false),
      change('maxThreadgroupMemoryLength', 65536, 32768),
    ]);
    expect(result.patchedClasses).toEqual([
      {
        className: CLASS,
        selectors: SELECTORS.map((selector) => ({ selector, outcome: 'already-installed', mode: 'added' })),
      },
    ]);
    expect(status().profile).toEqual(resolveProfile('apple7'));
  });

  it('status while a profile is active: the profile, the classes, our hooks; the trace only when asked', () => {
    applyProfile('apple9-hw-tg', { trace: true });
    const active = {
      supported: true,
      active: true,
      profile: resolveProfile('apple9-hw-tg'),
      patchedClasses: [CLASS],
      hooks: HOOKS.map((h) => ({ ...h, mode: 'added', ours: true })),
      tracing: true,
      llamaCpp: [],
    };
    expect(status()).toEqual({ ...active, trace: null });
    fixture.query(false);
    const trace = status({ trace: true }).trace;
    expect(trace?.find((t) => t.family === 'apple9')).toEqual({
      selector: 'supportsFamily:',
      family: 'apple9',
      calls: 1,
      stock: false,
      given: true,
    });
    expect(trace?.find((t) => t.family === 'apple1')).toEqual({
      selector: 'supportsFamily:',
      family: 'apple1',
      calls: 1,
      stock: true,
      given: true,
    });
    expect(trace?.find((t) => t.selector === 'maxThreadgroupMemoryLength')).toEqual({
      selector: 'maxThreadgroupMemoryLength',
      family: null,
      calls: 1,
      stock: 32768,
      given: 32768,
    });
    expect(status({ trace: false })).toEqual({ ...active, trace: null });
  });

  it('restore takes every hook out and verifies against the stock answers; again, it has nothing left to do', () => {
    const stock = probe({ allDevices: true });
    applyProfile('cua-release');
    expect(restore()).toEqual({
      restored: true,
      reason: null,
      restoredHooks: HOOKS,
      conflicts: [],
      verification: VERIFIED,
    });
    expect(probe({ allDevices: true })).toEqual(stock);
    expect(restore()).toEqual({
      restored: false,
      reason: 'nothing-applied',
      restoredHooks: [],
      conflicts: [],
      verification: VERIFIED,
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

  it('a hook on top of ours: restore leaves it working, reports the conflict, and verification fails on its answer', () => {
    applyProfile('cua-release');
    expect(fixture.installForeignHook(CLASS, 12345)).toBe(true);
    const mismatch = {
      device: 0,
      className: CLASS,
      field: 'maxThreadgroupMemoryLength',
      expected: 32768,
      actual: 12345,
    };
    const conflicts = [{ className: CLASS, selector: 'maxThreadgroupMemoryLength' }];
    expect(restore()).toEqual({
      restored: true,
      reason: null,
      restoredHooks: [HOOKS[0], HOOKS[2]],
      conflicts,
      verification: { ok: false, checked: FAMILY_NAMES.length + 3, mismatches: [mismatch] },
    });
    expect(restore()).toEqual({
      restored: false,
      reason: 'conflicts',
      restoredHooks: [],
      conflicts,
      verification: { ok: false, checked: FAMILY_NAMES.length + 3, mismatches: [mismatch] },
    });
    expect(fixture.removeForeignHook(CLASS)).toBe(true);
    expect(restore()).toEqual({
      restored: true,
      reason: null,
      restoredHooks: [HOOKS[1]],
      conflicts: [],
      verification: VERIFIED,
    });
  });

  it('strict changes nothing when the profile applies', () => {
    expect(applyProfile('apple7', { strict: true })).toMatchObject({ applied: true, verification: VERIFIED });
  });
});

describeSim('register in a VM', () => {
  beforeAll(requireSimBuild);
  afterEach(() => {
    restore();
  });

  it('unset, empty or blank: applies host-family (Apple7 on this M1 Ultra guest), the whole applyProfile result', () => {
    for (const env of [{}, { METAL_CAP_SHIM_PROFILE: '' }, { METAL_CAP_SHIM_PROFILE: ' \t' }]) {
      const stock = probe({ allDevices: true });
      const outcome = registerFromEnvironment(env);
      expect(outcome).toEqual({
        action: 'applied',
        result: {
          applied: true,
          reason: null,
          detail: null,
          profile: { ...resolveProfile('host-family'), appleFamilyMax: 1007 },
          patchedClasses: [
            {
              className: CLASS,
              selectors: SELECTORS.map((selector) => ({ selector, outcome: 'installed', mode: 'added' })),
            },
          ],
          before: stock,
          after: probe({ allDevices: true }),
          changed: raised(['apple6', 'apple7']),
          warnings: [],
          verification: VERIFIED,
        },
      });
      restore();
    }
  });

  it('a built-in name (spaces around it are ignored) or a JSON profile is applied as given', () => {
    for (const value of ['apple7', '  apple7\n']) {
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toMatchObject({
        action: 'applied',
        result: { applied: true, profile: resolveProfile('apple7') },
      });
      expect(status().profile).toEqual(resolveProfile('apple7'));
      restore();
    }
    const json = '{"appleFamilyMax":1008,"maxThreadgroupMemoryLength":49152}';
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: json })).toMatchObject({
      action: 'applied',
      result: { applied: true, profile: resolveProfile(json) },
    });
    expect(probe().devices[0]).toMatchObject({
      maxThreadgroupMemoryLength: 49152,
      families: { apple8: true, apple9: false },
    });
  });

  it('auto applies the verified profile and says where it came from', () => {
    const outcome = registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: ' auto ' });
    expect(outcome).toMatchObject({ action: 'applied', result: { applied: true, auto: { from: 'doctor' } } });
    expect(status().active).toBe(true);
  });

  it('auto with nothing cached while a profile is applied: the probe runner measures stock answers all the same, and the verified profile replaces the applied one', async () => {
    const saved = process.env.XDG_CACHE_HOME;
    process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-apply-vm-empty-cache-'));
    try {
      applyProfile('apple7');
      expect(status().profile).toMatchObject({ appleFamilyMax: 1007, deviceName: null });
      const outcome = registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'auto' });
      expect(outcome.action).toBe('applied');
      if (outcome.action !== 'applied') throw new Error('unreachable');
      expect(outcome.result.auto?.from).toBe('doctor');
      // The runner saw the guest's own answers (Apple5, no residency set), not apple7's: the verified profile is what
      // the stock guest proves, with the host chip's name that the heap probe allows.
      expect(status().profile).toEqual({
        name: null,
        appleFamilyMax: 1007,
        maxThreadgroupMemoryLength: null,
        recommendedMaxWorkingSetSize: null,
        deviceName: 'Apple M1 Ultra',
        families: {},
        mode: 'raise',
      });
    } finally {
      process.env.XDG_CACHE_HOME = saved;
    }
  });

  /** importRegister('auto') with the doctor cache under `cache`; then the profile it left applied. */
  const registerAutoWith = async (cache: string) => {
    const saved = process.env.XDG_CACHE_HOME;
    process.env.XDG_CACHE_HOME = cache;
    try {
      return { effects: await importRegister('auto'), profile: status().profile };
    } finally {
      process.env.XDG_CACHE_HOME = saved;
    }
  };

  it('register with auto: a cache folder that cannot be created (/proc/nope) applies all the same, with one METAL_CAP_SHIM_CACHE_NOT_WRITTEN warning', async () => {
    const { effects, profile } = await registerAutoWith('/proc/nope');
    expect(effects).toEqual({
      exits: [],
      warnings: [
        [
          "metal-cap-shim/register: profile auto: the doctor cache could not be written: ENOENT: no such file or directory, mkdir '/proc/nope'",
          { code: 'METAL_CAP_SHIM_CACHE_NOT_WRITTEN' },
        ],
      ],
      stderr: '',
    });
    expect(profile).toMatchObject({ appleFamilyMax: 1007, maxThreadgroupMemoryLength: null });
  });

  it('register with auto: a planted cache folder (mode 0777) is ignored with a METAL_CAP_SHIM_CACHE_IGNORED warning, nothing is written there, and its values are not applied', async () => {
    const cache = mkdtempSync(path.join(tmpdir(), 'mcs-apply-vm-planted-'));
    const first = await registerAutoWith(cache);
    restore();
    const folder = path.join(cache, 'metal-cap-shim');
    const [name] = readdirSync(folder);
    const file = path.join(folder, name!);
    const entry = JSON.parse(readFileSync(file, 'utf8')) as DoctorCacheEntry;
    entry.result.verifiedProfile = { ...entry.result.verifiedProfile, appleFamilyMax: 1010 };
    writeFileSync(file, JSON.stringify(entry));
    chmodSync(folder, 0o777);
    const { effects, profile } = await registerAutoWith(cache);
    const planted = `the cache folder ${folder} can be written by other users (mode 0777)`;
    expect(effects).toEqual({
      exits: [],
      warnings: [
        [
          `metal-cap-shim/register: profile auto ignored the cache file ${file}: ${planted}; the device was measured again`,
          { code: 'METAL_CAP_SHIM_CACHE_IGNORED' },
        ],
        [
          `metal-cap-shim/register: profile auto: the doctor cache could not be written: ${planted}, so nothing is written there`,
          { code: 'METAL_CAP_SHIM_CACHE_NOT_WRITTEN' },
        ],
      ],
      stderr: '',
    });
    expect([first.effects.warnings, profile]).toEqual([[], first.profile]);
  });

  it('off applies nothing, even in a VM, in any case', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'off' })).toEqual({ action: 'off' });
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'OFF' })).toEqual({ action: 'off' });
    expect(status().active).toBe(false);
  });

  it('a malformed value throws the profile’s own error and installs nothing', () => {
    for (const value of ['apple99', '{"appleFamilyMax":', '{"appleFamilyMax":2000}', '{"mode":"lower"}']) {
      expect(() => registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toThrow(invalidProfileError(value));
      expect(status().active).toBe(false);
    }
    expect(() => registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'apple99' })).toThrow(InvalidProfileError);
  });

  it('importing register applies with one warning when the profile claims above the host’s family, none otherwise; a malformed value exits 1 with its code and message', async () => {
    expect(await importRegister(undefined)).toEqual({ exits: [], warnings: [], stderr: '' });
    expect(status().profile).toEqual({ ...resolveProfile('host-family'), appleFamilyMax: 1007 });
    restore();
    expect(await importRegister('cua-release')).toEqual({
      exits: [],
      warnings: [[`metal-cap-shim/register: ${ABOVE_HOST.message}`, { code: 'METAL_CAP_SHIM_ABOVE_HOST_FAMILY' }]],
      stderr: '',
    });
    expect(status().profile).toEqual(resolveProfile('cua-release'));
    restore();
    expect(await importRegister('apple7')).toEqual({ exits: [], warnings: [], stderr: '' });
    expect(status().profile).toEqual(resolveProfile('apple7'));
    restore();
    expect(await importRegister('off')).toEqual({ exits: [], warnings: [], stderr: '' });
    expect(status().active).toBe(false);
    expect(await importRegister('apple99')).toEqual({
      exits: [1],
      warnings: [],
      stderr: `metal-cap-shim/register: ERR_INVALID_PROFILE: ${invalidProfileError('apple99').message}\n`,
    });
    expect(status().active).toBe(false);
  });
});
