// doctor when the candidate profile is installed in its probe runner but does not verify: the device's threadgroup
// answer drifts after two reads, so applyProfile takes the patch out again and reports verification-failed. doctor
// reports the stock run, says why there was no patched run, and leaves nothing behind.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { status } from '../../lib/patch/apply.js';
import { doctor } from '../../lib/doctor/index.js';
import { describeSim, requireSimBuild, root } from '../support/helpers.js';
import { simulationJson } from '../sim-metal/simulation.js';

const temp = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-verify-failed-'));
const snapshot = JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
snapshot.id = 'doctor-drift';
snapshot.devices[0].simulation = { methodsOnConcreteClass: false, driftAfter: 2 };
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = path.join(temp, 'doctor-drift.json');
process.env.XDG_CACHE_HOME = temp;
writeFileSync(process.env.METAL_CAP_SHIM_SIM_SNAPSHOT, simulationJson(snapshot));

describeSim('a candidate profile that does not verify', () => {
  beforeAll(requireSimBuild);

  // The drift lasts, so only the first apply in a process fails (each doctor() call has a fresh runner): a custom
  // candidate (test/doctor/index.faults.test.ts has a named one through the CLI).
  it('no patched run, and why; nothing left to restore', async () => {
    const r = await doctor({ probes: ['bfloat', 'residency-set'], profile: { appleFamilyMax: 1009 }, cache: false });
    expect(r.patchedRun).toEqual({
      ran: false,
      why: 'the candidate profile was not applied (verification-failed: device 0 (AppleParavirtDevice) answered maxThreadgroupMemoryLength=32784, expected 32768; the patch was taken out)',
    });
    expect(r.restore).toBeNull();
    const d = r.devices[0]!;
    expect([d.reported.patched, d.probes.map((p) => [p.id, p.status, 'patched' in p])]).toEqual([
      null,
      [
        ['simdgroup-reduction', 'skipped', false],
        ['simdgroup-matrix', 'skipped', false],
        ['bfloat', 'pass', false],
        ['threadgroup-memory', 'skipped', false],
        ['nocopy-mmap', 'skipped', false],
        ['residency-set', 'fail', false],
        ['heap', 'skipped', false],
      ],
    ]);
    expect(status()).toMatchObject({ active: false, hooks: [] });
  });
});
