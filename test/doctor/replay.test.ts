// doctor({ snapshot }) in-process: a recorded result replayed and judged as a live run would be, on any OS. Nothing
// runs, nothing is guessed: what a recording does not document stays `not-recorded`. The CLI's replay output is
// tested in test/doctor/options.test.ts.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { doctor } from '../../lib/doctor/index.js';
import { order, runFromRecord } from '../../lib/doctor/replay.js';
import { DOCTOR_PROBE_IDS, type DoctorProbeId } from '../../lib/doctor/probes.js';
import type { DoctorProbe, DoctorReport } from '../../lib/doctor/types.js';
import { InvalidOptionsError } from '../../lib/core/errors.js';
import { packageVersion } from '../../lib/device/native.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import { profiles, resolveProfile } from '../../lib/patch/profiles.js';
import { root } from '../support/helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-replay-'));
const NOTHING = { ...resolveProfile({}), name: null };
const NOT_RECORDED = {
  status: 'not-recorded',
  detail: 'not recorded in this snapshot',
  ms: null,
  compileMs: null,
  provenThreadgroupMemory: null,
  acceptedThreadgroupMemory: null,
  failedThreadgroupMemory: null,
  bufferLength: null,
  maxAbsError: null,
  judgement: 'unknown',
};
const MMAP_WHY =
  'llama.cpp hands Metal its mmap-ed weights through newBufferWithBytesNoCopy by default; without mmap it reads them into buffers Metal owns';

/** The Tahoe guest with `probes` recorded under `provenance`, written to a file of its own. */
function guestRecording(
  id: string,
  provenance: string,
  probes: Record<DoctorProbeId, Record<string, unknown>>,
): string {
  const s = JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
  s.id = id;
  s.devices[0].doctor = { provenance, probes };
  const file = path.join(dir, `${id}.json`);
  writeFileSync(file, JSON.stringify(s));
  return file;
}

const replay = (options: Parameters<typeof doctor>[0]): Promise<DoctorReport> => doctor(options);
const byId = (probes: DoctorProbe[]) => Object.fromEntries(probes.map((p) => [p.id, p]));

describe('a recorded probe as a run', () => {
  it('not in the recording: not-recorded, whatever the provenance', () => {
    for (const provenance of [null, 'assumed', 'cua-logs']) {
      expect(runFromRecord(undefined, provenance)).toEqual({
        status: 'not-recorded',
        detail: 'not recorded in this snapshot',
        ms: null,
        compileMs: null,
        provenThreadgroupMemory: null,
        acceptedThreadgroupMemory: null,
        failedThreadgroupMemory: null,
        bufferLength: null,
        maxAbsError: null,
      });
    }
    expect(runFromRecord({ status: 'not-recorded' }, 'cua-logs').detail).toBe('not recorded in this snapshot');
  });

  it('the detail says it was recorded, and by whom: a source key, assumed, or nothing', () => {
    const record = { status: 'fail' as const, detail: 'the pipeline failed' };
    expect(runFromRecord(record, 'cua-logs').detail).toBe('recorded: the pipeline failed [source: cua-logs]');
    expect(runFromRecord(record, 'assumed').detail).toBe('recorded: the pipeline failed [assumed]');
    expect(runFromRecord(record, null).detail).toBe('recorded: the pipeline failed');
  });

  it('without a detail of its own, the status’s meaning; a NoCopy fault is named', () => {
    expect(runFromRecord({ status: 'timeout' }, null).detail).toBe(
      'recorded: the GPU, or Metal’s compiler, did not finish before its deadline',
    );
    expect(runFromRecord({ status: 'wrong-result', fault: 'stale' }, 'assumed').detail).toBe(
      'recorded: ran, but the result differs from the CPU reference (or the buffer was stale or short) (fault: stale) [assumed]',
    );
  });

  it('measurements are carried over; the time of a recording is unknown', () => {
    expect(
      runFromRecord(
        {
          status: 'pass',
          detail: 'd',
          provenThreadgroupMemory: 32768,
          acceptedThreadgroupMemory: 49152,
          failedThreadgroupMemory: 57344,
          bufferLength: 0,
          maxAbsError: 0.25,
        },
        null,
      ),
    ).toEqual({
      status: 'pass',
      detail: 'recorded: d',
      ms: null,
      compileMs: null,
      provenThreadgroupMemory: 32768,
      acceptedThreadgroupMemory: 49152,
      failedThreadgroupMemory: 57344,
      bufferLength: 0,
      maxAbsError: 0.25,
    });
  });

  it('probes are put in doctor’s order, whatever order they come in', () => {
    const shuffled = [
      'residency-set',
      'heap',
      'bfloat',
      'simdgroup-reduction',
      'nocopy-mmap',
      'threadgroup-memory',
      'simdgroup-matrix',
    ] as const;
    expect(order(shuffled.map((id) => ({ id }))).map((p) => p.id)).toEqual([...DOCTOR_PROBE_IDS]);
    const input = [{ id: 'bfloat' as const }, { id: 'simdgroup-reduction' as const }];
    expect(order(input)).toEqual([{ id: 'simdgroup-reduction' }, { id: 'bfloat' }]);
    expect(input).toEqual([{ id: 'bfloat' }, { id: 'simdgroup-reduction' }]);
  });
});

describe('doctor({ snapshot }) replays a recording', () => {
  it('the macos-14 runner: its stale NoCopy pages, everything else not recorded', async () => {
    const r = await replay({ snapshot: 'github-macos-14-arm64-runner' });
    expect(Date.parse(r.generatedAt)).not.toBeNaN();
    const nocopyDetail =
      'recorded: stale data when Metal read model weights through newBufferWithBytesNoCopy over a file-backed mmap (empty or garbage llama.cpp output; --no-mmap correct) (fault: stale) [source: unsloth-pr-37]';
    const nocopy = {
      ...NOT_RECORDED,
      id: 'nocopy-mmap',
      status: 'wrong-result',
      detail: nocopyDetail,
      judgement: 'faulty',
    };
    const why = `nocopy-mmap wrong-result: ${nocopyDetail}. ${MMAP_WHY}`;
    expect(r).toEqual({
      schema: 'metal-cap-shim/doctor@1',
      packageVersion: packageVersion(),
      generatedAt: r.generatedAt,
      supported: true,
      reason: null,
      detail: null,
      source: 'snapshot',
      snapshot: 'github-macos-14-arm64-runner',
      host: probeSnapshot('github-macos-14-arm64-runner').host,
      // Bound to the recorded host, an M1 guest: its own Apple7.
      candidateProfile: { ...profiles['host-family']!.profile, appleFamilyMax: 1007, mlxArchitecture: 'applegpu_g13g' },
      candidateWarnings: [],
      replayed: true,
      patchedRun: { ran: false, why: 'a recorded result is replayed: nothing runs' },
      settings: {
        probes: [...DOCTOR_PROBE_IDS],
        timeoutMs: null,
        mmapFile: null,
        mmapSize: null,
        device: null,
        allowAboveHardware: null,
      },
      devices: [
        {
          index: 0,
          isDefault: true,
          name: 'Apple Paravirtual device',
          className: 'AppleParavirtDevice',
          registryId: 4294968434,
          reported: {
            stock: { highestAppleFamily: null, maxThreadgroupMemoryLength: 32768, metal3: false },
            patched: null,
          },
          probes: DOCTOR_PROBE_IDS.map((id) => (id === 'nocopy-mmap' ? nocopy : { ...NOT_RECORDED, id })),
          differences: [],
          verifiedProfile: NOTHING,
          verifiedProfileReasons: [
            'no Apple family raised: nothing an Apple family gates was proven (simdgroup-reduction not-recorded, simdgroup-matrix not-recorded, bfloat not-recorded)',
            'threadgroup memory left as reported: no size proven (threadgroup-memory not-recorded)',
            'Metal3 not advertised: no residency set was proven to work (residency-set not-recorded)',
            'name left as the device reports it: with the host chip\'s name MLX would create its buffer heap, which it skips on "Apple Paravirtual device", and no heap was proven here (heap not-recorded)',
          ],
          recommendations: [
            { engine: 'llama.cpp', setting: '--no-mmap (llama-bench: -mmp 0)', why },
            { engine: 'node-llama-cpp', setting: 'llama.loadModel({ useMmap: false })', why },
          ],
          faults: ['nocopy-mmap: wrong-result'],
        },
      ],
      restore: null,
      cache: null,
    });
  });

  it('a device without a recording: every probe not-recorded; Metal3 kept where the device answers it', async () => {
    const d = (await replay({ snapshot: 'm1-ultra-bare-metal' })).devices[0]!;
    expect(d.probes).toEqual(DOCTOR_PROBE_IDS.map((id) => ({ ...NOT_RECORDED, id })));
    expect([d.verifiedProfile, d.recommendations, d.faults, d.differences, d.reported.patched]).toEqual([
      NOTHING,
      [],
      [],
      [],
      null,
    ]);
    expect(d.verifiedProfileReasons[2]).toBe('Metal3 left as the device answers it (YES)');
  });

  it('a full recording under `assumed`: measurements, the verified profile, the advice, as a live run would judge them', async () => {
    const file = guestRecording('guest-recorded-in-full', 'assumed', {
      'simdgroup-reduction': { status: 'pass', detail: 'simd_sum and simd_max agree' },
      'simdgroup-matrix': { status: 'pass', maxAbsError: 0.002 },
      bfloat: { status: 'wrong-result', detail: 'bfloat truncates', maxAbsError: 0.5 },
      'threadgroup-memory': {
        status: 'pass',
        detail: '49152 bytes ran',
        provenThreadgroupMemory: 32768,
        acceptedThreadgroupMemory: 49152,
        failedThreadgroupMemory: 57344,
      },
      'nocopy-mmap': {
        status: 'wrong-result',
        detail: 'the buffer reports length 0',
        bufferLength: 0,
        fault: 'zero-length',
      },
      'residency-set': { status: 'unsupported' },
      heap: { status: 'pass', detail: 'a buffer placed in a 1 MiB heap read back right' },
    });
    const r = await replay({ snapshot: file });
    expect(r.snapshot).toBe('guest-recorded-in-full');
    const d = r.devices[0]!;
    const run = (
      id: DoctorProbeId,
      status: string,
      judgement: string,
      detail: string,
      measured: Record<string, number> = {},
    ) => ({
      ...NOT_RECORDED,
      id,
      status,
      judgement,
      detail,
      ...measured,
    });
    expect(d.probes).toEqual([
      run('simdgroup-reduction', 'pass', 'proven', 'recorded: simd_sum and simd_max agree [assumed]'),
      run('simdgroup-matrix', 'pass', 'proven', 'recorded: ran and matched the CPU reference [assumed]', {
        maxAbsError: 0.002,
      }),
      run('bfloat', 'wrong-result', 'faulty', 'recorded: bfloat truncates [assumed]', { maxAbsError: 0.5 }),
      run('threadgroup-memory', 'pass', 'proven', 'recorded: 49152 bytes ran [assumed]', {
        provenThreadgroupMemory: 32768,
        acceptedThreadgroupMemory: 49152,
        failedThreadgroupMemory: 57344,
      }),
      run(
        'nocopy-mmap',
        'wrong-result',
        'faulty',
        'recorded: the buffer reports length 0 (fault: zero-length) [assumed]',
        { bufferLength: 0 },
      ),
      run(
        'residency-set',
        'unsupported',
        'absent',
        'recorded: this OS or Metal Shading Language version lacks the API [assumed]',
      ),
      run('heap', 'pass', 'proven', 'recorded: a buffer placed in a 1 MiB heap read back right [assumed]'),
    ]);
    // Of the recorded sizes, 49152 bytes were only accepted, which is never claimed; 32768 were proven, what the guest
    // reports.
    // The guest's host is an M1 Ultra, and the recording proves a heap: the chip's name is claimed.
    expect(d.verifiedProfile).toEqual({ ...NOTHING, appleFamilyMax: 1007, deviceName: 'Apple M1 Ultra' });
    expect(d.verifiedProfileReasons).toEqual([
      'Apple7: SIMD-group reduction and matrix computed right, llama.cpp’s gates for both; Apple7 includes Apple6, which also turns on llama.cpp’s bfloat, not proven here (bfloat wrong-result): see the recommendations',
      'threadgroup memory left at the reported 32768 bytes, which were proven',
      'Metal3 not advertised: no residency set was proven to work (residency-set unsupported)',
      'name "Apple M1 Ultra", the host\'s chip: a heap was created, a buffer placed in it and a compute pass wrote and read it back, so MLX\'s heap path (which the name turns on) was proven; engines that tune by chip tune for Apple M1 Ultra',
    ]);
    const mmapWhy = `nocopy-mmap wrong-result: recorded: the buffer reports length 0 (fault: zero-length) [assumed]. ${MMAP_WHY}`;
    expect(d.recommendations).toEqual([
      {
        engine: 'llama.cpp',
        setting: 'GGML_METAL_BF16_DISABLE=1',
        why: 'bfloat wrong-result: recorded: bfloat truncates [assumed]. ggml-metal turns bfloat on for Apple6 or Metal3 devices; this variable keeps BF16 kernels off (node-llama-cpp reads it too)',
      },
      { engine: 'llama.cpp', setting: '--no-mmap (llama-bench: -mmp 0)', why: mmapWhy },
      { engine: 'node-llama-cpp', setting: 'llama.loadModel({ useMmap: false })', why: mmapWhy },
    ]);
    expect(d.faults).toEqual(['bfloat: wrong-result', 'nocopy-mmap: wrong-result']);
  });

  it('probes not asked for are skipped (not asked) and prove nothing, even where the recording says pass', async () => {
    const file = guestRecording('guest-all-pass', 'assumed', {
      'simdgroup-reduction': { status: 'pass' },
      'simdgroup-matrix': { status: 'pass' },
      bfloat: { status: 'pass' },
      'threadgroup-memory': { status: 'pass', provenThreadgroupMemory: 32768, acceptedThreadgroupMemory: 65536 },
      'nocopy-mmap': { status: 'pass', bufferLength: 1048576 },
      'residency-set': { status: 'pass' },
      heap: { status: 'pass' },
    });
    const all = (await replay({ snapshot: file })).devices[0]!;
    // 65536 recorded as accepted, never claimed; 32768 proven, which the guest reports already.
    expect(all.verifiedProfile).toEqual({
      ...NOTHING,
      appleFamilyMax: 1007,
      families: { metal3: true },
      deviceName: 'Apple M1 Ultra',
    });
    const r = await replay({ snapshot: file, probes: ['residency-set', 'bfloat'] });
    expect(r.settings).toEqual({
      probes: ['bfloat', 'residency-set'],
      timeoutMs: null,
      mmapFile: null,
      mmapSize: null,
      device: null,
      allowAboveHardware: null,
    });
    const p = byId(r.devices[0]!.probes);
    expect(r.devices[0]!.probes.map((x) => [x.id, x.status, x.judgement, x.detail])).toEqual([
      ['simdgroup-reduction', 'skipped', 'unknown', 'not asked'],
      ['simdgroup-matrix', 'skipped', 'unknown', 'not asked'],
      ['bfloat', 'pass', 'proven', 'recorded: ran and matched the CPU reference [assumed]'],
      ['threadgroup-memory', 'skipped', 'unknown', 'not asked'],
      ['nocopy-mmap', 'skipped', 'unknown', 'not asked'],
      ['residency-set', 'pass', 'proven', 'recorded: ran and matched the CPU reference [assumed]'],
      ['heap', 'skipped', 'unknown', 'not asked'],
    ]);
    // A skipped probe carries no measurement from the recording.
    expect([
      p['threadgroup-memory']!.provenThreadgroupMemory,
      p['threadgroup-memory']!.acceptedThreadgroupMemory,
      p['nocopy-mmap']!.bufferLength,
    ]).toEqual([null, null, null]);
    expect(r.devices[0]!.verifiedProfile).toEqual({ ...NOTHING, appleFamilyMax: 1006 });
  });

  it('the candidate profile asked for is reported; nothing runs under it', async () => {
    const r = await replay({ snapshot: 'vz-guest-m1-ultra-tahoe-stock', profile: 'apple7' });
    expect([r.candidateProfile, r.patchedRun, r.devices[0]!.probes.every((p) => p.patched === undefined)]).toEqual([
      profiles.apple7!.profile,
      { ran: false, why: 'a recorded result is replayed: nothing runs' },
      true,
    ]);
  });

  it('device: any recorded index (first and last), one past the last is a typed error naming the range', async () => {
    const first = await replay({ snapshot: 'macbookpro16-intel-amd-two-gpus', device: 0 });
    const last = await replay({ snapshot: 'macbookpro16-intel-amd-two-gpus', device: 1 });
    expect(
      [first, last].map((r) => [r.settings.device, r.devices.map((d) => [d.index, d.isDefault, d.className])]),
    ).toEqual([
      [0, [[0, false, 'MTLIGAccelDevice']]],
      [1, [[1, true, 'AMDRadeonX6000_AMDNavi14GraphicsDevice']]],
    ]);
    expect((await replay({ snapshot: 'macbookpro16-intel-amd-two-gpus' })).devices.map((d) => d.index)).toEqual([0, 1]);
    let err: unknown;
    try {
      await replay({ snapshot: 'macbookpro16-intel-amd-two-gpus', device: 2 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidOptionsError);
    expect([(err as InvalidOptionsError).option, (err as Error).message]).toEqual([
      'device',
      "doctor() option 'device' (--device): snapshot macbookpro16-intel-amd-two-gpus has no device 2; it records 2 (0–1)",
    ]);
  });
});
