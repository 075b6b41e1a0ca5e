// The simulation's control (MTLSimLoadSnapshot, through build/test/sim_control.node and test/support/simulation.ts):
// another snapshot in a running process answers exactly as a process started with it; what the earlier one made
// stays usable; a patch in place, a bad selector and a class that cannot change are refused.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probe } from '../../lib/device/probe.js';
import { listSnapshots, loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { SIM_SNAPSHOT_ENV } from '../../lib/device/native.js';
import { caught, describeSim, dist, loadFixture, requireSimBuild, root, runNode } from '../support/helpers.js';
import { editedSnapshot } from '../support/apply-helpers.js';
import { doctorOptions, NO_RESIDENCY_API, nativeBinding, removeTempDirs } from '../support/doctor-helpers.js';
import { loadSimulation, simControl, useSimulation } from '../support/simulation.js';

const GUEST = 'vz-guest-m1-ultra-tahoe-stock';
const BARE_METAL = 'm1-ultra-bare-metal';
const TWO_GPUS = 'macbookpro16-intel-amd-two-gpus';

/** probe() as a report from the recorded snapshot would be (the simulation's source aside). */
const liveAsRecorded = (allDevices: boolean) => ({ ...probe({ allDevices }), source: 'snapshot' });

/** What a fresh process started with `selector` in the environment throws from probe(): class, code and message. */
function envRefusal(selector: string): unknown {
  const r = runNode(
    `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
     try { m.probe(); console.log('null'); } catch (e) { console.log(JSON.stringify({ name: e.constructor.name, code: e.code, message: e.message })); }`,
    { [SIM_SNAPSHOT_ENV]: selector },
  );
  return JSON.parse(r.stdout) as unknown;
}

describeSim('the simulation control: another snapshot in a running process', () => {
  beforeAll(requireSimBuild);
  afterAll(() => {
    loadSimulation('');
    removeTempDirs();
  });

  it('each bundled snapshot, loaded in turn, answers exactly as recorded, the first one again at the end', () => {
    const names = [...listSnapshots(), listSnapshots()[0]!];
    const seen = names.map((name) => {
      loadSimulation(name);
      return [liveAsRecorded(false), liveAsRecorded(true), process.env[SIM_SNAPSHOT_ENV]];
    });
    expect(seen).toEqual(
      names.map((name) => [
        reportFromSnapshot(loadSnapshot(name), { allDevices: false }),
        reportFromSnapshot(loadSnapshot(name), { allDevices: true }),
        name,
      ]),
    );
  });

  it("'' leaves no device, as a process started with an empty selector has none", () => {
    loadSimulation(GUEST);
    loadSimulation('');
    const inProcess = probe();
    const started = JSON.parse(
      runNode(
        `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))}); console.log(JSON.stringify(m.probe()));`,
        {
          [SIM_SNAPSHOT_ENV]: '',
        },
      ).stdout,
    ) as unknown;
    expect(inProcess).toMatchObject({ supported: false, reason: 'no-device', devices: [] });
    expect(inProcess).toEqual(started);
  });

  it.each([
    ['an unknown name', 'no-such-snapshot'],
    ['a file that is no snapshot', path.join(root, 'package.json')],
  ])('%s is refused with the error the environment gives, and the snapshot stays', (_, selector) => {
    loadSimulation(TWO_GPUS);
    const loads = simControl().loads();
    expect(caught(() => loadSimulation(selector))).toEqual(envRefusal(selector));
    expect([process.env[SIM_SNAPSHOT_ENV], simControl().loads(), probe().snapshot]).toEqual([
      TWO_GPUS,
      loads,
      TWO_GPUS,
    ]);
  });

  it('refuses while a patch is in place, naming the hooks; after restore() it switches, and restore() then compares with the new stock answers', () => {
    loadSimulation(GUEST);
    expect(applyProfile('cua-release')).toMatchObject({ applied: true });
    const loads = simControl().loads();
    expect(caught(() => loadSimulation(BARE_METAL))).toEqual({
      name: 'Error',
      code: undefined,
      message:
        "cannot switch the simulation to 'm1-ultra-bare-metal' while a patch is in place (-[AppleParavirtDevice supportsFamily:], -[AppleParavirtDevice maxThreadgroupMemoryLength], -[AppleParavirtDevice recommendedMaxWorkingSetSize]): call restore() first",
    });
    expect([process.env[SIM_SNAPSHOT_ENV], simControl().loads(), status().active]).toEqual([GUEST, loads, true]);
    expect(restore()).toMatchObject({ restored: true, verification: { ok: true } });

    loadSimulation(TWO_GPUS);
    const applied = applyProfile('apple7', { force: true });
    expect(applied).toMatchObject({ applied: true });
    // The baseline restore() checks against is the two-GPU Mac's, taken by this apply, not the guest's.
    expect(restore()).toMatchObject({
      restored: true,
      verification: { ok: true, mismatches: [] },
    });
    expect(probe({ allDevices: true }).devices.map((d) => d.className)).toEqual([
      'MTLIGAccelDevice',
      'AMDRadeonX6000_AMDNavi14GraphicsDevice',
    ]);
  });

  it('a load sets the device-call counts back to zero and counts itself', () => {
    const fixture = loadFixture();
    loadSimulation(GUEST);
    const loads = simControl().loads();
    probe({ allDevices: true }); // both calls (the default device marks its entry)
    probe(); // the default device alone, numbered by its place in MTLCopyAllDevices(): both calls again
    const before = fixture.deviceCalls();
    loadSimulation(BARE_METAL);
    expect([before, fixture.deviceCalls(), simControl().loads()]).toEqual([
      { MTLCreateSystemDefaultDevice: 2, MTLCopyAllDevices: 2 },
      { MTLCreateSystemDefaultDevice: 0, MTLCopyAllDevices: 0 },
      loads + 1,
    ]);
  });

  it('a device of an earlier snapshot keeps answering as that device', () => {
    const fixture = loadFixture();
    // Record 0 is the first device this process loaded: the first bundled snapshot's default device.
    const first = loadSnapshot(listSnapshots()[0]!).devices[0]!;
    loadSimulation(TWO_GPUS);
    expect(fixture.strayDevice('SimControlStrayDevice', 0)).toMatchObject({
      className: 'SimControlStrayDevice',
      name: first.name,
      maxThreadgroupMemoryLength: first.maxThreadgroupMemoryLength,
    });
  });

  describe('a class serves later snapshots while its layout is the same', () => {
    const editedGuest = (id: string, layout: { methodsOnConcreteClass: boolean }) =>
      editedSnapshot(GUEST, id, (s) => {
        s.devices[0]!.simulation = layout;
      });

    it('a device of another layout under a class name in use is refused, and no device is loaded', () => {
      loadSimulation(GUEST);
      const own = editedGuest('guest-own-queries', { methodsOnConcreteClass: true });
      expect(caught(() => loadSimulation(own))).toEqual({
        name: 'Error',
        code: undefined,
        message: `the simulation loaded no device from '${own}': class 'AppleParavirtDevice' was made for an earlier snapshot as a subclass of _MTLDevice inheriting its queries, and this one needs a subclass of _MTLDevice with queries of its own: a class cannot change in a running process; give the device another className`,
      });
      expect(probe()).toMatchObject({ supported: false, reason: 'no-device' });
      // The same layout spelt out is the same class.
      loadSimulation(editedGuest('guest-inherited', { methodsOnConcreteClass: false }));
      expect(probe().devices.map((d) => d.className)).toEqual(['AppleParavirtDevice']);
    });

    it('what a class has for one device only (architecture, heaps, residency sets) is answered per device', () => {
      loadSimulation(BARE_METAL);
      const noArchitecture = editedSnapshot(BARE_METAL, 'bare-metal-no-architecture', (s) => {
        s.devices[0]!.architecture = null;
      });
      expect(probe().devices[0]!.architecture).toBe('applegpu_g13d');
      loadSimulation(noArchitecture);
      expect(probe().devices.map((d) => [d.className, d.architecture])).toEqual([['AGXG13DDevice', null]]);
      loadSimulation(BARE_METAL);
      expect(probe().devices.map((d) => [d.className, d.architecture])).toEqual([['AGXG13DDevice', 'applegpu_g13d']]);
    });

    it('residency sets: the macOS 14 runner has none, though its class got them for the macOS 26 guest', () => {
      const residency = () =>
        nativeBinding()
          .doctor(doctorOptions(0, { probes: ['residency-set'] }))
          .outcomes.map((o) => [o.status, o.detail]);
      loadSimulation(GUEST);
      const guest = residency();
      loadSimulation('github-macos-14-arm64-runner');
      expect([guest, residency()]).toEqual([
        // The guest's recorded failure: the call was made, so the API is there.
        [['fail', expect.stringMatching(/^newResidencySetWithDescriptor:error: failed: /)]],
        [[NO_RESIDENCY_API.status, NO_RESIDENCY_API.detail]],
      ]);
    });
  });
});

describeSim('useSimulation: a describe block on its own snapshot', () => {
  beforeAll(() => loadSimulation(GUEST));

  describe('inside', () => {
    useSimulation(TWO_GPUS);
    it('the block’s snapshot is loaded and in the environment', () => {
      expect([probe().snapshot, process.env[SIM_SNAPSHOT_ENV]]).toEqual([TWO_GPUS, TWO_GPUS]);
    });
  });

  it('after the block, the snapshot before it is back', () => {
    expect([probe().snapshot, process.env[SIM_SNAPSHOT_ENV]]).toEqual([GUEST, GUEST]);
  });
});
