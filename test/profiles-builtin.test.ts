// The built-in profiles (lib/patch/profiles.ts) as `profiles --json` and `metal-cap-shim/tables` hand them out: their
// settings and the reasoning printed with them. The module is imported afresh before each test, so the table is
// built inside the test that reads it (as in test/gates-exact.test.ts); imported once at the top, its mutants could
// only be left out as static, and a suite that imports lib/ afresh elsewhere would count them without reading them.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Profiles from '../lib/patch/profiles.js';

let m: typeof Profiles;
beforeEach(async () => {
  vi.resetModules();
  m = await import('../lib/patch/profiles.js');
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
