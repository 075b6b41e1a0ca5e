// The native doctor() over a bundled snapshot of macOS 13 (two devices, Intel and AMD): what the OS lacks is
// `unsupported`, decided before any compile (bfloat: MSL 3.1 is macOS 14+) or by the missing API (residency sets:
// macOS 15+). Real addon through lib/device/native.ts; GCC's runtime; the simulated Metal.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'macbookpro16-intel-amd-two-gpus';

import { afterAll, beforeAll, expect, it } from 'vitest';
import type { NativeBinding } from '../../types/binding.js';
import {
  doctorOptions,
  NO_RESIDENCY_API,
  nativeBinding,
  outcome,
  PASSES,
  removeTempDirs,
} from '../support/doctor-helpers.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

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
