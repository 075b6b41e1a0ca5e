// The native doctor() over test/fixtures/snapshots/doctor-sim-slow.json: one device whose Metal takes 400 ms to
// compile each library and 800 ms to run each command buffer (simulation.compileMs, simulation.gpuMs). A probe's
// compile and its GPU work each get the whole deadline: a compile that takes part of it leaves the GPU all of its own
// (src-native/doctor/doctor_gpu.mm, buildPipelines restarts the GPU's deadline once its work can start), and kernels
// that share one source are built from one compile of it. Real addon
// through lib/device/native.ts, the simulated Metal; GCC's libobjc with GNUstep Foundation.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = new URL(
  '../fixtures/snapshots/doctor-sim-slow.json',
  import.meta.url,
).pathname;

import { afterAll, beforeAll, expect, it } from 'vitest';
import type { NativeBinding } from '../../types/binding.js';
import { doctorOptions as options, nativeBinding, PASSES, removeTempDirs } from '../support/doctor-helpers.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

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
