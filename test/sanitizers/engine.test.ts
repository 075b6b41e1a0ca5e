// The hook engine without Node, under AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer
// (test/native/engine_stress.mm), and the injector's trace at exit under ThreadSanitizer (test/native/inject_exit.mm);
// built by `node scripts/build/build-sim.mjs --sanitize`, which scripts/test.sh runs.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeSim, root } from '../support/helpers.js';

const binary = (kind: string) => path.join(root, 'build', 'sanitize', `engine_stress-${kind}`);
const built = existsSync(binary('asan')) && existsSync(binary('tsan'));
const exitBinary = path.join(root, 'build', 'sanitize', 'inject_exit-tsan');

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
    '%s, %s: no report, every answer stock or the profile’s, stock again after restore, every traced query counted',
    (kind, snapshot, rounds) => {
      const r = run(kind, snapshot, rounds);
      expect(r.stderr).not.toMatch(/ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer/);
      expect(r.status, r.stderr.slice(-3000)).toBe(0);
      expect(r.stdout).toMatch(/bad answers 0, conflicts 0, answers changed after restore 0, trace count errors 0/);
    },
    300_000,
  );

  it.skipIf(!existsSync(exitBinary))(
    'tsan: the injector writes its trace at exit while another thread has patched, with no race on what it patched',
    () => {
      const traces = mkdtempSync(path.join(tmpdir(), 'mcs-inject-exit-'));
      try {
        const r = spawnSync(exitBinary, [], {
          encoding: 'utf8',
          timeout: 120_000,
          env: {
            ...process.env,
            METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock',
            // apple7 with trace on, in the injector's wire format (src-native/engine/profile.h). The file imports no
            // lib/ module, so mutation runs (whose sandbox has no sanitizer builds) never pick it.
            METAL_CAP_SHIM_PROFILE_NATIVE: 'mcs1;max=1007;tg=-;wss=-;mode=raise;trace=1;fam=;name=-',
            METAL_CAP_SHIM_TRACE_DIR: traces,
            METAL_CAP_SHIM_STATUS_FD: undefined,
            TSAN_OPTIONS: `halt_on_error=1:suppressions=${path.join(root, 'test', 'native', 'tsan-exit.supp')}`,
          },
        });
        expect(r.stderr).not.toMatch(/WARNING: ThreadSanitizer/);
        expect(r.status, r.stderr.slice(-3000)).toBe(0);
        expect(readdirSync(traces)).toEqual(['first.json']);
        const trace = JSON.parse(readFileSync(path.join(traces, 'first.json'), 'utf8')) as Record<string, unknown>;
        const snapshot = JSON.parse(
          readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'),
        ) as { devices: { className: string }[] };
        const { className } = snapshot.devices[0]!;
        expect([trace.profileApplied, trace.patchedClasses]).toEqual([true, [className]]);
      } finally {
        rmSync(traces, { recursive: true, force: true });
      }
    },
    180_000,
  );

  it.skipIf(built && existsSync(exitBinary))(
    'sanitizer builds are missing: run `node scripts/build/build-sim.mjs --sanitize`',
    () => {
      expect(built && existsSync(exitBinary)).toBe(true);
    },
  );
});
