// The built-in profiles (lib/patch/profiles.ts) as `profiles --json` and `metal-cap-shim/tables` hand them out: their
// settings and the reasoning printed with them. The module is imported afresh before each test, so the table is
// built inside the test that reads it (as in test/engines/llama-cpp.test.ts); imported once at the top, its mutants
// could only be left out as static, and a suite that imports lib/ afresh elsewhere would count them without reading
// them.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Profiles from '../../lib/patch/profiles.js';

let m: typeof Profiles;
beforeEach(async () => {
  vi.resetModules();
  m = await import('../../lib/patch/profiles.js');
});

describe('the built-in profiles', () => {
  it('each with its settings, summary, rationale, source and risks', () => {
    expect(m.profiles).toMatchSnapshot();
  });

  it('each is named by its key, reads back as itself, and the default is one of them', () => {
    for (const [key, builtin] of Object.entries(m.profiles)) {
      expect([builtin.name, builtin.profile.name]).toEqual([key, key]);
      expect(m.resolveProfile(key)).toEqual(builtin.profile);
      expect(m.resolveProfile(JSON.stringify(builtin.profile))).toEqual(builtin.profile);
    }
    expect(Object.keys(m.profiles)).toContain(m.DEFAULT_PROFILE);
    expect(m.resolveProfile()).toEqual(m.profiles[m.DEFAULT_PROFILE]!.profile);
  });

  it('each says in words what it is, why, where it comes from and what it risks', () => {
    for (const builtin of Object.values(m.profiles)) {
      for (const text of [builtin.summary, builtin.rationale, builtin.source, builtin.risks]) {
        expect(text.trim().length).toBeGreaterThan(20);
      }
    }
  });
});

// The module's own constants (the fields a profile may set, the fields a printed profile writes as null, the pattern
// of a device name) are built as it loads: read here, after a fresh import, what each of them decides.
describe('what a profile may say, after a fresh import', () => {
  it('every field a profile may set, set at once: the profile says exactly that, and is custom', () => {
    const spec = {
      appleFamilyMax: 1008,
      maxThreadgroupMemoryLength: 32768,
      recommendedMaxWorkingSetSize: 1 << 30,
      deviceName: 'Apple M2',
      families: { metal3: false },
      mode: 'exact',
      mlxArchitecture: 'applegpu_g14g',
    } as const;
    expect(m.resolveProfile(spec)).toEqual({ name: null, ...spec });
  });

  it('a printed custom profile that leaves every answer alone (null) reads back as itself', () => {
    const printed = JSON.parse(JSON.stringify(m.resolveProfile({}))) as unknown;
    expect(Object.values(printed as object).filter((v) => v === null)).toHaveLength(5);
    expect(m.resolveProfile(printed)).toEqual(printed);
    expect(m.resolveProfile(JSON.stringify(printed))).toEqual(printed);
  });

  it.each([
    ['starts', 'ÄApple M1'],
    ['ends', 'Apple M1Ä'],
  ])('a device name that %s with a character outside printable ASCII is refused', (_where, deviceName) => {
    expect(() => m.resolveProfile({ deviceName })).toThrow(
      `deviceName must be 1 to 128 printable ASCII characters without leading or trailing spaces (e.g. "Apple M1"), or "host" (the host chip's name), got ${JSON.stringify(deviceName)}`,
    );
  });
});
