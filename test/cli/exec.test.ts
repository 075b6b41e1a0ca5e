import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RefusedError } from '../../lib/core/errors.js';
import {
  hardenedRuntimeBlocker,
  hasEntitlement,
  INJECTION_ENTITLEMENTS,
  injectionBlocker,
} from '../../lib/exec/codesign.js';
import { injectorPath } from '../../lib/exec/injector.js';
import { prepareExec } from '../../lib/exec/prepare.js';
import { shouldForwardSignal } from '../../lib/exec/signals.js';
import { FAMILY_NAMES, FAMILY_VALUES } from '../../lib/core/families.js';
import { predictGates } from '../../lib/engines/index.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { deviceReportFrom } from '../../lib/device/report.js';
import type { DeviceReport } from '../../lib/device/types.js';
import { APPLE9_ABOVE_M1_ULTRA } from '../support/apply-helpers.js';
import { installFakeCodesign, signedProgram } from '../support/codesign-fake.js';
import {
  buildConsumer,
  cli,
  describeSim,
  isSimulatedPlatform,
  requireSimBuild,
  root,
  runCli,
} from '../support/helpers.js';
import { SYSTEM_TOOLS } from '../../lib/exec/system-tools.js';

/** The codesign the signature checks ask: the system's, or a suite's fake. */
let fakeCodesign: string = SYSTEM_TOOLS.codesign;

const VM = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };
const RUNNER = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'github-macos-14-arm64-runner' };
let consumer: string;

interface ConsumerDevice {
  name: string;
  families: Record<string, boolean>;
  maxThreadgroupMemoryLength: number;
  recommendedMaxWorkingSetSize: number;
  hasUnifiedMemory: boolean;
}

/** What the consumer printed, as a DeviceReport the predictor takes. */
function asDevice(d: ConsumerDevice): DeviceReport {
  return deviceReportFrom({
    index: 0,
    isDefault: true,
    name: d.name,
    className: 'unknown',
    registryId: null,
    families: Object.fromEntries(FAMILY_NAMES.map((n) => [n, d.families[String(FAMILY_VALUES[n])] ?? null])),
    maxThreadgroupMemoryLength: d.maxThreadgroupMemoryLength,
    maxThreadsPerThreadgroup: null,
    recommendedMaxWorkingSetSize: d.recommendedMaxWorkingSetSize,
    maxBufferLength: null,
    hasUnifiedMemory: d.hasUnifiedMemory,
    location: 'builtIn',
    architecture: null,
  });
}

const gates = (d: ConsumerDevice) => {
  const p = predictGates(asDevice(d), 'llama.cpp', { env: {} });
  return [p.flags.has_simdgroup_reduction.value, p.flags.has_simdgroup_mm.value, p.flags.has_bfloat.value];
};

describeSim('metal-cap-shim exec (LD_PRELOAD injector over the simulated Metal)', () => {
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
  });

  it('a consumer compiled separately gets stock gates plainly and patched gates under exec', () => {
    const plain = JSON.parse(
      execFileSync(consumer, { env: { ...process.env, ...VM }, encoding: 'utf8' }),
    )[0] as ConsumerDevice;
    expect(gates(plain)).toEqual([false, false, false]);
    expect(plain.maxThreadgroupMemoryLength).toBe(32768);
    // The default (host-family): the M1 Ultra host's own Apple7, the three gates on, nothing said.
    const r = runCli(['exec', '--', consumer], VM);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const patched = JSON.parse(r.stdout)[0] as ConsumerDevice;
    expect(gates(patched)).toEqual([true, true, true]);
    expect(patched.maxThreadgroupMemoryLength).toBe(32768);
    expect(patched.families[String(FAMILY_VALUES.apple8)]).toBe(false);
    // cua-release: nothing but the program's own output on stdout, which must still parse. On stderr one line before
    // the program runs: cua-release claims Apple9, and the guest's host is an M1 Ultra (Apple7).
    const cua = runCli(['exec', '--profile', 'cua-release', '--', consumer], VM);
    expect(cua.status, cua.stderr).toBe(0);
    expect(cua.stderr).toBe(`metal-cap-shim: warning: ${APPLE9_ABOVE_M1_ULTRA.message}\n`);
    const raised = JSON.parse(cua.stdout)[0] as ConsumerDevice;
    expect(gates(raised)).toEqual([true, true, true]);
    expect(raised.maxThreadgroupMemoryLength).toBe(65536);
    expect(raised.families[String(FAMILY_VALUES.apple9)]).toBe(true);
    expect(raised.families[String(FAMILY_VALUES.apple10)]).toBe(false);
  });

  it('applies the named profile, and every device the program enumerates', () => {
    const r = runCli(['exec', '--profile', 'apple7', '--force', '--', consumer, '--all'], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: 'macbookpro16-intel-amd-two-gpus',
    });
    expect(r.status, r.stderr).toBe(0);
    const devices = JSON.parse(r.stdout) as ConsumerDevice[];
    expect(devices.map((d) => d.families[String(FAMILY_VALUES.apple7)])).toEqual([true, true]);
    expect(devices.map((d) => d.families[String(FAMILY_VALUES.apple8)])).toEqual([false, false]);
  });

  it('--trace FILE records what the program asked and what it was told', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-trace-')), 'trace.json');
    const r = runCli(['exec', '--profile', 'cua-release', '--trace', file, '--', consumer], VM);
    expect(r.status, r.stderr).toBe(0);
    const trace = JSON.parse(readFileSync(file, 'utf8'));
    expect(trace.profileApplied).toBe(true);
    expect(trace.patchedClasses).toEqual(['AppleParavirtDevice']);
    const apple7 = trace.trace.find((t: { family: number }) => t.family === 1007);
    expect(apple7).toEqual({ selector: 'supportsFamily:', family: 1007, calls: 1, stock: 0, given: 1 });
    const tg = trace.trace.find((t: { selector: string }) => t.selector === 'maxThreadgroupMemoryLength');
    expect(tg).toMatchObject({ stock: 32768, given: 65536 });
  });

  it('--profile host on the simulated macos-14 runner: the M1’s family and name, nothing on stderr, the name in the trace', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-trace-')), 'trace.json');
    const r = runCli(['exec', '--profile', 'host', '--trace', file, '--', consumer], RUNNER);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const patched = JSON.parse(r.stdout)[0] as ConsumerDevice & { name: string };
    expect(patched.name).toBe('Apple M1');
    expect(gates(patched)).toEqual([true, true, true]);
    expect([1007, 1008].map((f) => patched.families[String(f)])).toEqual([true, false]);
    expect(patched.maxThreadgroupMemoryLength).toBe(32768);
    const trace = JSON.parse(readFileSync(file, 'utf8'));
    expect(trace.trace.find((t: { selector: string }) => t.selector === 'name')).toEqual({
      selector: 'name',
      family: null,
      calls: 1,
      stock: 'Apple Paravirtual device',
      given: 'Apple M1',
    });
  });

  // The program's MLX reads MLX_METAL_GPU_ARCH once, at its first GPU use: exec puts the profile's offer there.
  const PRINT_ARCH = ['node', '-e', 'console.log(String(process.env.MLX_METAL_GPU_ARCH))'];
  const NO_ARCH = { MLX_METAL_GPU_ARCH: undefined };

  it('passes the default profile’s architecture to the program as MLX_METAL_GPU_ARCH, and says so in --json', () => {
    const r = runCli(['exec', '--json', '--', ...PRINT_ARCH], { ...VM, ...NO_ARCH });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('applegpu_g13d\n');
    const summary = JSON.parse(r.stderr.trim());
    expect([summary.mlxArchitecture, summary.warnings]).toEqual(['applegpu_g13d', []]);
    // The M1 runner's own.
    expect(runCli(['exec', '--profile', 'host', '--', ...PRINT_ARCH], { ...RUNNER, ...NO_ARCH }).stdout).toBe(
      'applegpu_g13g\n',
    );
  });

  it('a profile that offers none sets none; an architecture named in the profile is passed as it is', () => {
    const none = runCli(['exec', '--json', '--profile', 'apple7', '--', ...PRINT_ARCH], { ...VM, ...NO_ARCH });
    expect([none.stdout, JSON.parse(none.stderr.trim()).mlxArchitecture]).toEqual(['undefined\n', null]);
    const named = runCli(['exec', '--profile', '{"mlxArchitecture": "applegpu_g13s"}', '--', ...PRINT_ARCH], {
      ...VM,
      ...NO_ARCH,
    });
    expect([named.status, named.stdout, named.stderr]).toEqual([0, 'applegpu_g13s\n', '']);
  });

  it('the user’s own MLX_METAL_GPU_ARCH wins: kept, and one warning before the program runs', () => {
    const r = runCli(['exec', '--json', '--', ...PRINT_ARCH], { ...VM, MLX_METAL_GPU_ARCH: 'applegpu_g13s' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('applegpu_g13s\n');
    const [warning, summary] = r.stderr.trim().split('\n') as [string, string];
    const message =
      'MLX_METAL_GPU_ARCH is already set to "applegpu_g13s": that value is kept, and the profile\'s applegpu_g13d is not offered to MLX (unset it to offer the profile\'s)';
    expect(warning).toBe(`metal-cap-shim: warning: ${message}`);
    expect([JSON.parse(summary).mlxArchitecture, JSON.parse(summary).warnings]).toEqual([
      null,
      [{ code: 'mlx-architecture-user-set', message }],
    ]);
  });

  it('an architecture above the host’s generation is refused before anything runs (exit 125)', () => {
    const r = runCli(['exec', '--profile', '{"mlxArchitecture": "applegpu_g14g"}', '--', ...PRINT_ARCH], {
      ...VM,
      ...NO_ARCH,
    });
    expect([r.status, r.stdout]).toEqual([125, '']);
    expect(r.stderr).toBe(
      'metal-cap-shim: ERR_MLX_ARCHITECTURE_REFUSED: refusing to offer MLX the GPU architecture applegpu_g14g (MLX_METAL_GPU_ARCH): its generation 14 is above 13, the GPU generation of this host\'s Apple M1 Ultra: MLX would pick kernels tuned for a newer GPU than the one doing the work (mlxArchitecture "host" offers the host\'s own) (--allow-unpatched runs the program unpatched)\n',
    );
  });

  it('a threadgroup claim the newest llama.cpp rules size above the hardware: exit 125, --force does not lift it; the flag and the variable do', () => {
    const apple10 = '{"appleFamilyMax": 1010, "maxThreadgroupMemoryLength": 65536}';
    const run = (extra: string[], env: NodeJS.ProcessEnv = {}) =>
      runCli(['exec', '--profile', apple10, ...extra, '--', 'true'], { ...VM, ...env });
    const refused = run([]);
    expect([refused.status, refused.stdout]).toEqual([125, '']);
    expect(refused.stderr).toMatch(
      /^metal-cap-shim: ERR_ABOVE_HARDWARE: refusing the profile for llama\.cpp v0\.5\.0 and later \(current rules\): its threadgroup memory claim makes FLASH_ATTN_EXT vec, head 576\/512, KV F16, batch 1 \(decode\), 4097 to 16383 KV entries: 57344 bytes/,
    );
    expect(run(['--force']).status).toBe(125);
    expect(run(['--allow-above-hardware']).status).toBe(0);
    expect(run([], { METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE: '1' }).status).toBe(0);
    expect(run([], { METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE: 'yes' }).status).toBe(125);
  });

  it('bash, which has its own getenv and putenv, loads the shim with its profile: nothing on stderr, the trace applied', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-trace-bash-')), 'trace.json');
    const r = runCli(['exec', '--profile', 'apple7', '--trace', file, '--', 'bash', '-c', 'true'], VM);
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(JSON.parse(readFileSync(file, 'utf8')).profileApplied).toBe(true);
  });

  it('passes the exit code through', () => {
    expect(runCli(['exec', '--', 'sh', '-c', 'exit 7'], VM).status).toBe(7);
    expect(runCli(['exec', '--', 'true'], VM).status).toBe(0);
  });

  it('a signal that kills the child is reported and re-raised', () => {
    const r = runCli(['exec', '--', 'sh', '-c', 'kill -TERM $$'], VM);
    expect(r.signal).toBe('SIGTERM');
    expect(r.stderr).toContain('killed by SIGTERM');
  });

  it('says so when the injector could not load into the program (a static binary ignores LD_PRELOAD)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-static-'));
    writeFileSync(path.join(dir, 'hello.c'), 'int main(void) { return 3; }\n');
    execFileSync('clang-14', ['-static', path.join(dir, 'hello.c'), '-o', path.join(dir, 'hello')]);
    const r = runCli(['exec', '--', path.join(dir, 'hello')], VM);
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('did not load');
  });

  it('refuses to raise on bare metal without --force (exit 125, exec’s own failure), and runs nothing', () => {
    const marker = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-ran-')), 'ran');
    const r = runCli(['exec', '--profile', 'cua-release', '--', 'sh', '-c', `touch ${marker}`], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: 'm1-ultra-bare-metal',
    });
    expect(r.status).toBe(125);
    expect(r.stderr).toContain('ERR_REFUSED_BARE_METAL');
    expect(() => readFileSync(marker)).toThrow();
  });

  // As env(1): 125 exec's own failure, 126 found but not runnable, 127 not found; never a code the program could give.
  it.each([
    [['exec', '--trace', tmpdir(), '--', 'true'], 125, 'ERR_TRACE_FILE'],
    [['exec', '--trace', '/nonexistent/folder/trace.json', '--', 'true'], 125, 'ERR_TRACE_FILE'],
    [['exec', '--profile', 'apple99', '--', 'true'], 125, 'ERR_INVALID_PROFILE'],
    [['exec', '--profile', '{"mode":"lower"}', '--', 'true'], 125, 'ERR_INVALID_PROFILE'],
    [['exec', 'true'], 125, 'ERR_USAGE'],
    [['exec', '--'], 125, 'ERR_USAGE'],
    [['exec', '--bogus', '--', 'true'], 125, 'ERR_USAGE'],
    [['exec', '--', '/etc/passwd'], 126, 'ERR_SPAWN'],
    [['exec', '--', tmpdir()], 126, 'ERR_SPAWN'],
    [['exec', '--', 'no-such-command-xyz'], 127, 'ERR_COMMAND_NOT_FOUND'],
  ])('%j exits %i (%s)', (args, code, errorCode) => {
    const r = runCli(args as string[], VM);
    expect(r.status).toBe(code);
    expect(r.stderr).toContain(errorCode as string);
    expect(r.stderr).not.toContain('    at ');
  });

  it('the injector is not in the CLI’s own process, only in the child', () => {
    const r = runCli(['exec', '--', 'sh', '-c', 'printf %s "$LD_PRELOAD"'], VM);
    expect(r.stdout).toBe(path.join(root, 'build', 'Release', 'libmetal_cap_shim_inject.so'));
  });
});

describe('exec --allow-unpatched --trace where there is no Metal (Linux, no simulated Metal selected)', () => {
  const NO_SIM = { METAL_CAP_SHIM_SIM_SNAPSHOT: undefined };

  it('the program runs unpatched, and the trace says nothing was applied (an old trace is replaced)', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-unpatched-trace-')), 'trace.json');
    writeFileSync(file, '{"old":true}\n');
    const r = runCli(
      ['exec', '--allow-unpatched', '--json', '--trace', file, '--', 'sh', '-c', 'echo $$; exit 4'],
      NO_SIM,
    );
    expect(r.status).toBe(4);
    const pid = Number(r.stdout.trim());
    expect(readFileSync(file, 'utf8')).toBe(
      `${JSON.stringify({ pid, profileApplied: false, patchedClasses: [], trace: [] })}\n`,
    );
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe(
      'metal-cap-shim: exec injects into programs that use Metal, which exists only on macOS; this is linux: running sh unpatched (--allow-unpatched)',
    );
    expect(JSON.parse(lines[1]!)).toEqual({
      schema: 'metal-cap-shim/exec@1',
      command: 'sh',
      exitCode: 4,
      signal: null,
      injectorLoaded: false,
      injectorSlice: null,
      patchedClasses: [],
      injectorErrors: [],
      processes: [],
      warnings: [],
      mlxArchitecture: null,
      auto: null,
    });
    expect(lines).toHaveLength(2);
  });

  it('a trace that cannot be written is reported on stderr the way the injected run reports it; the exit code stays', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-unpatched-trace-'));
    const file = path.join(dir, 'trace.json');
    const r = runCli(
      ['exec', '--allow-unpatched', '--trace', file, '--', 'sh', '-c', `rm -r '${dir}'; exit 6`],
      NO_SIM,
    );
    expect(r.status).toBe(6);
    expect(r.stderr.trim().split('\n')).toEqual([
      'metal-cap-shim: exec injects into programs that use Metal, which exists only on macOS; this is linux: running sh unpatched (--allow-unpatched)',
      `metal-cap-shim: injector error: ERR_TRACE_FILE cannot write ${file}: its folder ${dir} cannot be examined (ENOENT), so nothing is written there`,
    ]);
  });
});

describeSim('exec --trace across processes', () => {
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
  });

  it('the process that used Metal writes the trace, not the shell that started it', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-trace-')), 'trace.json');
    writeFileSync(file, 'stale');
    const r = runCli(['exec', '--trace', file, '--', 'sh', '-c', `${consumer} >/dev/null; true`], VM);
    expect(r.status, r.stderr).toBe(0);
    const trace = JSON.parse(readFileSync(file, 'utf8'));
    expect(trace.patchedClasses).toEqual(['AppleParavirtDevice']);
    expect(trace.trace.length).toBeGreaterThan(0);
  });

  it('a program that never obtains a device still leaves a trace file saying so', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-trace-')), 'trace.json');
    const r = runCli(['exec', '--trace', file, '--', 'true'], VM);
    expect(r.status).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
      profileApplied: true,
      patchedClasses: [],
      trace: [],
    });
  });
});

describe('hardened-runtime detection (codesign output)', () => {
  const xml = (keys: string[]) =>
    `<?xml version="1.0"?><plist><dict>${keys.map((k) => `<key>${k}</key><true/>`).join('')}</dict></plist>`;
  const [ALLOW_DYLD, DISABLE_LV] = INJECTION_ENTITLEMENTS;

  it('a binary without the hardened runtime is not blocked', () => {
    expect(
      hardenedRuntimeBlocker('/x/llama-bench', 'CodeDirectory v=20400 size=1234 flags=0x2(adhoc) hashes=30+2', ''),
    ).toBeNull();
  });

  it('a hardened binary without either entitlement runs unpatched: blocked, but --allow-unpatched may run it', () => {
    expect(
      hardenedRuntimeBlocker(
        '/Applications/X.app/Contents/MacOS/X',
        'CodeDirectory v=20500 flags=0x10000(runtime) hashes=9',
        xml([]),
      ),
    ).toEqual({
      reason: `/Applications/X.app/Contents/MacOS/X is signed with the hardened runtime without ${ALLOW_DYLD} and ${DISABLE_LV}, so dyld ignores DYLD_INSERT_LIBRARIES for it and it would run unpatched. Use a build without the hardened runtime, or embed metal-cap-shim as a library.`,
      launchFails: false,
    });
  });

  it('a hardened binary with both entitlements (as the official node binary has) is not blocked', () => {
    expect(
      hardenedRuntimeBlocker('/usr/local/bin/node', 'flags=0x10000(runtime)', xml([ALLOW_DYLD, DISABLE_LV])),
    ).toBeNull();
  });

  it('allow-dyld-environment-variables without disable-library-validation: dyld would kill it at launch', () => {
    expect(hardenedRuntimeBlocker('/bin/x', 'flags=0x10002(adhoc,runtime)', xml([ALLOW_DYLD]))).toEqual({
      reason: `/bin/x is signed with the hardened runtime with ${ALLOW_DYLD} but without ${DISABLE_LV}: dyld would load the injector, library validation would reject it (it is not signed by the program's team), and dyld would kill the program at launch ("could not be loaded"). Use a build signed with ${DISABLE_LV} too.`,
      launchFails: true,
    });
  });

  it('disable-library-validation alone still leaves DYLD_INSERT_LIBRARIES ignored', () => {
    expect(hardenedRuntimeBlocker('/bin/x', 'flags=0x10000(runtime)', xml([DISABLE_LV]))?.launchFails).toBe(false);
  });

  it('reads entitlements in each form codesign prints them, and only entitlements set to true', () => {
    const text = (keys: string[]) =>
      `[Dict]\n${keys.map((k) => `\t[Key] ${k}\n\t[Value]\n\t\t[Bool] true\n`).join('')}`;
    expect(hasEntitlement(text([ALLOW_DYLD]), ALLOW_DYLD)).toBe(true);
    expect(hasEntitlement(text([ALLOW_DYLD]), DISABLE_LV)).toBe(false);
    expect(hasEntitlement(`\u00fa\u00de qq${xml([DISABLE_LV])}`, DISABLE_LV)).toBe(true);
    expect(hasEntitlement(`<key>${ALLOW_DYLD}</key><false/>`, ALLOW_DYLD)).toBe(false);
    expect(hasEntitlement(`[Key] ${ALLOW_DYLD}\n[Value]\n[Bool] false`, ALLOW_DYLD)).toBe(false);
    // A key that only starts like the entitlement is another key.
    expect(hasEntitlement(xml([`${ALLOW_DYLD}-extra`]), ALLOW_DYLD)).toBe(false);
  });
});

describe('exec on macOS: codesign is called the way its output is read (fake codesign with its real behaviour)', () => {
  const [ALLOW_DYLD, DISABLE_LV] = INJECTION_ENTITLEMENTS;
  let dir: string;

  const program = (name: string, flags: string | null, entitlements: string[], shebang?: string) =>
    signedProgram(dir, name, flags, entitlements, shebang);

  beforeAll(() => {
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-codesign-')));
    // exec asks codesign by its absolute path; the fake is handed to the check the same way.
    fakeCodesign = path.join(installFakeCodesign(dir), 'codesign');
  });
  afterAll(() => {
    fakeCodesign = SYSTEM_TOOLS.codesign;
  });

  it('the fake behaves as codesign does: no flags line without --verbose', () => {
    const file = program('plain', '0x10000(runtime)', []);
    const quiet = spawnSync(fakeCodesign, ['-d', file], { encoding: 'utf8' });
    expect(quiet.stderr).toBe(`Executable=${file}\n`);
    const verbose = spawnSync(fakeCodesign, ['-dv', file], { encoding: 'utf8' });
    expect(verbose.stderr).toContain('flags=0x10000(runtime)');
  });

  it('a hardened binary without the entitlements is found (it was never found before: codesign -d alone has no flags line)', () => {
    const file = program('hardened', '0x10000(runtime)', []);
    expect(injectionBlocker(file, 'darwin', fakeCodesign)).toEqual(
      hardenedRuntimeBlocker(file, 'flags=0x10000(runtime)', ''),
    );
    expect(injectionBlocker(file, 'darwin', fakeCodesign)?.launchFails).toBe(false);
  });

  it('allow-dyld-environment-variables without disable-library-validation: launch would fail', () => {
    const file = program('dyld-only', '0x10000(runtime)', [ALLOW_DYLD]);
    expect(injectionBlocker(file, 'darwin', fakeCodesign)).toEqual({
      reason: `${file} is signed with the hardened runtime with ${ALLOW_DYLD} but without ${DISABLE_LV}: dyld would load the injector, library validation would reject it (it is not signed by the program's team), and dyld would kill the program at launch ("could not be loaded"). Use a build signed with ${DISABLE_LV} too.`,
      launchFails: true,
    });
  });

  it('both entitlements, no hardened runtime, or no signature at all: nothing blocks', () => {
    expect(
      injectionBlocker(program('both', '0x10000(runtime)', [ALLOW_DYLD, DISABLE_LV]), 'darwin', fakeCodesign),
    ).toBeNull();
    expect(injectionBlocker(program('adhoc', '0x2(adhoc)', []), 'darwin', fakeCodesign)).toBeNull();
    expect(injectionBlocker(program('unsigned', null, []), 'darwin', fakeCodesign)).toBeNull();
  });

  it('a script is judged by its resolved interpreter: a hardened interpreter strips the injector just the same', () => {
    const interpreter = program('python3', '0x10000(runtime)', []);
    const link = path.join(dir, 'python-link');
    symlinkSync(interpreter, link);
    const script = program('serve.py', null, [], link);
    expect(injectionBlocker(script, 'darwin', fakeCodesign)).toEqual({
      reason: `${script} is a script run by ${link}: ${hardenedRuntimeBlocker(interpreter, 'flags=0x10000(runtime)', '')!.reason}`,
      launchFails: false,
    });
    const fine = program('python-ok', '0x10000(runtime)', [ALLOW_DYLD, DISABLE_LV]);
    expect(injectionBlocker(program('ok.py', null, [], fine), 'darwin', fakeCodesign)).toBeNull();
  });

  it('prepareExec refuses a program dyld would kill (the CLI exits 125 on RefusedError, as on every failure of its own); --allow-unpatched runs it without the injector', () => {
    if (isSimulatedPlatform) {
      // The simulated build's injector, over a simulated Metal with no device: nothing for the bare-metal guard.
      requireSimBuild();
      process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = '';
    }
    const plan = (command: string, allowUnpatched: boolean) =>
      prepareExec(
        { profile: resolveProfile('apple7'), command, args: [], force: true, allowUnpatched },
        'darwin',
        fakeCodesign,
      );
    const dyldOnly = program('dyld-only-2', '0x10000(runtime)', [ALLOW_DYLD]);
    const why = injectionBlocker(dyldOnly, 'darwin', fakeCodesign)!.reason;
    expect(() => plan(dyldOnly, false)).toThrow(RefusedError);
    expect(() => plan(dyldOnly, false)).toThrow(`${why} (--allow-unpatched runs it without the injector)`);
    expect(plan(dyldOnly, true)).toEqual({
      injector: null,
      resolved: dyldOnly,
      warnings: [],
      unpatched: `${why} Running ${dyldOnly} unpatched, without the injector (--allow-unpatched).`,
    });
    // Without allow-dyld-environment-variables dyld only drops the variable: --allow-unpatched runs it as it is.
    const hardened = program('hardened-2', '0x10000(runtime)', []);
    expect(() => plan(hardened, false)).toThrow(
      `${injectionBlocker(hardened, 'darwin', fakeCodesign)!.reason} (--allow-unpatched runs it anyway)`,
    );
    expect(plan(hardened, true)).toMatchObject({ injector: injectorPath(), resolved: hardened, unpatched: null });
  });
});

/**
 * A program that counts the SIGINTs it receives: prints "ready", and once the first one arrives waits a while for a
 * second, then prints "sigint=N" and exits 0.
 */
const SIGCOUNT_C = `#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static volatile sig_atomic_t count = 0;
static void on_int(int sig) { (void)sig; count++; }
int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_int;
  sigaction(SIGINT, &sa, NULL);
  printf("ready\\n");
  fflush(stdout);
  for (int i = 0; i < 3000 && count == 0; i++) usleep(10000);
  usleep(700000);
  printf("sigint=%d\\n", (int)count);
  fflush(stdout);
  return 0;
}
`;

describeSim('exec: a SIGINT reaches the child exactly once', () => {
  let sigcount: string;
  beforeAll(() => {
    requireSimBuild();
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-sigcount-'));
    writeFileSync(path.join(dir, 'sigcount.c'), SIGCOUNT_C);
    sigcount = path.join(dir, 'sigcount');
    execFileSync('clang-14', [path.join(dir, 'sigcount.c'), '-o', sigcount]);
  });

  /** Resolves with everything `child` printed once it exits; calls `onReady` when "ready" first appears. */
  function collect(child: ChildProcess, onReady: () => void): Promise<{ out: string; code: number | null }> {
    return new Promise((resolve) => {
      let out = '';
      let ready = false;
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        if (!ready && out.includes('ready')) {
          ready = true;
          onReady();
        }
      });
      // 'close', not 'exit': under load the last output can still be in the pipe when the process has exited.
      child.on('close', (code) => resolve({ out, code }));
    });
  }

  /**
   * Runs the CLI with `args` on a pseudo-terminal and presses Ctrl-C once the program says "ready". script(1) gives
   * the CLI the terminal as its controlling terminal; a 0x03 byte written to it is Ctrl-C. script runs the command
   * through $SHELL -c, and `exec` makes any shell replace itself with the CLI, so the CLI leads the terminal's
   * foreground group, as under an interactive shell. Without it dash stays as the parent, dies of the Ctrl-C itself,
   * and script reports 130. SHELL is pinned to sh (dash on Debian) so every machine runs that case.
   */
  async function ctrlCAtTerminal(
    args: string[],
    env: NodeJS.ProcessEnv,
  ): Promise<{ out: string; code: number | null }> {
    const command = `exec ${[process.execPath, cli, ...args].map((a) => `'${a}'`).join(' ')}`;
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      env: { ...env, NO_COLOR: '1', SHELL: '/bin/sh' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const result = await collect(child, () => child.stdin!.write('\x03'));
    child.stdin!.end();
    return result;
  }

  it('Ctrl-C at a terminal: the terminal signals the child itself, the CLI does not add a second one', async () => {
    const { out, code } = await ctrlCAtTerminal(['exec', '--', sigcount], { ...process.env, ...VM });
    expect(out.match(/sigint=\d+/g)).toEqual(['sigint=1']);
    expect(code).toBe(0);
  }, 30_000);

  it('Ctrl-C at a terminal without the native module (exec --allow-unpatched on Linux): still one SIGINT, from /proc', async () => {
    // No simulated Metal selected: the addon is not loaded, so the process groups come from /proc/<pid>/stat.
    const { METAL_CAP_SHIM_SIM_SNAPSHOT: _sim, ...withoutSim } = process.env;
    const { out, code } = await ctrlCAtTerminal(['exec', '--allow-unpatched', '--', sigcount], withoutSim);
    expect(out.match(/sigint=\d+/g)).toEqual(['sigint=1']);
    expect(code).toBe(0);
  }, 30_000);

  it('a SIGINT sent to the CLI pid alone, without the native module: passed on to the child, once', async () => {
    const { METAL_CAP_SHIM_SIM_SNAPSHOT: _sim, ...withoutSim } = process.env;
    const child = spawn(process.execPath, [cli, 'exec', '--allow-unpatched', '--', sigcount], {
      env: { ...withoutSim, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const { out, code } = await collect(child, () => process.kill(child.pid!, 'SIGINT'));
    expect(out.match(/sigint=\d+/g)).toEqual(['sigint=1']);
    expect(code).toBe(0);
  }, 30_000);

  it('a SIGINT sent to the CLI pid alone is passed on to the child, once', async () => {
    // Its own session: no controlling terminal, as under a supervisor that signals the CLI by pid.
    const child = spawn(process.execPath, [cli, 'exec', '--', sigcount], {
      env: { ...process.env, ...VM, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const { out, code } = await collect(child, () => process.kill(child.pid!, 'SIGINT'));
    expect(out.match(/sigint=\d+/g)).toEqual(['sigint=1']);
    expect(code).toBe(0);
  }, 30_000);

  it('the decision: SIGINT/SIGQUIT are not passed on only when the terminal already signalled the child', () => {
    const fg = { own: 100, terminal: 100, child: 100 };
    expect(shouldForwardSignal('SIGINT', fg)).toBe(false);
    expect(shouldForwardSignal('SIGQUIT', fg)).toBe(false);
    expect(shouldForwardSignal('SIGTERM', fg)).toBe(true);
    expect(shouldForwardSignal('SIGHUP', fg)).toBe(true);
    expect(shouldForwardSignal('SIGUSR1', fg)).toBe(true);
    // No controlling terminal, our group in the background, the child in a group of its own, or no facts at all.
    expect(shouldForwardSignal('SIGINT', { ...fg, terminal: -1 })).toBe(true);
    expect(shouldForwardSignal('SIGINT', { ...fg, terminal: 200 })).toBe(true);
    expect(shouldForwardSignal('SIGINT', { ...fg, child: 300 })).toBe(true);
    expect(shouldForwardSignal('SIGINT', { ...fg, child: -1 })).toBe(true);
    expect(shouldForwardSignal('SIGINT', null)).toBe(true);
  });

  it('on Windows SIGINT is never passed on (the console already sent Ctrl-C to the child); other signals are', () => {
    const elsewhere = { own: 100, terminal: 200, child: 100 };
    expect(shouldForwardSignal('SIGINT', null, 'win32')).toBe(false);
    expect(shouldForwardSignal('SIGINT', elsewhere, 'win32')).toBe(false);
    expect(shouldForwardSignal('SIGTERM', null, 'win32')).toBe(true);
    expect(shouldForwardSignal('SIGQUIT', null, 'win32')).toBe(true);
    expect(shouldForwardSignal('SIGINT', elsewhere, 'linux')).toBe(true);
    expect(shouldForwardSignal('SIGINT', elsewhere, 'darwin')).toBe(true);
  });
});

describeSim('exec --json', () => {
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
  });

  it('leaves stdout to the program and writes one summary line on stderr', () => {
    const r = runCli(['exec', '--json', '--profile', 'cua-release', '--', consumer], VM);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)[0].families['1007']).toBe(true);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(`metal-cap-shim: warning: ${APPLE9_ABOVE_M1_ULTRA.message}`);
    const summary = JSON.parse(lines[1]!);
    expect(summary).toMatchObject({
      schema: 'metal-cap-shim/exec@1',
      exitCode: 0,
      signal: null,
      injectorLoaded: true,
      injectorSlice: process.arch === 'x64' ? 'x86_64' : process.arch,
      patchedClasses: ['AppleParavirtDevice'],
      injectorErrors: [],
    });
    expect(summary.warnings.map((w: { code: string }) => w.code)).toEqual([
      'above-host-family',
      'threadgroup-memory-above-hardware',
    ]);
  });
});
