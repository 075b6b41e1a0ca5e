// doctor() and profile auto end to end over the simulated Metal (the real addon, GCC's libobjc), one describe block per
// snapshot (useSimulation): the native probes run, TypeScript judges, and the process is left as it was. Where there is
// no Metal at all (no simulated build selected) is index.no-metal.test.ts, a process that never loads the addon.
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  existsSync,
  readlinkSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it, afterEach, beforeEach } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile, profileForExec, resolveAutoProfile } from '../../lib/select/auto.js';
import { doctor } from '../../lib/doctor/index.js';
import { cacheKeyFor, doctorCacheDir, readCache } from '../../lib/doctor/cache.js';
import { CAPABILITY_PROBE_IDS, DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import type { DoctorReport, DoctorDevice } from '../../lib/doctor/types.js';
import { InvalidOptionsError, UnsupportedPlatformError } from '../../lib/core/errors.js';
import { profiles, resolveProfile, type ProfileInput } from '../../lib/patch/profiles.js';
import { stockDevices } from '../support/doctor-helpers.js';
import { describeSim, jsonFrom, requireSimBuild, runCli, root, dist, runNode } from '../support/helpers.js';
import { packageVersion } from '../../lib/device/native.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import { CUA_RELEASE_ON_M1_ULTRA } from '../support/apply-helpers.js';
import { simulationJson } from '../sim-metal/simulation.js';
import { spawn, spawnSync } from 'node:child_process';
import { useSimulation } from '../support/simulation.js';

// doctor() end to end over the simulated Metal (the real addon, GCC's libobjc): the native probes run, TypeScript
// judges, and the process is left as it was. The simulated GPU computes right unless a snapshot records a fault;
// the faults are in the block over test/fixtures/snapshots/doctor-faults.json below. What this cannot show is how the MSL runs on a real GPU
// (test/live/).
describeSim('the stock Tahoe guest (vz-guest-m1-ultra-tahoe-stock)', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');

  // Read when first used, not at import: the simulated Metal on the first native call, the cache folder per call.
  const tempDir = () => mkdtempSync(path.join(tmpdir(), 'mcs-doctor-live-'));
  beforeAll(() => {
    process.env.XDG_CACHE_HOME = tempDir();
  });

  const MMAP = 1 << 20;
  // The bundled guest records one documented fault (no residency set: Cua PR 3070), so the simulated device fails
  // to create one; everything else computes right. No threadgroup size above 32768 bytes is dispatched by default
  // (above it a size could only be accepted, never proven or claimed), and the guest already reports 32768. Its host
  // is an M1 Ultra, and with the heap proven its name is claimed.
  const VERIFIED = {
    name: null,
    appleFamilyMax: 1007,
    maxThreadgroupMemoryLength: null,
    recommendedMaxWorkingSetSize: null,
    deviceName: 'Apple M1 Ultra',
    families: {},
    mode: 'raise',
  };
  const RESIDENCY_DETAIL =
    'newResidencySetWithDescriptor:error: failed: simulated residency-set failure, recorded in the snapshot: MLX could not construct a residency set in this guest ("Unable to construct residency set")';

  describeSim('doctor() over the simulated Metal', () => {
    let report: DoctorReport;
    beforeAll(async () => {
      requireSimBuild();
      // The candidate named: cua-release raises the guest's answers past its own (Apple9, 65536 bytes).
      report = await doctor({ profile: 'cua-release', mmapSize: MMAP });
    });

    it('runs every probe, the capability probes twice, proves what the simulated GPU computes right, and finds the recorded fault', () => {
      expect(report).toMatchObject({
        schema: 'metal-cap-shim/doctor@1',
        supported: true,
        source: 'simulated',
        snapshot: 'vz-guest-m1-ultra-tahoe-stock',
        candidateProfile: profiles['cua-release']!.profile,
        replayed: false,
        patchedRun: { ran: true, why: null },
        settings: {
          probes: [...DOCTOR_PROBE_IDS],
          timeoutMs: 5000,
          mmapFile: null,
          mmapSize: MMAP,
          device: null,
          allowAboveHardware: false,
        },
      });
      const d = report.devices[0]!;
      expect(report.devices).toHaveLength(1);
      expect(
        d.probes.map((p) => [p.id, p.status, p.judgement, p.stock?.status ?? null, p.patched?.status ?? null]),
      ).toEqual(
        DOCTOR_PROBE_IDS.map((id) =>
          id === 'residency-set'
            ? [id, 'fail', 'faulty', 'fail', 'fail']
            : [id, 'pass', 'proven', ...(CAPABILITY_PROBE_IDS.includes(id) ? ['pass', 'pass'] : [null, null])],
        ),
      );
      expect(d.probes.find((p) => p.id === 'residency-set')!.detail).toBe(RESIDENCY_DETAIL);
      const tg = d.probes.find((p) => p.id === 'threadgroup-memory')!;
      // Without allowAboveHardware nothing above 32768 bytes ran, in this guest too: nothing accepted, nothing failed.
      expect([tg.provenThreadgroupMemory, tg.acceptedThreadgroupMemory, tg.failedThreadgroupMemory]).toEqual([
        32768,
        null,
        null,
      ]);
      expect(tg.detail).toMatch(
        /; 40960 to 65536 bytes not dispatched: .* allowAboveHardware \(--allow-above-hardware\) is off$/,
      );
      expect(d.probes.find((p) => p.id === 'nocopy-mmap')!.bufferLength).toBe(MMAP);
      expect(d.probes.every((p) => typeof p.ms === 'number' && p.ms >= 0)).toBe(true);
      expect(d.reported).toEqual({
        stock: { highestAppleFamily: 'apple5', maxThreadgroupMemoryLength: 32768, metal3: false },
        patched: { highestAppleFamily: 'apple9', maxThreadgroupMemoryLength: 65536, metal3: false },
      });
      expect(d.differences).toEqual([]);
      expect(d.faults).toEqual(['residency-set: fail']);
      expect(d.recommendations.map((r) => [r.engine, r.setting])).toEqual([
        ['llama.cpp', 'GGML_METAL_NO_RESIDENCY=1'],
        ['mlx', 'never advertise Metal3 (profile {"families":{"metal3":false}})'],
      ]);
      expect(d.recommendations[0]!.why).toBe(
        `residency-set fail: ${RESIDENCY_DETAIL}. ggml-metal creates residency sets by default (arm64 builds with a macOS 15+ SDK); node-llama-cpp 3.19 already sets this while it loads backends`,
      );
    });

    it('derives a verified profile that resolveProfile accepts as it is', () => {
      const verified = report.devices[0]!.verifiedProfile;
      expect(verified).toEqual(VERIFIED);
      expect(resolveProfile(verified)).toEqual(verified);
    });

    it('leaves no hook installed, and restore reports what it took out', () => {
      expect(status()).toMatchObject({ active: false, profile: null, hooks: [] });
      expect(report.restore).toEqual({
        restoredHooks: ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'].map(
          (selector) => ({
            className: 'AppleParavirtDevice',
            selector,
          }),
        ),
        conflicts: [],
      });
    });

    it('caches the device’s result where profile auto reads it', () => {
      const stock = stockDevices();
      const lookup = readCache(cacheKeyFor(stock, stock.devices[0]!), stock.devices[0]!);
      expect(report.cache).toEqual({ written: [lookup.file], error: null });
      expect(lookup.entry!.result.verifiedProfile).toEqual(VERIFIED);
      expect(path.dirname(lookup.file)).toBe(doctorCacheDir());
      expect(readdirSync(doctorCacheDir())).toEqual([path.basename(lookup.file)]);
    });

    it('measures the stock answers while a profile is applied in this process, and leaves that profile alone', async () => {
      applyProfile('apple7');
      try {
        const before = status();
        expect(before.profile!.name).toBe('apple7');
        const r = await doctor({ probes: ['bfloat'] });
        if (!r.supported) throw new Error(r.detail);
        // The probes run in a fresh process: it reads the device's own answers, not the ones apple7 gives here.
        expect([r.devices[0]!.reported.stock, r.devices[0]!.probes[2]!.status]).toEqual([
          { highestAppleFamily: 'apple5', maxThreadgroupMemoryLength: 32768, metal3: false },
          'pass',
        ]);
        expect(status()).toEqual(before);
      } finally {
        restore();
      }
    });

    it('a device that is not there is a typed error naming the range', async () => {
      await expect(doctor({ device: 1, probes: ['bfloat'] })).rejects.toThrow(
        new InvalidOptionsError(
          'device',
          "doctor() option 'device' (--device): there is no device 1; this machine has 1 (0–0)",
        ),
      );
    });

    it('probes not asked for are reported as skipped, and only capability probes run twice', async () => {
      const r = await doctor({ probes: ['nocopy-mmap', 'bfloat'], mmapSize: MMAP, cache: false });
      expect(
        r.devices[0]!.probes.map((p) => [p.id, p.status, p.detail === 'not asked', p.patched?.status ?? null]),
      ).toEqual([
        ['simdgroup-reduction', 'skipped', true, null],
        ['simdgroup-matrix', 'skipped', true, null],
        ['bfloat', 'pass', false, 'pass'],
        ['threadgroup-memory', 'skipped', true, null],
        ['nocopy-mmap', 'pass', false, null],
        ['residency-set', 'skipped', true, null],
        ['heap', 'skipped', true, null],
      ]);
      expect(r.cache).toBeNull();
      const mmapOnly = await doctor({ probes: ['nocopy-mmap'], mmapSize: MMAP, cache: false });
      expect(mmapOnly.patchedRun).toEqual({ ran: false, why: 'no capability probe was asked' });
    });

    it('an unnamed candidate: the threadgroup line names it as the candidate profile, beside both reported values', async () => {
      const r = await doctor({
        profile: { appleFamilyMax: 1007, maxThreadgroupMemoryLength: 49152 },
        probes: ['threadgroup-memory'],
        cache: false,
      });
      expect([r.patchedRun, r.devices[0]!.verifiedProfileReasons[1]]).toEqual([
        { ran: true, why: null },
        'threadgroup memory left at the reported 32768 bytes, which were proven; the device reports 32768 stock, 49152 under the candidate profile',
      ]);
    });

    it('a candidate that changes nothing needs no second run', async () => {
      const r = await doctor({ profile: { appleFamilyMax: 1003 }, probes: ['bfloat'], cache: false });
      expect(r.patchedRun).toEqual({ ran: false, why: 'the candidate profile changes no answer on this machine' });
      const bfloat = r.devices[0]!.probes[2]!;
      expect([bfloat.id, bfloat.status, bfloat.judgement, 'stock' in bfloat, 'patched' in bfloat]).toEqual([
        'bfloat',
        'pass',
        'proven',
        false,
        false,
      ]);
    });
  });

  describeSim('doctor --json (CLI) over the simulated Metal', () => {
    beforeAll(requireSimBuild);

    it('prints schema doctor@1 with every probe id and a verified profile resolveProfile accepts; exit 1 for the fault', () => {
      const cache = tempDir();
      const r = runCli(['doctor', '--json', '--mmap-size', '1M', '--timeout-ms', '2000'], {
        METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock',
        XDG_CACHE_HOME: cache,
      });
      expect(r.status, r.stderr).toBe(1);
      const out = JSON.parse(r.stdout) as DoctorReport;
      expect(out.schema).toBe('metal-cap-shim/doctor@1');
      expect(out.devices[0]!.probes.map((p) => p.id)).toEqual([...DOCTOR_PROBE_IDS]);
      expect(resolveProfile(out.devices[0]!.verifiedProfile)).toEqual(VERIFIED);
      expect(out.settings).toEqual({
        probes: [...DOCTOR_PROBE_IDS],
        timeoutMs: 2000,
        mmapFile: null,
        mmapSize: MMAP,
        device: null,
        allowAboveHardware: false,
      });
      expect(readdirSync(path.join(cache, 'metal-cap-shim'))).toHaveLength(1);
    });

    it('human output: the probe table with both runs, the verified profile and its reasons', () => {
      const r = runCli(['doctor', '--profile', 'cua-release', '--mmap-size', '1M'], {
        METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock',
        XDG_CACHE_HOME: tempDir(),
      });
      expect(r.status, r.stderr).toBe(1);
      expect(r.stdout).toContain('metal-cap-shim doctor — simulated Metal, snapshot vz-guest-m1-ultra-tahoe-stock\n');
      expect(r.stdout).toContain('Patched runs: under cua-release, then restored\n');
      expect(r.stdout).toMatch(/^ {2}simdgroup-matrix +pass +pass +pass +\d+\.\d +\d+\.\d +8x8 and 32x32 products/m);
      expect(r.stdout).toMatch(/^ {2}nocopy-mmap +pass +– +– +\d+\.\d +\d+\.\d +the GPU read/m);
      expect(r.stdout).toMatch(
        /^ {2}residency-set +fail +fail +fail +\d+\.\d +\d+\.\d +newResidencySetWithDescriptor:error: failed/m,
      );
      expect(r.stdout).toContain('Host: VirtualMac2,1 · macOS 26.5.2 · arm64 · virtual machine · Apple M1 Ultra\n');
      expect(r.stdout).toMatch(/^ {2}heap +pass +pass +pass +\d+\.\d +\d+\.\d +a 1048576 bytes heap/m);
      expect(r.stdout).toContain(
        '  Verified profile: mode raise, Apple families up to 1007 (Apple7), name "Apple M1 Ultra"\n',
      );
      expect(r.stdout).toContain(
        '    · threadgroup memory left at the reported 32768 bytes, which were proven; the device reports 32768 stock, 65536 under cua-release\n',
      );
      expect(r.stdout).toContain(
        '    · Metal3 not advertised: no residency set was proven to work (residency-set fail)\n',
      );
      expect(r.stdout).toContain('    ! llama.cpp: GGML_METAL_NO_RESIDENCY=1 — residency-set fail: ');
      expect(r.stdout).toContain('  Faults: residency-set: fail');
    });
  });

  describeSim('doctor on bare metal', () => {
    beforeAll(requireSimBuild);

    it('measures stock answers only, unless --force also runs the raising candidate (and takes it out again)', () => {
      const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'm1-ultra-bare-metal', XDG_CACHE_HOME: tempDir() };
      const plain = jsonFrom<DoctorReport>(
        runCli(['doctor', '--json', '--profile', 'cua-release', '--mmap-size', '1M'], env),
      );
      expect(plain.patchedRun).toEqual({
        ran: false,
        why: 'cua-release raises answers and this host is not known to be a virtual machine: pass force (--force) to measure under it too',
      });
      expect(plain.restore).toBeNull();
      expect(plain.devices[0]!.probes.map((p) => [p.id, p.status, 'patched' in p])).toEqual(
        DOCTOR_PROBE_IDS.map((id) => [id, 'pass', false]),
      );
      // No threadgroup size above the M1 Ultra's own 32768 is dispatched here: Apple7, which it already answers. The
      // device already is the chip: no name is claimed.
      expect(plain.devices[0]!.verifiedProfile).toEqual({ ...VERIFIED, name: 'apple7', deviceName: null });
      const forced = jsonFrom<DoctorReport>(
        runCli(['doctor', '--json', '--profile', 'cua-release', '--mmap-size', '1M', '--force'], env),
      );
      expect(forced.patchedRun).toEqual({ ran: true, why: null });
      expect(forced.restore!.conflicts).toEqual([]);
      expect(forced.restore!.restoredHooks.length).toBeGreaterThan(0);
    });
  });
});

// doctor and profile auto on bare metal (the simulated M1 Ultra host, in this process): a candidate that raises
// answers (cua-release) is not installed unless forced, so the probes run once, with stock answers; a masking candidate
// needs no force, and the default (host-family) changes nothing here; no threadgroup size above the device's own limit is dispatched, so auto's verified profile raises nothing
// the M1 Ultra does not already answer, and applies without force.
describeSim('the bare-metal M1 Ultra (m1-ultra-bare-metal)', () => {
  useSimulation('m1-ultra-bare-metal');

  // The simulated GPU computes everything right and could run 64 KiB of threadgroup memory, but the M1 Ultra reports
  // 32768, and on a host that is not a VM no more than that is dispatched; it already answers Apple7 and Metal3.
  const VERIFIED = {
    name: 'apple7',
    appleFamilyMax: 1007,
    maxThreadgroupMemoryLength: null,
    recommendedMaxWorkingSetSize: null,
    deviceName: null,
    families: {},
    mode: 'raise',
  };
  const HOOKS = ['supportsFamily:', 'maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'];

  describeSim('on bare metal', () => {
    beforeAll(requireSimBuild);
    beforeEach(() => {
      process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-bare-'));
    });
    afterEach(() => {
      restore();
    });

    it('doctor: a raising candidate is not installed without force; the stock run alone decides', async () => {
      // allowAboveHardware on: even then, on bare metal no size above the device's own limit is dispatched.
      const r = await doctor({ profile: 'cua-release', mmapSize: 1 << 20, cache: false, allowAboveHardware: true });
      expect({ ...r, devices: r.devices.length }).toEqual({
        schema: 'metal-cap-shim/doctor@1',
        packageVersion: packageVersion(),
        generatedAt: r.generatedAt,
        supported: true,
        reason: null,
        detail: null,
        source: 'simulated',
        snapshot: 'm1-ultra-bare-metal',
        host: probeSnapshot('m1-ultra-bare-metal').host,
        candidateProfile: profiles['cua-release']!.profile,
        // What applying it here would warn of, as applyProfile would say it.
        candidateWarnings: [...CUA_RELEASE_ON_M1_ULTRA],
        replayed: false,
        patchedRun: {
          ran: false,
          why: 'cua-release raises answers and this host is not known to be a virtual machine: pass force (--force) to measure under it too',
        },
        settings: {
          probes: [...DOCTOR_PROBE_IDS],
          timeoutMs: 5000,
          mmapFile: null,
          mmapSize: 1 << 20,
          device: null,
          allowAboveHardware: true,
        },
        devices: 1,
        restore: null,
        cache: null,
      });
      const d = r.devices[0]!;
      expect(d.probes.map((p) => [p.id, p.status, 'stock' in p, 'patched' in p])).toEqual(
        DOCTOR_PROBE_IDS.map((id) => [id, 'pass', false, false]),
      );
      expect([d.verifiedProfile, d.reported.patched, d.differences]).toEqual([VERIFIED, null, []]);
      const tg = d.probes.find((p) => p.id === 'threadgroup-memory')!;
      expect([tg.provenThreadgroupMemory, tg.failedThreadgroupMemory, tg.detail]).toEqual([
        32768,
        null,
        "32768 bytes proven by 1024 concurrent threadgroups of 256 threads; sizes above 32768 bytes (the device's stock limit) not tried: this host is not known to be a virtual machine, where a threadgroup above the device's own limit is undefined behaviour",
      ]);
    });

    it('doctor with force: measured under the candidate too, then restored', async () => {
      const r = await doctor({
        probes: ['bfloat', 'residency-set'],
        profile: 'cua-release',
        force: true,
        cache: false,
      });
      expect(r.patchedRun).toEqual({ ran: true, why: null });
      expect(r.restore).toEqual({
        restoredHooks: HOOKS.map((selector) => ({ className: 'AGXG13DDevice', selector })),
        conflicts: [],
      });
      expect(r.devices[0]!.reported).toEqual({
        stock: { highestAppleFamily: 'apple7', maxThreadgroupMemoryLength: 32768, metal3: true },
        patched: { highestAppleFamily: 'apple9', maxThreadgroupMemoryLength: 65536, metal3: true },
      });
      expect(r.devices[0]!.probes.map((p) => [p.id, p.stock?.status ?? null, p.patched?.status ?? null])).toEqual([
        ['simdgroup-reduction', null, null],
        ['simdgroup-matrix', null, null],
        ['bfloat', 'pass', 'pass'],
        ['threadgroup-memory', null, null],
        ['nocopy-mmap', null, null],
        ['residency-set', 'pass', 'pass'],
        ['heap', null, null],
      ]);
      expect(status().active).toBe(false);
    });

    it('doctor: a custom raising candidate is named as such; a masking one needs no force; the default changes nothing here', async () => {
      expect(
        (await doctor({ probes: ['bfloat'], profile: { appleFamilyMax: 1008 }, cache: false })).patchedRun,
      ).toEqual({
        ran: false,
        why: 'the candidate profile raises answers and this host is not known to be a virtual machine: pass force (--force) to measure under it too',
      });
      expect((await doctor({ probes: ['bfloat'], profile: 'mask-apple5', cache: false })).patchedRun).toEqual({
        ran: true,
        why: null,
      });
      // The default, host-family, claims the M1 Ultra's own Apple7, which it already answers: nothing to refuse or run.
      const byDefault = await doctor({ probes: ['bfloat'], cache: false });
      // The report names it bound to this host: the M1 Ultra's Apple7.
      expect([byDefault.candidateProfile, byDefault.candidateWarnings, byDefault.patchedRun]).toEqual([
        // On bare metal MLX reads the GPU's own architecture: nothing is offered, so the bound profile has no field.
        (({ mlxArchitecture: _, ...bound }) => bound)({ ...profiles['host-family']!.profile, appleFamilyMax: 1007 }),
        [{ code: 'no-change', message: 'the profile changes no answer on this device' }],
        { ran: false, why: 'host-family changes no answer on this machine' },
      ]);
    });

    it('doctor: only nocopy-mmap asked, so nothing runs twice', async () => {
      const r = await doctor({ probes: ['nocopy-mmap'], mmapSize: 1 << 20, force: true, cache: false });
      expect([r.patchedRun, r.restore]).toEqual([{ ran: false, why: 'no capability probe was asked' }, null]);
    });

    it('auto: the verified profile raises nothing the device does not answer, so it applies without force', () => {
      const applied = applyProfile('auto', { strict: true });
      expect([applied.applied, applied.profile, applied.auto?.from]).toEqual([true, VERIFIED, 'doctor']);
      expect(status().profile).toEqual(VERIFIED);
    });

    it('doctor with force still dispatches no threadgroup size above the stock limit here (force only lets the candidate be installed for the patched run)', async () => {
      const r = await doctor({ probes: ['threadgroup-memory'], profile: 'cua-release', force: true, cache: false });
      const tg = r.devices[0]!.probes.find((p) => p.id === 'threadgroup-memory')!;
      expect([
        r.patchedRun.ran,
        tg.stock?.provenThreadgroupMemory,
        tg.patched?.provenThreadgroupMemory,
        tg.failedThreadgroupMemory,
      ]).toEqual([true, 32768, 32768, null]);
    });

    it('resolveAutoProfile and exec’s auto give the verified profile here too; applying it is decided later', () => {
      expect(resolveAutoProfile().profile).toEqual(VERIFIED);
      expect(profileForExec('auto', {}, true).profile).toEqual(VERIFIED);
      expect(status().active).toBe(false);
    });
  });
});

// doctor and profile auto over a guest with two devices that answer differently (a snapshot written here: the
// Tahoe guest's paravirtual device, whose residency sets fail, and a second device that answers Metal3, computes
// bfloat wrong and runs 48 KiB of threadgroup memory). In this process: the report keeps the devices apart, and auto
// takes the least of both verified profiles and uses the cache only when both are cached.
describeSim('a guest with two devices that answer differently', () => {
  useSimulation(() => snapshotFile);

  const temp = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-two-'));
  const snapshot = JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
  snapshot.id = 'two-devices';
  const second = structuredClone(snapshot.devices[0]);
  second.name = 'Second GPU';
  second.className = 'SimSecondDevice';
  second.registryId = 4294968999;
  second.families.metal3 = true;
  second.doctor = {
    provenance: 'assumed',
    probes: Object.fromEntries(
      DOCTOR_PROBE_IDS.map((id) => [
        id,
        id === 'bfloat'
          ? { status: 'wrong-result', detail: 'bfloat truncates' }
          : id === 'threadgroup-memory'
            ? {
                status: 'pass',
                detail: 'dispatches above 49152 bytes fail',
                provenThreadgroupMemory: 32768,
                acceptedThreadgroupMemory: 49152,
              }
            : { status: 'not-recorded' },
      ]),
    ),
  };
  snapshot.devices.push(second);
  const snapshotFile = path.join(temp, 'two-devices.json');
  writeFileSync(snapshotFile, JSON.stringify(snapshot));

  // Both devices report 32768 bytes of threadgroup memory and prove that; the larger sizes they accept are never claimed.
  // Both proved a heap on a guest of an M1 Ultra: both claim the chip's name, so the least does too.
  const LEAST = {
    name: null,
    appleFamilyMax: 1007,
    maxThreadgroupMemoryLength: null,
    recommendedMaxWorkingSetSize: null,
    deviceName: 'Apple M1 Ultra',
    families: {},
    mode: 'raise',
  };

  function cacheFiles(): string[] {
    const stock = stockDevices();
    return stock.devices.map((d) => readCache(cacheKeyFor(stock, d), d).file);
  }

  describeSim('two devices that answer differently', () => {
    beforeAll(requireSimBuild);
    beforeEach(() => {
      process.env.XDG_CACHE_HOME = mkdtempSync(path.join(temp, 'cache-'));
    });
    afterEach(() => {
      restore();
    });

    it('doctor keeps each device’s findings, and each device’s answers under the candidate, apart', async () => {
      // cua-release raises both devices past their own answers (Apple9, 65536 bytes), each device's answers apart.
      const r = await doctor({
        probes: ['bfloat', 'threadgroup-memory', 'residency-set'],
        profile: 'cua-release',
        cache: false,
      });
      expect(r.devices.map((d) => [d.index, d.className, d.reported, d.verifiedProfile, d.faults])).toEqual([
        [
          0,
          'AppleParavirtDevice',
          {
            stock: { highestAppleFamily: 'apple5', maxThreadgroupMemoryLength: 32768, metal3: false },
            patched: { highestAppleFamily: 'apple9', maxThreadgroupMemoryLength: 65536, metal3: false },
          },
          // The heap probe was not asked: no name is claimed.
          { ...LEAST, appleFamilyMax: 1006, deviceName: null },
          ['residency-set: fail'],
        ],
        [
          1,
          'SimSecondDevice',
          {
            stock: { highestAppleFamily: 'apple5', maxThreadgroupMemoryLength: 32768, metal3: true },
            patched: { highestAppleFamily: 'apple9', maxThreadgroupMemoryLength: 65536, metal3: true },
          },
          { ...LEAST, appleFamilyMax: null, deviceName: null },
          ['bfloat: wrong-result'],
        ],
      ]);
      const one = await doctor({ device: 1, probes: ['bfloat'], cache: false });
      expect(one.devices.map((d) => [d.index, d.reported.patched?.metal3])).toEqual([[1, true]]);
    });

    it('auto, nothing cached: the least of both verified profiles, both devices’ advice, both files', () => {
      const r = applyProfile('auto');
      expect([r.applied, r.profile]).toEqual([true, LEAST]);
      expect({ ...r.auto, recommendations: r.auto!.recommendations.map((x) => [x.engine, x.setting]) }).toEqual({
        from: 'doctor',
        files: cacheFiles(),
        ignored: [],
        cacheError: null,
        recommendations: [
          ['llama.cpp', 'GGML_METAL_NO_RESIDENCY=1'],
          ['mlx', 'never advertise Metal3 (profile {"families":{"metal3":false}})'],
          ['llama.cpp', 'GGML_METAL_BF16_DISABLE=1'],
        ],
      });
    });

    it('auto uses the cache only when every device’s result is in it', () => {
      applyProfile('auto');
      restore();
      expect(applyProfile('auto').auto).toMatchObject({ from: 'cache', files: cacheFiles() });
      restore();
      const [first, secondFile] = cacheFiles();
      rmSync(secondFile!);
      const r = applyProfile('auto');
      expect([r.profile, r.auto!.from, r.auto!.files]).toEqual([LEAST, 'doctor', [first, secondFile]]);
    });
  });
});

// doctor when the candidate profile is installed in its probe runner but does not verify: the device's threadgroup
// answer drifts after two reads, so applyProfile takes the patch out again and reports verification-failed. doctor
// reports the stock run, says why there was no patched run, and leaves nothing behind.
describeSim('a guest whose device answer drifts under the patch', () => {
  useSimulation(() => snapshotFile);

  const temp = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-verify-failed-'));
  const snapshot = JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
  snapshot.id = 'doctor-drift';
  snapshot.devices[0].simulation = { methodsOnConcreteClass: false, driftAfter: 2 };
  const snapshotFile = path.join(temp, 'doctor-drift.json');
  beforeAll(() => {
    process.env.XDG_CACHE_HOME = temp;
  });
  writeFileSync(snapshotFile, simulationJson(snapshot));

  describeSim('a candidate profile that does not verify', () => {
    beforeAll(requireSimBuild);

    // The drift lasts, so only the first apply in a process fails (each doctor() call has a fresh runner): a custom
    // candidate (the block over doctor-faults.json below has a named one through the CLI).
    it('no patched run, and why; nothing left to restore', async () => {
      const r = await doctor({ probes: ['bfloat', 'residency-set'], profile: { appleFamilyMax: 1009 }, cache: false });
      expect(r.patchedRun).toEqual({
        ran: false,
        why: 'the candidate profile was not applied (verification-failed: device 0 (AppleParavirtDevice) answered maxThreadgroupMemoryLength=32784, expected 32768; the patch was taken out)',
      });
      expect(r.restore).toBeNull();
      const d = r.devices[0]!;
      expect([d.reported.patched, d.probes.map((p) => [p.id, p.status, 'patched' in p])]).toEqual([
        null,
        [
          ['simdgroup-reduction', 'skipped', false],
          ['simdgroup-matrix', 'skipped', false],
          ['bfloat', 'pass', false],
          ['threadgroup-memory', 'skipped', false],
          ['nocopy-mmap', 'skipped', false],
          ['residency-set', 'fail', false],
          ['heap', 'skipped', false],
        ],
      ]);
      expect(status()).toMatchObject({ active: false, hooks: [] });
    });
  });
});

// doctor when the candidate profile cannot be installed in its probe runner: one device class lacks a query, so
// installing the hooks fails (reason hook-failed) and applyProfile installs none. doctor reports the stock run, says
// why there was no patched run, and leaves nothing behind. (The block before: installed, then taken out.)
describeSim('a guest with a device class that lacks a query', () => {
  useSimulation(() => snapshotFile);

  const temp = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-hook-failed-'));
  const snapshot = JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
  snapshot.id = 'doctor-lacks';
  const broken = structuredClone(snapshot.devices[0]);
  broken.className = 'SimBrokenDevice';
  broken.simulation = { methodsOnConcreteClass: false, lacks: 'recommendedMaxWorkingSetSize' };
  delete broken.doctor;
  snapshot.devices.push(broken);
  const snapshotFile = path.join(temp, 'doctor-lacks.json');
  beforeAll(() => {
    process.env.XDG_CACHE_HOME = temp;
  });
  writeFileSync(snapshotFile, simulationJson(snapshot));

  describeSim('a candidate profile that cannot be installed', () => {
    beforeAll(requireSimBuild);

    it('no patched run, and why; the stock run decides; no hook is left and nothing is restored', async () => {
      const r = await doctor({ probes: ['bfloat', 'residency-set'], profile: 'apple7', cache: false });
      expect(r.patchedRun.ran).toBe(false);
      expect(r.patchedRun.why).toMatch(
        /^apple7 was not applied \(hook-failed: .*SimBrokenDevice recommendedMaxWorkingSetSize/,
      );
      expect(r.restore).toBeNull();
      expect(
        r.devices.map((d) => [d.index, d.reported.patched, d.probes.map((p) => [p.id, p.status, 'patched' in p])]),
      ).toEqual(
        [0, 1].map((index) => [
          index,
          null,
          [
            ['simdgroup-reduction', 'skipped', false],
            ['simdgroup-matrix', 'skipped', false],
            ['bfloat', 'pass', false],
            ['threadgroup-memory', 'skipped', false],
            ['nocopy-mmap', 'skipped', false],
            ['residency-set', index === 0 ? 'fail' : 'pass', false],
            ['heap', 'skipped', false],
          ],
        ]),
      );
      expect(status()).toMatchObject({ active: false, hooks: [] });
    });

    it('a custom candidate is named as such', async () => {
      const r = await doctor({ probes: ['bfloat'], profile: { appleFamilyMax: 1008 }, cache: false });
      expect(r.patchedRun.why).toMatch(/^the candidate profile was not applied \(hook-failed: /);
    });
  });
});

// doctor and profile auto where Metal lists no device: the simulated build with no snapshot (on a Mac, a headless
// session or a VM without a paravirtual GPU). doctor says why; auto claims nothing and says so when asked directly.
describeSim('no snapshot: no Metal device', () => {
  useSimulation('');

  beforeAll(() => {
    process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-no-device-'));
  });

  const DETAIL =
    'the simulated Metal has no device: set METAL_CAP_SHIM_SIM_SNAPSHOT to a snapshot name (see snapshots/)';
  const NOTHING = { ...resolveProfile({}), name: null };

  describeSim('Metal without a device', () => {
    beforeAll(requireSimBuild);

    it('doctor() reports no-device with the simulated source, and nothing ran', async () => {
      const r = await doctor();
      expect(r).toEqual({
        schema: 'metal-cap-shim/doctor@1',
        packageVersion: packageVersion(),
        generatedAt: r.generatedAt,
        supported: false,
        reason: 'no-device',
        detail: DETAIL,
        source: 'simulated',
        snapshot: null,
        host: {
          osVersion: null,
          osBuild: null,
          model: null,
          isVirtualMachine: null,
          arch: null,
          memoryBytes: null,
          translated: null,
          cpuBrand: null,
          chip: null,
        },
        candidateProfile: profiles['host-family']!.profile,
        candidateWarnings: [],
        replayed: false,
        patchedRun: { ran: false, why: DETAIL },
        settings: {
          probes: [...DOCTOR_PROBE_IDS],
          timeoutMs: 5000,
          mmapFile: null,
          mmapSize: 1 << 30,
          device: null,
          allowAboveHardware: false,
        },
        devices: [],
        restore: null,
        cache: null,
      });
    });

    it('profile auto: not applied (no-device), resolveAutoProfile throws, exec’s auto claims nothing', () => {
      expect(applyProfile('auto')).toMatchObject({
        applied: false,
        reason: 'no-device',
        detail: DETAIL,
        profile: NOTHING,
      });
      expect('auto' in applyProfile('auto')).toBe(false);
      let err: unknown;
      try {
        resolveAutoProfile();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UnsupportedPlatformError);
      expect((err as Error).message).toBe(`profile auto needs a Metal device to measure: ${DETAIL}`);
      expect(profileForExec('auto', {})).toEqual({ profile: NOTHING, auto: null });
    });
  });
});

// Each fault the simulated Metal can be given (test/fixtures/snapshots/doctor-faults.json) leads to its status,
// its judgement, the verified profile and its recommendations, through doctor() and the real addon. The faults are
// injected: this tests the decisions, not how a real GPU fails (test/live/ runs doctor on a Mac).
describeSim('every simulated fault (test/fixtures/snapshots/doctor-faults.json)', () => {
  useSimulation(() => FIXTURE);

  const FIXTURE = path.join(root, 'test', 'fixtures', 'snapshots', 'doctor-faults.json');
  const temp = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-faults-'));
  beforeAll(() => {
    process.env.XDG_CACHE_HOME = temp;
  });

  const MMAP = 1 << 20;
  const NO_MMAP = ['--no-mmap (llama-bench: -mmp 0)', 'llama.loadModel({ useMmap: false })'];
  const NO_RESIDENCY = ['GGML_METAL_NO_RESIDENCY=1', 'never advertise Metal3 (profile {"families":{"metal3":false}})'];
  const BF16 = ['GGML_METAL_BF16_DISABLE=1'];
  const KEEP_NAME = ['leave the device name alone (no deviceName in the profile)'];
  const NOTHING = resolveProfile({});

  async function run(device: number, timeoutMs = 5000, profile?: ProfileInput): Promise<DoctorDevice> {
    // allowAboveHardware: the fixture's threadgroup faults above 32768 bytes are only seen when those sizes run.
    const r = await doctor({ device, mmapSize: MMAP, timeoutMs, profile, cache: false, allowAboveHardware: true });
    expect(r.patchedRun).toEqual({ ran: true, why: null });
    return r.devices[0]!;
  }

  const verdicts = (d: DoctorDevice) => d.probes.map((p) => [p.id, p.status, p.judgement]);

  describeSim('every simulated fault leads to its status, judgement and recommendation', () => {
    beforeAll(requireSimBuild);

    it('(a) a lost SIMD lane, a matrix pipeline error, truncating bfloat, a 32 KiB threadgroup limit, stale pages, no residency set, a lost write to a heap', async () => {
      // Under cua-release, which raises threadgroup memory to 65536: the verified size stays at what was proven.
      const d = await run(1, 5000, 'cua-release');
      // The guest claims no Apple7: a SIMD-group matrix pipeline it cannot build is not its feature (unsupported).
      expect(verdicts(d)).toEqual([
        ['simdgroup-reduction', 'wrong-result', 'faulty'],
        ['simdgroup-matrix', 'unsupported', 'absent'],
        ['bfloat', 'wrong-result', 'faulty'],
        ['threadgroup-memory', 'pass', 'proven'],
        ['nocopy-mmap', 'wrong-result', 'faulty'],
        ['residency-set', 'fail', 'faulty'],
        ['heap', 'wrong-result', 'faulty'],
      ]);
      expect(d.probes[6]!.detail).toBe(
        '1 of 256 words of the placed buffer differ from what the GPU was to write, and 1 read back wrong',
      );
      expect(d.probes[3]).toMatchObject({ provenThreadgroupMemory: 32768, failedThreadgroupMemory: 40960 });
      expect(d.probes[4]!.detail).toMatch(/^stale data: /);
      expect(d.verifiedProfile).toEqual(NOTHING);
      expect(d.verifiedProfileReasons[1]).toBe(
        'threadgroup memory left at the reported 32768 bytes, which were proven; the device reports 32768 stock, 65536 under cua-release',
      );
      expect(d.recommendations.map((r) => r.setting)).toEqual([...BF16, ...NO_MMAP, ...NO_RESIDENCY, ...KEEP_NAME]);
      expect(d.faults).toEqual([
        'simdgroup-reduction: wrong-result',
        'bfloat: wrong-result',
        'nocopy-mmap: wrong-result',
        'residency-set: fail',
        'heap: wrong-result',
      ]);
    });

    it('(b) a reduction pipeline error, a matrix off by one, MSL 3.1 rejected, unbacked memory past 32 KiB, a zero-length NoCopy buffer, no residency API, no heap', async () => {
      const d = await run(2);
      // Neither Apple7 nor Metal3 claimed: a reduction pipeline that cannot be built is unsupported.
      expect(verdicts(d)).toEqual([
        ['simdgroup-reduction', 'unsupported', 'absent'],
        ['simdgroup-matrix', 'wrong-result', 'faulty'],
        ['bfloat', 'unsupported', 'absent'],
        ['threadgroup-memory', 'wrong-result', 'faulty'],
        ['nocopy-mmap', 'wrong-result', 'faulty'],
        ['residency-set', 'unsupported', 'absent'],
        ['heap', 'fail', 'faulty'],
      ]);
      expect(d.probes[4]!.bufferLength).toBe(0);
      expect(d.probes[1]!.maxAbsError).toBe(1);
      expect(d.probes[6]!.detail).toBe('newHeapWithDescriptor: gave no heap of 1048576 bytes');
      expect(d.verifiedProfile).toEqual(NOTHING);
      // bfloat and residency sets are absent, not faulty, and nothing turns them on: no advice for them.
      expect(d.recommendations.map((r) => r.setting)).toEqual([...NO_MMAP, ...KEEP_NAME]);
    });

    it('(c) MSL 2.3 rejected, pipeline errors, a nil NoCopy buffer, a resident buffer read wrong, no heap API', async () => {
      const d = await run(3);
      expect(verdicts(d)).toEqual([
        ['simdgroup-reduction', 'unsupported', 'absent'],
        ['simdgroup-matrix', 'unsupported', 'absent'],
        // Neither Apple6 nor Metal3 claimed; threadgroup memory is every device's, so its pipeline error is a fault.
        ['bfloat', 'unsupported', 'absent'],
        ['threadgroup-memory', 'fail', 'faulty'],
        ['nocopy-mmap', 'fail', 'faulty'],
        ['residency-set', 'wrong-result', 'faulty'],
        ['heap', 'unsupported', 'absent'],
      ]);
      expect(d.probes[6]!.detail).toBe('this device has no heaps (newHeapWithDescriptor:)');
      expect(d.verifiedProfile).toEqual(NOTHING);
      // bfloat is absent here (its pipeline cannot be built, and the guest claims neither Apple6 nor Metal3): no advice.
      expect(d.recommendations.map((r) => r.setting)).toEqual([...NO_MMAP, ...NO_RESIDENCY]);
    });

    it('threadgroup memory that computes wrong even at 16 KiB: nothing proven, memory left as reported; the rest proves Apple7 and Metal3', async () => {
      const d = await run(5);
      expect(verdicts(d)).toEqual(
        DOCTOR_PROBE_IDS.map((id) =>
          id === 'threadgroup-memory' ? [id, 'wrong-result', 'faulty'] : [id, 'pass', 'proven'],
        ),
      );
      expect(d.probes[3]).toMatchObject({ provenThreadgroupMemory: null, failedThreadgroupMemory: 16384 });
      expect(d.verifiedProfile).toEqual({ ...NOTHING, appleFamilyMax: 1007, families: { metal3: true } });
      expect(d.recommendations).toEqual([]);
    });

    it('a device that works: everything proven', async () => {
      const d = await run(0);
      expect(verdicts(d)).toEqual(DOCTOR_PROBE_IDS.map((id) => [id, 'pass', 'proven']));
      // 64 KiB of threadgroup memory ran and computed right, but above 32768 a size is only accepted, never proven, and
      // no more than 32768 (what it reports) is claimed.
      expect(d.probes[3]).toMatchObject({ provenThreadgroupMemory: 32768, acceptedThreadgroupMemory: 65536 });
      expect(d.verifiedProfile).toEqual({ ...NOTHING, appleFamilyMax: 1007, families: { metal3: true } });
    });

    it('the timeout path: a hanging device times out on its first probe, the rest of its probes are skipped with the reason, the call returns, nothing is proven, no hook is left', async () => {
      const t0 = Date.now();
      const d = await run(4, 200);
      const elapsed = Date.now() - t0;
      const unusable = 'not run: the GPU was left unusable by simdgroup-reduction (timeout in the stock run)';
      expect(verdicts(d)).toEqual(
        DOCTOR_PROBE_IDS.map((id) =>
          id === 'simdgroup-reduction' ? [id, 'timeout', 'faulty'] : [id, 'skipped', 'unknown'],
        ),
      );
      // The one run that ran (the reduction's stock run) is bounded by its own deadline; the GPU then takes no more work.
      expect(d.probes.map((p) => [p.id, p.stock?.status ?? null, p.patched?.status ?? null])).toEqual(
        DOCTOR_PROBE_IDS.map((id) =>
          id === 'nocopy-mmap'
            ? [id, null, null]
            : [id, id === 'simdgroup-reduction' ? 'timeout' : 'skipped', 'skipped'],
        ),
      );
      expect(d.probes[0]!.stock!.ms!).toBeGreaterThanOrEqual(200);
      expect(elapsed).toBeGreaterThanOrEqual(200);
      expect(elapsed).toBeLessThan(200 + 3000);
      expect(d.probes[0]!.stock!.detail).toBe('the reduction dispatch did not complete within 200 ms');
      expect(d.probes[0]!.patched!.detail).toBe(unusable);
      expect(d.probes[6]!.stock!.detail).toBe(unusable);
      expect(d.probes[4]!.detail).toBe(unusable);
      expect(d.verifiedProfile).toEqual(NOTHING);
      // Only the reduction is faulty, and no engine setting avoids a hung reduction; the skipped probes prove nothing
      // either way, so nothing is advised for them.
      expect(d.faults).toEqual(['simdgroup-reduction: timeout']);
      expect(d.recommendations).toEqual([]);
      expect(status()).toMatchObject({ active: false, hooks: [] });
    });

    it('over every device at once, the report keeps them apart', async () => {
      const r = await doctor({ probes: ['bfloat', 'residency-set'], timeoutMs: 200, cache: false });
      expect(r.devices.map((d) => [d.index, d.className, d.faults])).toEqual([
        [0, 'SimDoctorHealthy', []],
        [1, 'SimDoctorFaultsA', ['bfloat: wrong-result', 'residency-set: fail']],
        [2, 'SimDoctorFaultsB', []],
        [3, 'SimDoctorFaultsC', ['residency-set: wrong-result']],
        // The hung bfloat dispatch leaves the device unusable: its residency-set probe is skipped, not another timeout.
        [4, 'SimDoctorHangs', ['bfloat: timeout']],
        [5, 'SimDoctorUnbacked', []],
      ]);
    });
  });

  describeSim('auto over faulty devices', () => {
    beforeAll(requireSimBuild);

    /** A snapshot of the fixture's device `index` alone. */
    function alone(index: number): string {
      const s = JSON.parse(readFileSync(FIXTURE, 'utf8'));
      s.id = `doctor-device-${index}`;
      s.devices = [s.devices[index]];
      const file = path.join(temp, `${s.id}.json`);
      writeFileSync(file, JSON.stringify(s));
      return file;
    }

    const auto = (snapshot: string, options: string) =>
      jsonFrom<{ applied: boolean; profile: unknown; from: string; warnings: string[]; ms: number; active: boolean }>(
        runNode(
          `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
         const t0 = Date.now();
         const r = m.applyProfile('auto', ${options});
         console.log(JSON.stringify({ applied: r.applied, profile: r.profile, from: r.auto.from, warnings: r.warnings.map((w) => w.code), ms: Date.now() - t0, active: m.status().active }));`,
          { METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot, XDG_CACHE_HOME: mkdtempSync(path.join(temp, 'cache-')) },
        ),
      );

    it('the timeout path: a hanging device proves nothing, so auto applies a profile that changes nothing, within its deadlines', () => {
      const r = auto(alone(4), '{ timeoutMs: 150 }');
      expect(r).toMatchObject({
        applied: true,
        profile: NOTHING,
        from: 'doctor',
        warnings: ['no-change'],
        active: true,
      });
      // The first capability probe times out; the device's later probes, stock and patched, are skipped.
      expect(r.ms).toBeGreaterThanOrEqual(150);
      expect(r.ms).toBeLessThan(150 + 3000);
    });

    it('a faulty matrix keeps auto below Apple7: bfloat proven gives Apple6 only', () => {
      const s = JSON.parse(readFileSync(FIXTURE, 'utf8'));
      s.id = 'doctor-matrix-only';
      s.devices = [s.devices[0]];
      s.devices[0].doctor = {
        provenance: 'test-fixture',
        probes: Object.fromEntries(
          DOCTOR_PROBE_IDS.map((id) => [
            id,
            id === 'simdgroup-matrix'
              ? { status: 'wrong-result', detail: 'fixture: off by one' }
              : { status: 'not-recorded' },
          ]),
        ),
      };
      const file = path.join(temp, 'matrix-only.json');
      writeFileSync(file, JSON.stringify(s));
      expect(auto(file, '{}')).toMatchObject({
        applied: true,
        profile: { ...NOTHING, appleFamilyMax: 1006, families: { metal3: true } },
        from: 'doctor',
      });
    });
  });

  describeSim(
    'when the candidate profile cannot be installed, doctor still reports the stock run and leaves nothing behind',
    () => {
      beforeAll(requireSimBuild);

      function guestWith(name: string, edit: (s: Record<string, any>) => void): string {
        const s = JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
        s.id = name;
        edit(s);
        const file = path.join(temp, `${name}.json`);
        writeFileSync(file, simulationJson(s));
        return file;
      }

      const doctorIn = (snapshot: string, profile: string) =>
        jsonFrom<{
          patchedRun: unknown;
          probes: [string, string, boolean][];
          status: { active: boolean; hooks: unknown[] };
        }>(
          runNode(
            `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
         const r = await m.doctor({ probes: ['bfloat', 'residency-set'], profile: '${profile}', cache: false });
         console.log(JSON.stringify({ patchedRun: r.patchedRun, probes: r.devices[0].probes.map((p) => [p.id, p.status, 'patched' in p]), status: m.status() }));`,
            { METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot, XDG_CACHE_HOME: temp },
          ),
        );

      it('a hook that cannot be installed (hook-failed): no patched run, and why', () => {
        const file = guestWith('doctor-lacks', (s) => {
          const broken = structuredClone(s.devices[0]);
          broken.className = 'SimBrokenDevice';
          broken.simulation = { methodsOnConcreteClass: false, lacks: 'recommendedMaxWorkingSetSize' };
          delete broken.doctor;
          s.devices.push(broken);
        });
        const r = doctorIn(file, 'cua-release');
        expect(r.patchedRun).toMatchObject({ ran: false });
        expect((r.patchedRun as { why: string }).why).toMatch(
          /^cua-release was not applied \(hook-failed: .*SimBrokenDevice recommendedMaxWorkingSetSize/,
        );
        expect(r.probes).toEqual([
          ['simdgroup-reduction', 'skipped', false],
          ['simdgroup-matrix', 'skipped', false],
          ['bfloat', 'pass', false],
          ['threadgroup-memory', 'skipped', false],
          ['nocopy-mmap', 'skipped', false],
          ['residency-set', 'fail', false],
          ['heap', 'skipped', false],
        ]);
        expect(r.status).toMatchObject({ active: false, hooks: [] });
      });

      it('a profile that fails verification (the answer drifts): no patched run, and why', () => {
        // The threadgroup answer changes after two reads: the applied profile's answers then do not verify.
        const file = guestWith('doctor-drift', (s) => {
          s.devices[0].simulation = { methodsOnConcreteClass: false, driftAfter: 2 };
        });
        const r = doctorIn(file, 'apple9-hw-tg');
        expect(r.patchedRun).toEqual({
          ran: false,
          why: 'apple9-hw-tg was not applied (verification-failed: device 0 (AppleParavirtDevice) answered maxThreadgroupMemoryLength=32784, expected 32768; the patch was taken out)',
        });
        expect(r.status).toMatchObject({ active: false, hooks: [] });
      });
    },
  );

  describeSim('preparing the generated file is not the device: a slow or failed write finds no fault', () => {
    beforeAll(requireSimBuild);

    it('a write that outlasts the whole deadline: the GPU phase decides, so the device is proven and nothing is advised', async () => {
      const own = mkdtempSync(path.join(temp, 'tmp-'));
      const saved = process.env.TMPDIR;
      process.env.TMPDIR = own;
      let d: DoctorDevice;
      try {
        d = (await doctor({ device: 0, probes: ['nocopy-mmap'], mmapSize: 256 << 20, timeoutMs: 100, cache: false }))
          .devices[0]!;
      } finally {
        if (saved === undefined) delete process.env.TMPDIR;
        else process.env.TMPDIR = saved;
      }
      const nocopy = d.probes.find((p) => p.id === 'nocopy-mmap')!;
      expect([nocopy.status, nocopy.judgement]).toEqual(['pass', 'proven']);
      // Writing 256 MiB took longer than the 100 ms budget; before, that was a timeout judged faulty.
      expect(nocopy.ms!).toBeGreaterThan(100);
      expect(d.faults).toEqual([]);
      expect(d.recommendations).toEqual([]);
      expect(readdirSync(own)).toEqual([]);
    });

    it('a write that fails (a file-size limit: EFBIG, as ENOSPC would): error, unknown, no fault, no advice, exit 0', () => {
      // The shell's file-size limit (ulimit -f, in KiB) stops the write at 2 MiB of 4; SIGXFSZ is ignored so pwrite
      // returns EFBIG instead of killing the process.
      const own = mkdtempSync(path.join(temp, 'tmp-'));
      const limited = (command: string) =>
        spawnSync('bash', ['-c', `trap '' XFSZ; ulimit -f 2048; exec ${command}`], {
          encoding: 'utf8',
          cwd: root,
          env: { ...process.env, TMPDIR: own, NO_COLOR: '1' },
          timeout: 60_000,
        });
      const code = `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
      const d = (await m.doctor({ device: 0, probes: ['nocopy-mmap'], mmapSize: ${4 << 20}, cache: false })).devices[0];
      const p = d.probes.find((x) => x.id === 'nocopy-mmap');
      console.log(JSON.stringify({ probe: [p.status, p.judgement, p.detail], faults: d.faults, recommendations: d.recommendations }));`;
      const script = path.join(temp, 'failed-write.mjs');
      writeFileSync(script, code);
      const r = jsonFrom<{ probe: string[]; faults: string[]; recommendations: unknown[] }>(
        limited(`${JSON.stringify(process.execPath)} ${JSON.stringify(script)}`),
      );
      expect(r).toEqual({
        probe: ['error', 'unknown', 'writing the generated file failed: File too large'],
        faults: [],
        recommendations: [],
      });
      const cliRun = limited(
        `${JSON.stringify(process.execPath)} ${JSON.stringify(path.join(dist, 'cli.js'))} doctor --device 0 --mmap-size 4M --json`,
      );
      expect(cliRun.status).toBe(0);
      const report = JSON.parse(cliRun.stdout) as { devices: DoctorDevice[] };
      expect(report.devices[0]!.probes.find((p) => p.id === 'nocopy-mmap')).toMatchObject({
        status: 'error',
        judgement: 'unknown',
        detail: 'writing the generated file failed: File too large',
      });
      expect(report.devices[0]!.faults).toEqual([]);
      expect(readdirSync(own)).toEqual([]);
    });

    it('the CLI killed while it writes a large file leaves no file behind (the file has no name once it is open)', async () => {
      const own = mkdtempSync(path.join(temp, 'tmp-'));
      const size = 512 << 20;
      const child = spawn(
        process.execPath,
        [path.join(dist, 'cli.js'), 'doctor', '--device', '0', '--mmap-size', '512M'],
        {
          env: { ...process.env, TMPDIR: own, XDG_CACHE_HOME: mkdtempSync(path.join(temp, 'cache-')) },
          stdio: 'ignore',
        },
      );
      let written = -1;
      // The CLI and the probe runner it starts (which writes the file): every process of the run.
      let tree: number[] = [];
      try {
        // Wait until the probe has both descriptors open and has begun writing.
        const end = Date.now() + 30_000;
        for (;;) {
          tree = processTree(child.pid!);
          const open = tree.flatMap((pid) => descriptorsUnder(pid, own));
          written = open.length === 2 ? statSync(open[0]!.fd).size : -1;
          if (written > 0) {
            expect(open.map((x) => x.target)).toEqual([open[0]!.target, open[0]!.target]);
            expect(open[0]!.target).toMatch(/ \(deleted\)$/);
            break;
          }
          if (Date.now() > end) throw new Error('the doctor never started writing its file');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        expect(readdirSync(own)).toEqual([]);
      } finally {
        // The writer killed with the CLI: SIGKILL runs no destructor, so what is left is what any crash would leave.
        const exited = new Promise((resolve) => child.once('exit', resolve));
        for (const pid of processTree(child.pid!).reverse()) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        await exited;
        for (const pid of tree) {
          while (existsSync(`/proc/${pid}`) && !isZombie(pid)) await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }
      // Killed mid-write: some of the file was written, not all of it.
      expect(written).toBeGreaterThan(0);
      expect(written).toBeLessThan(size);
      expect(readdirSync(own)).toEqual([]);
    });
  });

  describeSim('a Metal exception is an error, not a fault', () => {
    beforeAll(requireSimBuild);
    const SNAPSHOT = path.join(root, 'test', 'fixtures', 'snapshots', 'doctor-sim-behaviours.json');
    const RAISED =
      'Metal raised NSInternalInconsistencyException: simulated exception at commit, recorded in the snapshot: fixture: Metal raises at commit';

    it('through doctor(): every probe error with the reason, judgement unknown, no fault, no advice, nothing proven', () => {
      const r = jsonFrom<{
        probes: [string, string, string, string | undefined][];
        faults: string[];
        recommendations: unknown[];
        profile: unknown;
      }>(
        runNode(
          `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
         const d = (await m.doctor({ device: 0, mmapSize: ${MMAP}, cache: false })).devices[0];
         console.log(JSON.stringify({ probes: d.probes.map((p) => [p.id, p.status, p.judgement, p.detail ?? p.stock?.detail]), faults: d.faults, recommendations: d.recommendations, profile: d.verifiedProfile }));`,
          { METAL_CAP_SHIM_SIM_SNAPSHOT: SNAPSHOT, XDG_CACHE_HOME: temp },
        ),
      );
      expect(r.probes.map(([id, status, judgement]) => [id, status, judgement])).toEqual(
        DOCTOR_PROBE_IDS.map((id) => [id, 'error', 'unknown']),
      );
      for (const [, , , detail] of r.probes) expect(detail).toContain(RAISED);
      expect(r.faults).toEqual([]);
      expect(r.recommendations).toEqual([]);
      expect(r.profile).toEqual(NOTHING);
    });

    it('through the CLI: exit 0, and the report shows the reason', () => {
      const r = runCli(['doctor', '--device', '0', '--mmap-size', '1M', '--json'], {
        METAL_CAP_SHIM_SIM_SNAPSHOT: SNAPSHOT,
        XDG_CACHE_HOME: temp,
      });
      expect(r.status).toBe(0);
      const report = JSON.parse(r.stdout) as { devices: DoctorDevice[] };
      expect(report.devices[0]!.probes.map((p) => [p.id, p.status, p.judgement])).toEqual(
        DOCTOR_PROBE_IDS.map((id) => [id, 'error', 'unknown']),
      );
      expect(report.devices[0]!.faults).toEqual([]);
      expect(report.devices[0]!.recommendations).toEqual([]);
    });
  });

  describeSim(
    'a threadgroup limit that follows the answer: the stock and patched runs differ, and doctor says so',
    () => {
      beforeAll(requireSimBuild);
      const SNAPSHOT = path.join(root, 'test', 'fixtures', 'snapshots', 'doctor-sim-behaviours.json');

      it('through doctor(): the difference carries the measured sizes, and the verified size is what both runs proved', () => {
        const d = jsonFrom<{
          differences: unknown;
          reasons: string[];
          tg: number | null;
          stock: number | null;
          patched: number | null;
          accepted: [number | null, number | null];
        }>(
          runNode(
            `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
         const d = (await m.doctor({ device: 1, profile: 'cua-release', mmapSize: ${MMAP}, cache: false, allowAboveHardware: true })).devices[0];
         const p = d.probes.find((x) => x.id === 'threadgroup-memory');
         console.log(JSON.stringify({ differences: d.differences, reasons: d.verifiedProfileReasons, tg: d.verifiedProfile.maxThreadgroupMemoryLength, stock: p.stock.provenThreadgroupMemory, patched: p.patched.provenThreadgroupMemory, accepted: [p.stock.acceptedThreadgroupMemory, p.patched.acceptedThreadgroupMemory] }));`,
            { METAL_CAP_SHIM_SIM_SNAPSHOT: SNAPSHOT, XDG_CACHE_HOME: temp },
          ),
        );
        expect(d.differences).toEqual([
          {
            id: 'threadgroup-memory',
            stock: 'pass',
            patched: 'pass',
            measured: [
              { field: 'acceptedThreadgroupMemory', stock: null, patched: 65536 },
              { field: 'failedThreadgroupMemory', stock: 40960, patched: null },
            ],
          },
        ]);
        // Under cua-release 65536 bytes ran and computed right: accepted, not proven (no size above 32768 is).
        expect([d.stock, d.patched, d.accepted, d.tg]).toEqual([32768, 32768, [null, 65536], null]);
        expect(d.reasons[1]).toBe(
          'threadgroup memory left at the reported 32768 bytes, which were proven; the device reports 32768 stock, 65536 under cua-release',
        );
      });

      it('through the CLI: the difference line names the accepted and failed sizes of each run', () => {
        const r = runCli(
          ['doctor', '--device', '1', '--profile', 'cua-release', '--mmap-size', '1M', '--allow-above-hardware'],
          {
            METAL_CAP_SHIM_SIM_SNAPSHOT: SNAPSHOT,
            XDG_CACHE_HOME: temp,
            NO_COLOR: '1',
          },
        );
        expect(r.status).toBe(0);
        expect(r.stdout.split('\n').filter((l) => l.includes('≠'))).toEqual([
          "  ≠ threadgroup-memory: no size accepted, failed from 40960 bytes with stock answers, accepted 65536 bytes, no size failed under cua-release: Metal's behaviour depends on what the device answers",
        ]);
      });
    },
  );

  /** `pid` and every process below it (its children, theirs, …), read from /proc. */
  function processTree(pid: number): number[] {
    const children = new Map<number, number[]>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last `)`.
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
      } catch {
        // exited between the listing and the read
      }
    }
    const out = [pid];
    for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]!) ?? []));
    return out;
  }

  /** True when `pid` has exited and waits for its parent to reap it (or is gone). */
  function isZombie(pid: number): boolean {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
    } catch {
      return true;
    }
  }

  /** The descriptors process `pid` has open on files under `dir`: their /proc path and what they point to. */
  function descriptorsUnder(pid: number, dir: string): { fd: string; target: string }[] {
    const out: { fd: string; target: string }[] = [];
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      return out;
    }
    for (const n of fds) {
      try {
        const fd = `/proc/${pid}/fd/${n}`;
        const target = readlinkSync(fd);
        if (target.startsWith(`${dir}/`)) out.push({ fd, target });
      } catch {
        // closed between the listing and the readlink
      }
    }
    return out;
  }
});
