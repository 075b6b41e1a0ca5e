// The native doctor() over test/fixtures/snapshots/doctor-sim-behaviours.json: device 0's Metal raises an
// NSException at commit on every probe (the `error` status), device 1 accepts threadgroup memory up to what it
// *answers* (threadgroup-memory fault `answered-limit`), so a profile that raises the answer proves more. Real addon
// through lib/native.ts, the simulated Metal. Runtime exercised: GCC's libobjc with GNUstep Foundation, where the
// exception reaches doctor's `@catch (NSException *)` through GCC's Objective-C personality (src-native/doctor.mm).
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = new URL('./fixtures/snapshots/doctor-sim-behaviours.json', import.meta.url).pathname;

import { readdirSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { applyProfile, restore, status } from '../lib/apply.js';
import { DOCTOR_PROBE_IDS } from '../lib/doctor-probes.js';
import type { NativeBinding } from '../types/binding.js';
import { doctorOptions as options, nativeBinding, outcome, PASSES, removeTempDirs } from './doctor-helpers.js';
import { describeSim, requireSimBuild } from './helpers.js';

const RAISES = 0;
const ANSWERED_LIMIT = 1;

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

  it('a threadgroup limit that follows the answer: stock proves 32768 bytes, under a profile answering 65536 it proves 65536', () => {
    const probe = { probes: ['threadgroup-memory' as const] };
    const stock = binding.doctor(options(ANSWERED_LIMIT, probe));
    expect(stock.outcomes).toEqual([
      outcome(
        'threadgroup-memory',
        'pass',
        "32768 bytes proven with 256 threads; 49152 bytes rejected: simulated: 49152 bytes of threadgroup memory exceed the device's answer (maxThreadgroupMemoryLength 32768, recorded in the snapshot: fixture: the limit is the answered maxThreadgroupMemoryLength)",
        { provenThreadgroupMemory: 32768, failedThreadgroupMemory: 49152 },
      ),
    ]);
    const applied = applyProfile({ maxThreadgroupMemoryLength: 65536 });
    expect(applied.applied).toBe(true);
    const patched = binding.doctor(options(ANSWERED_LIMIT, probe));
    expect(patched.outcomes).toEqual([PASSES.threadgroup]);
    restore();
    // Taken out again, the device is back to its stock limit.
    expect(binding.doctor(options(ANSWERED_LIMIT, probe)).outcomes).toEqual(stock.outcomes.map((x) => ({ ...x, ms: expect.any(Number) })));
  });
});
