// Round trips: what the CLI prints, it reads back. A recorded snapshot (and a probe --json report) read with
// --snapshot gives the live answers; a profile object printed by `profiles --json` / `audit --json` is accepted back
// by --profile and METAL_CAP_SHIM_PROFILE as the same profile (built-in ones, and the custom one audit --json prints).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AuditResult } from '../../lib/audit/audit.js';
import { profileForExec } from '../../lib/select/auto.js';
import { FAMILY_NAMES, FAMILY_VALUES } from '../../lib/core/families.js';
import type { BuiltinProfile, Profile } from '../../lib/patch/profiles.js';
import { bindToHost, resolveProfile } from '../../lib/patch/profiles.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import { listSnapshots, validateSnapshot, type Snapshot } from '../../lib/device/snapshots.js';
import type { CapabilityReport } from '../../lib/device/types.js';
import {
  buildConsumer,
  describeSim,
  dist,
  jsonFrom,
  requireSimBuild,
  root,
  runCli,
  runNode,
} from '../support/helpers.js';
import { EXIT } from '../../lib/cli/exit.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-roundtrip-'));
const STOCK = 'vz-guest-m1-ultra-tahoe-stock';
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };

describeSim('snapshot: record this machine, read it back (simulated Metal)', () => {
  beforeAll(requireSimBuild);

  describe.each(listSnapshots())('under the simulated %s', (name) => {
    const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: name };

    it('a recorded snapshot read back with probe --snapshot answers exactly as the live probe', () => {
      const recorded = runCli(['snapshot'], env);
      expect(recorded.status, recorded.stderr).toBe(0);
      const file = path.join(dir, `${name}-recorded.json`);
      writeFileSync(file, recorded.stdout);
      for (const all of [[], ['--all-devices']]) {
        const live = jsonFrom<CapabilityReport>(runCli(['probe', '--json', ...all], env));
        const back = jsonFrom<CapabilityReport>(runCli(['probe', '--json', '--snapshot', file, ...all]));
        expect(live.source).toBe('simulated');
        expect(back.source).toBe('snapshot');
        expect({ ...back, source: live.source, snapshot: live.snapshot }).toEqual(live);
      }
    });

    it('a probe --json report file is accepted by --snapshot and gives the same answers', () => {
      const live = runCli(['probe', '--json', '--all-devices'], env);
      const file = path.join(dir, `${name}-report.json`);
      writeFileSync(file, live.stdout);
      const back = jsonFrom<CapabilityReport>(runCli(['probe', '--json', '--all-devices', '--snapshot', file]));
      const original = JSON.parse(live.stdout) as CapabilityReport;
      expect(back.devices).toEqual(original.devices);
      expect(back.host).toEqual(original.host);
      // And everywhere --snapshot is taken: an offline audit of the report equals the audit of the bundled snapshot.
      const fromReport = jsonFrom<AuditResult>(runCli(['audit', '--json', '--force', '--snapshot', file]));
      const fromBundled = jsonFrom<AuditResult>(runCli(['audit', '--json', '--force', '--snapshot', name]));
      expect(fromReport.devices).toEqual(fromBundled.devices);
      expect(fromReport.verdict).toEqual(fromBundled.verdict);
    });
  });

  it('the snapshot is in the bundled format, names every device, and says who recorded it and when', () => {
    const r = runCli(['snapshot', '--label', 'Two-GPU MacBook Pro (test)'], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: 'macbookpro16-intel-amd-two-gpus',
    });
    expect(r.status, r.stderr).toBe(0);
    const snap = validateSnapshot(JSON.parse(r.stdout)) as Snapshot;
    const today = new Date().toISOString().slice(0, 10);
    expect(snap.id).toBe('two-gpu-macbook-pro-test');
    expect(snap.title).toBe('Two-GPU MacBook Pro (test)');
    expect(snap.recorded).toBe(today);
    expect(snap.sources).toEqual({ recording: `recorded by metal-cap-shim ${pkg.version} on ${today}` });
    expect(snap.devices.map((d) => d.className)).toEqual([
      'MTLIGAccelDevice',
      'AMDRadeonX6000_AMDNavi14GraphicsDevice',
    ]);
    expect(snap.defaultDevice).toBe(1);
    expect(snap.host.provenance).toEqual({
      platform: 'recording',
      osVersion: 'recording',
      osBuild: 'unrecorded',
      model: 'recording',
      isVirtualMachine: 'recording',
      arch: 'recording',
      // The simulated Intel MacBook Pro records no hw.memsize and no brand string; a native process is not translated.
      memoryBytes: 'unrecorded',
      translated: 'recording',
      cpuBrand: 'unrecorded',
      chip: 'unrecorded',
    });
  });

  it('recordSnapshot() records stock answers even while a profile is applied, and the file drives the simulated Metal', () => {
    const index = JSON.stringify(path.join(dist, 'index.js'));
    const snap = jsonFrom<Snapshot>(
      runNode(
        `const m = await import(${index}); m.applyProfile('cua-release');
        console.log(JSON.stringify(await m.recordSnapshot()));`,
        { METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK },
      ),
    );
    expect(snap.id).toBe('virtualmac2-1-macos-26.5.2');
    expect(snap.devices[0]!.families.apple9).toBe(false);
    expect(snap.devices[0]!.maxThreadgroupMemoryLength).toBe(32768);
    const file = path.join(dir, 'recorded-stock.json');
    writeFileSync(file, JSON.stringify(snap));
    const viaFile = jsonFrom<CapabilityReport>(runCli(['probe', '--json'], { METAL_CAP_SHIM_SIM_SNAPSHOT: file }));
    const viaBundled = jsonFrom<CapabilityReport>(runCli(['probe', '--json'], { METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK }));
    expect(viaFile.devices).toEqual(viaBundled.devices);
  });
});

describe('snapshot where there is no Metal', () => {
  it('exits 4 (no Metal) with ERR_UNSUPPORTED_PLATFORM and prints nothing on stdout; with --json the error is JSON', () => {
    const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: undefined };
    const r = runCli(['snapshot'], env);
    expect(r.status).toBe(EXIT.noMetal);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^metal-cap-shim: ERR_UNSUPPORTED_PLATFORM: /);
    const j = runCli(['snapshot', '--json'], env);
    expect(j.status).toBe(EXIT.noMetal);
    expect(JSON.parse(j.stdout)).toEqual({
      error: { code: 'ERR_UNSUPPORTED_PLATFORM', message: expect.stringContaining('no Metal device here to record') },
    });
  });

  it('a report of a machine without devices is not a snapshot: one line, exit 2', () => {
    const file = path.join(dir, 'unsupported-report.json');
    // What probe() reports where there is no Metal (the CLI fails there instead of printing it).
    const code = `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))}); console.log(JSON.stringify(m.probe()));`;
    writeFileSync(file, runNode(code, { METAL_CAP_SHIM_SIM_SNAPSHOT: undefined }).stdout);
    const r = runCli(['probe', '--snapshot', file]);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: ${file}: the report has no devices (supported: false, unsupported-platform), so it cannot stand for a machine`,
    ]);
  });
});

/** A printed profile as it is applied on the stock guest's host: 'host' values become its M1 Ultra's. */
const onStockHost = (profile: Profile): Profile => {
  const bound = bindToHost(profile, probeSnapshot(STOCK).host);
  if (!bound.ok) throw new Error(bound.detail);
  return bound.profile;
};

/** stderr without the one warning a profile above the M1 Ultra host's family gives (Node prints it with a hint). */
const besidesAboveHost = (stderr: string) =>
  stderr
    .split('\n')
    .filter(
      (line) =>
        line !== '' &&
        !line.includes('[METAL_CAP_SHIM_ABOVE_HOST_FAMILY]') &&
        !line.startsWith('(Use `node --trace-warnings'),
    );

describe('profiles printed by the CLI are accepted back as the same profile', () => {
  const printed = (JSON.parse(runCli(['profiles', '--json']).stdout) as { profiles: BuiltinProfile[] }).profiles;

  it.each(printed.map((p) => [p.name, p.profile] as const))(
    '%s from profiles --json, through --profile',
    (_name, profile) => {
      const a = jsonFrom<AuditResult>(
        runCli(['audit', '--json', '--force', '--snapshot', STOCK, '--profile', JSON.stringify(profile)]),
      );
      expect(a.profile).toEqual(onStockHost(profile));
      expect(resolveProfile(JSON.stringify(profile))).toEqual(profile);
    },
  );

  it('the host profile is printed with its "host" values, and audited as this host’s chip and family', () => {
    expect(printed.find((p) => p.name === 'host')!.profile).toEqual({
      name: 'host',
      appleFamilyMax: 'host',
      maxThreadgroupMemoryLength: null,
      recommendedMaxWorkingSetSize: null,
      deviceName: 'host',
      families: {},
      mode: 'raise',
      mlxArchitecture: 'host',
    });
    expect(onStockHost(resolveProfile('host'))).toMatchObject({
      name: 'host',
      appleFamilyMax: 1007,
      deviceName: 'Apple M1 Ultra',
      mlxArchitecture: 'applegpu_g13d',
    });
  });

  it('a custom profile from audit --json, through --profile, gives the same profile and the same audit', () => {
    const first = jsonFrom<AuditResult>(
      runCli([
        'audit',
        '--json',
        '--snapshot',
        STOCK,
        '--profile',
        '{"appleFamilyMax":1008,"families":{"metal3":false}}',
      ]),
    );
    expect(first.profile).toEqual({
      name: null,
      appleFamilyMax: 1008,
      maxThreadgroupMemoryLength: null,
      recommendedMaxWorkingSetSize: null,
      deviceName: null,
      families: { metal3: false },
      mode: 'raise',
    });
    const again = jsonFrom<AuditResult>(
      runCli(['audit', '--json', '--snapshot', STOCK, '--profile', JSON.stringify(first.profile)]),
    );
    expect(again.profile).toEqual(first.profile);
    expect(again.devices).toEqual(first.devices);
  });

  it('a built-in name on changed settings is dropped: the profile is custom, not a mislabelled built-in', () => {
    const relabelled = { ...printed[0]!.profile, maxThreadgroupMemoryLength: 32768 };
    expect(resolveProfile(JSON.stringify(relabelled))).toEqual({ ...relabelled, name: null });
    expect(resolveProfile(JSON.stringify({ ...relabelled, name: 'my-own' }))).toEqual({ ...relabelled, name: null });
  });

  it('a name that is not a string is an ERR_INVALID_PROFILE naming the field', () => {
    const r = runCli(['audit', '--snapshot', STOCK, '--profile', '{"name":7,"appleFamilyMax":1009}']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('ERR_INVALID_PROFILE: name must be a string or null, got 7');
  });
});

describeSim('METAL_CAP_SHIM_PROFILE accepts printed profiles (register, simulated VM)', () => {
  beforeAll(requireSimBuild);
  const printed = (JSON.parse(runCli(['profiles', '--json']).stdout) as { profiles: BuiltinProfile[] }).profiles;
  const status = `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))}); console.log(JSON.stringify(m.status().profile));`;

  it.each(printed.map((p) => [p.name, p.profile] as const))('%s', (_name, profile) => {
    const r = runNode(status, { METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK, METAL_CAP_SHIM_PROFILE: JSON.stringify(profile) }, [
      '--import',
      path.join(dist, 'register.js'),
    ]);
    expect(besidesAboveHost(r.stderr)).toEqual([]);
    expect(JSON.parse(r.stdout) as Profile).toEqual(onStockHost(profile));
  });
});

describeSim('METAL_CAP_SHIM_PROFILE accepts the custom profile audit --json prints (simulated VM)', () => {
  const CUSTOM = '{"appleFamilyMax":1008,"families":{"metal3":false}}';
  let audited: AuditResult;
  let printed: Profile;
  beforeAll(() => {
    requireSimBuild();
    audited = jsonFrom<AuditResult>(runCli(['audit', '--json', '--snapshot', STOCK, '--profile', CUSTOM]));
    printed = audited.profile;
  });
  const viaEnv = () => ({ METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK, METAL_CAP_SHIM_PROFILE: JSON.stringify(printed) });

  it('register applies the same profile, and probe then answers as the audit predicted', () => {
    expect(printed.name).toBeNull();
    const register = ['--import', path.join(dist, 'register.js')];
    const status = runNode(
      `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))}); console.log(JSON.stringify(m.status().profile));`,
      viaEnv(),
      register,
    );
    expect(besidesAboveHost(status.stderr)).toEqual([]);
    expect(JSON.parse(status.stdout) as Profile).toEqual(printed);
    const probed = runNode(
      `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))}); console.log(JSON.stringify(m.probe().devices));`,
      viaEnv(),
      register,
    );
    expect(besidesAboveHost(probed.stderr)).toEqual([]);
    expect(JSON.parse(probed.stdout)).toEqual(audited.devices.map((d) => d.patched));
  });

  it('exec without --profile reads it: the same resolved profile, and the program sees what --profile gives it', () => {
    expect(profileForExec(undefined, { METAL_CAP_SHIM_PROFILE: JSON.stringify(printed) })).toEqual({
      profile: printed,
      auto: null,
    });
    const consumer = buildConsumer();
    const fromEnv = runCli(['exec', '--', consumer], viaEnv());
    const fromFlag = runCli(['exec', '--profile', JSON.stringify(printed), '--', consumer], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK,
      METAL_CAP_SHIM_PROFILE: undefined,
    });
    expect(fromEnv.status, fromEnv.stderr).toBe(0);
    expect(fromFlag.status, fromFlag.stderr).toBe(0);
    const seen = JSON.parse(fromEnv.stdout) as {
      families: Record<string, boolean>;
      maxThreadgroupMemoryLength: number;
    }[];
    expect(seen).toEqual(JSON.parse(fromFlag.stdout));
    const patched = audited.devices[0]!.patched;
    expect(seen[0]!.families).toEqual(
      Object.fromEntries(FAMILY_NAMES.map((n) => [String(FAMILY_VALUES[n]), patched.families[n]])),
    );
    expect(seen[0]!.maxThreadgroupMemoryLength).toBe(patched.maxThreadgroupMemoryLength);
  });
});
