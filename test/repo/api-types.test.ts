// The API's types say what its checks accept (checked by `npm run typecheck`, which compiles this file with the rest
// of test/): a misspelt profile name, or an option a call does not take, does not compile; what the checks accept at
// run time, `undefined` for an optional option included, compiles.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { applyProfile, type AutoApplyResult } from '../../lib/select/auto.js';
import { InvalidOptionsError, InvalidProfileError } from '../../lib/core/errors.js';
import type { ApplyResult } from '../../lib/patch/apply.js';
import {
  profiles,
  resolveProfile,
  type BuiltinProfileName,
  type Profile,
  type ProfileInput,
} from '../../lib/patch/profiles.js';

describe('profile names and options in the types', () => {
  it('each key of the profile table is a built-in name that resolves to itself, and such names are what ProfileInput takes', () => {
    // The table is typed Record<BuiltinProfileName, …>: the compiler holds it to the names, one profile each.
    const names = Object.keys(profiles) as BuiltinProfileName[];
    expect(names.map((n) => resolveProfile(n).name)).toEqual(names);
    expectTypeOf<BuiltinProfileName>().toMatchTypeOf<ProfileInput>();
    expectTypeOf<'{"appleFamilyMax": 1007}'>().toMatchTypeOf<ProfileInput>();
    expectTypeOf<{ appleFamilyMax: 1007 }>().toMatchTypeOf<ProfileInput>();
    expectTypeOf<'cua-relase'>().not.toMatchTypeOf<ProfileInput>();
  });

  it('mlxArchitecture takes a name, "host" or null in a spec; a resolved profile holds a name or nothing', () => {
    expectTypeOf<{ mlxArchitecture: 'applegpu_g13d' }>().toMatchTypeOf<ProfileInput>();
    expectTypeOf<{ mlxArchitecture: 'host' }>().toMatchTypeOf<ProfileInput>();
    expectTypeOf<{ mlxArchitecture: null }>().toMatchTypeOf<ProfileInput>();
    expectTypeOf<{ mlxArchitecture: 13 }>().not.toMatchTypeOf<ProfileInput>();
    expectTypeOf<Profile['mlxArchitecture']>().toEqualTypeOf<string | undefined>();
    expect(resolveProfile({ mlxArchitecture: null }).mlxArchitecture).toBeUndefined();
  });

  it('a misspelt name does not compile, and at run time is a typed error', () => {
    // resolveProfile takes any value, for names read at run time (a file, the environment).
    expect(() => resolveProfile('cua-relase')).toThrow(InvalidProfileError);
    // @ts-expect-error 'cua-relase' is no profile
    expect(() => applyProfile('cua-relase')).toThrow(InvalidProfileError);
  });

  it('timeoutMs is auto’s alone: with a named profile it does not compile, and at run time is refused', () => {
    // @ts-expect-error timeoutMs is only for 'auto'
    expect(() => applyProfile('cua-release', { timeoutMs: 100 })).toThrow(InvalidOptionsError);
    expectTypeOf(applyProfile('auto')).toEqualTypeOf<AutoApplyResult>();
    expectTypeOf(applyProfile('apple7')).toEqualTypeOf<ApplyResult>();
  });

  it('an optional option given as undefined compiles (exactOptionalPropertyTypes too), as the checks accept it', () => {
    const result: ApplyResult = applyProfile('apple7', { force: undefined, trace: undefined, strict: undefined });
    expect(result.applied).toBe(false);
    const auto = (): AutoApplyResult => applyProfile('auto', { timeoutMs: undefined });
    expectTypeOf(auto).returns.toEqualTypeOf<AutoApplyResult>();
  });
});

describe('predictGates: the rule set names the prediction type', () => {
  it('each rule set gives its own prediction type, read from one table; none gives the newest rules', async () => {
    const { predictGates } = await import('../../lib/engines/index.js');
    const { loadSnapshot, reportFromSnapshot } = await import('../../lib/device/snapshots.js');
    const device = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock')).devices[0]!;
    type Engines = typeof import('../../lib/engines/index.js');
    const legacy = predictGates(device, 'llama.cpp', { rules: 'legacy', env: {} });
    expectTypeOf(legacy).toEqualTypeOf<import('../../lib/engines/index.js').LlamaCppLegacyPrediction>();
    const withId = predictGates(device, 'llama.cpp', { rules: 'device', env: {} });
    expectTypeOf(withId).toEqualTypeOf<import('../../lib/engines/index.js').LlamaCppDeviceIdPrediction>();
    expectTypeOf(predictGates(device, 'llama.cpp', { rules: 'device-b7411', env: {} })).toEqualTypeOf<
      import('../../lib/engines/index.js').LlamaCppDevicePrediction
    >();
    expectTypeOf(predictGates(device, 'llama.cpp')).toEqualTypeOf<
      import('../../lib/engines/index.js').LlamaCppCurrentPrediction
    >();
    expectTypeOf<ReturnType<Engines['predictGates']>>().toMatchTypeOf<
      import('../../lib/engines/index.js').GatePrediction
    >();
    // The values follow the types: device_id exists from the device rules on, the legacy flags are legacy's own.
    expect([legacy.rules, 'use_bfloat' in legacy.flags, withId.rules, withId.flags.device_id.value]).toEqual([
      'legacy',
      true,
      'device',
      'GGML_METAL_DEVICE_GENERIC',
    ]);
  });
});
