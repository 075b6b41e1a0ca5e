// The live suite: real Metal.framework on macOS, run by CI on GitHub's arm64 runners (Virtualization.framework guests:
// the paravirtual device, hw.model VirtualMac2,1, kern.hv_vmm_present=1) and on macos-15-intel (real Intel Macs, which
// may have no Metal device at all). On any other OS it is skipped, visibly.
//
// Runtime exercised: Apple's Objective-C runtime (libobjc.A.dylib) and Apple's Metal.framework, through the addon
// (build/Release, or prebuilds/darwin-x64+arm64 with PREBUILDS_ONLY=1) and the exec injector loaded by dyld.
// What this proves that the simulated suite (GCC's libobjc + GNUstep + test/sim-metal on Linux) cannot:
//   - the real class layout: whether AppleParavirtDevice / AGX… / MTLIGAccelDevice / AMD… implement
//     supportsFamily:, maxThreadgroupMemoryLength and recommendedMaxWorkingSetSize themselves or inherit them from
//     _MTLDevice, so which hook mode (replace the class's own method, or add one to the class) Apple's runtime takes;
//   - that Apple's class_addMethod / method_setImplementation behave as the engine expects, so apply → verify →
//     restore gives back byte-for-byte the stock answers of the real device;
//   - dyld's __DATA,__interpose of MTLCreateSystemDefaultDevice / MTLCopyAllDevices into a program compiled here,
//     DYLD_INSERT_LIBRARIES picking the right slice of the universal injector (arm64 or x86_64), and SIP stripping
//     DYLD_* from /bin/sh;
//   - that the addon's probe agrees with an independent program (test/live/metal_probe.m) using only Apple's API.
// Nothing here hard-codes a device's answers: every expectation is computed from the stock answers of the device the
// runner has, with the same prediction (predictPatchedDevice) the product uses.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants as osConstants, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { injectionBlocker, INJECTION_ENTITLEMENTS } from '../../lib/exec/codesign.js';
import { injectorPath } from '../../lib/exec/injector.js';
import { loadNative } from '../../lib/device/native.js';
import {
  applyProfile,
  probe,
  RefusedError,
  restore,
  status,
  type ApplyResult,
  type CapabilityReport,
  type DeviceReport,
} from '../../lib/index.js';
import { FAMILY_NAMES, FAMILY_VALUES } from '../../lib/tables.js';
import { chipFamily } from '../../lib/device/chips.js';
import { diffAnswers, familyAnswer, isRaise, predictPatchedDevice, resolveProfile } from '../../lib/patch/profiles.js';
import { dist, root, runCli } from '../support/helpers.js';

const isMac = process.platform === 'darwin';

// skipIf conditions are evaluated while the file is collected, so the stock answers are taken here, at module top
// level, before any test patches anything (and only on macOS: elsewhere no native code is touched). Every test
// compares against these.
const stock: CapabilityReport | null = isMac ? probe({ allDevices: true }) : null;
const stockDefault: CapabilityReport | null = isMac ? probe() : null;
const hasDevice = stock?.supported === true && stock.devices.length > 0;
const hasClang = isMac && spawnSync('clang', ['--version'], { stdio: 'ignore' }).status === 0;
const csrutil = isMac ? spawnSync('/usr/bin/csrutil', ['status'], { encoding: 'utf8' }) : null;
/** `csrutil status` says "enabled." only when every protection is on; VM guests may say "disabled" or "unknown". */
const sipEnabled = /status:\s*enabled/i.test(csrutil?.stdout ?? '');

/** Skip reasons, shown in the test name so the CI log says why a test did not run. */
const NEEDS_DEVICE = isMac && !hasDevice ? ' [skipped: Metal reports no device on this runner]' : '';
const NEEDS_CLANG = isMac && !hasClang ? ' [skipped: no clang on this runner]' : '';
const NEEDS_SIP =
  isMac && !sipEnabled
    ? ` [skipped: SIP is not enabled here (${(csrutil?.stdout ?? '').trim() || 'csrutil gave no answer'})]`
    : '';

/** What test/live/metal_probe.m prints for the default device. */
interface ProbeJson {
  name: string;
  families: Record<string, boolean>;
  maxThreadgroupMemoryLength: number;
  recommendedMaxWorkingSetSize: number;
}

const probeBinary = path.join(root, 'build', 'test', 'metal_probe');

/** Compiles metal_probe.m with exactly the command line documented in it (and in the CI workflow's smoke step). */
function compileMetalProbe(): string {
  mkdirSync(path.dirname(probeBinary), { recursive: true });
  execFileSync(
    'clang',
    [
      '-fobjc-arc',
      '-framework',
      'Metal',
      '-framework',
      'Foundation',
      'test/live/metal_probe.m',
      '-o',
      'build/test/metal_probe',
    ],
    { cwd: root, stdio: 'pipe' },
  );
  return probeBinary;
}

function stockReport(): CapabilityReport {
  if (stock === null || !stock.supported) throw new Error('no stock report: this test needs a Metal device');
  return stock;
}

function stockDefaultDevice(): DeviceReport {
  const d = stockDefault?.devices[0];
  if (d === undefined) throw new Error('no default device: this test needs a Metal device');
  return d;
}

const isParavirtualName = (d: DeviceReport) => /Paravirtual/i.test(d.name);

/** What the product's own guard will decide for a profile on this host: refuse (bare metal, raises, no force) or not. */
function guardFor(profileName: string) {
  const report = stockReport();
  const profile = resolveProfile(profileName);
  const expected = report.devices.map((d) => predictPatchedDevice(d, profile));
  const changes = diffAnswers(report.devices, expected);
  const raises = changes.filter(isRaise);
  return {
    profile,
    expected,
    changes,
    raises,
    refusedWithoutForce: raises.length > 0 && report.host?.isVirtualMachine !== true,
  };
}

/** `{ className: { selector: mode } }` from an apply result, for the CI log and for comparing two applies. */
function hookModes(result: ApplyResult): Record<string, Record<string, string>> {
  return Object.fromEntries(
    result.patchedClasses.map((c) => [c.className, Object.fromEntries(c.selectors.map((s) => [s.selector, s.mode]))]),
  );
}

/** The hook modes of the first apply in this process, i.e. Apple's class layout before we touched it. */
let firstApplyModes: Record<string, Record<string, string>> | null = null;

describe.skipIf(!isMac)('live Metal (macOS only): real Metal.framework, Apple’s Objective-C runtime, dyld', () => {
  beforeAll(() => {
    if (!existsSync(path.join(dist, 'cli.js')))
      throw new Error('dist/cli.js is missing: run `npm run build` before `npm run test:live`');
  });
  afterEach(() => {
    restore();
  });

  it('probe() asks the real Metal.framework and describes the host', () => {
    const report = stockDefault!;
    expect(report.source, `no live report (${report.reason}): ${report.detail}`).toBe('live');
    expect(report.platform).toBe('darwin');
    expect(report.snapshot).toBeNull();
    const host = report.host;
    expect(host).not.toBeNull();
    expect(typeof host!.isVirtualMachine).toBe('boolean');
    expect(host!.model).toEqual(expect.any(String));
    expect(host!.model!.length).toBeGreaterThan(0);
    expect(host!.osVersion).toMatch(/^\d+\.\d+/);
    expect(host!.osBuild).toEqual(expect.any(String));
    expect(['arm64', 'x86_64']).toContain(host!.arch);
    // hw.memsize: every Mac and guest this runs on has between 1 GiB and 16 TiB.
    expect(host!.memoryBytes).toBeGreaterThanOrEqual(2 ** 30);
    expect(host!.memoryBytes).toBeLessThanOrEqual(2 ** 44);
    // Node on the runners is native: arm64 Node on Apple silicon, x86_64 Node on Intel.
    expect(host!.translated).toBe(process.arch === 'x64' && host!.arch === 'arm64');
    // Apple-silicon Virtualization.framework guests are VirtualMac models, and those set kern.hv_vmm_present.
    if (host!.model!.startsWith('VirtualMac')) expect(host!.isVirtualMachine).toBe(true);
    if (hasDevice) {
      expect(report.supported).toBe(true);
      expect(report.reason).toBeNull();
    } else {
      expect(report.supported).toBe(false);
      expect(report.reason).toBe('no-device');
      expect(report.devices).toEqual([]);
    }
    let loadedFrom = 'unknown';
    try {
      const ngb = createRequire(import.meta.url)('node-gyp-build') as { path?: (dir: string) => string };
      loadedFrom = path.relative(root, ngb.path?.(root) ?? 'unknown');
    } catch {
      // Logging only.
    }
    console.log(
      `[live] host ${host!.model} macOS ${host!.osVersion} (${host!.osBuild}) ${host!.arch}, VM ${host!.isVirtualMachine}, ` +
        `SIP ${(csrutil?.stdout ?? '').trim() || 'unknown'}; addon ${loadedFrom}; devices: ` +
        (stock!.devices
          .map((d) => `${d.name} [${d.className}] highest ${d.highestAppleFamily?.name ?? 'none'}`)
          .join('; ') || 'none'),
    );
  });

  it.skipIf(!hasDevice)(`the default device answers every property the running macOS has${NEEDS_DEVICE}`, () => {
    const d = stockDefaultDevice();
    const host = stockDefault!.host!;
    expect(d.index).toBe(0);
    expect(d.isDefault).toBe(true);
    expect(d.name.length).toBeGreaterThan(0);
    expect(d.className.length).toBeGreaterThan(0);
    // Every runner is macOS 14 or later, so everything from 10.11 to 11.0 is there; architecture from 14.0.
    for (const name of FAMILY_NAMES) expect(d.families[name], `families.${name}`).not.toBeNull();
    expect(d.registryId).not.toBeNull();
    expect(d.maxThreadgroupMemoryLength).toBeGreaterThan(0);
    expect(d.maxThreadsPerThreadgroup?.width).toBeGreaterThan(0);
    expect(d.recommendedMaxWorkingSetSize).toBeGreaterThan(0);
    expect(d.maxBufferLength).toBeGreaterThan(0);
    expect(typeof d.hasUnifiedMemory).toBe('boolean');
    expect(d.location).not.toBeNull();
    const major = Number.parseInt(host.osVersion ?? '0', 10);
    if (major >= 14) expect(d.architecture, 'architecture.name (macOS 14+)').toEqual(expect.stringMatching(/\S/));
    // The full list has exactly one default device, and it is the same one.
    const defaults = stock!.devices.filter((x) => x.isDefault);
    expect(defaults).toHaveLength(1);
    expect({ ...defaults[0]!, index: 0 }).toEqual(d);
    if (isParavirtualName(d)) {
      // The paravirtual device exists only in a Virtualization.framework guest.
      expect(host.isVirtualMachine).toBe(true);
      expect(d.hasUnifiedMemory).toBe(true);
    }
    console.log(`[live] default device ${JSON.stringify(d)}`);
  });

  it.skipIf(hasDevice)(
    'without a Metal device, applyProfile reports no-device and installs nothing (runs only where Metal has none)',
    () => {
      const result = applyProfile('cua-release', { force: true });
      expect(result.applied).toBe(false);
      expect(result.reason).toBe('no-device');
      expect(status().hooks).toEqual([]);
    },
  );

  it('machdep.cpu.brand_string names the host’s chip: an Apple chip on Apple silicon, with " (Virtual)" in a guest', () => {
    const host = stockDefault!.host!;
    console.log(
      `[live] machdep.cpu.brand_string ${JSON.stringify(host.cpuBrand)} → chip ${JSON.stringify(host.chip)}, family ${chipFamily(host.chip)}`,
    );
    expect(host.cpuBrand).toEqual(expect.stringMatching(/\S/));
    if (host.arch === 'arm64') {
      expect(host.chip, `brand ${host.cpuBrand}`).toEqual(expect.stringMatching(/^Apple [MA]\d/));
      expect(chipFamily(host.chip), `${host.chip} is in lib/device/chips.ts`).not.toBeNull();
    } else {
      expect(host.chip).toBeNull();
    }
    expect(host.cpuBrand!.endsWith(' (Virtual)')).toBe(host.model!.startsWith('VirtualMac'));
  });

  it(`the host profile: the chip’s family and name in a guest, nothing on bare metal, not applied without a chip${NEEDS_DEVICE}`, () => {
    if (!hasDevice) return;
    const host = stockDefault!.host!;
    const r = applyProfile('host');
    if (host.chip === null) {
      expect([r.applied, r.reason]).toEqual([false, 'host-unknown']);
      return;
    }
    expect(r.applied, `${r.reason}: ${r.detail}`).toBe(true);
    const d = probe().devices[0]!;
    expect(d.name).toBe(host.chip);
    expect(d.highestAppleFamily?.value).toBe(chipFamily(host.chip));
    expect(restore().verification).toMatchObject({ ok: true });
    expect(probe().devices[0]!.name).toBe(stockDefault!.devices[0]!.name);
  });

  it('the CLI (dist build) reports the same devices as the in-process probe', () => {
    const r = runCli(['probe', '--json', '--all-devices']);
    expect(r.status, r.stderr).toBe(hasDevice ? 0 : 1);
    expect(JSON.parse(r.stdout)).toEqual(stock);
  });

  it.skipIf(!hasDevice)(
    `cua-release (forced) patches the real device classes, verifies, and restore gives back the stock answers${NEEDS_DEVICE}`,
    () => {
      const report = stockReport();
      const { expected } = guardFor('cua-release');
      // force: the Intel runners are bare metal; on a VM it changes nothing.
      const result = applyProfile('cua-release', { force: true });
      expect(result.applied, result.detail ?? '').toBe(true);
      expect(result.verification?.ok, JSON.stringify(result.verification?.mismatches)).toBe(true);
      expect(result.before?.devices).toEqual(report.devices);
      expect(result.after?.devices).toEqual(expected);
      const after0 = result.after!.devices[0]!;
      expect(after0.families.apple9).toBe(true);
      expect(after0.families.apple7).toBe(true);
      expect(after0.maxThreadgroupMemoryLength).toBeGreaterThanOrEqual(65536);
      // cua-release never advertises Metal3 (MLX's residency sets): the stock answer stays.
      expect(after0.families.metal3).toBe(report.devices[0]!.families.metal3);
      // A fresh probe through the public API sees the same patched answers.
      expect(probe({ allDevices: true }).devices).toEqual(expected);

      const codes = result.warnings.map((w) => w.code);
      expect(codes).toContain('threadgroup-memory-above-hardware');
      expect(codes).not.toContain('advertises-metal3');
      if (report.devices.every(isParavirtualName)) {
        expect(codes).not.toContain('not-paravirtual');
      } else {
        const raisedBareDevice = result.changed.some(
          (c) => isRaise(c) && !isParavirtualName(report.devices.find((d) => d.index === c.device)!),
        );
        expect(codes.includes('not-paravirtual')).toBe(raisedBareDevice);
      }

      // Hook modes on Apple's runtime: 'replaced' when the concrete class implements the selector itself, 'added'
      // when it inherits it (from _MTLDevice). This is the real class layout; the CI log records it.
      const classes = [...new Set(report.devices.map((d) => d.className))].sort();
      expect(result.patchedClasses.map((c) => c.className).sort()).toEqual(classes);
      const first = result.patchedClasses[0]!;
      expect(first.selectors.map((s) => s.selector)).toEqual(
        expect.arrayContaining(['supportsFamily:', 'maxThreadgroupMemoryLength']),
      );
      for (const c of result.patchedClasses) {
        for (const s of c.selectors) expect(['added', 'replaced'], `${c.className} ${s.selector}`).toContain(s.mode);
      }
      firstApplyModes = hookModes(result);
      for (const [className, modes] of Object.entries(firstApplyModes)) {
        console.log(
          `[live] hook modes on ${className}: ${Object.entries(modes)
            .map(([sel, mode]) => `${sel} ${mode}`)
            .join(', ')}`,
        );
      }
      const s = status();
      expect(s.active).toBe(true);
      expect([...s.patchedClasses].sort()).toEqual(classes);
      expect(s.hooks.every((h) => h.ours)).toBe(true);

      const restored = restore();
      expect(restored.restored).toBe(true);
      expect(restored.conflicts).toEqual([]);
      expect(restored.verification?.ok, JSON.stringify(restored.verification?.mismatches)).toBe(true);
      expect(probe({ allDevices: true })).toEqual(report);
      expect(probe()).toEqual(stockDefault);
    },
  );

  it.skipIf(!hasDevice)(
    `mask-apple5 without force masks down to Apple5, or is refused exactly when it would raise on bare metal${NEEDS_DEVICE}`,
    () => {
      const report = stockReport();
      const { expected, changes, raises, refusedWithoutForce } = guardFor('mask-apple5');
      const stockSupportsApple5 = report.devices.every((d) => d.families.apple5 === true);
      console.log(
        `[live] mask-apple5 on stock answers: ${changes.length} changes, raises ${JSON.stringify(raises.map((c) => c.field))}, ` +
          `${refusedWithoutForce ? 'refused without force' : 'allowed without force'}`,
      );
      if (stockSupportsApple5) {
        // A device that already answers Apple5 or more loses answers and gains none: masking needs no force anywhere.
        expect(raises).toEqual([]);
      }
      if (refusedWithoutForce) {
        // Only a device below Apple5 (an Intel or AMD GPU answers no Apple family) on a host that is not a VM.
        expect(stockSupportsApple5).toBe(false);
        // A refusal is a result; with strict: true it is a RefusedError.
        expect(applyProfile('mask-apple5')).toMatchObject({
          applied: false,
          reason: 'refused-bare-metal',
          verification: null,
        });
        let thrown: unknown;
        try {
          applyProfile('mask-apple5', { strict: true });
        } catch (e) {
          thrown = e;
        }
        expect(thrown).toBeInstanceOf(RefusedError);
        expect((thrown as RefusedError).code).toBe('ERR_REFUSED_BARE_METAL');
        expect(status().hooks.filter((h) => h.ours)).toEqual([]);
        expect(probe({ allDevices: true })).toEqual(report);
        return;
      }
      const result = applyProfile('mask-apple5');
      expect(result.applied, result.detail ?? '').toBe(true);
      expect(result.verification?.ok, JSON.stringify(result.verification?.mismatches)).toBe(true);
      expect(result.after?.devices).toEqual(expected);
      for (const [i, d] of result.after!.devices.entries()) {
        const before = report.devices[i]!;
        // mode 'exact' with ceiling Apple5: Apple1–5 YES, Apple6+ NO, whatever the stock answers were.
        expect(d.highestAppleFamily?.name, d.name).toBe('apple5');
        for (const name of ['apple6', 'apple7', 'apple8', 'apple9', 'apple10', 'mac2', 'metal3', 'metal4'] as const) {
          expect(d.families[name], `${d.name} ${name}`).toBe(false);
        }
        // Common families keep their real answers.
        for (const name of ['common1', 'common2', 'common3'] as const)
          expect(d.families[name]).toBe(before.families[name]);
        expect(d.maxThreadgroupMemoryLength).toBe(32768);
        expect(d.recommendedMaxWorkingSetSize).toBe(before.recommendedMaxWorkingSetSize);
      }
      // The engine remembers how it reached each selector across restore and re-apply (an added method cannot be
      // removed from a class on Apple's runtime; it is pointed back at the superclass's implementation).
      if (firstApplyModes !== null) expect(hookModes(result)).toEqual(firstApplyModes);
      const restored = restore();
      expect(restored.verification?.ok, JSON.stringify(restored.verification?.mismatches)).toBe(true);
      expect(probe({ allDevices: true })).toEqual(report);
    },
  );

  describe('exec: DYLD_INSERT_LIBRARIES into another program', () => {
    it.skipIf(!hasDevice || !hasClang)(
      `a program compiled here gets the profile's answers through dyld, and nothing else changes${NEEDS_DEVICE}${NEEDS_CLANG}`,
      () => {
        const binary = compileMetalProbe();
        const plain = spawnSync(binary, [], { encoding: 'utf8', timeout: 60_000 });
        expect(plain.status, plain.stderr).toBe(0);
        console.log(`[live] metal_probe stock: ${plain.stdout.trim()}`);
        const stockJson = JSON.parse(plain.stdout) as ProbeJson | null;
        expect(stockJson).not.toBeNull();
        const s = stockJson!;

        // An independent program using only Apple's API sees what the addon reports for the default device.
        const d = stockDefaultDevice();
        expect(s.name).toBe(d.name);
        for (const name of FAMILY_NAMES) expect(s.families[String(FAMILY_VALUES[name])], name).toBe(d.families[name]);
        expect(s.maxThreadgroupMemoryLength).toBe(d.maxThreadgroupMemoryLength);
        expect(s.recommendedMaxWorkingSetSize).toBe(d.recommendedMaxWorkingSetSize);

        // The injector is universal: the slice for this machine is what dyld loads into metal_probe.
        const injector = injectorPath();
        expect(injector, 'no injector in build/Release or prebuilds/darwin-x64+arm64').not.toBeNull();
        const lipo = spawnSync('lipo', ['-archs', injector!], { encoding: 'utf8' });
        if (lipo.status === 0) {
          console.log(`[live] injector ${path.relative(root, injector!)}: ${lipo.stdout.trim()}`);
          expect(lipo.stdout.trim().split(/\s+/)).toContain(process.arch === 'arm64' ? 'arm64' : 'x86_64');
        }

        const r = runCli(['exec', '--profile', 'cua-release', '--force', '--', binary]);
        expect(r.status, r.stderr).toBe(0);
        // Nothing but the program's own output: stdout still parses, stderr stays empty.
        expect(r.stderr).toBe('');
        const patched = JSON.parse(r.stdout) as ProbeJson;
        console.log(`[live] metal_probe under exec: ${r.stdout.trim()}`);
        expect(patched.families['1007']).toBe(true);
        expect(patched.families['1009']).toBe(true);
        const profile = resolveProfile('cua-release');
        for (const [family, answer] of Object.entries(s.families)) {
          expect(patched.families[family], `family ${family}`).toBe(familyAnswer(profile, Number(family), answer));
        }
        expect(patched.name).toBe(s.name);
        expect(patched.maxThreadgroupMemoryLength).toBe(Math.max(s.maxThreadgroupMemoryLength, 65536));
        expect(patched.recommendedMaxWorkingSetSize).toBe(s.recommendedMaxWorkingSetSize);

        // The trace says which class the injector hooked in that process and what the program was told.
        const traceFile = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-live-trace-')), 'trace.json');
        const traced = runCli(['exec', '--profile', 'cua-release', '--force', '--trace', traceFile, '--', binary]);
        expect(traced.status, traced.stderr).toBe(0);
        expect(traced.stderr).toBe('');
        const trace = JSON.parse(readFileSync(traceFile, 'utf8')) as {
          slice: string;
          profileApplied: boolean;
          patchedClasses: string[];
          trace: { selector: string; family: number | null; calls: number; stock: number; given: number }[];
        };
        expect(trace.profileApplied).toBe(true);
        expect(trace.patchedClasses).toEqual([d.className]);
        const apple7 = trace.trace.find((t) => t.selector === 'supportsFamily:' && t.family === 1007);
        // Metal.framework may ask too, so the count is at least the program's one question.
        expect(apple7).toMatchObject({
          selector: 'supportsFamily:',
          family: 1007,
          stock: s.families['1007'] ? 1 : 0,
          given: 1,
        });
        expect(apple7!.calls).toBeGreaterThanOrEqual(1);
        // dyld loads the slice matching the process: metal_probe is a plain arm64 (or x86_64) program, never arm64e.
        console.log(`injector slice loaded into ${path.basename(binary)}: ${trace.slice}`);
        expect(trace.slice).toBe(process.arch === 'arm64' ? 'arm64' : 'x86_64');
      },
      120_000,
    );

    it('a SIP-protected program is refused before it runs (exit 125, ERR_INJECTION_BLOCKED)', () => {
      const marker = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-live-sip-')), 'ran');
      const script = `touch '${marker}'; exit 7`;
      // --force isolates the SIP check from the bare-metal guard, which an Intel runner with a device would hit first.
      const forced = runCli(['exec', '--force', '--', '/bin/sh', '-c', script]);
      expect(forced.status, forced.stderr).toBe(125);
      expect(forced.stderr).toContain('ERR_INJECTION_BLOCKED');
      expect(existsSync(marker)).toBe(false);
      // Without --force: the injection check on a VM or a device-less host; on bare metal with a device the
      // bare-metal guard comes first. Either way exit 125 (exec's own failure) and nothing runs.
      const plain = runCli(['exec', '--', '/bin/sh', '-c', script]);
      expect(plain.status, plain.stderr).toBe(125);
      const bareMetalFirst = hasDevice && guardFor('cua-release').refusedWithoutForce;
      expect(plain.stderr).toContain(bareMetalFirst ? 'ERR_REFUSED_BARE_METAL' : 'ERR_INJECTION_BLOCKED');
      expect(existsSync(marker)).toBe(false);
    });

    // Only with SIP on does macOS strip DYLD_INSERT_LIBRARIES from /bin/sh. With it off (some runner images), dyld
    // may load the injector, or abort an arm64e /bin/sh over the third-party arm64e slice: not what this checks.
    it.skipIf(!sipEnabled)(
      `--allow-unpatched runs it anyway: its exit code passes through and the "did not load" notice is on stderr${NEEDS_SIP}`,
      () => {
        const marker = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-live-sip-')), 'ran');
        const r = runCli(['exec', '--force', '--allow-unpatched', '--', '/bin/sh', '-c', `touch '${marker}'; exit 7`]);
        expect(r.status, r.stderr).toBe(7);
        expect(existsSync(marker)).toBe(true);
        expect(r.stderr).toContain('did not load');
      },
    );

    // Real codesign output: copies of metal_probe signed ad hoc with the hardened runtime and chosen entitlements.
    it.skipIf(!hasClang)(`a hardened-runtime program is judged from real codesign output${NEEDS_CLANG}`, () => {
      const binary = existsSync(probeBinary) ? probeBinary : compileMetalProbe();
      const dir = mkdtempSync(path.join(tmpdir(), 'mcs-live-codesign-'));
      const signed = (name: string, entitlements: string[]) => {
        const file = path.join(dir, name);
        copyFileSync(binary, file);
        const plist = path.join(dir, `${name}.plist`);
        writeFileSync(
          plist,
          `<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0"><dict>${entitlements.map((e) => `<key>${e}</key><true/>`).join('')}</dict></plist>\n`,
        );
        execFileSync('codesign', ['-s', '-', '-f', '-o', 'runtime', '--entitlements', plist, file], { stdio: 'pipe' });
        return file;
      };
      const [allowDyld, disableValidation] = INJECTION_ENTITLEMENTS;
      expect(injectionBlocker(signed('none', []))?.launchFails).toBe(false);
      expect(injectionBlocker(signed('both', [allowDyld, disableValidation]))).toBeNull();
      const dyldOnly = signed('dyld-only', [allowDyld]);
      expect(injectionBlocker(dyldOnly)?.launchFails).toBe(true);
      // The reason exec refuses it: dyld honours DYLD_INSERT_LIBRARIES, library validation rejects the injector, and
      // the program never reaches main.
      const direct = spawnSync(dyldOnly, [], {
        encoding: 'utf8',
        env: { ...process.env, DYLD_INSERT_LIBRARIES: injectorPath()! },
      });
      console.log(
        `[live] dyld-only program with the injector inserted: status ${direct.status} signal ${direct.signal}: ${direct.stderr.trim()}`,
      );
      expect(direct.status).not.toBe(0);
      expect(direct.stdout).toBe('');
      const r = runCli(['exec', '--force', '--', dyldOnly]);
      expect(r.status, r.stderr).toBe(125);
      expect(r.stderr).toContain('ERR_INJECTION_BLOCKED');
      // --allow-unpatched runs it without the injector, so it starts.
      const unpatched = runCli(['exec', '--force', '--allow-unpatched', '--', dyldOnly]);
      expect(unpatched.status, unpatched.stderr).toBe(0);
      expect(unpatched.stderr).toContain('without the injector');
    });

    // node-llama-cpp's prebuilt binaries load libggml-metal with RTLD_LOCAL, out of dlsym(RTLD_DEFAULT)'s sight.
    it.skipIf(!hasClang)(`a libggml-metal loaded RTLD_LOCAL is found through dyld's image list${NEEDS_CLANG}`, () => {
      const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-live-consumer-')));
      const source = path.join(dir, 'consumer.c');
      writeFileSync(
        source,
        '#include <node_api.h>\nvoid ggml_backend_metal_reg(void) {}\nNAPI_MODULE_INIT() { return exports; }\n',
      );
      const napiInclude = path.join(
        path.dirname(createRequire(import.meta.url).resolve('node-api-headers/package.json')),
        'include',
      );
      const file = path.join(dir, 'libggml-metal.dylib');
      execFileSync('clang', ['-dynamiclib', '-undefined', 'dynamic_lookup', `-I${napiInclude}`, source, '-o', file], {
        stdio: 'pipe',
      });
      process.dlopen({ exports: {} }, file, osConstants.dlopen.RTLD_NOW | osConstants.dlopen.RTLD_LOCAL);
      const found = loadNative().binding!.loadedConsumers();
      console.log(`[live] consumers: ${JSON.stringify(found)}`);
      expect(
        found.filter((c) => c.startsWith('libggml-metal.dylib (') && c.endsWith('/libggml-metal.dylib)')),
      ).toHaveLength(1);
      expect(found.filter((c) => c.startsWith('ggml_backend_metal_reg'))).toEqual([]);
    });
  });
});
