// The native doctor() through the real addon (lib/device/native.ts loadNative(), no mock), over the simulated Metal,
// one describe block per snapshot (useSimulation): the fault fixture, the bundled snapshots of macOS 26, 13 and 14, the
// simulated GPU's own behaviours and a slow compiler and GPU. What this proves is the plumbing and the decisions
// (status, measured values, deadlines, clean-up); the MSL itself runs only on a Mac (test/live/). Runtime exercised:
// GCC's libobjc with GNUstep Foundation.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it, afterEach } from 'vitest';
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
  doctorOptions,
} from '../support/doctor-helpers.js';
import { describeSim, requireSimBuild, root, loadFixture } from '../support/helpers.js';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { APPLE_GPU_THREADGROUP_MEMORY } from '../../lib/patch/profiles.js';
import { useSimulation } from '../support/simulation.js';

// The native doctor() through the real addon (lib/device/native.ts loadNative(), no mock), over the simulated Metal built
// from test/fixtures/snapshots/doctor-faults.json: device 0 works, devices 1–3 carry every fault the snapshot format
// can record, device 4 hangs on every probe, device 5 has threadgroup memory that reads as zero. What this proves is
// the plumbing and the decisions (status, measured values, deadlines, clean-up); the MSL itself runs only on a Mac
// (test/live/). Runtime exercised: GCC's libobjc with GNUstep Foundation.
describeSim('test/fixtures/snapshots/doctor-faults.json', () => {
  useSimulation(() => new URL('../fixtures/snapshots/doctor-faults.json', import.meta.url).pathname);

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
        outcome(
          'nocopy-mmap',
          'timeout',
          'the checksum dispatch over the NoCopy buffer did not complete within 150 ms',
          {
            bufferLength: 64 << 20,
            gpuTimedOut: true,
          },
        ),
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

    it("pages the user's file in before the GPU's deadline starts: no page under the NoCopy buffer is cold when it is made", () => {
      const dir = freshDir();
      const file = path.join(dir, 'cold.gguf');
      writeFileSync(file, Buffer.alloc(4 << 20, 7));
      // Out of the page cache, as a model not read since boot is (GNU dd: count=0 drops the whole file's clean pages).
      execFileSync('sync');
      execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0'], { stdio: 'ignore' });
      const fixture = loadFixture();
      expect(fixture.residentPages(file).resident).toBeLessThan(fixture.residentPages(file).pages);
      const before = fixture.noCopyColdPages();
      const r = binding.doctor(options(HEALTHY, { probes: ['nocopy-mmap'], mmapFile: file, tempDir: dir }));
      expect(r.outcomes.map((o) => o.status)).toEqual(['pass']);
      expect(fixture.noCopyColdPages() - before).toBe(0);
      expect(fixture.residentPages(file)).toEqual({ resident: 1024, pages: 1024 });
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
      // A FIFO with no writer (as one swapped in after the TypeScript check would be): refused by its descriptor at
      // once; a blocking open would wait for a writer for ever.
      const fifo = path.join(freshDir(), 'model.gguf');
      execFileSync('mkfifo', [fifo]);
      expect(run({ mmapFile: fifo })).toEqual(
        outcome('nocopy-mmap', 'error', `'${fifo}' is not a non-empty regular file`),
      );
      expect(run({ tempDir: '/nonexistent-mcs-dir' })).toEqual(
        outcome('nocopy-mmap', 'error', 'cannot create a file in /nonexistent-mcs-dir: No such file or directory'),
      );
      expect(run({ mmapSize: 4095 })).toEqual(
        outcome('nocopy-mmap', 'skipped', 'no file to map: give a file, or a size of at least 4096 bytes'),
      );
      expect(
        binding.doctor(options(HEALTHY, { probes: ['threadgroup-memory'], threadgroupSizes: [] })).outcomes,
      ).toEqual([outcome('threadgroup-memory', 'skipped', 'no threadgroup sizes were asked for')]);
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
      [
        'sizes that do not ascend',
        { threadgroupSizes: [32768, 16384] },
        'doctor(options): threadgroupSizes must ascend',
      ],
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
});

// The native doctor() over the bundled stock Tahoe guest, whose doctor section records that a residency set could not
// be constructed there (trycua/cua PR 3070, MLX ablation): the API exists (macOS 26), creating a set fails with
// Metal's error text, everything else runs. Real addon through lib/device/native.ts, GCC's runtime.
describeSim('the stock Tahoe guest (vz-guest-m1-ultra-tahoe-stock)', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');

  let binding: NativeBinding;

  describeSim('native doctor() in the stock Tahoe guest (snapshot)', () => {
    beforeAll(() => {
      requireSimBuild();
      binding = nativeBinding();
    });
    afterAll(removeTempDirs);

    it('creating a residency set fails, as an object that cannot be made (buildFailed); the other probes pass', () => {
      const r = binding.doctor(doctorOptions(0));
      expect(r.outcomes).toEqual([
        PASSES.reduction,
        PASSES.matrix,
        PASSES.bfloat,
        PASSES.threadgroup,
        PASSES.nocopy,
        outcome(
          'residency-set',
          'fail',
          'newResidencySetWithDescriptor:error: failed: simulated residency-set failure, recorded in the snapshot: MLX could not construct a residency set in this guest ("Unable to construct residency set")',
          { buildFailed: true },
        ),
        PASSES.heap,
      ]);
    });

    it('doctor installs no hook and takes none away, with or without a profile applied', () => {
      expect(binding.status().hooks).toEqual([]);
      binding.doctor(doctorOptions(0, { probes: ['simdgroup-reduction', 'residency-set'] }));
      expect(binding.status()).toMatchObject({ active: false, hooks: [] });

      expect(applyProfile('cua-release').applied).toBe(true);
      const patched = binding.status();
      expect(patched.hooks.length).toBeGreaterThan(0);
      const r = binding.doctor(doctorOptions(0, { probes: ['simdgroup-reduction', 'residency-set'] }));
      expect(r.outcomes.map((o) => o.status)).toEqual(['pass', 'fail']);
      expect(binding.status()).toEqual(patched);
      restore();
      expect(binding.status()).toMatchObject({ active: false, hooks: [] });
    });
  });
});

// The native doctor() over a bundled snapshot of macOS 13 (two devices, Intel and AMD): what the OS lacks is
// `unsupported`, decided before any compile (bfloat: MSL 3.1 is macOS 14+) or by the missing API (residency sets:
// macOS 15+). Real addon through lib/device/native.ts; GCC's runtime; the simulated Metal.
describeSim('macOS 13 (macbookpro16-intel-amd-two-gpus)', () => {
  useSimulation('macbookpro16-intel-amd-two-gpus');

  let binding: NativeBinding;

  describeSim('native doctor() on macOS 13', () => {
    beforeAll(() => {
      requireSimBuild();
      binding = nativeBinding();
    });
    afterAll(removeTempDirs);

    it.each([
      [0, 'MTLIGAccelDevice'],
      [1, 'AMDRadeonX6000_AMDNavi14GraphicsDevice'],
    ])('device %i (%s): bfloat and residency sets are unsupported, the rest runs', (device, className) => {
      const r = binding.doctor(doctorOptions(device));
      expect(r.device.className).toBe(className);
      expect(r.outcomes).toEqual([
        PASSES.reduction,
        PASSES.matrix,
        outcome('bfloat', 'unsupported', 'bfloat needs MSL 3.1, which macOS 13 does not have (macOS 14+)'),
        PASSES.threadgroup,
        PASSES.nocopy,
        NO_RESIDENCY_API,
        PASSES.heap,
      ]);
    });

    it('the bfloat decision costs no compile: it returns well inside a millisecond budget', () => {
      const r = binding.doctor(doctorOptions(0, { probes: ['bfloat'], timeoutMs: 1 }));
      expect(r.outcomes).toEqual([
        outcome('bfloat', 'unsupported', 'bfloat needs MSL 3.1, which macOS 13 does not have (macOS 14+)'),
      ]);
    });
  });
});

// The native doctor() over the bundled GitHub macos-14 arm64 runner snapshot, whose doctor section records the stale
// NoCopy-over-mmap data of unslothai/llama.cpp PR 37: the simulated device serves stale pages, and the probe sees it
// once the generated file's pages change. macOS 14 has MSL 3.1 but no residency sets. Real addon, GCC's runtime.
describeSim('the macos-14 arm64 runner (github-macos-14-arm64-runner)', () => {
  useSimulation('github-macos-14-arm64-runner');

  let binding: NativeBinding;

  describeSim('native doctor() on the macos-14 arm64 runner (snapshot)', () => {
    beforeAll(() => {
      requireSimBuild();
      binding = nativeBinding();
    });
    afterAll(removeTempDirs);

    it('stale NoCopy pages are found, bfloat runs, residency sets are absent', () => {
      const r = binding.doctor(doctorOptions(0));
      expect(r.device).toEqual({
        index: 0,
        name: 'Apple Paravirtual device',
        className: 'AppleParavirtDevice',
        registryId: 4294968434,
      });
      expect(r.outcomes).toEqual([
        PASSES.reduction,
        PASSES.matrix,
        PASSES.bfloat,
        PASSES.threadgroup,
        outcome(
          'nocopy-mmap',
          'wrong-result',
          `stale data: after the file's pages changed, the GPU read 64 of ${SAMPLED} wrong, 64 of them as they were before`,
          { bufferLength: MMAP_SIZE },
        ),
        NO_RESIDENCY_API,
        PASSES.heap,
      ]);
    });
  });
});

// The native doctor() over test/fixtures/snapshots/doctor-sim-behaviours.json: device 0's Metal raises an
// NSException at commit on every probe (the `error` status), device 1 accepts threadgroup memory up to what it
// *answers* (threadgroup-memory fault `answered-limit`), so a profile that raises the answer proves more; device 2's
// threadgroups overlap above 32 KiB when several run at once (`threadgroups-overlap`); device 3's compiler never
// finishes the bfloat and heap kernels (fault `compile`); device 4's pipelines run 64-wide SIMD-groups. Real addon
// through lib/device/native.ts, the simulated Metal. Runtime exercised: GCC's libobjc with GNUstep Foundation, where the
// exception reaches doctor's `@catch (NSException *)` through GCC's Objective-C personality (src-native/doctor/doctor.mm).
describeSim('test/fixtures/snapshots/doctor-sim-behaviours.json', () => {
  useSimulation(() => new URL('../fixtures/snapshots/doctor-sim-behaviours.json', import.meta.url).pathname);

  const RAISES = 0;
  const ANSWERED_LIMIT = 1;
  const OVERLAP = 2;
  const SLOW_COMPILER = 3;
  const WIDE_SIMD = 4;

  let binding: NativeBinding;
  const openDescriptors = () => readdirSync('/proc/self/fd').length;

  describeSim('native doctor() over simulated behaviours: a Metal exception, a limit that follows the answer', () => {
    beforeAll(() => {
      requireSimBuild();
      binding = nativeBinding();
    });
    afterEach(() => {
      if (status().active) restore();
    });
    afterAll(removeTempDirs);

    it('a Metal exception at commit: every probe is an error carrying its name and reason, and the call returns', () => {
      const o = options(RAISES);
      const before = openDescriptors();
      const r = binding.doctor(o);
      const raised =
        'Metal raised NSInternalInconsistencyException: simulated exception at commit, recorded in the snapshot: fixture: Metal raises at commit';
      expect(r.outcomes).toEqual(DOCTOR_PROBE_IDS.map((id) => outcome(id, 'error', raised)));
      expect(readdirSync(o.tempDir)).toEqual([]);
      expect(openDescriptors()).toBe(before);
      // The process and its Objective-C runtime carry on: the next call works as before.
      expect(binding.doctor(options(ANSWERED_LIMIT, { probes: ['bfloat'] })).outcomes).toEqual([PASSES.bfloat]);
    });

    it('a threadgroup limit that follows the answer: stock proves 32768 bytes, under a profile answering 65536 it accepts 65536 (proven only up to 32768)', () => {
      const probe = { probes: ['threadgroup-memory' as const] };
      const stock = binding.doctor(options(ANSWERED_LIMIT, probe));
      expect(stock.outcomes).toEqual([
        outcome(
          'threadgroup-memory',
          'pass',
          "32768 bytes proven by 1024 concurrent threadgroups of 256 threads; 49152 bytes rejected: simulated: 49152 bytes of threadgroup memory exceed the device's answer (maxThreadgroupMemoryLength 32768, recorded in the snapshot: fixture: the limit is the answered maxThreadgroupMemoryLength)",
          { provenThreadgroupMemory: 32768, failedThreadgroupMemory: 49152 },
        ),
      ]);
      const applied = applyProfile({ maxThreadgroupMemoryLength: 65536 });
      expect(applied.applied).toBe(true);
      const patched = binding.doctor(options(ANSWERED_LIMIT, probe));
      expect(patched.outcomes).toEqual([PASSES.threadgroup]);
      restore();
      // Taken out again, the device is back to its stock limit.
      expect(binding.doctor(options(ANSWERED_LIMIT, probe)).outcomes).toEqual(
        stock.outcomes.map((x) => ({ ...x, ms: expect.any(Number), compileMs: expect.any(Number) })),
      );
    });

    it('threadgroups that corrupt each other above 32 KiB: a lone threadgroup reads back what it wrote, 1024 at once do not', () => {
      const probe = { probes: ['threadgroup-memory' as const] };
      expect(binding.doctor(options(OVERLAP, { ...probe, threadgroupGroups: 1 })).outcomes).toEqual([
        outcome(
          'threadgroup-memory',
          'pass',
          '32768 bytes proven by 1 concurrent threadgroups of 256 threads; 65536 bytes accepted and computed right, unverifiable: threadgroups above 32768 bytes may never share a GPU core (the largest size asked for)',
          {
            provenThreadgroupMemory: 32768,
            acceptedThreadgroupMemory: 65536,
          },
        ),
      ]);
      expect(binding.doctor(options(OVERLAP, probe)).outcomes).toEqual([
        outcome(
          'threadgroup-memory',
          'wrong-result',
          '32768 bytes proven by 1024 concurrent threadgroups of 256 threads; 49152 bytes accepted but computed wrong under 1024 concurrent threadgroups: 896 of them read back words they did not write (7340032 wrong words; first threadgroup 0)',
          { provenThreadgroupMemory: 32768, failedThreadgroupMemory: 49152 },
        ),
      ]);
    });

    it('sizes above the stock limit are tried only where allowed (a VM), and the validation layer is judged by the stock limit, not the hooked answer', () => {
      const probe = { probes: ['threadgroup-memory' as const] };
      const notVm = binding.doctor(options(ANSWERED_LIMIT, { ...probe, aboveStockThreadgroupMemory: false }));
      expect(notVm.outcomes).toEqual([
        outcome(
          'threadgroup-memory',
          'pass',
          "32768 bytes proven by 1024 concurrent threadgroups of 256 threads; sizes above 32768 bytes (the device's stock limit) not tried: this host is not known to be a virtual machine, where a threadgroup above the device's own limit is undefined behaviour",
          { provenThreadgroupMemory: 32768 },
        ),
      ]);
      // Under a profile answering 65536 the device takes 65536, but with Metal's validation layer on only the stock
      // 32768 is tried: the layer aborts above the device's real limit.
      expect(applyProfile({ maxThreadgroupMemoryLength: 65536 }).applied).toBe(true);
      // Both ways of turning the layer on: MTL_DEBUG_LAYER, and METAL_DEVICE_WRAPPER_TYPE=1 (Xcode's API validation).
      for (const [name, value] of [
        ['MTL_DEBUG_LAYER', '1'],
        ['METAL_DEVICE_WRAPPER_TYPE', '1'],
      ] as const) {
        process.env[name] = value;
        try {
          expect(binding.doctor(options(ANSWERED_LIMIT, probe)).outcomes).toEqual([
            outcome(
              'threadgroup-memory',
              'pass',
              "32768 bytes proven by 1024 concurrent threadgroups of 256 threads; sizes above 32768 bytes (the device's stock limit) not tried: Metal's validation layer (MTL_DEBUG_LAYER or METAL_DEVICE_WRAPPER_TYPE=1) is on",
              { provenThreadgroupMemory: 32768 },
            ),
          ]);
        } finally {
          delete process.env[name];
        }
      }
      // Another wrapper type is not the validation layer.
      process.env.METAL_DEVICE_WRAPPER_TYPE = '0';
      try {
        expect(binding.doctor(options(ANSWERED_LIMIT, probe)).outcomes).toEqual([PASSES.threadgroup]);
      } finally {
        delete process.env.METAL_DEVICE_WRAPPER_TYPE;
      }
      expect(binding.doctor(options(ANSWERED_LIMIT, probe)).outcomes).toEqual([PASSES.threadgroup]);
    });

    it('a device that reports no threadgroup limit, on a host that is not a VM: nothing above what any Apple GPU has is tried; in a VM, every size', () => {
      // Device 4 runs every size asked for; the stock limit 0 is what run.ts passes for a device that reports none.
      const probe = { probes: ['threadgroup-memory' as const], stockThreadgroupMemory: 0 };
      expect(binding.doctor(options(WIDE_SIMD, { ...probe, aboveStockThreadgroupMemory: false })).outcomes).toEqual([
        outcome(
          'threadgroup-memory',
          'pass',
          `${APPLE_GPU_THREADGROUP_MEMORY} bytes proven by 1024 concurrent threadgroups of 256 threads; sizes above ${APPLE_GPU_THREADGROUP_MEMORY} bytes (the device reports no limit, and no Apple GPU has more) not tried: this host is not known to be a virtual machine, where a threadgroup above the device's own limit is undefined behaviour`,
          { provenThreadgroupMemory: APPLE_GPU_THREADGROUP_MEMORY },
        ),
      ]);
      expect(binding.doctor(options(WIDE_SIMD, { ...probe, aboveStockThreadgroupMemory: true })).outcomes).toEqual([
        PASSES.threadgroup,
      ]);
    });

    it('a compiler that never finishes: that probe times out on compiling, within its deadline, and says so; the GPU is not blamed', () => {
      const timeoutMs = 300;
      const t0 = Date.now();
      const r = binding.doctor(options(SLOW_COMPILER, { probes: ['simdgroup-reduction', 'bfloat'], timeoutMs }));
      const elapsed = Date.now() - t0;
      expect(r.outcomes).toEqual([
        PASSES.reduction,
        outcome(
          'bfloat',
          'timeout',
          "compiling mcs_doctor_bfloat did not finish within 300 ms: Metal's compiler, not the GPU, ran out of time",
        ),
      ]);
      const bfloat = r.outcomes[1]!;
      expect(bfloat.compileMs).toBeGreaterThanOrEqual(timeoutMs);
      expect(bfloat.ms).toBeGreaterThanOrEqual(bfloat.compileMs);
      expect(r.outcomes[0]!.compileMs).toBeLessThan(timeoutMs);
      expect(elapsed).toBeLessThan(timeoutMs + 3000);
    });

    it('a compiler that never finishes the heap kernels: the heap probe times out on compiling its first, like any probe', () => {
      const r = binding.doctor(options(SLOW_COMPILER, { probes: ['heap'], timeoutMs: 300 }));
      expect(r.outcomes).toEqual([
        outcome(
          'heap',
          'timeout',
          "compiling mcs_doctor_heap_write did not finish within 300 ms: Metal's compiler, not the GPU, ran out of time",
        ),
      ]);
    });

    it("a hung compile uses up only its own probe's deadline: the next probe gets a whole one", () => {
      // The hung compile of bfloat took the whole 300 ms; the reduction probe after it had its own budget (how one
      // probe's compile and GPU work share a deadline: the block over doctor-sim-slow.json).
      const r = binding.doctor(options(SLOW_COMPILER, { probes: ['bfloat', 'simdgroup-reduction'], timeoutMs: 300 }));
      expect(r.outcomes.map((o) => o.status)).toEqual(['timeout', 'pass']);
    });

    it('SIMD-groups 64 wide: the matrix probe says unsupported with the width; the reduction probe follows the width', () => {
      const r = binding.doctor(options(WIDE_SIMD, { probes: ['simdgroup-reduction', 'simdgroup-matrix'] }));
      expect(r.outcomes).toEqual([
        outcome(
          'simdgroup-reduction',
          'pass',
          "simd_sum and simd_max over 256 threads in SIMD-groups of 64 equal the CPU's",
        ),
        outcome(
          'simdgroup-matrix',
          'unsupported',
          "the pipeline's SIMD-group width (threadExecutionWidth) is 64 threads; the probe's kernels need 32",
        ),
      ]);
    });

    it('the NoCopy buffer and the command buffers that hold it are released before its file is unmapped', () => {
      const fixture = loadFixture();
      const before = fixture.noCopyAfterUnmap();
      expect(binding.doctor(options(ANSWERED_LIMIT, { probes: ['nocopy-mmap'] })).outcomes).toEqual([PASSES.nocopy]);
      expect(fixture.noCopyAfterUnmap() - before).toBe(0);
    });

    it('the NoCopy buffer owns its mapping: made with a deallocator, which has unmapped the generated file once the buffer is released', () => {
      const fixture = loadFixture();
      const withoutBefore = fixture.noCopyWithoutDeallocator();
      const mapped = () =>
        readFileSync('/proc/self/maps', 'utf8')
          .split('\n')
          .filter((l) => l.includes('metal-cap-shim-doctor-'));
      expect(mapped()).toEqual([]);
      expect(binding.doctor(options(ANSWERED_LIMIT, { probes: ['nocopy-mmap'] })).outcomes).toEqual([PASSES.nocopy]);
      expect(mapped()).toEqual([]);
      expect(fixture.noCopyWithoutDeallocator() - withoutBefore).toBe(0);
    });

    it("the generated file's descriptors are close-on-exec while the NoCopy buffer is made: a program started then inherits neither", () => {
      const fixture = loadFixture();
      const before = fixture.inheritableDoctorFiles();
      expect(binding.doctor(options(ANSWERED_LIMIT, { probes: ['nocopy-mmap'] })).outcomes).toEqual([PASSES.nocopy]);
      expect(fixture.inheritableDoctorFiles() - before).toBe(0);
    });
  });
});

// The native doctor() over test/fixtures/snapshots/doctor-sim-slow.json: one device whose Metal takes 400 ms to
// compile each library and 800 ms to run each command buffer (simulation.compileMs, simulation.gpuMs). A probe's
// compile and its GPU work each get the whole deadline: a compile that takes part of it leaves the GPU all of its own
// (src-native/doctor/doctor_gpu.mm, buildPipelines restarts the GPU's deadline once its work can start), and kernels
// that share one source are built from one compile of it. Real addon
// through lib/device/native.ts, the simulated Metal; GCC's libobjc with GNUstep Foundation.
describeSim('test/fixtures/snapshots/doctor-sim-slow.json', () => {
  useSimulation(() => new URL('../fixtures/snapshots/doctor-sim-slow.json', import.meta.url).pathname);

  const SLOW = 0;
  const COMPILE_MS = 400;
  const GPU_MS = 800;

  let binding: NativeBinding;

  describeSim('native doctor(): the compile and the GPU each get the whole deadline', () => {
    beforeAll(() => {
      requireSimBuild();
      binding = nativeBinding();
    });
    afterAll(removeTempDirs);

    it('a 400 ms compile and 800 ms of GPU work each fit a 1000 ms deadline, though not together: the probe passes', () => {
      const r = binding.doctor(options(SLOW, { probes: ['simdgroup-reduction'], timeoutMs: 1000 }));
      expect(r.outcomes).toEqual([PASSES.reduction]);
      const probe = r.outcomes[0]!;
      // Both delays were really spent: the compile's share is counted apart from the GPU's, the total holds both.
      expect(probe.compileMs).toBeGreaterThanOrEqual(COMPILE_MS);
      expect(probe.compileMs).toBeLessThan(1000);
      expect(probe.ms).toBeGreaterThanOrEqual(COMPILE_MS + GPU_MS);
    });

    it('a probe whose kernels share one source compiles it once: the matrix and heap probes each count one compile', () => {
      const r = binding.doctor(options(SLOW, { probes: ['simdgroup-matrix', 'heap'], timeoutMs: 5000 }));
      expect(r.outcomes.map((o) => [o.id, o.status])).toEqual([
        ['simdgroup-matrix', 'pass'],
        ['heap', 'pass'],
      ]);
      // Two kernels each, one library each: one compile's delay, not two.
      for (const probe of r.outcomes) {
        expect(probe.compileMs).toBeGreaterThanOrEqual(COMPILE_MS);
        expect(probe.compileMs).toBeLessThan(2 * COMPILE_MS);
      }
    });

    it('GPU work longer than the deadline times out on its own, after a compile that fit: the GPU is what is blamed', () => {
      const r = binding.doctor(options(SLOW, { probes: ['simdgroup-reduction'], timeoutMs: 600 }));
      expect(r.outcomes.map((o) => [o.id, o.status])).toEqual([['simdgroup-reduction', 'timeout']]);
      expect(r.outcomes[0]!.detail).not.toContain('compil');
      expect(r.outcomes[0]!.compileMs).toBeGreaterThanOrEqual(COMPILE_MS);
      expect(r.outcomes[0]!.compileMs).toBeLessThan(600);
    });
  });
});
