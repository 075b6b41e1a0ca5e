// doctor and profile auto on bare metal (the simulated M1 Ultra host, in this process): a candidate that raises
// answers (cua-release) is not installed unless forced, so the probes run once, with stock answers; a masking candidate
// needs no force, and the default (host-family) changes nothing here; no threadgroup size above the device's own limit is dispatched, so auto's verified profile raises nothing
// the M1 Ultra does not already answer, and applies without force.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { doctor } from '../../lib/doctor/index.js';
import { applyProfile, profileForExec, resolveAutoProfile } from '../../lib/select/auto.js';
import { DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import { packageVersion } from '../../lib/device/native.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import { profiles } from '../../lib/patch/profiles.js';
import { CUA_RELEASE_ON_M1_ULTRA } from '../support/apply-helpers.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'm1-ultra-bare-metal';

// The simulated GPU computes everything right and could run 64 KiB of threadgroup memory, but the M1 Ultra reports
// 32768, and on a host that is not a VM no more than that is dispatched; it already answers Apple7 and Metal3.
const VERIFIED = {
  name: 'apple7',
  appleFamilyMax: 1007,
  maxThreadgroupMemoryLength: null,
  recommendedMaxWorkingSetSize: null,
  deviceName: null,
  families: {},
  mode: 'raise',
};
const HOOKS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];

describeSim('on bare metal', () => {
  beforeAll(requireSimBuild);
  beforeEach(() => {
    process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-bare-'));
  });
  afterEach(() => {
    restore();
  });

  it('doctor: a raising candidate is not installed without force; the stock run alone decides', async () => {
    const r = await doctor({ profile: 'cua-release', mmapSize: 1 << 20, cache: false });
    expect({ ...r, devices: r.devices.length }).toEqual({
      schema: 'metal-cap-shim/doctor@1',
      packageVersion: packageVersion(),
      generatedAt: r.generatedAt,
      supported: true,
      reason: null,
      detail: null,
      source: 'simulated',
      snapshot: 'm1-ultra-bare-metal',
      host: probeSnapshot('m1-ultra-bare-metal').host,
      candidateProfile: profiles['cua-release']!.profile,
      // What applying it here would warn of, as applyProfile would say it.
      candidateWarnings: [...CUA_RELEASE_ON_M1_ULTRA],
      replayed: false,
      patchedRun: {
        ran: false,
        why: 'cua-release raises answers and this host is not known to be a virtual machine: pass force (--force) to measure under it too',
      },
      settings: { probes: [...DOCTOR_PROBE_IDS], timeoutMs: 5000, mmapFile: null, mmapSize: 1 << 20, device: null },
      devices: 1,
      restore: null,
      cache: null,
    });
    const d = r.devices[0]!;
    expect(d.probes.map((p) => [p.id, p.status, 'stock' in p, 'patched' in p])).toEqual(
      DOCTOR_PROBE_IDS.map((id) => [id, 'pass', false, false]),
    );
    expect([d.verifiedProfile, d.reported.patched, d.differences]).toEqual([VERIFIED, null, []]);
    const tg = d.probes.find((p) => p.id === 'threadgroup-memory')!;
    expect([tg.provenThreadgroupMemory, tg.failedThreadgroupMemory, tg.detail]).toEqual([
      32768,
      null,
      "32768 bytes proven by 1024 concurrent threadgroups of 256 threads; sizes above 32768 bytes (the device's stock limit) not tried: this host is not known to be a virtual machine, where a threadgroup above the device's own limit is undefined behaviour",
    ]);
  });

  it('doctor with force: measured under the candidate too, then restored', async () => {
    const r = await doctor({ probes: ['bfloat', 'residency-set'], profile: 'cua-release', force: true, cache: false });
    expect(r.patchedRun).toEqual({ ran: true, why: null });
    expect(r.restore).toEqual({
      restoredHooks: HOOKS.map((selector) => ({ className: 'AGXG13DDevice', selector })),
      conflicts: [],
    });
    expect(r.devices[0]!.reported).toEqual({
      stock: { highestAppleFamily: 'apple7', maxThreadgroupMemoryLength: 32768, metal3: true },
      patched: { highestAppleFamily: 'apple9', maxThreadgroupMemoryLength: 65536, metal3: true },
    });
    expect(r.devices[0]!.probes.map((p) => [p.id, p.stock?.status ?? null, p.patched?.status ?? null])).toEqual([
      ['simdgroup-reduction', null, null],
      ['simdgroup-matrix', null, null],
      ['bfloat', 'pass', 'pass'],
      ['threadgroup-memory', null, null],
      ['nocopy-mmap', null, null],
      ['residency-set', 'pass', 'pass'],
      ['heap', null, null],
    ]);
    expect(status().active).toBe(false);
  });

  it('doctor: a custom raising candidate is named as such; a masking one needs no force; the default changes nothing here', async () => {
    expect((await doctor({ probes: ['bfloat'], profile: { appleFamilyMax: 1008 }, cache: false })).patchedRun).toEqual({
      ran: false,
      why: 'the candidate profile raises answers and this host is not known to be a virtual machine: pass force (--force) to measure under it too',
    });
    expect((await doctor({ probes: ['bfloat'], profile: 'mask-apple5', cache: false })).patchedRun).toEqual({
      ran: true,
      why: null,
    });
    // The default, host-family, claims the M1 Ultra's own Apple7, which it already answers: nothing to refuse or run.
    const byDefault = await doctor({ probes: ['bfloat'], cache: false });
    // The report names it bound to this host: the M1 Ultra's Apple7.
    expect([byDefault.candidateProfile, byDefault.candidateWarnings, byDefault.patchedRun]).toEqual([
      { ...profiles['host-family']!.profile, appleFamilyMax: 1007 },
      [{ code: 'no-change', message: 'the profile changes no answer on this device' }],
      { ran: false, why: 'host-family changes no answer on this machine' },
    ]);
  });

  it('doctor: only nocopy-mmap asked, so nothing runs twice', async () => {
    const r = await doctor({ probes: ['nocopy-mmap'], mmapSize: 1 << 20, force: true, cache: false });
    expect([r.patchedRun, r.restore]).toEqual([{ ran: false, why: 'no capability probe was asked' }, null]);
  });

  it('auto: the verified profile raises nothing the device does not answer, so it applies without force', () => {
    const applied = applyProfile('auto', { strict: true });
    expect([applied.applied, applied.profile, applied.auto?.from]).toEqual([true, VERIFIED, 'doctor']);
    expect(status().profile).toEqual(VERIFIED);
  });

  it('doctor with force still dispatches no threadgroup size above the stock limit here (force only lets the candidate be installed for the patched run)', async () => {
    const r = await doctor({ probes: ['threadgroup-memory'], profile: 'cua-release', force: true, cache: false });
    const tg = r.devices[0]!.probes.find((p) => p.id === 'threadgroup-memory')!;
    expect([
      r.patchedRun.ran,
      tg.stock?.provenThreadgroupMemory,
      tg.patched?.provenThreadgroupMemory,
      tg.failedThreadgroupMemory,
    ]).toEqual([true, 32768, 32768, null]);
  });

  it('resolveAutoProfile and exec’s auto give the verified profile here too; applying it is decided later', () => {
    expect(resolveAutoProfile().profile).toEqual(VERIFIED);
    expect(profileForExec('auto', {}, true).profile).toEqual(VERIFIED);
    expect(status().active).toBe(false);
  });
});
