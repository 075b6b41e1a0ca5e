// applyProfile, restore, status and register on an install without the addon (any non-Mac install: no
// METAL_CAP_SHIM_SIM_SNAPSHOT): a process of its own, since the addon, once loaded, stays loaded.
delete process.env.METAL_CAP_SHIM_SIM_SNAPSHOT;

import { describe, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { InvalidOptionsError, InvalidProfileError, UnsupportedPlatformError } from '../../lib/core/errors.js';
import { resolveProfile, type ProfileInput } from '../../lib/patch/profiles.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import { importRegister, invalidProfileError } from '../support/apply-helpers.js';
import { NO_ADDON_STATUS } from '../support/status.js';

describe('without the addon (not macOS, no simulated Metal)', () => {
  const detail = `Metal exists only on macOS; this is ${process.platform}`;
  const unsupported = (input: ProfileInput) => ({
    applied: false,
    reason: 'unsupported-platform',
    detail,
    profile: resolveProfile(input),
    patchedClasses: [],
    before: null,
    after: null,
    changed: [],
    warnings: [],
    verification: null,
  });

  it('applyProfile() does not apply, and says why; the default profile is host-family', () => {
    expect(applyProfile()).toEqual(unsupported('host-family'));
    expect(applyProfile('apple7', { force: true, trace: true })).toEqual(unsupported('apple7'));
  });

  it('with strict it throws UnsupportedPlatformError', () => {
    let thrown: unknown;
    try {
      applyProfile('apple7', { strict: true });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UnsupportedPlatformError);
    expect(thrown).toMatchObject({ code: 'ERR_UNSUPPORTED_PLATFORM', message: detail });
  });

  it('a bad profile or bad options still throw first', () => {
    // @ts-expect-error a misspelt name does not compile; at run time it is a typed error
    expect(() => applyProfile('apple99')).toThrow(InvalidProfileError);
    for (const option of ['force', 'trace', 'strict']) {
      expect(() => applyProfile('apple7', { [option]: 'yes' })).toThrow(
        new InvalidOptionsError(option, `applyProfile() option '${option}' must be a boolean, got the string "yes"`),
      );
    }
    expect(() => applyProfile('apple7', { dryRun: true } as never)).toThrow(
      "applyProfile() has no option 'dryRun'; its options are force, allowAboveHardware, trace, strict",
    );
  });

  it('restore() restores nothing and says why', () => {
    expect(restore()).toEqual({
      restored: false,
      reason: 'unsupported-platform',
      restoredHooks: [],
      conflicts: [],
      verification: null,
    });
  });

  it('status() is unsupported, with or without the trace', () => {
    const none = NO_ADDON_STATUS;
    expect(status()).toEqual(none);
    expect(status({ trace: true })).toEqual(none);
    expect(() => status({ trace: 1 } as never)).toThrow("status() option 'trace' must be a boolean, got number 1");
  });

  it('registerFromEnvironment: off (any case) is off; any valid value finds no native module; a malformed one is returned, not thrown', () => {
    expect(registerFromEnvironment({})).toEqual({ action: 'no-native', ignored: null });
    for (const value of ['off', '  off\n', 'OFF', 'Off'])
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toEqual({ action: 'off' });
    for (const value of ['', ' ', 'apple7', ' apple7 ', 'auto', 'AUTO', '{"appleFamilyMax":1008}']) {
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toEqual({
        action: 'no-native',
        ignored: null,
      });
    }
    for (const value of ['apple99', '{"appleFamilyMax":', '{"appleFamilyMax":2000}', 'OFFF']) {
      expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: value })).toEqual({
        action: 'no-native',
        ignored: invalidProfileError(value),
      });
    }
  });

  it('register where there is no Metal: nothing to do is silent; a malformed value is one warning, and the program runs', async () => {
    expect(await importRegister(undefined)).toEqual({ exits: [], warnings: [], stderr: '' });
    expect(await importRegister('off')).toEqual({ exits: [], warnings: [], stderr: '' });
    expect(await importRegister('{"appleFamilyMax":')).toEqual({
      exits: [],
      warnings: [
        [
          `metal-cap-shim/register: ERR_INVALID_PROFILE: ${invalidProfileError('{"appleFamilyMax":').message} (ignored: no Metal here)`,
          { code: 'METAL_CAP_SHIM_INVALID_PROFILE' },
        ],
      ],
      stderr: '',
    });
  });
});
