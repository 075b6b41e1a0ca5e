// The native doctor() over the bundled stock Tahoe guest, whose doctor section records that a residency set could not
// be constructed there (trycua/cua PR 3070, MLX ablation): the API exists (macOS 26), creating a set fails with
// Metal's error text, everything else runs. Real addon through lib/device/native.ts, GCC's runtime.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'vz-guest-m1-ultra-tahoe-stock';

import { afterAll, beforeAll, expect, it } from 'vitest';
import { restore } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import type { NativeBinding } from '../../types/binding.js';
import { doctorOptions, nativeBinding, outcome, PASSES, removeTempDirs } from '../support/doctor-helpers.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

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
