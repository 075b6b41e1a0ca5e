// The native doctor without Node under AddressSanitizer + UndefinedBehaviorSanitizer (test/native/doctor_run.mm,
// built by `node scripts/build/build-sim.mjs --sanitize`): every probe on every device of the fault fixture, three
// rounds. It watches doctor's manual retain/release, its NoCopy mapping and its file handling; GNUstep and the
// simulated Metal are not instrumented. GCC's runtime.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeSim, root } from '../support/helpers.js';

const binary = path.join(root, 'build', 'sanitize', 'doctor_run-asan');
const built = existsSync(binary);

const EXPECTED: Record<number, string[]> = {
  0: ['pass', 'pass', 'pass', 'pass', 'pass', 'pass'],
  1: ['wrong-result', 'fail', 'wrong-result', 'pass', 'wrong-result', 'fail'],
  2: ['fail', 'wrong-result', 'unsupported', 'wrong-result', 'wrong-result', 'unsupported'],
  3: ['unsupported', 'unsupported', 'fail', 'fail', 'fail', 'wrong-result'],
  4: ['timeout', 'timeout', 'timeout', 'timeout', 'timeout', 'timeout'],
  5: ['pass', 'pass', 'pass', 'wrong-result', 'pass', 'pass'],
};
const PROBES = [
  'simdgroup-reduction',
  'simdgroup-matrix',
  'bfloat',
  'threadgroup-memory',
  'nocopy-mmap',
  'residency-set',
];

describeSim('doctor under AddressSanitizer + UndefinedBehaviorSanitizer (GCC runtime, simulated Metal)', () => {
  it.skipIf(!built)(
    'every fault of the fixture, three rounds: no report, the expected outcomes, no file left',
    () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-asan-'));
      try {
        const r = spawnSync(binary, ['3', dir, '4'], {
          encoding: 'utf8',
          timeout: 120_000,
          env: {
            ...process.env,
            METAL_CAP_SHIM_SIM_SNAPSHOT: path.join(root, 'test', 'fixtures', 'snapshots', 'doctor-faults.json'),
            // GNUstep keeps process-lifetime allocations that LeakSanitizer would list; leaks are not what this checks.
            ASAN_OPTIONS: 'detect_leaks=0:halt_on_error=1',
            UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1',
          },
        });
        expect(r.stderr).not.toMatch(/ERROR: AddressSanitizer|runtime error:/);
        expect(r.status, r.stderr.slice(-3000)).toBe(0);
        const expected = Object.entries(EXPECTED).flatMap(([device, statuses]) =>
          statuses.map((status, i) => `${device} ${PROBES[i]} ${status}`),
        );
        expect(r.stdout.trim().split('\n')).toEqual([...expected, 'rounds 3, devices 6, outcomes 108']);
        expect(readdirSync(dir)).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    180_000,
  );

  it.skipIf(!built)(
    'Metal raising at commit, a limit that follows the answer, overlapping threadgroups, a hung compiler, 64-wide SIMD-groups: no report, no file left',
    () => {
      // The exception unwinds through the probe's mapping, buffers and descriptors: what that leaves is what ASan sees.
      const dir = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-asan-'));
      try {
        // Device 3's compiler never finishes: it gets 20 ms per probe (the others complete at once in the simulation).
        const r = spawnSync(binary, ['3', dir, '3'], {
          encoding: 'utf8',
          timeout: 120_000,
          env: {
            ...process.env,
            METAL_CAP_SHIM_SIM_SNAPSHOT: path.join(root, 'test', 'fixtures', 'snapshots', 'doctor-sim-behaviours.json'),
            ASAN_OPTIONS: 'detect_leaks=0:halt_on_error=1',
            UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1',
          },
        });
        expect(r.stderr).not.toMatch(/ERROR: AddressSanitizer|runtime error:/);
        expect(r.status, r.stderr.slice(-3000)).toBe(0);
        expect(r.stdout.trim().split('\n')).toEqual([
          ...PROBES.map((id) => `0 ${id} error`),
          ...PROBES.map((id) => `1 ${id} pass`),
          ...PROBES.map((id) => `2 ${id} ${id === 'threadgroup-memory' ? 'wrong-result' : 'pass'}`),
          ...PROBES.map((id) => `3 ${id} ${id === 'bfloat' || id === 'heap' ? 'timeout' : 'pass'}`),
          ...PROBES.map((id) => `4 ${id} ${id === 'simdgroup-matrix' ? 'unsupported' : 'pass'}`),
          'rounds 3, devices 5, outcomes 90',
        ]);
        expect(readdirSync(dir)).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    180_000,
  );

  it.skipIf(built)('the sanitizer build is missing: run `node scripts/build/build-sim.mjs --sanitize`', () => {
    expect(built).toBe(true);
  });
});
