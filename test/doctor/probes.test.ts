// doctor's vocabulary (lib/doctor/probes.ts: statuses, judgements, severity, bounds, threadgroup sizes) as the
// paths that use it read it. Each test imports the modules afresh, so the module-level tables are built inside the
// test: a change to one of them shows here, which it cannot in a suite that imported them once at its top (this is
// how Stryker's static mutants of these tables are tested). Over the simulated Tahoe guest, in this process.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, expect, it, vi } from 'vitest';
import type { DoctorRun } from '../../lib/doctor/types.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

describeSim('the doctor’s vocabulary, read afresh', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');
  beforeEach(() => {
    requireSimBuild();
    vi.resetModules();
    process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-vocabulary-'));
  });

  it('the public tables: probes, capability probes, statuses, and what each status says', async () => {
    const m = await import('../../lib/tables.js');
    expect({
      DOCTOR_PROBE_IDS: m.DOCTOR_PROBE_IDS,
      CAPABILITY_PROBE_IDS: m.CAPABILITY_PROBE_IDS,
      DOCTOR_STATUSES: m.DOCTOR_STATUSES,
      JUDGEMENTS: m.JUDGEMENTS,
    }).toMatchInlineSnapshot(`
      {
        "CAPABILITY_PROBE_IDS": [
          "simdgroup-reduction",
          "simdgroup-matrix",
          "bfloat",
          "threadgroup-memory",
          "residency-set",
          "heap",
        ],
        "DOCTOR_PROBE_IDS": [
          "simdgroup-reduction",
          "simdgroup-matrix",
          "bfloat",
          "threadgroup-memory",
          "nocopy-mmap",
          "residency-set",
          "heap",
        ],
        "DOCTOR_STATUSES": [
          "pass",
          "wrong-result",
          "fail",
          "unsupported",
          "timeout",
          "skipped",
          "error",
          "page-fault",
          "access-revoked",
          "not-permitted",
          "out-of-memory",
          "device-removed",
          "aborted",
          "interrupted",
        ],
        "JUDGEMENTS": {
          "aborted": {
            "judgement": "faulty",
            "meaning": "the process running the probe died, or was killed at the deadline, while it ran",
          },
          "access-revoked": {
            "judgement": "unknown",
            "meaning": "Metal revoked this process’s access after timeouts or hangs (MTLCommandBufferErrorAccessRevoked)",
          },
          "device-removed": {
            "judgement": "unknown",
            "meaning": "the device went away while it ran, as an unplugged eGPU does (MTLCommandBufferErrorDeviceRemoved)",
          },
          "error": {
            "judgement": "unknown",
            "meaning": "the probe itself could not run, which says nothing about the GPU",
          },
          "fail": {
            "judgement": "faulty",
            "meaning": "Metal refused it with an API error",
          },
          "interrupted": {
            "judgement": "unknown",
            "meaning": "a SIGINT or SIGTERM from outside (Ctrl-C, a supervisor) ended the process running the probe",
          },
          "not-permitted": {
            "judgement": "unknown",
            "meaning": "Metal does not let this process use the device (MTLCommandBufferErrorNotPermitted)",
          },
          "not-recorded": {
            "judgement": "unknown",
            "meaning": "the snapshot does not record it",
          },
          "out-of-memory": {
            "judgement": "unknown",
            "meaning": "the GPU had too little memory for the work (MTLCommandBufferErrorOutOfMemory)",
          },
          "page-fault": {
            "judgement": "faulty",
            "meaning": "the GPU faulted on memory the kernel was given (MTLCommandBufferErrorPageFault)",
          },
          "pass": {
            "judgement": "proven",
            "meaning": "ran and matched the CPU reference",
          },
          "skipped": {
            "judgement": "unknown",
            "meaning": "not run",
          },
          "timeout": {
            "judgement": "faulty",
            "meaning": "the GPU, or Metal’s compiler, did not finish before its deadline",
          },
          "unsupported": {
            "judgement": "absent",
            "meaning": "this OS or Metal Shading Language version lacks the API",
          },
          "wrong-result": {
            "judgement": "faulty",
            "meaning": "ran, but the result differs from the CPU reference (or the buffer was stale or short)",
          },
        },
      }
    `);
  });

  it('two runs that disagree take the worse status: one ranking, worst first, that every pair follows in both orders', async () => {
    const { worseStatus } = await import('../../lib/doctor/judge.js');
    const { DOCTOR_STATUSES } = await import('../../lib/device/doctor-vocabulary.js');
    const ranking = [...DOCTOR_STATUSES, 'not-recorded' as const].sort((a, b) =>
      a === b ? 0 : worseStatus(a, b) === a ? -1 : 1,
    );
    expect(ranking).toMatchInlineSnapshot(`
      [
        "wrong-result",
        "page-fault",
        "aborted",
        "timeout",
        "fail",
        "access-revoked",
        "not-permitted",
        "out-of-memory",
        "device-removed",
        "error",
        "interrupted",
        "unsupported",
        "skipped",
        "not-recorded",
        "pass",
      ]
    `);
    for (let i = 0; i < ranking.length; i++) {
      for (let j = i + 1; j < ranking.length; j++) {
        expect([worseStatus(ranking[i]!, ranking[j]!), worseStatus(ranking[j]!, ranking[i]!)]).toEqual([
          ranking[i],
          ranking[i],
        ]);
      }
    }
  });

  it('the option bounds and defaults', async () => {
    const { checkDoctorOptions } = await import('../../lib/doctor/options.js');
    expect(checkDoctorOptions({})).toMatchObject({ timeoutMs: 5000, mmapSize: 1 << 30 });
    expect(checkDoctorOptions({ timeoutMs: 100, mmapSize: 1 << 20 })).toMatchObject({
      timeoutMs: 100,
      mmapSize: 1 << 20,
    });
    expect(checkDoctorOptions({ timeoutMs: 600_000, mmapSize: 64 * 2 ** 30 })).toMatchObject({
      timeoutMs: 600_000,
      mmapSize: 64 * 2 ** 30,
    });
    expect(() => checkDoctorOptions({ timeoutMs: 99 })).toThrow(
      "doctor() option 'timeoutMs' (--timeout-ms) must be a whole number from 100 to 600000, got 99",
    );
    expect(() => checkDoctorOptions({ mmapSize: 64 * 2 ** 30 + 16384 })).toThrow(
      "doctor() option 'mmapSize' (--mmap-size) must be a whole number from 1048576 to 68719476736 bytes, a multiple of 16384, got 68719493120",
    );
    expect(() => checkDoctorOptions({ mmapSize: (1 << 20) + 8192 })).toThrow(
      "doctor() option 'mmapSize' (--mmap-size) must be a multiple of 16384 bytes (the arm64 page size), got 1056768",
    );
  });

  it('a live run tries the threadgroup sizes 16 KiB to 32 KiB, and to 64 KiB with allowAboveHardware; nocopy-mmap once', async () => {
    const { doctor } = await import('../../lib/doctor/index.js');
    const run = async (allowAboveHardware: boolean) =>
      (
        await doctor({
          probes: ['threadgroup-memory', 'nocopy-mmap'],
          mmapSize: 1 << 20,
          cache: false,
          allowAboveHardware,
        })
      ).devices[0]!.probes;
    const probes = await run(false);
    expect(probes.map((p) => [p.id, p.status, 'patched' in p])).toEqual([
      ['simdgroup-reduction', 'skipped', false],
      ['simdgroup-matrix', 'skipped', false],
      ['bfloat', 'skipped', false],
      ['threadgroup-memory', 'pass', true],
      ['nocopy-mmap', 'pass', false],
      ['residency-set', 'skipped', false],
      ['heap', 'skipped', false],
    ]);
    const measured = (p: DoctorRun) => [
      p.provenThreadgroupMemory,
      p.acceptedThreadgroupMemory,
      p.failedThreadgroupMemory,
      p.detail,
    ];
    // The stock guest takes 64 KiB (the run below accepts it), so nothing accepted here means nothing above 32 KiB ran.
    const leftOut =
      '32768 bytes proven by 1024 concurrent threadgroups of 256 threads (the largest size asked for); 40960 to 65536 bytes not dispatched: above the 32768 bytes this GPU can prove, and allowAboveHardware (--allow-above-hardware) is off';
    expect([measured(probes[3]!), measured(probes[3]!.stock!), measured(probes[3]!.patched!)]).toEqual([
      [32768, null, null, leftOut],
      [32768, null, null, leftOut],
      [32768, null, null, leftOut],
    ]);
    expect(measured((await run(true))[3]!)).toEqual([
      32768,
      65536,
      null,
      '32768 bytes proven by 1024 concurrent threadgroups of 256 threads; 65536 bytes accepted and computed right, unverifiable: threadgroups above 32768 bytes may never share a GPU core (the largest size asked for)',
    ]);
  });

  it('threadgroupSizesFor: nothing above what the device can prove unless allowAboveHardware; the note names what was left out', async () => {
    const { leftOutSizesNote, THREADGROUP_CANDIDATES, threadgroupSizesFor } = await import(
      '../../lib/doctor/probes.js'
    );
    expect(threadgroupSizesFor(32768, false)).toEqual({
      dispatched: [16384, 24576, 32768],
      leftOut: [40960, 49152, 57344, 65536],
    });
    expect(threadgroupSizesFor(32768, true)).toEqual({ dispatched: [...THREADGROUP_CANDIDATES], leftOut: [] });
    // An AMD GPU's stock 65536 is provable there: every size stays.
    expect(threadgroupSizesFor(65536, false)).toEqual({ dispatched: [...THREADGROUP_CANDIDATES], leftOut: [] });
    expect(threadgroupSizesFor(57344, false).leftOut).toEqual([65536]);
    expect(threadgroupSizesFor(16383, false)).toEqual({ dispatched: [], leftOut: [...THREADGROUP_CANDIDATES] });
    expect(leftOutSizesNote([], 32768)).toBeNull();
    expect(leftOutSizesNote([65536], 57344)).toBe(
      '65536 bytes not dispatched: above the 57344 bytes this GPU can prove, and allowAboveHardware (--allow-above-hardware) is off',
    );
    expect(leftOutSizesNote([40960, 49152, 65536], 32768)).toBe(
      '40960 to 65536 bytes not dispatched: above the 32768 bytes this GPU can prove, and allowAboveHardware (--allow-above-hardware) is off',
    );
  });

  it('a cache file is read back', async () => {
    const { readCache, writeCache, cacheKeyFor } = await import('../../lib/doctor/cache.js');
    const { doctor } = await import('../../lib/doctor/index.js');
    const { stockDevices } = await import('../support/doctor-helpers.js');
    const stock = stockDevices();
    // Every capability probe: a cached result that skipped one is not read back.
    const d = (
      await doctor({
        probes: ['simdgroup-reduction', 'simdgroup-matrix', 'bfloat', 'threadgroup-memory', 'residency-set', 'heap'],
        cache: false,
      })
    ).devices[0]!;
    const key = cacheKeyFor(stock, stock.devices[0]!);
    writeCache(key, d, '2026-08-09T10:00:00.000Z');
    expect(readCache(key, stock.devices[0]!).entry?.result.verifiedProfile).toEqual(d.verifiedProfile);
  });
});
