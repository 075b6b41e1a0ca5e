// A device class that lacks a query cannot be hooked: applyProfile returns `applied: false` with reason
// 'hook-failed' and nothing installed (strict: true throws NativeError ERR_HOOK_FAILED), register, inside a VM, lets
// the program run unpatched with a warning, and a live audit, which has no patched side to show, fails with
// ERR_HOOK_FAILED. Repeatable: the class never gains the query.
import { APPLE9_ABOVE_M1_ULTRA, editedSnapshot } from '../support/apply-helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = editedSnapshot('vz-guest-m1-ultra-tahoe-stock', 'lacks-working-set', (s) => {
  const broken = structuredClone(s.devices[0]!);
  broken.className = 'SimBrokenDevice';
  broken.registryId = s.devices[0]!.registryId + 1;
  broken.simulation = { methodsOnConcreteClass: false, lacks: 'recommendedMaxWorkingSetSize' };
  s.devices.push(broken);
});

import { beforeAll, expect, it } from 'vitest';
import { status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { audit } from '../../lib/audit/audit.js';
import { NativeError } from '../../lib/core/errors.js';
import { probe } from '../../lib/device/probe.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import { importRegister } from '../support/apply-helpers.js';
import { describeSim, requireSimBuild, runCli } from '../support/helpers.js';

// The engine's own message (src-native/engine/patch.mm), then applyProfile's promise that nothing changed.
const HOOK_MESSAGE =
  'cannot hook -[SimBrokenDevice recommendedMaxWorkingSetSize]: the class does not implement it (a Metal validation or capture wrapper such as MTLDebugDevice can lack it: unset MTL_DEBUG_LAYER and retry)';
const DETAIL = `${HOOK_MESSAGE}; nothing was changed`;
const ABOVE_HARDWARE = {
  code: 'threadgroup-memory-above-hardware',
  message:
    'threadgroup memory 65536 bytes is above 32768, which no Apple GPU exceeds; a kernel sized from it may ask for memory the GPU does not have (profile apple9-hw-tg avoids this)',
};
const INACTIVE = {
  supported: true,
  active: false,
  profile: null,
  patchedClasses: [],
  hooks: [],
  tracing: false,
  trace: null,
  llamaCpp: [],
};

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

  it('applyProfile without strict: a not-applied result with reason hook-failed, and nothing is installed', () => {
    const stock = probe({ allDevices: true });
    for (const options of [{}, { trace: true }, { strict: false }]) {
      expect(applyProfile('cua-release', options)).toEqual({
        applied: false,
        reason: 'hook-failed',
        detail: DETAIL,
        profile: resolveProfile('cua-release'),
        patchedClasses: [],
        before: null,
        after: null,
        changed: [],
        warnings: [APPLE9_ABOVE_M1_ULTRA, ABOVE_HARDWARE],
        verification: null,
      });
      expect(status()).toEqual(INACTIVE);
      expect(probe({ allDevices: true })).toEqual(stock);
    }
  });

  it('applyProfile with strict: true throws NativeError ERR_HOOK_FAILED, and nothing is installed', () => {
    const stock = probe({ allDevices: true });
    const err = thrownBy(() => applyProfile('apple7', { strict: true }));
    expect(err).toBeInstanceOf(NativeError);
    expect(err).toMatchObject({ name: 'NativeError', code: 'ERR_HOOK_FAILED', message: DETAIL });
    expect(status()).toEqual(INACTIVE);
    expect(probe({ allDevices: true })).toEqual(stock);
  });

  it('a live audit has no patched side to show: it throws NativeError ERR_HOOK_FAILED, and nothing is installed', () => {
    const err = thrownBy(() => audit({ profile: 'apple7' }));
    expect(err).toBeInstanceOf(NativeError);
    expect(err).toMatchObject({ code: 'ERR_HOOK_FAILED', message: DETAIL });
    expect(status()).toEqual(INACTIVE);
  });

  it('CLI audit --json: exit 1, the error as JSON on stdout and the line on stderr', () => {
    const r = runCli(['audit', '--json', '--profile', 'apple7'], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: process.env.METAL_CAP_SHIM_SIM_SNAPSHOT,
    });
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ error: { code: 'ERR_HOOK_FAILED', message: DETAIL } });
    expect(r.stderr).toBe(`metal-cap-shim: ERR_HOOK_FAILED: ${DETAIL}\n`);
  });

  it('registerFromEnvironment: not-applied, with the code and the message', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'apple7' })).toEqual({
      action: 'not-applied',
      why: `hook-failed: ${DETAIL}`,
      auto: null,
    });
    expect(status()).toEqual(INACTIVE);
  });

  it('register with auto, not applied: the cache warning is said too (XDG_CACHE_HOME=/proc/nope)', async () => {
    const saved = process.env.XDG_CACHE_HOME;
    process.env.XDG_CACHE_HOME = '/proc/nope';
    try {
      const effects = await importRegister('auto');
      expect(effects.warnings.map(([, o]) => o)).toEqual([
        { code: 'METAL_CAP_SHIM_NOT_APPLIED' },
        { code: 'METAL_CAP_SHIM_CACHE_NOT_WRITTEN' },
      ]);
      expect(effects.warnings[1]![0]).toBe(
        "metal-cap-shim/register: profile auto: the doctor cache could not be written: ENOENT: no such file or directory, mkdir '/proc/nope'",
      );
    } finally {
      process.env.XDG_CACHE_HOME = saved;
    }
    expect(status()).toEqual(INACTIVE);
  });

  it('register: the program goes on unpatched, with a METAL_CAP_SHIM_NOT_APPLIED warning and no exit', async () => {
    expect(await importRegister(undefined)).toEqual({
      exits: [],
      warnings: [
        [
          `metal-cap-shim/register: profile not applied (hook-failed: ${DETAIL})`,
          { code: 'METAL_CAP_SHIM_NOT_APPLIED' },
        ],
      ],
      stderr: '',
    });
    expect(status()).toEqual(INACTIVE);
  });
});
