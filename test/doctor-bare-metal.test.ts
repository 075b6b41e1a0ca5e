// doctor and profile auto on bare metal (the simulated M1 Ultra host, in this process): a candidate that raises
// answers is not installed unless forced, so the probes run once, with stock answers; a masking candidate needs no
// force; auto's verified profile raises threadgroup memory here, so it is refused like any raising profile.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { restore, status } from '../lib/apply.js';
import { doctor } from '../lib/doctor.js';
import { applyProfile, profileForExec, resolveAutoProfile } from '../lib/doctor/auto.js';
import { DOCTOR_PROBE_IDS } from '../lib/doctor/probes.js';
import { RefusedError } from '../lib/errors.js';
import { packageVersion } from '../lib/native.js';
import { probeSnapshot } from '../lib/probe.js';
import { profiles } from '../lib/profiles.js';
import { describeSim, requireSimBuild } from './helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'm1-ultra-bare-metal';

// The simulated GPU computes everything right and runs 64 KiB of threadgroup memory; the M1 Ultra reports 32768 and
// already answers Apple7 and Metal3.
const VERIFIED = { name: null, appleFamilyMax: 1007, maxThreadgroupMemoryLength: 65536, recommendedMaxWorkingSetSize: null, deviceName: null, families: {}, mode: 'raise' };
const HOOKS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];

describeSim('on bare metal', () => {
  beforeAll(requireSimBuild);
  beforeEach(() => {
    process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-bare-'));
  });
  afterEach(() => {
    restore();
  });

  it('doctor: a raising candidate is not installed without force; the stock run alone decides', () => {
    const r = doctor({ mmapSize: 1 << 20, cache: false });
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
    expect(d.probes.map((p) => [p.id, p.status, 'stock' in p, 'patched' in p])).toEqual(DOCTOR_PROBE_IDS.map((id) => [id, 'pass', false, false]));
    expect([d.verifiedProfile, d.reported.patched, d.differences]).toEqual([VERIFIED, null, []]);
  });

  it('doctor with force: measured under the candidate too, then restored', () => {
    const r = doctor({ probes: ['bfloat', 'residency-set'], force: true, cache: false });
    expect(r.patchedRun).toEqual({ ran: true, why: null });
    expect(r.restore).toEqual({ restoredHooks: HOOKS.map((selector) => ({ className: 'AGXG13DDevice', selector })), conflicts: [] });
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

  it('doctor: a custom raising candidate is named as such; a masking one needs no force', () => {
    expect(doctor({ probes: ['bfloat'], profile: { appleFamilyMax: 1008 }, cache: false }).patchedRun).toEqual({
      ran: false,
      why: 'the candidate profile raises answers and this host is not known to be a virtual machine: pass force (--force) to measure under it too',
    });
    expect(doctor({ probes: ['bfloat'], profile: 'mask-apple5', cache: false }).patchedRun).toEqual({ ran: true, why: null });
  });

  it('doctor: only nocopy-mmap asked, so nothing runs twice', () => {
    const r = doctor({ probes: ['nocopy-mmap'], mmapSize: 1 << 20, force: true, cache: false });
    expect([r.patchedRun, r.restore]).toEqual([{ ran: false, why: 'no capability probe was asked' }, null]);
  });

  it('auto: the verified profile raises threadgroup memory, so it is refused (strict: RefusedError); force applies it', () => {
    const refused = applyProfile('auto');
    expect([refused.applied, refused.applied ? null : refused.reason, refused.profile, refused.auto?.from]).toEqual([false, 'refused-bare-metal', VERIFIED, 'doctor']);
    expect(() => applyProfile('auto', { strict: true })).toThrow(RefusedError);
    const forced = applyProfile('auto', { force: true });
    expect([forced.applied, forced.profile, forced.auto?.from]).toEqual([true, VERIFIED, 'cache']);
    expect(status().profile).toEqual(VERIFIED);
  });

  it('resolveAutoProfile and exec’s auto give the verified profile here too; applying it is decided later', () => {
    expect(resolveAutoProfile().profile).toEqual(VERIFIED);
    expect(profileForExec('auto', {}, true)).toEqual(VERIFIED);
    expect(status().active).toBe(false);
  });
});
