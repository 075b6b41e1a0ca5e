// The hook engine over the simulated Metal, in this process. Snapshot: an Intel Mac with two GPUs whose device
// classes are siblings under _MTLDevice: MTLIGAccelDevice inherits the queries, AMDRadeonX6000_… implements them
// itself. Both class layouts of the engine (add a method vs. replace one) run here, on GCC's runtime.

import fc from 'fast-check';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { audit } from '../../lib/audit/audit.js';
import { InvalidOptionsError, InvalidProfileError } from '../../lib/core/errors.js';
import { FAMILY_NAMES, FAMILY_VALUES } from '../../lib/core/families.js';
import { probe } from '../../lib/device/probe.js';
import { predictPatchedDevice, resolveProfile, type ProfileSpec } from '../../lib/patch/profiles.js';
import { describeSim, loadFixture, requireSimBuild, type FixtureAnswers, type SimFixture } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

const INTEL = 'MTLIGAccelDevice';
const AMD = 'AMDRadeonX6000_AMDNavi14GraphicsDevice';
const APPLE7 = String(FAMILY_VALUES.apple7);
let fixture: SimFixture;

describeSim('hook engine (simulated Metal, GCC runtime)', () => {
  useSimulation('macbookpro16-intel-amd-two-gpus');
  beforeAll(() => {
    requireSimBuild();
    fixture = loadFixture();
  });
  afterEach(() => {
    restore();
  });

  const devices = () => fixture.query(true) as FixtureAnswers[];

  it('patches each device class: the inherited one by adding a method, the own one by replacing it', () => {
    const result = applyProfile('cua-release', { force: true });
    expect(result.applied).toBe(true);
    const modes = Object.fromEntries(result.patchedClasses.map((c) => [c.className, c.selectors.map((s) => s.mode)]));
    expect(modes[INTEL]).toEqual(['added', 'added', 'added']);
    expect(modes[AMD]).toEqual(['replaced', 'replaced', 'replaced']);
    for (const d of devices()) {
      expect(d.families[APPLE7]).toBe(true);
      expect(d.families[String(FAMILY_VALUES.apple10)]).toBe(false);
      expect(d.families['1011']).toBe(false);
    }
  });

  it('a sibling class and the base class keep their stock answers', () => {
    applyProfile('cua-release', { force: true });
    expect(devices()[0]!.families[APPLE7]).toBe(true);
    const sibling = fixture.strayDevice('SimSiblingDevice', 0)!;
    const base = fixture.strayDevice('_MTLDevice', 0)!;
    expect(sibling.families[APPLE7]).toBe(false);
    expect(base.families[APPLE7]).toBe(false);
    expect(fixture.methodInfo('SimSiblingDevice', 'supportsFamily:')!.own).toBe(false);
  });

  it('restore puts back exactly the original implementations where the class had its own method', () => {
    const amdBefore = fixture.methodInfo(AMD, 'supportsFamily:')!;
    const stock = devices();
    applyProfile('cua-release', { force: true });
    expect(fixture.methodInfo(AMD, 'supportsFamily:')!.imp).not.toBe(amdBefore.imp);
    const result = restore();
    expect(result.conflicts).toEqual([]);
    expect(result.restoredHooks).toHaveLength(6);
    expect(result.verification?.ok).toBe(true);
    expect(fixture.methodInfo(AMD, 'supportsFamily:')!.imp).toBe(amdBefore.imp);
    expect(devices()).toEqual(stock);
  });

  it('restore leaves an added method as a pass-through: the class answers as its superclass does now, a hook installed on the superclass later included', () => {
    const stock = devices();
    applyProfile('cua-release', { force: true });
    const hooked = fixture.methodInfo(INTEL, 'maxThreadgroupMemoryLength')!;
    expect(restore().verification?.ok).toBe(true);
    // The public runtime cannot remove the added method: ours stays, and asks the superclass at each call.
    const after = fixture.methodInfo(INTEL, 'maxThreadgroupMemoryLength')!;
    expect([after.own, after.imp === hooked.imp, after.imp === after.superImp]).toEqual([true, true, false]);
    expect(devices()).toEqual(stock);
    expect(fixture.installForeignHook(after.superclass, 777)).toBe(true);
    try {
      expect(devices()[0]!.maxThreadgroupMemoryLength).toBe(777);
    } finally {
      fixture.removeForeignHook(after.superclass);
    }
    expect(devices()).toEqual(stock);
    // Applied again, the pass-through answers from the profile again.
    applyProfile('cua-release', { force: true });
    expect(devices()[0]!.maxThreadgroupMemoryLength).toBe(65536);
  });

  it('restore narrows on restored: true with the verification, then false with nothing-applied', () => {
    applyProfile('apple7', { force: true });
    const first = restore();
    expect(first.restored).toBe(true);
    if (first.restored) expect(first.verification).toEqual({ ok: true, checked: 22 * 2, mismatches: [] });
    expect(restore()).toEqual({
      restored: false,
      reason: 'nothing-applied',
      restoredHooks: [],
      conflicts: [],
      verification: { ok: true, checked: 22 * 2, mismatches: [] },
    });
  });

  it('applying twice does not wrap twice', () => {
    applyProfile('apple7', { force: true, trace: true });
    const second = applyProfile('apple7', { force: true, trace: true });
    expect(second.patchedClasses.flatMap((c) => c.selectors.map((s) => s.outcome))).toEqual(
      Array(6).fill('already-installed'),
    );
    expect(status().hooks).toHaveLength(6);
    const calls = () =>
      status({ trace: true }).trace!.find((t) => t.selector === 'maxThreadgroupMemoryLength')?.calls ?? 0;
    const n = calls();
    fixture.query(false);
    // One query through a single wrapper counts once; a double wrap would count twice.
    expect(calls() - n).toBe(1);
  });

  it('applying A then B leaves B answering', () => {
    applyProfile('cua-release', { force: true });
    expect(devices()[1]!.families[String(FAMILY_VALUES.apple9)]).toBe(true);
    applyProfile({ appleFamilyMax: 1007, maxThreadgroupMemoryLength: 131072 }, { force: true });
    const amd = devices()[1]!;
    expect(amd.families[APPLE7]).toBe(true);
    expect(amd.families[String(FAMILY_VALUES.apple8)]).toBe(false);
    expect(amd.maxThreadgroupMemoryLength).toBe(131072);
    expect(status().profile?.maxThreadgroupMemoryLength).toBe(131072);
  });

  it('a hook installed on top of ours: restore reports the conflict and the other hook keeps working', () => {
    applyProfile('cua-release', { force: true });
    expect(fixture.installForeignHook(AMD, 12345)).toBe(true);
    const result = restore();
    expect(result.conflicts).toEqual([{ className: AMD, selector: 'maxThreadgroupMemoryLength' }]);
    expect(result.restoredHooks).toHaveLength(5);
    expect(result.verification?.ok).toBe(false);
    const [intel, amd] = devices();
    expect(amd!.maxThreadgroupMemoryLength).toBe(12345);
    expect(amd!.families[APPLE7]).toBe(false);
    expect(intel!.maxThreadgroupMemoryLength).toBe(65536);
    expect(status().hooks).toEqual([
      { className: AMD, selector: 'maxThreadgroupMemoryLength', mode: 'replaced', ours: false },
    ]);
    // While the other hook stays on top, there is nothing restore may take out: a result that says so.
    const blocked = restore();
    expect(blocked).toMatchObject({
      restored: false,
      reason: 'conflicts',
      restoredHooks: [],
      conflicts: [{ className: AMD, selector: 'maxThreadgroupMemoryLength' }],
    });
    expect(blocked.verification?.ok).toBe(false);
    // Once the other library takes its hook out, ours is on top again and restore finishes the job.
    fixture.removeForeignHook(AMD);
    const again = restore();
    expect(again.restoredHooks).toEqual([{ className: AMD, selector: 'maxThreadgroupMemoryLength' }]);
    expect(again.verification?.ok).toBe(true);
  });

  it('a consumer loaded in the same process sees patched answers after apply and stock after restore', () => {
    const stock = fixture.query(false) as FixtureAnswers;
    applyProfile('cua-release', { force: true });
    const patched = fixture.query(false) as FixtureAnswers;
    expect(patched.families[APPLE7]).toBe(true);
    expect(stock.families[APPLE7]).toBe(false);
    restore();
    expect(fixture.query(false)).toEqual(stock);
  });

  it('native threads querying while JS toggles apply and restore see only stock or profile answers', () => {
    const stock = fixture.query(false) as FixtureAnswers;
    // The first apply adds methods to the classes that inherit them; GCC's libobjc rebuilds the dispatch table there,
    // which is unsafe against concurrent sends (Apple's runtime is not), so it happens before the threads start.
    applyProfile('cua-release', { force: true });
    restore();
    fixture.startHammer(4, FAMILY_VALUES.apple7);
    try {
      for (let i = 0; i < 300; i++) {
        applyProfile({ appleFamilyMax: 1009, maxThreadgroupMemoryLength: 131072 }, { force: true });
        restore();
      }
    } finally {
      const { calls, seen } = fixture.stopHammer();
      expect(calls).toBeGreaterThan(1000);
      expect(new Set(seen)).toEqual(
        new Set(['family:NO', 'family:YES', `threadgroup:${stock.maxThreadgroupMemoryLength}`, 'threadgroup:131072']),
      );
    }
  });

  it('property: for random valid profiles, apply → probe equals the TypeScript prediction; restore → stock', () => {
    const stock = probe({ allDevices: true });
    const spec = fc.record(
      {
        appleFamilyMax: fc.integer({ min: 1001, max: 1010 }),
        maxThreadgroupMemoryLength: fc.integer({ min: 64, max: 8192 }).map((n) => n * 16),
        recommendedMaxWorkingSetSize: fc.integer({ min: 64, max: 65536 }).map((n) => n * 1024 * 1024),
        families: fc.dictionary(fc.constantFrom(...FAMILY_NAMES), fc.boolean(), { maxKeys: 4 }),
        mode: fc.constantFrom('raise' as const, 'exact' as const),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(spec, (s: ProfileSpec) => {
        // The hooks are under test, not the plan: a random claim the newest llama.cpp would size above the hardware
        // (Apple10 with more than 57343 bytes) is applied too.
        const result = applyProfile(s, { force: true, allowAboveHardware: true });
        expect(result.applied).toBe(true);
        const live = probe({ allDevices: true });
        const profile = result.profile;
        expect(live.devices).toEqual(stock.devices.map((d) => predictPatchedDevice(d, profile)));
        expect(restore().verification?.ok).toBe(true);
        expect(probe({ allDevices: true })).toEqual(stock);
      }),
      { numRuns: 60 },
    );
  });

  it.each([
    ['unknown key', { appleFamilyMax: 1009, turbo: true }, 'turbo'],
    ['out of range', { appleFamilyMax: 1011 }, 'appleFamilyMax'],
    ['not an integer', { appleFamilyMax: 1007.5 }, 'appleFamilyMax'],
    ['threadgroup not a multiple of 16', { maxThreadgroupMemoryLength: 65537 }, 'maxThreadgroupMemoryLength'],
    ['negative working set', { recommendedMaxWorkingSetSize: -1 }, 'recommendedMaxWorkingSetSize'],
    ['unknown family', { families: { apple11: true } }, 'families.apple11'],
    ['family answer not boolean', { families: { metal3: 'no' } }, 'families.metal3'],
    ['bad mode', { mode: 'lower' }, 'mode'],
    ['unknown profile name', 'apple99', 'name'],
    ['malformed JSON', '{"appleFamilyMax": 1009', null],
    ['not an object', 42, null],
  ])('invalid input (%s) throws InvalidProfileError and leaves status unchanged', (_, input, field) => {
    applyProfile('apple7', { force: true });
    const before = status();
    const answers = devices();
    let thrown: unknown;
    try {
      applyProfile(input as never, { force: true });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(InvalidProfileError);
    expect((thrown as InvalidProfileError).code).toBe('ERR_INVALID_PROFILE');
    expect((thrown as InvalidProfileError).field).toBe(field);
    expect(status()).toEqual(before);
    expect(devices()).toEqual(answers);
  });

  it.each([[{ force: 'yes' }], [{ trace: 1 }], [{ strict: null, extra: true }]])(
    'bad options %j throw InvalidOptionsError first',
    (opts) => {
      const before = status();
      expect(() => applyProfile('cua-release', opts as never)).toThrow(InvalidOptionsError);
      expect(status()).toEqual(before);
    },
  );

  it('status() with trace shows each family asked, the stock answer and the answer given', () => {
    applyProfile('apple7', { force: true, trace: true });
    fixture.query(false);
    const trace = status({ trace: true }).trace!;
    const apple7 = trace.find((t) => t.selector === 'supportsFamily:' && t.family === 'apple7')!;
    expect(apple7).toMatchObject({ calls: 1, stock: false, given: true });
    const apple9 = trace.find((t) => t.family === 'apple9')!;
    expect(apple9).toMatchObject({ stock: false, given: false });
    expect(trace.find((t) => t.family === 1011)).toMatchObject({ given: false });
    expect(status().tracing).toBe(true);
    applyProfile('apple7', { force: true });
    expect(status().tracing).toBe(false);
  });

  it('the trace has one row per query: table families in table order, then the sizes, then families the table lacks', () => {
    const stock = probe().devices[0]!;
    const expected = predictPatchedDevice(stock, resolveProfile('apple7'));
    applyProfile('apple7', { force: true, trace: true });
    fixture.query(false);
    fixture.query(false);
    expect(status({ trace: true }).trace).toEqual([
      ...FAMILY_NAMES.map((name) => ({
        selector: 'supportsFamily:',
        family: name,
        calls: 2,
        stock: stock.families[name],
        given: expected.families[name],
      })),
      {
        selector: 'maxThreadgroupMemoryLength',
        family: null,
        calls: 2,
        stock: stock.maxThreadgroupMemoryLength,
        given: expected.maxThreadgroupMemoryLength,
      },
      {
        selector: 'recommendedMaxWorkingSetSize',
        family: null,
        calls: 2,
        stock: stock.recommendedMaxWorkingSetSize,
        given: expected.recommendedMaxWorkingSetSize,
      },
      // Apple11 (1011): the fixture asks one past the table, as llama.cpp scans Apple1 + 20; the sim answers NO.
      { selector: 'supportsFamily:', family: 1011, calls: 2, stock: false, given: false },
    ]);
  });

  it('reports before, after and each changed answer', () => {
    const result = applyProfile('apple7', { force: true });
    expect(result.before!.devices[1]!.families.apple7).toBe(false);
    expect(result.after!.devices[1]!.families.apple7).toBe(true);
    expect(result.changed).toContainEqual({
      device: 1,
      className: AMD,
      field: 'families.apple7',
      from: false,
      to: true,
    });
    expect(result.verification?.ok).toBe(true);
    expect(result.warnings.map((w) => w.code)).toContain('not-paravirtual');
  });

  it('a hook on top of an added method (a class that inherits the query) is a conflict too', () => {
    applyProfile('cua-release', { force: true });
    expect(fixture.installForeignHook(INTEL, 4242)).toBe(true);
    const result = restore();
    expect(result.conflicts).toEqual([{ className: INTEL, selector: 'maxThreadgroupMemoryLength' }]);
    expect(devices()[0]!.maxThreadgroupMemoryLength).toBe(4242);
    fixture.removeForeignHook(INTEL);
    expect(restore().restoredHooks).toEqual([{ className: INTEL, selector: 'maxThreadgroupMemoryLength' }]);
    expect(devices()[0]!.maxThreadgroupMemoryLength).toBe(65536);
  });

  it('with trace off nothing is counted', () => {
    applyProfile('apple7', { force: true, trace: true });
    fixture.query(false);
    const counted = () => status({ trace: true }).trace!.reduce((sum, t) => sum + t.calls, 0);
    const before = counted();
    expect(before).toBeGreaterThan(0);
    applyProfile('apple7', { force: true });
    for (let i = 0; i < 5; i++) fixture.query(true);
    expect(counted()).toBe(before);
  });

  it('a live audit refuses to run while a profile is applied (ERR_PROFILE_ACTIVE)', () => {
    applyProfile('apple7', { force: true });
    expect(() => audit()).toThrow(expect.objectContaining({ code: 'ERR_PROFILE_ACTIVE' }));
    expect(status().profile?.name).toBe('apple7');
  });
});
