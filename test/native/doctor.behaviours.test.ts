// The native doctor() over test/fixtures/snapshots/doctor-sim-behaviours.json: device 0's Metal raises an
// NSException at commit on every probe (the `error` status), device 1 accepts threadgroup memory up to what it
// *answers* (threadgroup-memory fault `answered-limit`), so a profile that raises the answer proves more; device 2's
// threadgroups overlap above 32 KiB when several run at once (`threadgroups-overlap`); device 3's compiler never
// finishes the bfloat and heap kernels (fault `compile`); device 4's pipelines run 64-wide SIMD-groups. Real addon
// through lib/device/native.ts, the simulated Metal. Runtime exercised: GCC's libobjc with GNUstep Foundation, where the
// exception reaches doctor's `@catch (NSException *)` through GCC's Objective-C personality (src-native/doctor/doctor.mm).
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = new URL(
  '../fixtures/snapshots/doctor-sim-behaviours.json',
  import.meta.url,
).pathname;

import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { DOCTOR_PROBE_IDS } from '../../lib/device/doctor-vocabulary.js';
import { APPLE_GPU_THREADGROUP_MEMORY } from '../../lib/patch/profiles.js';
import type { NativeBinding } from '../../types/binding.js';
import { doctorOptions as options, nativeBinding, outcome, PASSES, removeTempDirs } from '../support/doctor-helpers.js';
import { describeSim, loadFixture, requireSimBuild } from '../support/helpers.js';

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
    process.env.MTL_DEBUG_LAYER = '1';
    try {
      expect(binding.doctor(options(ANSWERED_LIMIT, probe)).outcomes).toEqual([
        outcome(
          'threadgroup-memory',
          'pass',
          "32768 bytes proven by 1024 concurrent threadgroups of 256 threads; sizes above 32768 bytes (the device's stock limit) not tried: Metal's validation layer (MTL_DEBUG_LAYER) is on",
          { provenThreadgroupMemory: 32768 },
        ),
      ]);
    } finally {
      delete process.env.MTL_DEBUG_LAYER;
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
    // probe's compile and GPU work share a deadline: test/native/doctor.deadline.test.ts).
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
