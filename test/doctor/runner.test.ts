// doctor's probes run in a child process, never in the caller's (lib/doctor/runner.ts, run.ts). Over the simulated
// Metal (the real addon, GCC's libobjc), a fixture whose devices upset the process running them: a hang after which
// the device revokes access, an abort() in Metal, a commit that never returns, and command buffers that fail with
// MTLCommandBufferError codes. The caller survives each, and each is reported as the outcome of the probe that met it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, beforeAll } from 'vitest';
import { applyPatch, restore, status } from '../../lib/patch/apply.js';
import { probe } from '../../lib/device/probe.js';
import { loadNative } from '../../lib/device/native.js';
import { doctor } from '../../lib/doctor/index.js';
import { leftGpuUnusable, runFrom } from '../../lib/doctor/judge.js';
import { checkDoctorOptions } from '../../lib/doctor/options.js';
import {
  CAPABILITY_PROBE_IDS,
  JUDGEMENTS,
  PROBE_GATING_FAMILIES,
  probeBudgetFor,
  probeBudgetMs,
  type DoctorProbeId,
} from '../../lib/doctor/probes.js';
import { LLAMA_CPP_RULES, MLX_RULES } from '../../lib/engines/index.js';
import {
  parseRunnerLine,
  reportFromRunner,
  RunnerSession,
  runDoctorLiveSync,
  runnerEnvironment,
} from '../../lib/doctor/run.js';
import { runnerOutcome, runPhases } from '../../lib/doctor/runner.js';
import type { DoctorReport } from '../../lib/doctor/types.js';
import { NativeError } from '../../lib/core/errors.js';
import { describeSim, requireSimBuild, root } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

const FIXTURE = path.join(root, 'test/fixtures/snapshots/doctor-runner-faults.json');
// This process's own simulated Metal answers from the fixture too (useSimulation): the native runner is called
// in-process only to show what it reports, and the caller's patch state is checked against it.

const MMAP = 1 << 20;
const TIMEOUT = 200;

function probesOf(report: DoctorReport): Record<string, { status: string; judgement: string; detail: string }> {
  if (!report.supported) throw new Error(`doctor could not run: ${report.detail}`);
  return Object.fromEntries(
    report.devices[0]!.probes.map((p) => [p.id, { status: p.status, judgement: p.judgement, detail: p.detail }]),
  );
}

function statusesOf(report: DoctorReport): Record<string, string> {
  return Object.fromEntries(Object.entries(probesOf(report)).map(([id, p]) => [id, `${p.status}/${p.judgement}`]));
}

afterEach(() => {
  if (status().active) restore();
});

describeSim('doctor: the probes run in a child process', () => {
  useSimulation(() => FIXTURE);
  beforeAll(() => {
    process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-runner-'));
  });
  requireSimBuild();

  it('is a Promise, and the event loop keeps turning while the probes run', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const pending = doctor({ device: 3, probes: ['simdgroup-matrix', 'heap'], cache: false });
    expect(pending).toBeInstanceOf(Promise);
    const report = await pending;
    clearInterval(timer);
    expect(report.supported).toBe(true);
    expect(ticks).toBeGreaterThan(0);
  });

  it('runs the probes that go past a stock limit last, in the stock run and in the patched run', async () => {
    const seen: string[] = [];
    await doctor({ device: 3, mmapSize: MMAP, cache: false, onProgress: (e) => seen.push(`${e.run} ${e.probe}`) });
    expect(seen).toEqual([
      'stock simdgroup-reduction',
      'stock simdgroup-matrix',
      'stock bfloat',
      'stock nocopy-mmap',
      'stock residency-set',
      'stock heap',
      'patched simdgroup-reduction',
      'patched simdgroup-matrix',
      'patched bfloat',
      'patched residency-set',
      'patched heap',
      'stock threadgroup-memory',
      'patched threadgroup-memory',
    ]);
    expect(runPhases(['threadgroup-memory', 'bfloat'])).toEqual([
      { run: 'stock', probes: ['bfloat'] },
      { run: 'patched', probes: ['bfloat'] },
      { run: 'stock', probes: ['threadgroup-memory'] },
      { run: 'patched', probes: ['threadgroup-memory'] },
    ]);
    expect(runPhases(['nocopy-mmap'])).toEqual([{ run: 'stock', probes: ['nocopy-mmap'] }]);
  });

  it('leaves the caller’s devices and patch state as they were, with a profile applied in the caller', async () => {
    const applied = applyPatch('cua-release');
    expect(applied.applied).toBe(true);
    const before = { status: status(), answers: probe({ allDevices: true }) };
    const report = await doctor({ device: 3, probes: ['simdgroup-reduction'], cache: false });
    expect({ status: status(), answers: probe({ allDevices: true }) }).toEqual(before);
    // The runner measured the device's own answers, not the caller's profile.
    if (!report.supported) throw new Error('doctor could not run');
    expect(report.devices[0]!.reported.stock.highestAppleFamily).toBe('apple5');
    expect(report.patchedRun).toEqual({ ran: true, why: null });
  });

  it('after a GPU hang, leaves the device’s later probes skipped with the reason, and calls none of them faulty', async () => {
    const report = await doctor({ device: 0, mmapSize: MMAP, timeoutMs: TIMEOUT, cache: false });
    const left = 'not run: the GPU was left unusable by simdgroup-matrix (timeout in the stock run)';
    expect(statusesOf(report)).toEqual({
      'simdgroup-reduction': 'skipped/unknown',
      'simdgroup-matrix': 'timeout/faulty',
      bfloat: 'skipped/unknown',
      'threadgroup-memory': 'skipped/unknown',
      'nocopy-mmap': 'skipped/unknown',
      'residency-set': 'skipped/unknown',
      heap: 'skipped/unknown',
    });
    const probes = probesOf(report);
    expect(probes.bfloat!.detail).toBe(left);
    expect(probes['simdgroup-reduction']!.detail).toBe(
      `stock: pass (simd_sum and simd_max over 256 threads in SIMD-groups of 32 equal the CPU's); under apple7: skipped (${left})`,
    );
    if (!report.supported) throw new Error('unreachable');
    expect(report.devices[0]!.faults).toEqual(['simdgroup-matrix: timeout']);
  });

  it('reads a revoked device by its error code: the native runner reports AccessRevoked, named access-revoked', () => {
    const binding = loadNative().binding!;
    // One native call for both probes: the runner itself goes on after the hang, so the second meets the revocation.
    const result = binding.doctor({
      device: 0,
      probes: ['simdgroup-matrix', 'bfloat'],
      timeoutMs: TIMEOUT,
      threadgroupSizes: [16384],
      threadgroupGroups: 8,
      stockThreadgroupMemory: 32768,
      aboveStockThreadgroupMemory: true,
      mmapFile: null,
      mmapSize: MMAP,
      tempDir: tmpdir(),
    });
    const [hang, revoked] = result.outcomes;
    expect([hang!.status, hang!.gpuTimedOut, hang!.commandBufferError]).toEqual(['timeout', true, null]);
    expect([revoked!.status, revoked!.gpuTimedOut, revoked!.commandBufferError]).toEqual(['fail', false, 4]);
    expect(runFrom(revoked!).status).toBe('access-revoked');
    expect(leftGpuUnusable(hang!)).toBe('timeout');
    expect(leftGpuUnusable(revoked!)).toBe('access-revoked');
    // A compiler that ran out of time says nothing about the GPU.
    expect(leftGpuUnusable({ ...hang!, gpuTimedOut: false })).toBe(null);
  });

  it('an eGPU unplugged mid-probe (MTLCommandBufferErrorDeviceRemoved, 11) leaves the device unusable, judged unknown', () => {
    const removed = {
      ...runnerOutcome('heap', 'error', 'Device removed'),
      status: 'fail' as const,
      commandBufferError: 11,
    };
    expect(runFrom(removed).status).toBe('device-removed');
    expect(leftGpuUnusable(removed)).toBe('device-removed');
    expect(JUDGEMENTS['device-removed'].judgement).toBe('unknown');
    // The code next to it (10, Memoryless) is no reason to stop: it stays a failure of the probe.
    expect(leftGpuUnusable({ ...removed, commandBufferError: 10 })).toBe(null);
  });

  it('names each command-buffer failure after its code: a page fault is a fault, memory and permission are not', async () => {
    const report = await doctor({ device: 3, mmapSize: MMAP, cache: false });
    const left = 'not run: the GPU was left unusable by heap (not-permitted in the stock run)';
    expect(statusesOf(report)).toEqual({
      'simdgroup-reduction': 'page-fault/faulty',
      'simdgroup-matrix': 'skipped/unknown',
      bfloat: 'out-of-memory/unknown',
      'threadgroup-memory': 'skipped/unknown',
      'nocopy-mmap': 'pass/proven',
      'residency-set': 'skipped/unknown',
      heap: 'not-permitted/unknown',
    });
    expect(probesOf(report)['threadgroup-memory']!.detail).toBe(left);
  });

  it('reports an abort() in Metal as the outcome of the probe that was running, and the caller runs on', async () => {
    const report = await doctor({ device: 1, mmapSize: MMAP, cache: false });
    const stopped = 'not run: the probe runner stopped before it (it died of SIGABRT)';
    expect(statusesOf(report)).toEqual({
      'simdgroup-reduction': 'pass/proven',
      'simdgroup-matrix': 'pass/proven',
      bfloat: 'pass/proven',
      'threadgroup-memory': 'skipped/unknown',
      'nocopy-mmap': 'pass/proven',
      'residency-set': 'aborted/faulty',
      heap: 'skipped/unknown',
    });
    const probes = probesOf(report);
    expect(probes['residency-set']!.detail).toBe(
      'the probe runner died of SIGABRT (its last words: simulated Metal assertion at commit, recorded in the snapshot: a Metal debug-layer assertion calls abort()) while it ran this probe (stock run); this process was not touched',
    );
    expect(probes.heap!.detail).toBe(stopped);
    expect(report.patchedRun).toEqual({
      ran: false,
      why: 'the probe runner died of SIGABRT (its last words: simulated Metal assertion at commit, recorded in the snapshot: a Metal debug-layer assertion calls abort()) before the patched run',
    });
    expect(report.cache).toBe(null);
  });

  it('a probe’s budget: three deadlines and a second; nocopy-mmap also reads its file in at 20 MiB/s, and writes a generated one first', () => {
    const o = { timeoutMs: 100, mmapFile: null, mmapSize: 256 << 20 };
    expect([
      probeBudgetFor(o, 'bfloat'),
      probeBudgetFor(o, 'nocopy-mmap'),
      probeBudgetFor({ ...o, mmapSize: 20 << 20 }, 'nocopy-mmap'),
      probeBudgetFor({ ...o, mmapSize: (20 << 20) + 1 }, 'nocopy-mmap'),
      probeBudgetFor({ ...o, mmapFile: '/models/m.gguf' }, 'nocopy-mmap'),
    ]).toEqual([1300, 1300 + 2 * 12_800, 1300 + 2 * 1000, 1300 + 2 * 1001, 1300 + 12_800]);
  });

  it('kills a probe that never returns at its deadline, and reports it aborted', async () => {
    const started = Date.now();
    const report = await doctor({ device: 2, probes: ['bfloat', 'heap'], timeoutMs: 100, cache: false });
    const took = Date.now() - started;
    const budget = probeBudgetMs(100);
    expect(took).toBeGreaterThanOrEqual(budget);
    expect(took).toBeLessThan(budget + 15_000);
    const probes = probesOf(report);
    expect(probes.heap).toEqual({
      status: 'aborted',
      judgement: 'faulty',
      detail: `the probe runner was killed (SIGKILL) at the deadline: nothing came from it for ${budget} ms while it ran this probe (stock run); this process was not touched`,
    });
    expect(probes.bfloat!.status).toBe('pass');
  });

  it('reports a runner interrupted from outside (Ctrl-C reaches its process group) as interrupted, judging and caching nothing', async () => {
    // Device 2's heap commit never returns: the runner is sent SIGINT while it waits there, as a terminal's Ctrl-C is.
    const report = await doctor({
      device: 2,
      probes: [...CAPABILITY_PROBE_IDS],
      timeoutMs: 5000,
      onProgress: ({ probe }) => {
        if (probe !== 'heap') return;
        const pid = execFileSync('pgrep', ['-P', String(process.pid), '-f', 'doctor-runner'], { encoding: 'utf8' });
        process.kill(Number(pid.trim()), 'SIGINT');
      },
    });
    const probes = probesOf(report);
    expect(probes.heap).toEqual({
      status: 'interrupted',
      judgement: 'unknown',
      detail: 'not judged: the probe runner was interrupted (SIGINT) while it ran this probe',
    });
    expect(probes['threadgroup-memory']!.detail).toBe(
      'not run: the probe runner stopped before it (it was interrupted)',
    );
    expect(report.devices[0]!.faults).toEqual([]);
    expect(report.cache).toBe(null);
  });

  it('runs synchronously where an API must (applyProfile auto), with the same outcomes', () => {
    const o = checkDoctorOptions({ device: 1, probes: ['bfloat', 'residency-set', 'heap'], cache: false });
    const report = runDoctorLiveSync(o, 1);
    expect(statusesOf(report)).toEqual({
      'simdgroup-reduction': 'skipped/unknown',
      'simdgroup-matrix': 'skipped/unknown',
      bfloat: 'pass/proven',
      'threadgroup-memory': 'skipped/unknown',
      'nocopy-mmap': 'skipped/unknown',
      'residency-set': 'aborted/faulty',
      heap: 'skipped/unknown',
    });
    expect(probesOf(report).heap!.detail).toBe('not run: the probe runner stopped before it (it died of SIGABRT)');
  });

  it('gives the runner an environment that neither preloads nor injects a patch', async () => {
    const env = runnerEnvironment({
      PATH: '/usr/bin',
      NODE_OPTIONS: '--import metal-cap-shim/register',
      DYLD_INSERT_LIBRARIES: '/x/libmetal_cap_shim_inject.dylib',
      LD_PRELOAD: '/x/libmetal_cap_shim_inject.so',
      METAL_CAP_SHIM_PROFILE: 'cua-release',
      METAL_CAP_SHIM_PROFILE_NATIVE: 'f=1009',
      METAL_CAP_SHIM_STATUS_FD: '3',
      METAL_CAP_SHIM_SIM_SNAPSHOT: 'x',
      METAL_CAP_SHIM_SIM_COUNTS_FILE: '/tmp/counts',
    });
    expect(env).toEqual({
      PATH: '/usr/bin',
      METAL_CAP_SHIM_SIM_SNAPSHOT: 'x',
      METAL_CAP_SHIM_SIM_COUNTS_FILE: '/tmp/counts',
      ELECTRON_RUN_AS_NODE: '1',
    });
    // A preload the caller's own Node was given would break the runner's start; it never reaches it.
    const saved = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `--require ${path.join(root, 'does-not-exist.cjs')}`;
    try {
      const report = await doctor({ device: 3, probes: ['simdgroup-matrix'], cache: false });
      expect(statusesOf(report)['simdgroup-matrix']).toBe('pass/proven');
    } finally {
      if (saved === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = saved;
    }
  });

  it('reads only its own messages from the runner’s output', () => {
    const start = { type: 'start', device: 0, devices: 1, probe: 'heap' as DoctorProbeId, run: 'stock' };
    expect(parseRunnerLine(JSON.stringify(start))).toEqual(start);
    expect(parseRunnerLine('{"type":"bogus"}')).toBe(null);
    expect(parseRunnerLine('{"type":"start"')).toBe(null);
    expect(parseRunnerLine('Metal: a log line')).toBe(null);
    expect(parseRunnerLine(' {"type":"done"}')).toBe(null);
  });

  it('a runner that exits 0 without finishing is said so once, without "before" twice', () => {
    let thrown: unknown;
    try {
      reportFromRunner(
        checkDoctorOptions({}),
        new RunnerSession(),
        { code: 0, signal: null, killedAfterMs: null, stderr: '' },
        '',
      );
    } catch (err) {
      thrown = err;
    }
    expect([(thrown as NativeError).code, (thrown as NativeError).message]).toEqual([
      'ERR_DOCTOR_RUNNER',
      "doctor's probe runner exited (code 0) without finishing before it read the devices; nothing ran, and this process was not touched",
    ]);
  });

  it.each([
    [
      'an outcome without its outcome',
      { type: 'outcome', device: 0, run: 'stock' },
      'outcome',
      'an object',
      'undefined',
    ],
    [
      'an outcome whose ms is a string',
      {
        type: 'outcome',
        device: 0,
        run: 'stock',
        outcome: {
          id: 'heap',
          status: 'pass',
          detail: '',
          ms: '5',
          compileMs: 0,
          buildFailed: false,
          gpuTimedOut: false,
        },
      },
      'outcome.ms',
      'a number ≥ 0',
      'the string "5"',
    ],
    [
      'a start of an unknown probe',
      { type: 'start', device: 0, devices: 1, probe: 'warp', run: 'stock' },
      'probe',
      'a probe id',
      'the string "warp"',
    ],
    [
      'a stock report without devices',
      { type: 'stock', report: { supported: true, host: null } },
      'report.devices',
      'an array',
      'undefined',
    ],
    [
      'a stock device without families',
      { type: 'stock', report: { supported: true, host: null, devices: [{ name: 'x', index: 0 }] } },
      'report.devices[0]',
      'a device report',
      'an object',
    ],
    [
      'a restore with a hook that is a number',
      { type: 'restored', restoredHooks: [1], conflicts: [] },
      'restoredHooks[0]',
      'an object',
      'number 1',
    ],
    ['a negative device count', { type: 'no-such-device', count: -1 }, 'count', 'a whole number ≥ 0', 'number -1'],
    [
      'a patched run whose why is a number',
      { type: 'patched', devices: null, why: 3 },
      'why',
      'a string or null',
      'number 3',
    ],
  ])(
    'a line of a known type in the wrong shape is ERR_DOCTOR_RUNNER naming the field: %s',
    (_name, line, field, what, got) => {
      let thrown: unknown;
      try {
        parseRunnerLine(JSON.stringify(line));
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(NativeError);
      expect([(thrown as NativeError).code, (thrown as NativeError).message]).toEqual([
        'ERR_DOCTOR_RUNNER',
        `doctor's probe runner wrote a '${line.type}' line whose ${field} is not ${what} (got ${got}); this process was not touched`,
      ]);
    },
  );
});

describe('the families that gate each probe come from the engine rules', () => {
  it('llama.cpp’s newest rules decide reduction, matrix and bfloat; MLX’s residency rule, with any Apple GPU, the residency set', () => {
    const familiesOf = (flag: string) => LLAMA_CPP_RULES.current.find((r) => r.flag === flag)!.families;
    const sorted = (xs: readonly string[]) => [...xs].sort();
    expect(sorted(PROBE_GATING_FAMILIES['simdgroup-reduction'])).toEqual(sorted(familiesOf('has_simdgroup_reduction')));
    expect(sorted(PROBE_GATING_FAMILIES['simdgroup-matrix'])).toEqual(sorted(familiesOf('has_simdgroup_mm')));
    expect(sorted(PROBE_GATING_FAMILIES.bfloat)).toEqual(sorted(familiesOf('has_bfloat')));
    const mlx = MLX_RULES.find((r) => r.flag === 'residencySets')!.families;
    expect(sorted(PROBE_GATING_FAMILIES['residency-set'])).toEqual(sorted(['apple1', ...mlx]));
    expect([
      PROBE_GATING_FAMILIES['threadgroup-memory'],
      PROBE_GATING_FAMILIES['nocopy-mmap'],
      PROBE_GATING_FAMILIES.heap,
    ]).toEqual([[], [], []]);
  });
});
