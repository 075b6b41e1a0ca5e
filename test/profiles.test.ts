import { describe, expect, it } from 'vitest';
import { InvalidProfileError } from '../lib/errors.js';
import { familyAnswer, encodeNativeProfile, predictPatchedDevice, profiles, resolveProfile } from '../lib/profiles.js';
import { loadSnapshot, reportFromSnapshot } from '../lib/snapshots.js';

describe('profile answers (the TypeScript prediction the native engine is checked against)', () => {
  const raise = resolveProfile({ appleFamilyMax: 1005 });
  const exact = resolveProfile({ appleFamilyMax: 1005, mode: 'exact' });

  it('raise: stock OR within the ceiling', () => {
    expect(familyAnswer(raise, 1007, true)).toBe(true);
    expect(familyAnswer(raise, 1007, false)).toBe(false);
    expect(familyAnswer(raise, 1003, false)).toBe(true);
  });

  it('exact: within the ceiling, whatever the stock answer', () => {
    expect(familyAnswer(exact, 1007, true)).toBe(false);
    expect(familyAnswer(exact, 1003, false)).toBe(true);
    expect(familyAnswer(exact, 1015, true)).toBe(false);
  });

  it('non-Apple and unknown families keep their answers unless named', () => {
    expect(familyAnswer(exact, 5001, true)).toBe(true);
    expect(familyAnswer(exact, 9999, true)).toBe(true);
    expect(familyAnswer(resolveProfile({ families: { metal3: false } }), 5001, true)).toBe(false);
  });

  it('sizes: raise takes the larger, exact sets', () => {
    const device = reportFromSnapshot(loadSnapshot('macbookpro16-intel-amd-two-gpus')).devices[0]!;
    expect(device.maxThreadgroupMemoryLength).toBe(65536);
    expect(predictPatchedDevice(device, resolveProfile({ maxThreadgroupMemoryLength: 32768 })).maxThreadgroupMemoryLength).toBe(65536);
    expect(
      predictPatchedDevice(device, resolveProfile({ maxThreadgroupMemoryLength: 32768, mode: 'exact' })).maxThreadgroupMemoryLength,
    ).toBe(32768);
  });
});

describe('built-in profiles', () => {
  it('cannot be changed by a caller', () => {
    const families = profiles['cua-release']!.profile.families as Record<string, boolean>;
    expect(() => {
      families.metal3 = true;
    }).toThrow(TypeError);
    expect(resolveProfile('cua-release').families).toEqual({});
  });

  it('a resolved profile keeps a built-in name only if its values are still the built-in’s', () => {
    const same = resolveProfile({ ...resolveProfile('apple7') });
    expect(same.name).toBe('apple7');
    const changed = resolveProfile({ ...resolveProfile('apple7'), appleFamilyMax: 1010 });
    expect(changed.name).toBeNull();
  });

  it('the native text is only ever made from a valid profile', () => {
    expect(encodeNativeProfile(resolveProfile('cua-release'))).toBe('mcs1;max=1009;tg=65536;wss=-;mode=raise;trace=0;fam=');
    expect(() => encodeNativeProfile({ ...resolveProfile('apple7'), appleFamilyMax: 5000 })).toThrow(InvalidProfileError);
  });
});
