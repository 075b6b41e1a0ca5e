// The native doctor() over the bundled GitHub macos-14 arm64 runner snapshot, whose doctor section records the stale
// NoCopy-over-mmap data of unslothai/llama.cpp PR 37: the simulated device serves stale pages, and the probe sees it
// once the generated file's pages change. macOS 14 has MSL 3.1 but no residency sets. Real addon, GCC's runtime.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'github-macos-14-arm64-runner';

import { afterAll, beforeAll, expect, it } from 'vitest';
import type { NativeBinding } from '../../types/binding.js';
import {
  doctorOptions,
  MMAP_SIZE,
  NO_RESIDENCY_API,
  nativeBinding,
  outcome,
  PASSES,
  removeTempDirs,
  SAMPLED,
} from '../support/doctor-helpers.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

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
