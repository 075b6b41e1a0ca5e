// doctor when the candidate profile cannot be installed in its probe runner: one device class lacks a query, so
// installing the hooks fails (reason hook-failed) and applyProfile installs none. doctor reports the stock run, says
// why there was no patched run, and leaves nothing behind. (test/doctor/index.verify-failed.test.ts: installed, then
// taken out.)
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { status } from '../../lib/patch/apply.js';
import { doctor } from '../../lib/doctor/index.js';
import { describeSim, requireSimBuild, root } from '../support/helpers.js';
import { simulationJson } from '../sim-metal/simulation.js';

const temp = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-hook-failed-'));
const snapshot = JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
snapshot.id = 'doctor-lacks';
const broken = structuredClone(snapshot.devices[0]);
broken.className = 'SimBrokenDevice';
broken.simulation = { methodsOnConcreteClass: false, lacks: 'recommendedMaxWorkingSetSize' };
delete broken.doctor;
snapshot.devices.push(broken);
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = path.join(temp, 'doctor-lacks.json');
process.env.XDG_CACHE_HOME = temp;
writeFileSync(process.env.METAL_CAP_SHIM_SIM_SNAPSHOT, simulationJson(snapshot));

describeSim('a candidate profile that cannot be installed', () => {
  beforeAll(requireSimBuild);

  it('no patched run, and why; the stock run decides; no hook is left and nothing is restored', async () => {
    const r = await doctor({ probes: ['bfloat', 'residency-set'], profile: 'apple7', cache: false });
    expect(r.patchedRun.ran).toBe(false);
    expect(r.patchedRun.why).toMatch(
      /^apple7 was not applied \(hook-failed: .*SimBrokenDevice recommendedMaxWorkingSetSize/,
    );
    expect(r.restore).toBeNull();
    expect(
      r.devices.map((d) => [d.index, d.reported.patched, d.probes.map((p) => [p.id, p.status, 'patched' in p])]),
    ).toEqual(
      [0, 1].map((index) => [
        index,
        null,
        [
          ['simdgroup-reduction', 'skipped', false],
          ['simdgroup-matrix', 'skipped', false],
          ['bfloat', 'pass', false],
          ['threadgroup-memory', 'skipped', false],
          ['nocopy-mmap', 'skipped', false],
          ['residency-set', index === 0 ? 'fail' : 'pass', false],
          ['heap', 'skipped', false],
        ],
      ]),
    );
    expect(status()).toMatchObject({ active: false, hooks: [] });
  });

  it('a custom candidate is named as such', async () => {
    const r = await doctor({ probes: ['bfloat'], profile: { appleFamilyMax: 1008 }, cache: false });
    expect(r.patchedRun.why).toMatch(/^the candidate profile was not applied \(hook-failed: /);
  });
});
