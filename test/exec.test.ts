import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hardenedRuntimeBlocker } from '../lib/exec.js';
import { FAMILY_NAMES, FAMILY_VALUES } from '../lib/families.js';
import { predictGates } from '../lib/gates.js';
import { deviceReportFrom } from '../lib/report.js';
import type { DeviceReport } from '../lib/types.js';
import { buildConsumer, describeSim, requireSimBuild, root, runCli } from './helpers.js';

const VM = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };
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
    const plain = JSON.parse(execFileSync(consumer, { env: { ...process.env, ...VM }, encoding: 'utf8' }))[0] as ConsumerDevice;
    expect(gates(plain)).toEqual([false, false, false]);
    expect(plain.maxThreadgroupMemoryLength).toBe(32768);
    const r = runCli(['exec', '--', consumer], VM);
    expect(r.status, r.stderr).toBe(0);
    // Nothing but the program's own output: it must still parse, and stderr stays empty.
    expect(r.stderr).toBe('');
    const patched = JSON.parse(r.stdout)[0] as ConsumerDevice;
    expect(gates(patched)).toEqual([true, true, true]);
    expect(patched.maxThreadgroupMemoryLength).toBe(65536);
    expect(patched.families[String(FAMILY_VALUES.apple10)]).toBe(false);
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
    const r = runCli(['exec', '--trace', file, '--', consumer], VM);
    expect(r.status, r.stderr).toBe(0);
    const trace = JSON.parse(readFileSync(file, 'utf8'));
    expect(trace.profileApplied).toBe(true);
    expect(trace.patchedClasses).toEqual(['AppleParavirtDevice']);
    const apple7 = trace.trace.find((t: { family: number }) => t.family === 1007);
    expect(apple7).toEqual({ selector: 'supportsFamily:', family: 1007, calls: 1, stock: 0, given: 1 });
    const tg = trace.trace.find((t: { selector: string }) => t.selector === 'maxThreadgroupMemoryLength');
    expect(tg).toMatchObject({ stock: 32768, given: 65536 });
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

  it('refuses to raise on bare metal without --force (exit 3), and runs nothing', () => {
    const marker = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-ran-')), 'ran');
    const r = runCli(['exec', '--', 'sh', '-c', `touch ${marker}`], { METAL_CAP_SHIM_SIM_SNAPSHOT: 'm1-ultra-bare-metal' });
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('ERR_REFUSED_BARE_METAL');
    expect(() => readFileSync(marker)).toThrow();
  });

  it.each([
    [['exec', '--trace', tmpdir(), '--', 'true'], 2, 'ERR_TRACE_FILE'],
    [['exec', '--trace', '/nonexistent/folder/trace.json', '--', 'true'], 2, 'ERR_TRACE_FILE'],
    [['exec', '--profile', 'apple99', '--', 'true'], 2, 'ERR_INVALID_PROFILE'],
    [['exec', '--profile', '{"mode":"lower"}', '--', 'true'], 2, 'ERR_INVALID_PROFILE'],
    [['exec', 'true'], 2, 'ERR_USAGE'],
    [['exec', '--'], 2, 'ERR_USAGE'],
    [['exec', '--bogus', '--', 'true'], 2, 'ERR_USAGE'],
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
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ profileApplied: true, patchedClasses: [], trace: [] });
  });
});

describe('hardened-runtime detection (codesign output)', () => {
  const xml = (keys: string[]) => `<?xml version="1.0"?><plist><dict>${keys.map((k) => `<key>${k}</key><true/>`).join('')}</dict></plist>`;

  it('a binary without the hardened runtime is not blocked', () => {
    expect(hardenedRuntimeBlocker('/x/llama-bench', 'CodeDirectory v=20400 size=1234 flags=0x2(adhoc) hashes=30+2', '')).toBeNull();
  });

  it('a hardened binary without the entitlements is blocked, naming what is missing', () => {
    const why = hardenedRuntimeBlocker('/Applications/X.app/Contents/MacOS/X', 'CodeDirectory v=20500 flags=0x10000(runtime) hashes=9', xml([]));
    expect(why).toContain('allow-dyld-environment-variables');
    expect(why).toContain('disable-library-validation');
  });

  it('a hardened binary with both entitlements (as the official node binary has) is not blocked', () => {
    const both = xml(['com.apple.security.cs.allow-dyld-environment-variables', 'com.apple.security.cs.disable-library-validation']);
    expect(hardenedRuntimeBlocker('/usr/local/bin/node', 'flags=0x10000(runtime)', both)).toBeNull();
  });

  it('one entitlement alone is not enough', () => {
    const one = xml(['com.apple.security.cs.allow-dyld-environment-variables']);
    expect(hardenedRuntimeBlocker('/bin/x', 'flags=0x10002(adhoc,runtime)', one)).toContain('disable-library-validation');
  });
});

describeSim('exec --json', () => {
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
  });

  it('leaves stdout to the program and writes one summary line on stderr', () => {
    const r = runCli(['exec', '--json', '--', consumer], VM);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)[0].families['1007']).toBe(true);
    const summary = JSON.parse(r.stderr.trim());
    expect(summary).toMatchObject({
      schema: 'metal-cap-shim/exec@1',
      exitCode: 0,
      signal: null,
      injectorLoaded: true,
      injectorSlice: process.arch === 'x64' ? 'x86_64' : process.arch,
      patchedClasses: ['AppleParavirtDevice'],
      injectorErrors: [],
    });
    expect(summary.warnings.map((w: { code: string }) => w.code)).toEqual(['threadgroup-memory-above-hardware']);
  });
});
