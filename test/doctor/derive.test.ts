// doctor's decisions from raw outcomes: judgements, the verified profile, recommendations. These are pure functions
// of outcomes and a device's stock answers; the suites that run the native probes are test/doctor/index.test.ts.
import { describe, expect, it } from 'vitest';
import { assessDevice, deriveVerifiedProfile, leastProfile, recommendationsFor } from '../../lib/doctor/derive.js';
import { differencesOf, faultsOf, judgeProbe, runFrom, worseStatus } from '../../lib/doctor/judge.js';
import { checkDoctorOptions } from '../../lib/doctor/options.js';
import {
  DOCTOR_PROBE_IDS,
  JUDGEMENTS,
  type DoctorProbeId,
  type DoctorStatus,
  type RecordedStatus,
} from '../../lib/doctor/probes.js';
import { judgeDevice } from '../../lib/doctor/run.js';
import type { DoctorProbe, DoctorRun } from '../../lib/doctor/types.js';
import { predictPatchedDevice, profiles, resolveProfile, type Profile } from '../../lib/patch/profiles.js';
import type { NativeProbeOutcome } from '../../types/binding.js';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import { chipFromBrand } from '../../lib/device/chips.js';
import type { HostInfo } from '../../lib/device/types.js';

const vz = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock'));
const guest = vz.devices[0]!;
const bare = reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal')).devices[0]!;

function run(status: RecordedStatus, extra: Partial<DoctorRun> = {}): DoctorRun {
  return {
    status,
    detail: `${status} detail`,
    ms: 1,
    compileMs: 0,
    provenThreadgroupMemory: null,
    acceptedThreadgroupMemory: null,
    failedThreadgroupMemory: null,
    bufferLength: null,
    maxAbsError: null,
    ...extra,
  };
}

/** Every probe with one run; `statuses` overrides the default `pass`, `tg` is the proven threadgroup size. */
function probes(statuses: Partial<Record<DoctorProbeId, RecordedStatus>>, tg: number | null = 32768): DoctorProbe[] {
  return DOCTOR_PROBE_IDS.map((id) => {
    const status = statuses[id] ?? 'pass';
    return judgeProbe(
      id,
      run(status, id === 'threadgroup-memory' ? { provenThreadgroupMemory: status === 'pass' ? tg : null } : {}),
    );
  });
}

/** The name line of a verified profile derived without host facts. */
const NO_CHIP = "name left as the device reports it: the host's chip is unknown (no brand string)";

const profile = (spec: Partial<Profile>): Profile => ({
  name: null,
  appleFamilyMax: null,
  maxThreadgroupMemoryLength: null,
  recommendedMaxWorkingSetSize: null,
  deviceName: null,
  families: {},
  mode: 'raise',
  ...spec,
});

describe('every status has its judgement', () => {
  it.each([
    ['pass', 'proven'],
    ['wrong-result', 'faulty'],
    ['fail', 'faulty'],
    ['timeout', 'faulty'],
    ['unsupported', 'absent'],
    ['skipped', 'unknown'],
    ['error', 'unknown'],
    ['not-recorded', 'unknown'],
    ['page-fault', 'faulty'],
    ['access-revoked', 'unknown'],
    ['not-permitted', 'unknown'],
    ['out-of-memory', 'unknown'],
    ['device-removed', 'unknown'],
    ['aborted', 'faulty'],
    ['interrupted', 'unknown'],
  ] as const)('%s → %s', (status, judgement) => {
    expect(JUDGEMENTS[status].judgement).toBe(judgement);
    expect(judgeProbe('bfloat', run(status))).toEqual({ id: 'bfloat', ...run(status), judgement });
  });

  it('the table covers exactly the statuses', () => {
    expect(Object.keys(JUDGEMENTS).sort()).toEqual(
      [
        'error',
        'fail',
        'not-recorded',
        'pass',
        'skipped',
        'timeout',
        'unsupported',
        'wrong-result',
        'page-fault',
        'access-revoked',
        'not-permitted',
        'out-of-memory',
        'device-removed',
        'aborted',
        'interrupted',
      ].sort(),
    );
  });
});

describe('a probe run twice (stock, then under the candidate profile)', () => {
  it('equal runs: that status, the stock detail, summed time, both runs kept', () => {
    const stock = run('pass', { ms: 2, provenThreadgroupMemory: 65536, failedThreadgroupMemory: null });
    const patched = run('pass', { ms: 3, provenThreadgroupMemory: 32768, failedThreadgroupMemory: 40960 });
    expect(judgeProbe('threadgroup-memory', stock, patched, 'cua-release')).toEqual({
      id: 'threadgroup-memory',
      status: 'pass',
      detail: 'pass detail',
      ms: 5,
      compileMs: 0,
      provenThreadgroupMemory: 32768,
      acceptedThreadgroupMemory: null,
      failedThreadgroupMemory: 40960,
      bufferLength: null,
      maxAbsError: null,
      judgement: 'proven',
      stock,
      patched,
    });
  });

  it('different runs: the worse status wins and the detail names both', () => {
    const stock = run('pass', { maxAbsError: 0.001 });
    const patched = run('wrong-result', { maxAbsError: 3 });
    expect(judgeProbe('simdgroup-matrix', stock, patched, 'cua-release')).toEqual({
      id: 'simdgroup-matrix',
      status: 'wrong-result',
      detail: 'stock: pass (pass detail); under cua-release: wrong-result (wrong-result detail)',
      ms: 2,
      compileMs: 0,
      provenThreadgroupMemory: null,
      acceptedThreadgroupMemory: null,
      failedThreadgroupMemory: null,
      bufferLength: null,
      maxAbsError: 3,
      judgement: 'faulty',
      stock,
      patched,
    });
  });

  it('a size is proven only as far as both runs proved it; an unmeasured time stays unknown', () => {
    const p = judgeProbe(
      'threadgroup-memory',
      run('pass', { provenThreadgroupMemory: 65536 }),
      run('skipped', { ms: null }),
    );
    expect([p.status, p.provenThreadgroupMemory, p.ms, p.judgement]).toEqual(['skipped', null, null, 'unknown']);
  });

  it('severity order: a fault beats an absence, an absence beats not knowing, anything beats pass', () => {
    expect(worseStatus('pass', 'timeout')).toBe('timeout');
    expect(worseStatus('fail', 'wrong-result')).toBe('wrong-result');
    expect(worseStatus('unsupported', 'skipped')).toBe('unsupported');
    expect(worseStatus('skipped', 'pass')).toBe('skipped');
    expect(worseStatus('error', 'fail')).toBe('fail');
  });

  it('differences and faults list the probes that need attention', () => {
    const list = [
      judgeProbe('simdgroup-matrix', run('pass'), run('wrong-result')),
      judgeProbe('bfloat', run('pass'), run('pass')),
      judgeProbe('nocopy-mmap', run('timeout')),
      judgeProbe('residency-set', run('unsupported'), run('unsupported')),
    ];
    expect(differencesOf(list)).toEqual([
      { id: 'simdgroup-matrix', stock: 'pass', patched: 'wrong-result', measured: [] },
    ]);
    expect(faultsOf(list)).toEqual(['simdgroup-matrix: wrong-result', 'nocopy-mmap: timeout']);
  });

  it('differences: a proven or failing threadgroup size that differs counts, also when the statuses are equal', () => {
    const tg = (proven: number | null, failed: number | null, status: RecordedStatus = 'pass') =>
      run(status, { provenThreadgroupMemory: proven, failedThreadgroupMemory: failed });
    expect(differencesOf([judgeProbe('threadgroup-memory', tg(32768, 40960), tg(65536, null))])).toEqual([
      {
        id: 'threadgroup-memory',
        stock: 'pass',
        patched: 'pass',
        measured: [
          { field: 'provenThreadgroupMemory', stock: 32768, patched: 65536 },
          { field: 'failedThreadgroupMemory', stock: 40960, patched: null },
        ],
      },
    ]);
    expect(differencesOf([judgeProbe('threadgroup-memory', tg(32768, 40960), tg(32768, 49152))])).toEqual([
      {
        id: 'threadgroup-memory',
        stock: 'pass',
        patched: 'pass',
        measured: [{ field: 'failedThreadgroupMemory', stock: 40960, patched: 49152 }],
      },
    ]);
    expect(differencesOf([judgeProbe('threadgroup-memory', tg(65536, null), tg(null, 16384, 'fail'))])).toEqual([
      {
        id: 'threadgroup-memory',
        stock: 'pass',
        patched: 'fail',
        measured: [
          { field: 'provenThreadgroupMemory', stock: 65536, patched: null },
          { field: 'failedThreadgroupMemory', stock: null, patched: 16384 },
        ],
      },
    ]);
  });

  it('differences: none when status and sizes agree, whatever the times and error bounds say; none for one run', () => {
    expect(
      differencesOf([
        judgeProbe(
          'threadgroup-memory',
          run('pass', { provenThreadgroupMemory: 32768, failedThreadgroupMemory: 40960, ms: 1 }),
          run('pass', { provenThreadgroupMemory: 32768, failedThreadgroupMemory: 40960, ms: 9 }),
        ),
        judgeProbe('simdgroup-matrix', run('pass', { maxAbsError: 0.001 }), run('pass', { maxAbsError: 0.002 })),
        judgeProbe('nocopy-mmap', run('pass', { bufferLength: 4096 })),
        judgeProbe('threadgroup-memory', run('pass', { provenThreadgroupMemory: 65536 })),
      ]),
    ).toEqual([]);
  });
});

describe('the verified profile: the least that turns on what was proven', () => {
  // Reduction (r), matrix (m), bfloat (b) proven or not, with a working residency set and 32768 bytes proven.
  it.each([
    ['r m b', {}, profile({ appleFamilyMax: 1007, families: { metal3: true } })],
    ['r m', { bfloat: 'fail' }, profile({ name: 'apple7', appleFamilyMax: 1007 })],
    ['r b', { 'simdgroup-matrix': 'wrong-result' }, profile({ appleFamilyMax: 1006, families: { metal3: true } })],
    ['r', { 'simdgroup-matrix': 'wrong-result', bfloat: 'unsupported' }, profile({})],
    ['m b', { 'simdgroup-reduction': 'timeout' }, profile({ appleFamilyMax: 1006 })],
    ['m', { 'simdgroup-reduction': 'timeout', bfloat: 'fail' }, profile({})],
    ['b', { 'simdgroup-reduction': 'error', 'simdgroup-matrix': 'skipped' }, profile({ appleFamilyMax: 1006 })],
    ['nothing', { 'simdgroup-reduction': 'fail', 'simdgroup-matrix': 'fail', bfloat: 'fail' }, profile({})],
  ] as const)('%s proven', (_, statuses, expected) => {
    const derived = deriveVerifiedProfile(guest, probes(statuses)).profile;
    expect(derived).toEqual(expected);
    expect(resolveProfile(derived)).toEqual(expected);
  });

  it('without a working residency set, Metal3 is never advertised', () => {
    for (const status of ['fail', 'unsupported', 'timeout', 'wrong-result', 'not-recorded'] as const) {
      expect(deriveVerifiedProfile(guest, probes({ 'residency-set': status })).profile).toEqual(
        profile({ name: 'apple7', appleFamilyMax: 1007 }),
      );
    }
  });

  it('each choice is explained in one line', () => {
    expect(deriveVerifiedProfile(guest, probes({ 'residency-set': 'fail' }, 65536), undefined, true)).toEqual({
      profile: profile({ name: 'apple7', appleFamilyMax: 1007 }),
      reasons: [
        'Apple7: SIMD-group reduction and matrix computed right, llama.cpp’s gates for both; bfloat proven too (Apple7 includes Apple6, llama.cpp’s bfloat rule)',
        'threadgroup memory left at the reported 32768 bytes: 65536 bytes are recorded as proven, but no Apple GPU has more than 32768, so no more is claimed',
        'Metal3 not advertised: no residency set was proven to work (residency-set fail)',
        NO_CHIP,
      ],
    });
    expect(
      deriveVerifiedProfile(guest, probes({ bfloat: 'unsupported', 'residency-set': 'pass' }, 16384)).reasons,
    ).toEqual([
      'Apple7: SIMD-group reduction and matrix computed right, llama.cpp’s gates for both; Apple7 includes Apple6, which also turns on llama.cpp’s bfloat, not proven here (bfloat unsupported): see the recommendations',
      'threadgroup memory left at the reported 32768 bytes, though only 16384 were proven: a kernel that asks for more may fail',
      'Metal3 not advertised: a residency set worked, but Metal3 also turns on llama.cpp’s SIMD-group reduction and bfloat (simdgroup-reduction pass, bfloat unsupported)',
      NO_CHIP,
    ]);
    expect(
      deriveVerifiedProfile(guest, probes({ 'simdgroup-matrix': 'fail', 'threadgroup-memory': 'timeout' })).reasons,
    ).toEqual([
      'Apple6: bfloat computed right (llama.cpp’s bfloat rule); not Apple7, which would also claim SIMD-group reduction and matrix (simdgroup-reduction pass, simdgroup-matrix fail)',
      'threadgroup memory left as reported: no size proven (threadgroup-memory timeout)',
      'Metal3: a residency set was created and used, and the reduction and bfloat paths Metal3 turns on in llama.cpp were proven',
      NO_CHIP,
    ]);
  });

  it('threadgroup memory after a patched run: the proven size beside what the device reports stock and under the candidate', () => {
    const reasonFor = (size: number | null, reported: number | null, candidate = 'cua-release') =>
      deriveVerifiedProfile(guest, probes({ 'threadgroup-memory': size === null ? 'timeout' : 'pass' }, size), {
        candidate,
        reported,
      }).reasons[1];
    expect([
      reasonFor(65536, 65536),
      reasonFor(16384, 65536),
      reasonFor(32768, 32768, 'apple7'),
      reasonFor(null, null, 'my profile'),
    ]).toEqual([
      'threadgroup memory left at the reported 32768 bytes: 65536 bytes are recorded as proven, but no Apple GPU has more than 32768, so no more is claimed; the device reports 32768 stock, 65536 under cua-release',
      'threadgroup memory left at the reported 32768 bytes, though only 16384 were proven: a kernel that asks for more may fail; the device reports 32768 stock, 65536 under cua-release',
      'threadgroup memory left at the reported 32768 bytes, which were proven; the device reports 32768 stock, 32768 under apple7',
      'threadgroup memory left as reported: no size proven (threadgroup-memory timeout); the device reports 32768 stock, nothing under my profile',
    ]);
    // A device that reports no size (an OS that cannot answer): nothing stock, raised to what was proven.
    expect(
      deriveVerifiedProfile({ ...guest, maxThreadgroupMemoryLength: null }, probes({}, 16384), {
        candidate: 'cua-release',
        reported: 65536,
      }).reasons[1],
    ).toBe(
      'threadgroup memory raised to the proven 16384 bytes; the device reports nothing stock, 65536 under cua-release',
    );
    const patched = { ...guest, maxThreadgroupMemoryLength: 65536 };
    // assessDevice passes force on, and the candidate and its answer: force claims no more than 32768, with or without
    // a patched run.
    const assessed = (candidate?: string) =>
      assessDevice(guest, patched, probes({}, 49152), vz.host, candidate, true).verifiedProfileReasons[1];
    expect([assessed('cua-release'), assessed()]).toEqual([
      'threadgroup memory left at the reported 32768 bytes: 49152 bytes are recorded as proven, but no Apple GPU has more than 32768, so no more is claimed; the device reports 32768 stock, 65536 under cua-release',
      'threadgroup memory left at the reported 32768 bytes: 49152 bytes are recorded as proven, but no Apple GPU has more than 32768, so no more is claimed; the device reports 32768 stock, 65536 under the candidate profile',
    ]);
    expect(assessDevice(guest, null, probes({}, 49152), vz.host, 'cua-release', true).verifiedProfileReasons[1]).toBe(
      'threadgroup memory left at the reported 32768 bytes: 49152 bytes are recorded as proven, but no Apple GPU has more than 32768, so no more is claimed',
    );
    expect(
      [true, false].map(
        (force) =>
          assessDevice(guest, null, probes({}, 49152), vz.host, 'cua-release', force).verifiedProfile
            .maxThreadgroupMemoryLength,
      ),
    ).toEqual([null, null]);
  });

  it('threadgroup memory: raised only to the proven size, never above, never lowered; never above 32768, force or not', () => {
    const tg = (size: number | null, force = false) =>
      deriveVerifiedProfile(guest, probes({ 'residency-set': 'fail' }, size), undefined, force).profile
        .maxThreadgroupMemoryLength;
    expect([tg(null), tg(16384), tg(32768), tg(40960), tg(65536)]).toEqual([null, null, null, null, null]);
    expect([
      tg(null, true),
      tg(16384, true),
      tg(32768, true),
      tg(32784, true),
      tg(40960, true),
      tg(65536, true),
    ]).toEqual([null, null, null, null, null, null]);
    // A device that reports less: raised to what was proven, and to 32768 at most, with or without force.
    const small = { ...guest, maxThreadgroupMemoryLength: 16384 };
    const raised = (size: number) => deriveVerifiedProfile(small, probes({}, size)).profile.maxThreadgroupMemoryLength;
    expect([raised(24576), raised(32768), raised(32784), raised(65536)]).toEqual([24576, 32768, 32768, 32768]);
    expect(
      [24576, 32768, 32784, 65536].map(
        (size) => deriveVerifiedProfile(small, probes({}, size), undefined, true).profile.maxThreadgroupMemoryLength,
      ),
    ).toEqual([24576, 32768, 32768, 32768]);
    expect(deriveVerifiedProfile(small, probes({}, 65536)).reasons[1]).toBe(
      'threadgroup memory raised to 32768 bytes: 65536 bytes are recorded as proven, but no Apple GPU has more than 32768, so no more is claimed (the device reports 16384)',
    );
    // Exactly 32768 proven is no cap: raised to what was proven.
    expect(deriveVerifiedProfile(small, probes({}, 32768)).reasons[1]).toBe(
      'threadgroup memory raised to the proven 32768 bytes (the device reports 16384)',
    );
    // A device that reports no size: raised, to 32768 at most.
    expect(
      deriveVerifiedProfile({ ...guest, maxThreadgroupMemoryLength: null }, probes({}, 65536)).profile
        .maxThreadgroupMemoryLength,
    ).toBe(32768);
  });

  it('a device that already answers what was proven: the same ceiling, which changes nothing there', () => {
    expect(deriveVerifiedProfile(bare, probes({}))).toEqual({
      profile: profile({ name: 'apple7', appleFamilyMax: 1007 }),
      reasons: [
        'Apple7: SIMD-group reduction and matrix computed right, llama.cpp’s gates for both; bfloat proven too (Apple7 includes Apple6, llama.cpp’s bfloat rule) (the device already answers Apple7: no change here)',
        'threadgroup memory left at the reported 32768 bytes, which were proven',
        'Metal3 left as the device answers it (YES)',
        NO_CHIP,
      ],
    });
  });

  it('never above the host chip’s true family: the proven family is capped there, with its own line', () => {
    const host = (cpuBrand: string) => ({ ...vz.host, cpuBrand, chip: chipFromBrand(cpuBrand) });
    const capped = deriveVerifiedProfile(
      guest,
      probes({ heap: 'fail', 'residency-set': 'fail' }),
      undefined,
      false,
      host('Apple A13'),
    );
    expect(capped.profile).toEqual(profile({ appleFamilyMax: 1006 }));
    expect(capped.reasons.slice(0, 2)).toEqual([
      'Apple7: SIMD-group reduction and matrix computed right, llama.cpp’s gates for both; bfloat proven too (Apple7 includes Apple6, llama.cpp’s bfloat rule)',
      "capped at Apple6, the true family of this host's Apple A13: nothing above the GPU doing the work is claimed",
    ]);
    // At the host's own family, or below it, nothing is capped and no line is added.
    for (const brand of ['Apple A14', 'Apple M1 (Virtual)', 'Apple M4 Max (Virtual)']) {
      const r = deriveVerifiedProfile(guest, probes({ heap: 'fail' }), undefined, false, host(brand));
      expect([r.profile.appleFamilyMax, r.reasons.some((line) => line.startsWith('capped'))]).toEqual([1007, false]);
    }
    // bfloat alone proves Apple6: on an Apple5 chip that is capped too.
    expect(
      deriveVerifiedProfile(
        guest,
        probes({ 'simdgroup-matrix': 'fail', heap: 'fail', 'residency-set': 'fail' }),
        undefined,
        false,
        host('Apple A12Z'),
      ).profile,
    ).toEqual(profile({ appleFamilyMax: 1005 }));
  });

  it('force lifts neither the 32768 ceiling of threadgroup memory nor the host chip’s family cap', () => {
    const a13 = { ...vz.host, cpuBrand: 'Apple A13', chip: 'Apple A13' };
    const derived = (force: boolean) =>
      deriveVerifiedProfile(guest, probes({ heap: 'fail', 'residency-set': 'fail' }, 65536), undefined, force, a13)
        .profile;
    expect([derived(true), derived(false)]).toEqual([
      profile({ appleFamilyMax: 1006 }),
      profile({ appleFamilyMax: 1006 }),
    ]);
    // assessDevice hands both on: force and the host.
    expect(
      assessDevice(guest, null, probes({ heap: 'fail', 'residency-set': 'fail' }, 65536), a13, 'cua-release', true)
        .verifiedProfile,
    ).toEqual(profile({ appleFamilyMax: 1006 }));
  });

  it('the name: the host chip’s only when a heap was proven, and never a guess', () => {
    const host = (cpuBrand: string | null) => ({ ...vz.host, cpuBrand, chip: chipFromBrand(cpuBrand) });
    const nameOf = (statuses: Partial<Record<DoctorProbeId, RecordedStatus>>, h: HostInfo | null, device = guest) => {
      const r = deriveVerifiedProfile(device, probes({ 'residency-set': 'fail', ...statuses }), undefined, false, h);
      return [r.profile.deviceName, r.reasons.at(-1)];
    };
    expect(nameOf({}, host('Apple M1 Ultra (Virtual)'))).toEqual([
      'Apple M1 Ultra',
      'name "Apple M1 Ultra", the host\'s chip: a heap was created, a buffer placed in it and a compute pass wrote and read it back, so MLX\'s heap path (which the name turns on) was proven; engines that tune by chip tune for Apple M1 Ultra',
    ]);
    expect(nameOf({ heap: 'wrong-result' }, host('Apple M1 Ultra (Virtual)'))).toEqual([
      null,
      'name left as the device reports it: with the host chip\'s name MLX would create its buffer heap, which it skips on "Apple Paravirtual device", and no heap was proven here (heap wrong-result)',
    ]);
    expect(nameOf({ heap: 'not-recorded' }, host('Apple M1 (Virtual)'))[0]).toBeNull();
    expect(nameOf({}, host('Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz'))).toEqual([
      null,
      'name left as the device reports it: the host\'s chip is unknown (brand string "Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz")',
    ]);
    expect(nameOf({}, null)).toEqual([null, NO_CHIP]);
    // Bare metal: the device already is the chip, so no name is claimed.
    expect(nameOf({}, host('Apple M1 Ultra'), bare)).toEqual([
      null,
      'name left as the device reports it: it already is "Apple M1 Ultra"',
    ]);
  });

  it('the least of several profiles claims only what every one claims', () => {
    const a = profile({ appleFamilyMax: 1007, maxThreadgroupMemoryLength: 65536, families: { metal3: true } });
    const b = profile({ appleFamilyMax: 1006, maxThreadgroupMemoryLength: 40960, families: { metal3: true } });
    const c = profile({ appleFamilyMax: 1007 });
    expect(leastProfile([a, b])).toEqual(
      profile({ appleFamilyMax: 1006, maxThreadgroupMemoryLength: 40960, families: { metal3: true } }),
    );
    expect(leastProfile([a, c])).toEqual(profile({ name: 'apple7', appleFamilyMax: 1007 }));
    expect(leastProfile([a])).toEqual(a);
    expect(leastProfile([])).toEqual(profile({}));
  });

  it('the least of several profiles keeps a name only when every one answers that same name', () => {
    const m1 = profile({ appleFamilyMax: 1007, deviceName: 'Apple M1' });
    expect(leastProfile([m1, { ...m1 }])).toEqual(m1);
    expect(leastProfile([m1, profile({ appleFamilyMax: 1007 })])).toEqual(
      profile({ name: 'apple7', appleFamilyMax: 1007 }),
    );
    expect(leastProfile([m1, { ...m1, deviceName: 'Apple M2' }])).toEqual(
      profile({ name: 'apple7', appleFamilyMax: 1007 }),
    );
    expect(leastProfile([profile({ appleFamilyMax: 1007 }), m1])).toEqual(
      profile({ name: 'apple7', appleFamilyMax: 1007 }),
    );
  });
});

describe('recommendations name the engine setting and the evidence', () => {
  const verified = (list: DoctorProbe[]) => deriveVerifiedProfile(guest, list).profile;
  const recs = (statuses: Partial<Record<DoctorProbeId, RecordedStatus>>) => {
    const list = probes(statuses);
    return recommendationsFor(guest, list, verified(list), vz.host);
  };

  it('none when everything passed', () => {
    expect(recs({})).toEqual([]);
  });

  it('nocopy-mmap faulty: llama.cpp --no-mmap and node-llama-cpp useMmap: false', () => {
    const why =
      'nocopy-mmap wrong-result: wrong-result detail. llama.cpp hands Metal its mmap-ed weights through newBufferWithBytesNoCopy by default; without mmap it reads them into buffers Metal owns';
    expect(recs({ 'nocopy-mmap': 'wrong-result' })).toEqual([
      { engine: 'llama.cpp', setting: '--no-mmap (llama-bench: -mmp 0)', why },
      { engine: 'node-llama-cpp', setting: 'llama.loadModel({ useMmap: false })', why },
    ]);
    expect(recs({ 'nocopy-mmap': 'fail' }).map((r) => r.setting)).toEqual([
      '--no-mmap (llama-bench: -mmp 0)',
      'llama.loadModel({ useMmap: false })',
    ]);
    expect(recs({ 'nocopy-mmap': 'timeout' })).toHaveLength(2);
    expect(recs({ 'nocopy-mmap': 'error' })).toEqual([]);
  });

  it('residency-set faulty: GGML_METAL_NO_RESIDENCY=1, and for MLX never advertising Metal3', () => {
    expect(recs({ 'residency-set': 'fail' })).toEqual([
      {
        engine: 'llama.cpp',
        setting: 'GGML_METAL_NO_RESIDENCY=1',
        why: 'residency-set fail: fail detail. ggml-metal creates residency sets by default (arm64 builds with a macOS 15+ SDK); node-llama-cpp 3.19 already sets this while it loads backends',
      },
      {
        engine: 'mlx',
        setting: 'never advertise Metal3 (profile {"families":{"metal3":false}})',
        why: 'residency-set fail: fail detail. MLX (from v0.19.2) creates residency sets when the device answers Metal3 on macOS 15+, and throws when that fails; no switch of its own turns them off (MLX_RESIDENCY_SET_MAX_PCT, from v0.32.1, only spreads them over several sets)',
      },
    ]);
    expect(recs({ 'residency-set': 'unsupported' })).toEqual([]);
  });

  it('heap faulty: for MLX, leave the device name alone (MLX then skips its heap)', () => {
    const mlx = {
      engine: 'mlx',
      setting: 'leave the device name alone (no deviceName in the profile)',
      why: 'heap wrong-result: wrong-result detail. MLX places small buffers in a 1 MiB heap, and skips it only when the device is named exactly "Apple Paravirtual device"; with that name left in place it allocates them one by one',
    };
    expect(recs({ heap: 'wrong-result', 'residency-set': 'fail' }).slice(-1)).toEqual([mlx]);
    expect(recs({ heap: 'fail', 'residency-set': 'unsupported' }).map((r) => r.setting)).toEqual([mlx.setting]);
    expect(recs({ heap: 'unsupported', 'residency-set': 'unsupported' })).toEqual([]);
    expect(recs({ heap: 'not-recorded', 'residency-set': 'unsupported' })).toEqual([]);
  });

  it('bfloat faulty: GGML_METAL_BF16_DISABLE=1', () => {
    expect(recs({ bfloat: 'wrong-result', 'residency-set': 'fail' })[0]).toEqual({
      engine: 'llama.cpp',
      setting: 'GGML_METAL_BF16_DISABLE=1',
      why: 'bfloat wrong-result: wrong-result detail. ggml-metal turns bfloat on for Apple6 or Metal3 devices; this variable keeps BF16 kernels off (node-llama-cpp reads it too)',
    });
  });

  it('bfloat not proven while the verified profile turns llama.cpp’s bfloat on: the same setting, with that reason', () => {
    expect(recs({ bfloat: 'unsupported' })).toEqual([
      {
        engine: 'llama.cpp',
        setting: 'GGML_METAL_BF16_DISABLE=1',
        why: 'bfloat was not proven (unsupported: unsupported detail), but with the verified profile llama.cpp turns it on (supportsFamily(Metal3)=NO, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE unset); this variable keeps BF16 kernels off (node-llama-cpp reads it too)',
      },
    ]);
    // Nothing raised (reduction not proven either): llama.cpp's bfloat stays off, nothing to turn off.
    expect(recs({ bfloat: 'unsupported', 'simdgroup-reduction': 'fail' })).toEqual([]);
    // A device that turns bfloat on by itself (Apple6 and Metal3 stock) was not contradicted: no advice.
    const list = probes({ bfloat: 'not-recorded' });
    expect(recommendationsFor(bare, list, deriveVerifiedProfile(bare, list).profile, null)).toEqual([]);
  });

  it('a device assessment gathers all of it', () => {
    const list = probes({ 'nocopy-mmap': 'wrong-result', 'residency-set': 'fail' });
    const d = assessDevice(guest, null, list, vz.host);
    expect({ ...d, probes: d.probes.length, recommendations: d.recommendations.map((r) => r.setting) }).toEqual({
      index: 0,
      isDefault: true,
      name: 'Apple Paravirtual device',
      className: 'AppleParavirtDevice',
      registryId: guest.registryId,
      reported: {
        stock: { highestAppleFamily: 'apple5', maxThreadgroupMemoryLength: 32768, metal3: false },
        patched: null,
      },
      probes: 7,
      differences: [],
      // The guest's host is an M1 Ultra and a heap was proven: its name too.
      verifiedProfile: profile({ appleFamilyMax: 1007, deviceName: 'Apple M1 Ultra' }),
      verifiedProfileReasons: deriveVerifiedProfile(guest, list, undefined, false, vz.host).reasons,
      recommendations: [
        '--no-mmap (llama-bench: -mmp 0)',
        'llama.loadModel({ useMmap: false })',
        'GGML_METAL_NO_RESIDENCY=1',
        'never advertise Metal3 (profile {"families":{"metal3":false}})',
      ],
      faults: ['nocopy-mmap: wrong-result', 'residency-set: fail'],
    });
  });
});

describe('two runs combined, value by value', () => {
  it('a time or size one run did not measure stays unmeasured, whichever run it was', () => {
    const p = judgeProbe(
      'threadgroup-memory',
      run('fail', { ms: null }),
      run('pass', { ms: 4, provenThreadgroupMemory: 65536 }),
    );
    expect([p.status, p.ms, p.provenThreadgroupMemory, p.judgement]).toEqual(['fail', null, null, 'faulty']);
  });

  it('the smallest failing size and the worst error of either run; one run’s value when the other has none', () => {
    const both = (stock: Partial<DoctorRun>, patched: Partial<DoctorRun>) => {
      const p = judgeProbe('threadgroup-memory', run('pass', stock), run('pass', patched));
      return [p.failedThreadgroupMemory, p.maxAbsError];
    };
    expect(
      both({ failedThreadgroupMemory: 40960, maxAbsError: 3 }, { failedThreadgroupMemory: 49152, maxAbsError: 1 }),
    ).toEqual([40960, 3]);
    expect(
      both({ failedThreadgroupMemory: 49152, maxAbsError: 1 }, { failedThreadgroupMemory: 40960, maxAbsError: 3 }),
    ).toEqual([40960, 3]);
    expect(both({ failedThreadgroupMemory: 40960, maxAbsError: 0.5 }, {})).toEqual([40960, 0.5]);
    expect(both({}, { failedThreadgroupMemory: 57344, maxAbsError: 0.25 })).toEqual([57344, 0.25]);
    expect(both({}, {})).toEqual([null, null]);
  });

  it('runs that disagree, with no candidate name given: the detail says “the candidate profile”', () => {
    expect(judgeProbe('bfloat', run('pass'), run('fail')).detail).toBe(
      'stock: pass (pass detail); under the candidate profile: fail (fail detail)',
    );
  });
});

describe('judgeDevice: the native runner’s results as verdicts', () => {
  const raw = (
    id: DoctorProbeId,
    status: DoctorStatus,
    extra: Partial<NativeProbeOutcome> = {},
  ): NativeProbeOutcome => ({
    id,
    status,
    detail: `${status} raw`,
    ms: 2,
    compileMs: 1,
    buildFailed: false,
    commandBufferError: null,
    gpuTimedOut: false,
    provenThreadgroupMemory: null,
    acceptedThreadgroupMemory: null,
    failedThreadgroupMemory: null,
    bufferLength: null,
    maxAbsError: null,
    ...extra,
  });
  const missing = {
    status: 'error',
    detail: 'the native runner returned no outcome for it',
    ms: null,
    compileMs: null,
    provenThreadgroupMemory: null,
    acceptedThreadgroupMemory: null,
    failedThreadgroupMemory: null,
    bufferLength: null,
    maxAbsError: null,
  };

  it('not asked: skipped; asked but not returned: an error, in either run; nocopy-mmap judged from its one run', () => {
    const o = checkDoctorOptions({
      probes: ['simdgroup-matrix', 'bfloat', 'nocopy-mmap', 'residency-set'],
      profile: 'apple7',
    });
    const stock = [
      raw('bfloat', 'pass'),
      raw('nocopy-mmap', 'wrong-result', { bufferLength: 0 }),
      raw('residency-set', 'pass'),
    ];
    const patched = [raw('simdgroup-matrix', 'pass'), raw('bfloat', 'fail'), raw('nocopy-mmap', 'pass')];
    const probes = judgeDevice(o, stock, patched);
    const notAsked = { ...missing, status: 'skipped', detail: 'not asked', judgement: 'unknown' };
    const stockBfloat = { ...runFrom(raw('bfloat', 'pass')) };
    expect(probes).toEqual([
      { id: 'simdgroup-reduction', ...notAsked },
      {
        id: 'simdgroup-matrix',
        ...missing,
        detail: 'stock: error (the native runner returned no outcome for it); under apple7: pass (pass raw)',
        judgement: 'unknown',
        stock: missing,
        patched: runFrom(raw('simdgroup-matrix', 'pass')),
      },
      {
        id: 'bfloat',
        ...stockBfloat,
        status: 'fail',
        detail: 'stock: pass (pass raw); under apple7: fail (fail raw)',
        ms: 4,
        compileMs: 2,
        judgement: 'faulty',
        stock: stockBfloat,
        patched: runFrom(raw('bfloat', 'fail')),
      },
      { id: 'threadgroup-memory', ...notAsked },
      { id: 'nocopy-mmap', ...runFrom(raw('nocopy-mmap', 'wrong-result', { bufferLength: 0 })), judgement: 'faulty' },
      {
        id: 'residency-set',
        ...missing,
        detail: 'stock: pass (pass raw); under apple7: error (the native runner returned no outcome for it)',
        ms: null,
        compileMs: null,
        judgement: 'unknown',
        stock: runFrom(raw('residency-set', 'pass')),
        patched: missing,
      },
      { id: 'heap', ...notAsked },
    ]);
  });

  it('a kernel that cannot be built is unsupported where the stock answers claim no family that gates the feature', () => {
    const o = checkDoctorOptions({ probes: ['simdgroup-matrix', 'bfloat', 'threadgroup-memory', 'residency-set'] });
    const unbuilt = (id: DoctorProbeId) => raw(id, 'fail', { buildFailed: true });
    const outcomes = [
      unbuilt('simdgroup-matrix'),
      unbuilt('bfloat'),
      unbuilt('threadgroup-memory'),
      raw('residency-set', 'fail'),
    ];
    const verdicts = (device: typeof guest) =>
      judgeDevice(o, outcomes, null, device)
        .filter((p) => o.probes.includes(p.id))
        .map((p) => [p.id, p.status, p.detail]);
    // The stock guest claims Apple5 at most and no Metal3: matrix and bfloat are not its features. Threadgroup memory
    // is every device's, and a residency set that failed after it was created (buildFailed false: its commit, its
    // dispatch) is a fault whatever is claimed.
    expect(verdicts(guest)).toEqual([
      ['simdgroup-matrix', 'unsupported', 'the device does not claim Apple7, which gates this feature: fail raw'],
      ['bfloat', 'unsupported', 'the device does not claim Apple6 or Metal3, which gates this feature: fail raw'],
      ['threadgroup-memory', 'fail', 'fail raw'],
      ['residency-set', 'fail', 'fail raw'],
    ]);
    // Bare metal claims them: the same failures are faults there.
    expect(verdicts(bare).map(([, status]) => status)).toEqual(['fail', 'fail', 'fail', 'fail']);
    // One claimed family of several is enough; the stock report decides, not a run under a profile.
    expect(verdicts({ ...guest, families: { ...guest.families, metal3: true } })[1]).toEqual([
      'bfloat',
      'fail',
      'fail raw',
    ]);
    expect(judgeDevice(o, outcomes, [unbuilt('simdgroup-matrix')], guest)[1]!.status).toBe('unsupported');
    // Without the stock report nothing is mapped; a rejected language version stays unsupported with its own detail.
    expect(judgeDevice(o, outcomes, null)[1]!.status).toBe('fail');
    const rejected = [raw('simdgroup-matrix', 'unsupported', { buildFailed: true })];
    expect(judgeDevice(o, rejected, null, guest)[1]).toMatchObject({
      status: 'unsupported',
      detail: 'unsupported raw',
    });
  });

  it('a residency set that cannot be created counts as a kernel that cannot be built: unsupported on a GPU that claims neither an Apple family nor Metal3, a fault on every Apple GPU', () => {
    const o = checkDoctorOptions({ probes: ['residency-set'], profile: 'cua-release' });
    const uncreated = [raw('residency-set', 'fail', { buildFailed: true })];
    const residency = (stock: typeof guest, patched: NativeProbeOutcome[] | null) => {
      const p = judgeDevice(o, uncreated, patched, stock)[5]!;
      return [p.status, p.judgement, p.stock?.status ?? null, p.patched?.status ?? null, p.detail];
    };
    const none = {
      ...guest,
      families: Object.fromEntries(Object.keys(guest.families).map((f) => [f, false])),
    } as typeof guest;
    const unclaimed = 'the device does not claim Apple1 or Metal3, which gates this feature: fail raw';
    // An Intel or AMD GPU without Metal3 (no family it claims gates residency sets): absent, in both runs.
    expect(residency(none, null)).toEqual(['unsupported', 'absent', null, null, unclaimed]);
    expect(residency(none, uncreated)).toEqual(['unsupported', 'absent', 'unsupported', 'unsupported', unclaimed]);
    // Apple1 alone or Metal3 alone is enough.
    const apple1 = { ...none, families: { ...none.families, apple1: true } };
    const metal3 = { ...none, families: { ...none.families, metal3: true } };
    expect(residency(apple1, null)).toEqual(['fail', 'faulty', null, null, 'fail raw']);
    expect(residency(metal3, null)).toEqual(['fail', 'faulty', null, null, 'fail raw']);
    // The stock guest claims Apple1–5 and no Metal3: llama.cpp creates sets there, so it is the fault users meet,
    // in both runs, whatever the candidate claims; bare metal likewise.
    expect(guest.families.metal3).toBe(false);
    expect(residency(guest, uncreated)).toEqual(['fail', 'faulty', 'fail', 'fail', 'fail raw']);
    expect(residency(bare, null)).toEqual(['fail', 'faulty', null, null, 'fail raw']);
    // Created, then failing (not buildFailed): a fault even where nothing gates it.
    expect(judgeDevice(o, [raw('residency-set', 'fail')], null, none)[5]!.status).toBe('fail');
  });

  it('without a patched run, the stock run alone decides; a custom candidate is named as such', () => {
    const o = checkDoctorOptions({ probes: ['bfloat'], profile: { appleFamilyMax: 1008 } });
    expect(judgeDevice(o, [raw('bfloat', 'pass')], null)[2]).toEqual({
      id: 'bfloat',
      ...runFrom(raw('bfloat', 'pass')),
      judgement: 'proven',
    });
    expect(judgeDevice(o, [raw('bfloat', 'pass')], [raw('bfloat', 'timeout')])[2]!.detail).toBe(
      'stock: pass (pass raw); under the candidate profile: timeout (timeout raw)',
    );
  });
});

describe('decisions over probe lists that leave probes out (deriveVerifiedProfile and recommendationsFor are public)', () => {
  it('a probe not in the list is “not run”: it proves nothing and is named so', () => {
    const only = [judgeProbe('bfloat', run('pass'))];
    expect(deriveVerifiedProfile(guest, only)).toEqual({
      profile: profile({ appleFamilyMax: 1006 }),
      reasons: [
        'Apple6: bfloat computed right (llama.cpp’s bfloat rule); not Apple7, which would also claim SIMD-group reduction and matrix (simdgroup-reduction not run, simdgroup-matrix not run)',
        'threadgroup memory left as reported: no size proven (threadgroup-memory not run)',
        'Metal3 not advertised: no residency set was proven to work (residency-set not run)',
        NO_CHIP,
      ],
    });
    expect(recommendationsFor(guest, only, profile({ appleFamilyMax: 1006 }), vz.host)).toEqual([]);
  });

  it('bfloat not run while the profile turns it on: the advice says so', () => {
    const list = [judgeProbe('simdgroup-reduction', run('pass')), judgeProbe('simdgroup-matrix', run('pass'))];
    const verified = deriveVerifiedProfile(guest, list).profile;
    expect(verified).toEqual(profile({ name: 'apple7', appleFamilyMax: 1007 }));
    expect(recommendationsFor(guest, list, verified, vz.host)).toEqual([
      {
        engine: 'llama.cpp',
        setting: 'GGML_METAL_BF16_DISABLE=1',
        why: 'bfloat was not proven (not run), but with the verified profile llama.cpp turns it on (supportsFamily(Metal3)=NO, supportsFamily(Apple6)=YES, GGML_METAL_BF16_DISABLE unset); this variable keeps BF16 kernels off (node-llama-cpp reads it too)',
      },
    ]);
    expect(recommendationsFor(guest, [], profile({}), vz.host)).toEqual([]);
  });
});

describe('more of the verified profile', () => {
  it('Apple6 on a device that already answers it: no change there, and it says so', () => {
    expect(deriveVerifiedProfile(bare, probes({ 'simdgroup-reduction': 'fail' })).reasons[0]).toBe(
      'Apple6: bfloat computed right (llama.cpp’s bfloat rule); not Apple7, which would also claim SIMD-group reduction and matrix (simdgroup-reduction fail, simdgroup-matrix pass) (the device already answers Apple6: no change here)',
    );
  });

  it('a device that reports no threadgroup size: the proven size is claimed', () => {
    expect(
      deriveVerifiedProfile({ ...guest, maxThreadgroupMemoryLength: null }, probes({ 'residency-set': 'fail' }, 16384)),
    ).toEqual({
      profile: profile({ appleFamilyMax: 1007, maxThreadgroupMemoryLength: 16384 }),
      reasons: [
        'Apple7: SIMD-group reduction and matrix computed right, llama.cpp’s gates for both; bfloat proven too (Apple7 includes Apple6, llama.cpp’s bfloat rule)',
        'threadgroup memory raised to the proven 16384 bytes (the device reports nothing)',
        'Metal3 not advertised: no residency set was proven to work (residency-set fail)',
        NO_CHIP,
      ],
    });
  });

  it('a built-in name only for a profile that says exactly what the built-in says', () => {
    const apple7 = profiles.apple7!.profile;
    expect(leastProfile([{ ...apple7, name: null }])).toEqual(apple7);
    expect(leastProfile([{ ...apple7, recommendedMaxWorkingSetSize: 8 * 2 ** 30 }])).toEqual({
      ...apple7,
      name: null,
      recommendedMaxWorkingSetSize: 8 * 2 ** 30,
    });
    expect(leastProfile([{ ...apple7, mode: 'exact' }])).toEqual({ ...apple7, name: null, mode: 'exact' });
    expect(leastProfile([{ ...apple7, families: { metal3: true } }])).toEqual({
      ...apple7,
      name: null,
      families: { metal3: true },
    });
  });

  it('one profile is kept as it is; several keep only the family ceiling, the threadgroup size and Metal3', () => {
    const mask = profiles['mask-apple5']!.profile;
    expect(leastProfile([mask])).toEqual(mask);
    expect(leastProfile([mask, mask])).toEqual(profile({ appleFamilyMax: 1005, maxThreadgroupMemoryLength: 32768 }));
  });
});

describe('recommendations do not depend on where they are computed', () => {
  it('GGML_METAL_BF16_DISABLE in this process changes nothing in the advice', () => {
    const list = probes({ bfloat: 'unsupported' });
    const verified = deriveVerifiedProfile(guest, list).profile;
    const clean = recommendationsFor(guest, list, verified, vz.host);
    process.env.GGML_METAL_BF16_DISABLE = '1';
    try {
      expect(recommendationsFor(guest, list, verified, vz.host)).toEqual(clean);
    } finally {
      delete process.env.GGML_METAL_BF16_DISABLE;
    }
    expect(clean.map((r) => r.setting)).toEqual(['GGML_METAL_BF16_DISABLE=1']);
  });

  it('a device that turns bfloat on by itself gets no advice, whatever this process’s environment says', () => {
    const list = probes({ bfloat: 'not-recorded' });
    const verified = deriveVerifiedProfile(bare, list).profile;
    process.env.GGML_METAL_BF16_DISABLE = '1';
    try {
      expect(recommendationsFor(bare, list, verified, null)).toEqual([]);
    } finally {
      delete process.env.GGML_METAL_BF16_DISABLE;
    }
  });

  it('a device assessed with its answers under the candidate keeps both', () => {
    const patched = predictPatchedDevice(guest, profiles['cua-release']!.profile);
    expect(assessDevice(guest, patched, probes({}), vz.host).reported).toEqual({
      stock: { highestAppleFamily: 'apple5', maxThreadgroupMemoryLength: 32768, metal3: false },
      patched: { highestAppleFamily: 'apple9', maxThreadgroupMemoryLength: 65536, metal3: false },
    });
  });
});
