// The hook engine without Node, under AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer
// (test/native/engine_stress.mm, built by `node scripts/build-sim.mjs --sanitize`, which scripts/test.sh runs).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeSim, root } from './helpers.js';

const binary = (kind: string) => path.join(root, 'build', 'sanitize', `engine_stress-${kind}`);
const built = existsSync(binary('asan')) && existsSync(binary('tsan'));

describeSim('hook engine under sanitizers (GCC runtime, simulated Metal)', () => {
  const run = (kind: string, snapshot: string, rounds: number) =>
    spawnSync(binary(kind), [String(rounds)], {
      encoding: 'utf8',
      timeout: 240_000,
      env: {
        ...process.env,
        METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot,
        // GNUstep keeps process-lifetime allocations that LeakSanitizer would list; leaks are not what this checks.
        ASAN_OPTIONS: 'detect_leaks=0:halt_on_error=1',
        UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1',
        TSAN_OPTIONS: `halt_on_error=1:suppressions=${path.join(root, 'test', 'native', 'tsan.supp')}`,
      },
    });

  it.skipIf(!built).each([
    ['asan', 'macbookpro16-intel-amd-two-gpus', 1000],
    ['asan', 'vz-guest-m1-ultra-tahoe-stock', 1000],
    ['tsan', 'macbookpro16-intel-amd-two-gpus', 200],
    ['tsan', 'vz-guest-m1-ultra-tahoe-stock', 200],
  ])(
    '%s, %s: no report, every answer stock or the profile’s, stock again after restore',
    (kind, snapshot, rounds) => {
      const r = run(kind, snapshot, rounds);
      expect(r.stderr).not.toMatch(/ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer/);
      expect(r.status, r.stderr.slice(-3000)).toBe(0);
      expect(r.stdout).toMatch(/bad answers 0, conflicts 0, answers changed after restore 0/);
    },
    300_000,
  );

  it.skipIf(built)('sanitizer builds are missing: run `node scripts/build-sim.mjs --sanitize`', () => {
    expect(built).toBe(true);
  });
});
