// The native doctor() through the real addon (lib/device/native.ts loadNative(), no mock), over the simulated Metal built
// from test/fixtures/snapshots/doctor-faults.json: device 0 works, devices 1–3 carry every fault the snapshot format
// can record, device 4 hangs on every probe, device 5 has threadgroup memory that reads as zero. What this proves is
// the plumbing and the decisions (status, measured values, deadlines, clean-up); the MSL itself runs only on a Mac
// (test/live/). Runtime exercised: GCC's libobjc with GNUstep Foundation.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = new URL('../fixtures/snapshots/doctor-faults.json', import.meta.url).pathname;

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DOCTOR_PROBE_IDS } from '../../lib/device/doctor-vocabulary.js';
import type { NativeBinding, NativeDoctorOptions } from '../../types/binding.js';
import {
  doctorOptions as options,
  freshDir,
  GENERATED,
  MMAP_SIZE,
  NO_RESIDENCY_API,
  nativeBinding,
  outcome,
  PASSES,
  removeTempDirs,
  SAMPLED,
} from '../support/doctor-helpers.js';
import { describeSim, requireSimBuild, root } from '../support/helpers.js';

const HEALTHY = 0;
const FAULTS_A = 1;
const FAULTS_B = 2;
const FAULTS_C = 3;
const HANGS = 4;
const UNBACKED = 5;

let binding: NativeBinding;
const openDescriptors = () => readdirSync('/proc/self/fd').length;

/** What process `pid` has open under `dir` (readlink of its descriptors); empty when nothing is. */
function filesOpenUnder(pid: number, dir: string): string[] {
  const fds = `/proc/${pid}/fd`;
  const out: string[] = [];
  for (const fd of readdirSync(fds)) {
    try {
      const target = readlinkSync(`${fds}/${fd}`);
      if (target.startsWith(`${dir}/`)) out.push(target);
    } catch {
      // closed between the listing and the readlink
    }
  }
  return out;
}

/** Polls `probe` until it returns `count` entries, or fails after `ms`. */
async function waitFor(probe: () => string[], count: number, ms: number): Promise<string[]> {
  const end = Date.now() + ms;
  for (;;) {
    const found = probe();
    if (found.length >= count) return found;
    if (Date.now() > end) throw new Error(`nothing turned up within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describeSim('native doctor() over the simulated Metal', () => {
  beforeAll(() => {
    requireSimBuild();
    binding = nativeBinding();
  });
  afterAll(removeTempDirs);

  it('a device that works passes every probe, with the measured values', () => {
    const o = options(HEALTHY);
    const r = binding.doctor(o);
    expect(r.device).toEqual({
      index: 0,
      name: 'Simulated device that works',
      className: 'SimDoctorHealthy',
      registryId: 4294968434,
    });
    expect(r.outcomes).toEqual([
      PASSES.reduction,
      PASSES.matrix,
      PASSES.bfloat,
      PASSES.threadgroup,
      PASSES.nocopy,
      PASSES.residency,
      PASSES.heap,
    ]);
    for (const x of r.outcomes) {
      expect(x.ms).toBeGreaterThanOrEqual(0);
      expect(x.ms).toBeLessThan(o.timeoutMs);
    }
    expect(readdirSync(o.tempDir)).toEqual([]);
  });

  it('faults (a): lost lane, pipeline error, truncating bfloat, a threadgroup limit, stale pages, no residency set, a lost heap write', () => {
    const r = binding.doctor(options(FAULTS_A));
    expect(r.outcomes).toEqual([
      outcome(
        'simdgroup-reduction',
        'wrong-result',
        '256 of 256 threads differ from the CPU; thread 0: simd_sum 0 (CPU -14), simd_max 50 (CPU 50)',
      ),
      outcome(
        'simdgroup-matrix',
        'fail',
        'creating the pipeline for mcs_doctor_matmul_f32 failed: simulated pipeline failure, recorded in the snapshot: fixture: pipeline creation fails',
        { buildFailed: true },
      ),
      outcome(
        'bfloat',
        'wrong-result',
        '582 of 768 bfloat results differ; bfloat(x) for x = -0.943359375, y = -0.196868643 gave -0.94140625, round-to-nearest-even gives -0.9453125',
        { maxAbsError: 8 },
      ),
      outcome(
        'threadgroup-memory',
        'pass',
        '32768 bytes proven by 1024 concurrent threadgroups of 256 threads; 49152 bytes rejected: simulated: 49152 bytes of threadgroup memory exceed what this device accepts (32768 bytes, recorded in the snapshot: fixture: dispatches above 32768 bytes fail)',
        { provenThreadgroupMemory: 32768, failedThreadgroupMemory: 49152 },
      ),
      outcome(
        'nocopy-mmap',
        'wrong-result',
        `stale data: after the file's pages changed, the GPU read 64 of ${SAMPLED} wrong, 64 of them as they were before`,
        { bufferLength: MMAP_SIZE },
      ),
      outcome(
        'residency-set',
        'fail',
        'newResidencySetWithDescriptor:error: failed: simulated residency-set failure, recorded in the snapshot: fixture: Unable to construct residency set',
        { buildFailed: true },
      ),
      outcome(
        'heap',
        'wrong-result',
        '1 of 256 words of the placed buffer differ from what the GPU was to write, and 1 read back wrong',
      ),
    ]);
  });

  it('faults (b): pipeline error, a matrix off by one, MSL 3.1 rejected, unbacked memory above a size, zero-length NoCopy, no residency API, no heap', () => {
    const r = binding.doctor(options(FAULTS_B));
    expect(r.outcomes).toEqual([
      outcome(
        'simdgroup-reduction',
        'fail',
        'creating the pipeline for mcs_doctor_simd_reduce failed: simulated pipeline failure, recorded in the snapshot: fixture: pipeline creation fails',
        { buildFailed: true },
      ),
      outcome(
        'simdgroup-matrix',
        'wrong-result',
        'simdgroup_multiply_accumulate differs from the CPU: 8x8 float max |error| 1 > 0.0001; 32x32 float max |error| 1 > 0.0001; 8x8 half max |error| 1 > 0.01; 32x32 half max |error| 1 > 0.01',
        { maxAbsError: 1 },
      ),
      outcome(
        'bfloat',
        'unsupported',
        'compiling mcs_doctor_bfloat failed: simulated: MSL 3.1 rejected for mcs_doctor_bfloat (recorded in the snapshot: fixture: MSL 3.1 rejected)',
        { buildFailed: true },
      ),
      outcome(
        'threadgroup-memory',
        'wrong-result',
        '32768 bytes proven by 1024 concurrent threadgroups of 256 threads; 49152 bytes accepted but computed wrong under 1024 concurrent threadgroups: 1024 of them read back words they did not write (8388608 wrong words; first threadgroup 0)',
        { provenThreadgroupMemory: 32768, failedThreadgroupMemory: 49152 },
      ),
      outcome(
        'nocopy-mmap',
        'wrong-result',
        `the NoCopy buffer over ${GENERATED} reports a length of 0 bytes for ${MMAP_SIZE} bytes (reading it would crash, so it was not read)`,
        { bufferLength: 0 },
      ),
      NO_RESIDENCY_API,
      outcome('heap', 'fail', 'newHeapWithDescriptor: gave no heap of 1048576 bytes'),
    ]);
  });

  it('faults (c): MSL 2.3 rejected, pipeline errors, a nil NoCopy buffer, a resident buffer read wrong, no heap API', () => {
    const r = binding.doctor(options(FAULTS_C));
    const pipelineFailure = (fn: string) =>
      `creating the pipeline for ${fn} failed: simulated pipeline failure, recorded in the snapshot: fixture: pipeline creation fails`;
    expect(r.outcomes).toEqual([
      outcome(
        'simdgroup-reduction',
        'unsupported',
        'compiling mcs_doctor_simd_reduce failed: simulated: MSL 2.3 rejected for mcs_doctor_simd_reduce (recorded in the snapshot: fixture: MSL 2.3 rejected)',
        { buildFailed: true },
      ),
      outcome(
        'simdgroup-matrix',
        'unsupported',
        'compiling mcs_doctor_matmul_f32 failed: simulated: MSL 2.3 rejected for mcs_doctor_matmul_f32 (recorded in the snapshot: fixture: MSL 2.3 rejected)',
        { buildFailed: true },
      ),
      outcome('bfloat', 'fail', pipelineFailure('mcs_doctor_bfloat'), { buildFailed: true }),
      outcome('threadgroup-memory', 'fail', pipelineFailure('mcs_doctor_threadgroup'), { buildFailed: true }),
      outcome('nocopy-mmap', 'fail', `newBufferWithBytesNoCopy returned nil for ${MMAP_SIZE} bytes of ${GENERATED}`),
      outcome('residency-set', 'wrong-result', 'a kernel reading the resident buffer got 1 of 1024 words wrong'),
      outcome('heap', 'unsupported', 'this device has no heaps (newHeapWithDescriptor:)'),
    ]);
  });

  it('threadgroup memory that is accepted but not backed: wrong-result at the smallest size, nothing proven', () => {
    const r = binding.doctor(options(UNBACKED, { probes: ['threadgroup-memory'] }));
    expect(r.outcomes).toEqual([
      outcome(
        'threadgroup-memory',
        'wrong-result',
        '16384 bytes accepted but computed wrong under 1024 concurrent threadgroups: 1024 of them read back words they did not write (8388608 wrong words; first threadgroup 0)',
        {
          failedThreadgroupMemory: 16384,
        },
      ),
    ]);
  });

  it('threadgroup sizes stop at the first failure and are measured up to it', () => {
    const r = binding.doctor(options(FAULTS_A, { probes: ['threadgroup-memory'], threadgroupSizes: [16384, 32768] }));
    expect(r.outcomes).toEqual([
      outcome(
        'threadgroup-memory',
        'pass',
        '32768 bytes proven by 1024 concurrent threadgroups of 256 threads (the largest size asked for)',
        {
          provenThreadgroupMemory: 32768,
        },
      ),
    ]);
    const first = binding.doctor(
      options(FAULTS_A, { probes: ['threadgroup-memory'], threadgroupSizes: [49152, 65536] }),
    );
    expect(first.outcomes[0]).toMatchObject({
      status: 'fail',
      provenThreadgroupMemory: null,
      failedThreadgroupMemory: 49152,
    });
  });

  it('a hanging device: every probe times out after its own deadline, and the call returns', () => {
    const timeoutMs = 150;
    const o = options(HANGS, { timeoutMs });
    const before = openDescriptors();
    const start = performance.now();
    const r = binding.doctor(o);
    const elapsed = performance.now() - start;
    expect(r.outcomes.map((x) => [x.id, x.status, x.gpuTimedOut])).toEqual(
      DOCTOR_PROBE_IDS.map((id) => [id, 'timeout', true]),
    );
    expect(r.outcomes.map((x) => x.detail)).toEqual([
      'the reduction dispatch did not complete within 150 ms',
      'the 8x8 float product did not complete within 150 ms',
      'the bfloat dispatch did not complete within 150 ms',
      'the dispatch with 16384 bytes did not complete within 150 ms',
      'the checksum dispatch over the NoCopy buffer did not complete within 150 ms',
      'the dispatch using the residency set did not complete within 150 ms',
      'the dispatch writing the placed buffer did not complete within 150 ms',
    ]);
    // The simulated hang lasts for ever, so any upper bound shows the deadline; the slack is for a loaded machine,
    // where a waking thread can lag by hundreds of milliseconds.
    for (const x of r.outcomes) {
      expect(x.ms).toBeGreaterThanOrEqual(timeoutMs);
      expect(x.ms).toBeLessThan(timeoutMs + 1000);
    }
    expect(elapsed).toBeGreaterThanOrEqual(7 * timeoutMs);
    expect(elapsed).toBeLessThan(7 * timeoutMs + 3000);
    expect(r.outcomes[4]!.bufferLength).toBe(MMAP_SIZE);
    expect(readdirSync(o.tempDir)).toEqual([]);
    expect(openDescriptors()).toBe(before);
  });

  // The deadline bounds the GPU's work: writing the generated file comes first, so a slow disk is never a hang.
  it('writing the generated file is outside the deadline: a 1 ms budget and a 64 MiB file still pass', () => {
    const o = options(HEALTHY, { probes: ['nocopy-mmap'], timeoutMs: 1, mmapSize: 64 << 20 });
    const r = binding.doctor(o);
    const generated = 'a generated 67108864 bytes file';
    expect(r.outcomes).toEqual([
      outcome(
        'nocopy-mmap',
        'pass',
        `the GPU read all 64 sampled blocks (4096 bytes each) of ${generated} through a NoCopy buffer over its mmap as the file holds them, also after the file's pages changed`,
        { bufferLength: 64 << 20 },
      ),
    ]);
    // ms counts the whole probe, the writing included: far beyond the 1 ms budget, yet no timeout.
    expect(r.outcomes[0]!.ms).toBeGreaterThan(1);
    expect(r.outcomes[0]!.ms).toBeLessThan(60_000);
    expect(readdirSync(o.tempDir)).toEqual([]);
  });

  it('after a 64 MiB file is written, a hanging GPU still gets its whole deadline, and its dispatch is what times out', () => {
    const timeoutMs = 150;
    const o = options(HANGS, { probes: ['nocopy-mmap'], timeoutMs, mmapSize: 64 << 20 });
    const r = binding.doctor(o);
    expect(r.outcomes).toEqual([
      outcome('nocopy-mmap', 'timeout', 'the checksum dispatch over the NoCopy buffer did not complete within 150 ms', {
        bufferLength: 64 << 20,
        gpuTimedOut: true,
      }),
    ]);
    expect(r.outcomes[0]!.ms).toBeGreaterThanOrEqual(timeoutMs);
    expect(r.outcomes[0]!.ms).toBeLessThan(60_000);
    expect(readdirSync(o.tempDir)).toEqual([]);
  });

  it('the generated file has no directory entry while the probe runs, so a killed process leaves nothing behind', async () => {
    // A child hangs in the probe with the file written and mapped; its descriptors show the file, the directory
    // does not. SIGKILL runs no destructor, so what is left after it is what any crash or Ctrl-C would leave.
    const dir = freshDir();
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createRequire } from 'node:module';
         const require = createRequire(${JSON.stringify(path.join(root, 'package.json'))});
         const binding = require(${JSON.stringify(path.join(root, 'build', 'Release', 'metal_cap_shim.node'))});
         binding.doctor(${JSON.stringify(options(HANGS, { probes: ['nocopy-mmap'], timeoutMs: 120_000, mmapSize: 8 << 20, tempDir: dir }))});`,
      ],
      { env: process.env, stdio: 'ignore' },
    );
    try {
      // The writer and the reader, both open on one file that no longer has a name.
      const open = await waitFor(() => filesOpenUnder(child.pid!, dir), 2, 30_000);
      expect(open).toEqual([open[0], open[0]]);
      expect(open[0]).toMatch(new RegExp(`^${dir}/metal-cap-shim-doctor-\\w{6} \\(deleted\\)$`));
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  it('leaves no file, no descriptor and no hook behind, whatever the outcome', () => {
    const statusBefore = binding.status();
    expect(statusBefore.hooks).toEqual([]);
    const before = openDescriptors();
    for (const device of [HEALTHY, FAULTS_A, FAULTS_B, FAULTS_C, UNBACKED]) {
      const o = options(device);
      binding.doctor(o);
      expect(readdirSync(o.tempDir)).toEqual([]);
    }
    expect(openDescriptors()).toBe(before);
    expect(binding.status()).toEqual(statusBefore);
  });

  it("reads the user's file read-only: length rounded to whole pages, contents and times unchanged", () => {
    const dir = freshDir();
    const file = path.join(dir, 'model.gguf');
    const bytes = Buffer.alloc(100_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + 7) & 0xff;
    writeFileSync(file, bytes);
    const { mtimeMs } = statSync(file);
    const before = openDescriptors();
    const r = binding.doctor(options(HEALTHY, { probes: ['nocopy-mmap'], mmapFile: file, tempDir: dir }));
    expect(r.outcomes).toEqual([
      outcome(
        'nocopy-mmap',
        'pass',
        `the GPU read all 25 sampled blocks (4096 bytes each) of '${file}' through a NoCopy buffer over its mmap as the file holds them; page-change check skipped: '${file}' is opened read-only; run without --mmap-file to test stale pages`,
        { bufferLength: 102400 },
      ),
    ]);
    expect(readFileSync(file).equals(bytes)).toBe(true);
    expect(statSync(file).mtimeMs).toBe(mtimeMs);
    expect(readdirSync(dir)).toEqual(['model.gguf']);
    expect(openDescriptors()).toBe(before);
  });

  it("the user's file never changes, so only a generated file shows stale pages, and the pass says so; a zero length shows on both", () => {
    const dir = freshDir();
    const file = path.join(dir, 'weights.bin');
    writeFileSync(file, Buffer.alloc(8192, 1));
    const stale = binding.doctor(options(FAULTS_A, { probes: ['nocopy-mmap'], mmapFile: file }));
    expect(stale.outcomes).toEqual([
      outcome(
        'nocopy-mmap',
        'pass',
        `the GPU read all 2 sampled blocks (4096 bytes each) of '${file}' through a NoCopy buffer over its mmap as the file holds them; page-change check skipped: '${file}' is opened read-only; run without --mmap-file to test stale pages`,
        { bufferLength: 8192 },
      ),
    ]);
    expect(readFileSync(file).equals(Buffer.alloc(8192, 1))).toBe(true);
    const zero = binding.doctor(options(FAULTS_B, { probes: ['nocopy-mmap'], mmapFile: file }));
    expect(zero.outcomes).toEqual([
      outcome(
        'nocopy-mmap',
        'wrong-result',
        `the NoCopy buffer over '${file}' reports a length of 0 bytes for 8192 bytes (reading it would crash, so it was not read)`,
        { bufferLength: 0 },
      ),
    ]);
  });

  it('what cannot be prepared is an error or a skip, never a crash', () => {
    const missing = path.join(freshDir(), 'missing.gguf');
    const empty = path.join(freshDir(), 'empty.gguf');
    writeFileSync(empty, '');
    const run = (extra: Partial<NativeDoctorOptions>) =>
      binding.doctor(options(HEALTHY, { probes: ['nocopy-mmap'], ...extra })).outcomes[0]!;
    expect(run({ mmapFile: missing })).toEqual(
      outcome('nocopy-mmap', 'error', `cannot open '${missing}' read-only: No such file or directory`),
    );
    expect(run({ mmapFile: empty })).toEqual(
      outcome('nocopy-mmap', 'error', `'${empty}' is not a non-empty regular file`),
    );
    expect(run({ mmapFile: path.dirname(empty) })).toEqual(
      outcome('nocopy-mmap', 'error', `'${path.dirname(empty)}' is not a non-empty regular file`),
    );
    expect(run({ tempDir: '/nonexistent-mcs-dir' })).toEqual(
      outcome('nocopy-mmap', 'error', 'cannot create a file in /nonexistent-mcs-dir: No such file or directory'),
    );
    expect(run({ mmapSize: 4095 })).toEqual(
      outcome('nocopy-mmap', 'skipped', 'no file to map: give a file, or a size of at least 4096 bytes'),
    );
    expect(binding.doctor(options(HEALTHY, { probes: ['threadgroup-memory'], threadgroupSizes: [] })).outcomes).toEqual(
      [outcome('threadgroup-memory', 'skipped', 'no threadgroup sizes were asked for')],
    );
  });

  it('runs the probes asked for, in the order asked', () => {
    const r = binding.doctor(options(HEALTHY, { probes: ['residency-set', 'bfloat'] }));
    expect(r.outcomes.map((x) => [x.id, x.status])).toEqual([
      ['residency-set', 'pass'],
      ['bfloat', 'pass'],
    ]);
    expect(binding.doctor(options(HEALTHY, { probes: [] })).outcomes).toEqual([]);
  });

  it('a device Metal does not list: ERR_NO_DEVICE naming the range', () => {
    expect(() => binding.doctor(options(6))).toThrow(
      expect.objectContaining({ code: 'ERR_NO_DEVICE', message: 'Metal has no device 6 (it lists 6: 0–5)' }),
    );
  });

  it.each([
    ['no object', undefined, 'doctor(options) takes an options object'],
    ['a negative device', { device: -1 }, 'doctor(options): device must be a device index'],
    ['an unknown probe', { probes: ['tensor'] }, 'doctor(options): probes[0] is not a probe id'],
    ['a zero timeout', { timeoutMs: 0 }, 'doctor(options): timeoutMs must be a positive number'],
    ['sizes that do not ascend', { threadgroupSizes: [32768, 16384] }, 'doctor(options): threadgroupSizes must ascend'],
    [
      'a fractional size',
      { threadgroupSizes: [1.5] },
      'doctor(options): threadgroupSizes[0] must be a positive integer',
    ],
    ['a numeric file', { mmapFile: 3 }, 'doctor(options): mmapFile must be a path or null'],
    ['a negative mmap size', { mmapSize: -1 }, 'doctor(options): mmapSize must be a byte count'],
    ['an empty temp dir', { tempDir: '' }, 'doctor(options): tempDir must be a directory path'],
  ])('malformed options (%s): a TypeError with ERR_INVALID_ARGUMENT', (_name, change, message) => {
    const arg = change === undefined ? undefined : { ...options(HEALTHY), ...change };
    let thrown: unknown;
    try {
      (binding.doctor as (o: unknown) => unknown)(arg);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect(thrown).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', message });
  });
});
