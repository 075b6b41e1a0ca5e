// Profile auto in this process, over the simulated Tahoe guest (a VM: raising is allowed): where the profile comes
// from (the cache or a fresh run), what it says about the files it read or wrote, its option checks, and
// profileForExec's choice between --profile, METAL_CAP_SHIM_PROFILE and the default. Each test has its own cache
// folder and leaves no profile applied. Last, over a guest whose bfloat dispatch never completes: auto's deadline.
// test/select/auto.spawned.test.ts runs the same paths through the built package.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile, isAuto, profileForExec, resolveAutoProfile } from '../../lib/select/auto.js';
import { doctor } from '../../lib/doctor/index.js';
import { cacheKeyFor, doctorCacheDir, readCache, type DoctorCacheEntry } from '../../lib/doctor/cache.js';
import { InvalidOptionsError, InvalidProfileError } from '../../lib/core/errors.js';
import { DEFAULT_PROFILE, profiles, resolveProfile } from '../../lib/patch/profiles.js';
import { stockDevices } from '../support/doctor-helpers.js';
import { describeSim, requireSimBuild, thrown, root } from '../support/helpers.js';
import { DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import { useSimulation } from '../support/simulation.js';

describeSim('the stock Tahoe guest (vz-guest-m1-ultra-tahoe-stock)', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');

  // The guest records that residency sets fail (Cua PR 3070): everything else is proven, Metal3 is not; the 64 KiB of
  // threadgroup memory that computed right is only accepted, never claimed (32768 proven, what the guest reports). Its host
  // is an M1 Ultra (Apple7, so nothing is capped) and a heap was proven: the verified profile answers the chip's name.
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
  const RECOMMENDATIONS = [
    {
      engine: 'llama.cpp',
      setting: 'GGML_METAL_NO_RESIDENCY=1',
      why: `residency-set fail: ${RESIDENCY_DETAIL}. ggml-metal creates residency sets by default (arm64 builds with a macOS 15+ SDK); node-llama-cpp 3.19 already sets this while it loads backends`,
    },
    {
      engine: 'mlx',
      setting: 'never advertise Metal3 (profile {"families":{"metal3":false}})',
      why: `residency-set fail: ${RESIDENCY_DETAIL}. MLX (from v0.19.2) creates residency sets when the device answers Metal3 on macOS 15+, and throws when that fails; no switch of its own turns them off (MLX_RESIDENCY_SET_MAX_PCT, from v0.32.1, only spreads them over several sets)`,
    },
  ];

  /** The one cache file of this machine's one device. */
  function cacheFile(): string {
    const stock = stockDevices();
    return readCache(cacheKeyFor(stock, stock.devices[0]!), stock.devices[0]!).file;
  }

  describeSim('profile auto, in-process', () => {
    beforeAll(requireSimBuild);
    beforeEach(() => {
      process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-auto-inprocess-'));
    });
    afterEach(() => {
      restore();
      delete process.env.METAL_CAP_SHIM_PROFILE;
    });

    it('which inputs ask for auto: the name in any case, with blanks around', () => {
      expect([
        isAuto('auto'),
        isAuto(' auto\n'),
        isAuto('Auto'),
        isAuto('auto7'),
        isAuto(''),
        isAuto(undefined),
        isAuto({ name: 'auto' }),
      ]).toEqual([true, true, true, false, false, false, false]);
    });

    it('nothing cached: the capability probes run, their result is cached, and the verified profile is applied', () => {
      const r = applyProfile('auto');
      const file = cacheFile();
      expect([r.applied, r.profile, r.verification?.ok]).toEqual([true, VERIFIED, true]);
      expect(r.auto).toEqual({
        from: 'doctor',
        files: [file],
        ignored: [],
        cacheError: null,
        recommendations: RECOMMENDATIONS,
      });
      expect(status()).toMatchObject({ active: true, profile: VERIFIED });
      const entry = JSON.parse(readFileSync(file, 'utf8')) as DoctorCacheEntry;
      expect(entry.result.probes.map((p) => [p.id, p.status])).toEqual([
        ['simdgroup-reduction', 'pass'],
        ['simdgroup-matrix', 'pass'],
        ['bfloat', 'pass'],
        ['threadgroup-memory', 'pass'],
        ['nocopy-mmap', 'skipped'],
        ['residency-set', 'fail'],
        ['heap', 'pass'],
      ]);
    });

    it('cached: the cached profile and recommendations, nothing run, the file untouched', () => {
      applyProfile('auto');
      restore();
      const file = cacheFile();
      const before = readFileSync(file, 'utf8');
      const r = applyProfile('auto');
      expect([r.applied, r.profile]).toEqual([true, VERIFIED]);
      expect(r.auto).toEqual({
        from: 'cache',
        files: [file],
        ignored: [],
        cacheError: null,
        recommendations: RECOMMENDATIONS,
      });
      expect(readFileSync(file, 'utf8')).toBe(before);
    });

    it('a cached result is what is applied, even when it says other than a fresh run would', () => {
      applyProfile('auto');
      restore();
      const file = cacheFile();
      const entry = JSON.parse(readFileSync(file, 'utf8')) as DoctorCacheEntry;
      // An earlier run that proved less (SIMD-group matrix failed, so Apple6 on bfloat): its stored probe results and its
      // profile agree.
      entry.result.probes = entry.result.probes.map((p) =>
        p.id === 'simdgroup-matrix' ? { ...p, status: 'fail' } : p,
      );
      entry.result.verifiedProfile = { ...entry.result.verifiedProfile, name: null, appleFamilyMax: 1006 };
      entry.result.recommendations = [];
      writeFileSync(file, JSON.stringify(entry));
      const r = applyProfile('auto');
      expect(r.profile).toEqual({ ...VERIFIED, name: null, appleFamilyMax: 1006 });
      expect(r.auto).toEqual({ from: 'cache', files: [file], ignored: [], cacheError: null, recommendations: [] });
    });

    it('a cached profile edited by hand beyond what its probes prove is ignored, with the reason, and measured again', () => {
      applyProfile('auto');
      restore();
      const file = cacheFile();
      const entry = JSON.parse(readFileSync(file, 'utf8')) as DoctorCacheEntry;
      entry.result.verifiedProfile = {
        ...entry.result.verifiedProfile,
        appleFamilyMax: 1010,
        maxThreadgroupMemoryLength: 1 << 20,
      };
      writeFileSync(file, JSON.stringify(entry));
      const r = applyProfile('auto');
      expect([r.applied, r.profile, r.auto!.from, r.auto!.ignored.map((i) => i.file)]).toEqual([
        true,
        VERIFIED,
        'doctor',
        [file],
      ]);
      expect(r.auto!.ignored[0]!.why).toMatch(
        /^the verified profile \{"appleFamilyMax":1010,"maxThreadgroupMemoryLength":1048576,.*\} does not follow from the probe results stored with it/,
      );
    });

    it('never above the host chip’s true family: a cached result claiming Apple9 on this M1 Ultra’s guest is not applied; measured again, Apple7', () => {
      applyProfile('auto');
      restore();
      const file = cacheFile();
      const entry = JSON.parse(readFileSync(file, 'utf8')) as DoctorCacheEntry;
      // The stored probes prove Apple9's capabilities; derived on this host they give Apple7, so 1009 is not what they prove.
      entry.result.verifiedProfile = { ...entry.result.verifiedProfile, appleFamilyMax: 1009 };
      writeFileSync(file, JSON.stringify(entry));
      const r = applyProfile('auto');
      expect([r.applied, r.profile, r.auto!.from, r.auto!.ignored.map((i) => i.file)]).toEqual([
        true,
        VERIFIED,
        'doctor',
        [file],
      ]);
      expect(resolveAutoProfile().profile).toEqual(VERIFIED);
    });

    it('a partial doctor run leaves a full cached result alone, and auto applies the full one', async () => {
      const full = await doctor({ mmapSize: 1 << 20 });
      const file = cacheFile();
      expect([full.cache, full.devices[0]!.verifiedProfile]).toEqual([{ written: [file], error: null }, VERIFIED]);
      const before = readFileSync(file, 'utf8');
      const partial = await doctor({ probes: ['nocopy-mmap'], mmapSize: 1 << 20 });
      expect([partial.supported, partial.cache, readFileSync(file, 'utf8')]).toEqual([true, null, before]);
      const r = applyProfile('auto');
      expect([r.applied, r.profile, r.auto]).toEqual([
        true,
        VERIFIED,
        { from: 'cache', files: [file], ignored: [], cacheError: null, recommendations: RECOMMENDATIONS },
      ]);
    });

    it('a run without every capability probe is not cached, one probe short or one probe only', async () => {
      for (const probes of [
        ['simdgroup-reduction', 'simdgroup-matrix', 'bfloat', 'threadgroup-memory'],
        ['bfloat'],
      ] as const) {
        expect((await doctor({ probes: [...probes] })).cache).toBeNull();
        expect(readCache(cacheKeyFor(stockDevices(), stockDevices().devices[0]!), stockDevices().devices[0]!)).toEqual({
          entry: null,
          file: cacheFile(),
          ignored: null,
        });
      }
      expect(
        (
          await doctor({
            probes: [
              'simdgroup-reduction',
              'simdgroup-matrix',
              'bfloat',
              'threadgroup-memory',
              'residency-set',
              'heap',
            ],
          })
        ).cache,
      ).toEqual({
        written: [cacheFile()],
        error: null,
      });
    });

    it('a cached result where a capability probe was skipped (an older file) is ignored and measured again', () => {
      applyProfile('auto');
      restore();
      const file = cacheFile();
      const entry = JSON.parse(readFileSync(file, 'utf8')) as DoctorCacheEntry;
      entry.result.probes = entry.result.probes.map((p) =>
        p.id === 'threadgroup-memory' ? { ...p, status: 'skipped' } : p,
      );
      entry.result.verifiedProfile = { ...entry.result.verifiedProfile, maxThreadgroupMemoryLength: null };
      writeFileSync(file, JSON.stringify(entry));
      const r = applyProfile('auto');
      expect([r.profile, r.auto]).toEqual([
        VERIFIED,
        {
          from: 'doctor',
          files: [file],
          ignored: [{ file, why: 'partial: threadgroup-memory did not run, so it is measured again' }],
          cacheError: null,
          recommendations: RECOMMENDATIONS,
        },
      ]);
      expect(
        (JSON.parse(readFileSync(file, 'utf8')) as DoctorCacheEntry).result.probes.find(
          (p) => p.id === 'threadgroup-memory',
        )?.status,
      ).toBe('pass');
    });

    it('an unusable cache file is named with why, measured again and replaced', () => {
      const file = cacheFile();
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, '{"schema":');
      const r = applyProfile('auto');
      expect(r.auto).toEqual({
        from: 'doctor',
        files: [file],
        ignored: [{ file, why: 'not JSON' }],
        cacheError: null,
        recommendations: RECOMMENDATIONS,
      });
      expect((JSON.parse(readFileSync(file, 'utf8')) as DoctorCacheEntry).result.verifiedProfile).toEqual(VERIFIED);
    });

    it('a cache that cannot be written: still applied, and why nothing was cached', () => {
      writeFileSync(doctorCacheDir(), 'a file where the folder should be');
      const r = applyProfile('auto');
      expect(r.applied).toBe(true);
      expect({ ...r.auto, cacheError: r.auto!.cacheError?.replace(/:.*$/s, '') }).toEqual({
        from: 'doctor',
        files: [],
        ignored: [],
        cacheError: 'the doctor cache could not be written',
        recommendations: RECOMMENDATIONS,
      });
      expect(r.auto!.cacheError).toBe(
        `the doctor cache could not be written: the cache folder ${doctorCacheDir()} is not a folder, so nothing is written there`,
      );
    });

    it('resolveAutoProfile: the profile and its source, nothing applied', () => {
      const fresh = resolveAutoProfile();
      expect(fresh).toEqual({
        profile: VERIFIED,
        auto: { from: 'doctor', files: [cacheFile()], ignored: [], cacheError: null, recommendations: RECOMMENDATIONS },
      });
      expect(resolveAutoProfile({ timeoutMs: 100 }).auto.from).toBe('cache');
      expect(status().active).toBe(false);
    });

    it('timeoutMs: checked as doctor checks it (100 is the least), and only auto takes it', () => {
      expect(applyProfile('auto', { timeoutMs: 100 }).applied).toBe(true);
      restore();
      for (const bad of [99, 600_001, 'soon']) {
        const err = thrown(() => applyProfile('auto', { timeoutMs: bad as number }));
        expect(err).toBeInstanceOf(InvalidOptionsError);
        expect((err as InvalidOptionsError).option).toBe('timeoutMs');
      }
      expect((thrown(() => applyProfile('auto', { timeoutMs: 99 })) as Error).message).toBe(
        "doctor() option 'timeoutMs' (--timeout-ms) must be a whole number from 100 to 600000, got 99",
      );
      expect((thrown(() => applyProfile('apple7', { timeoutMs: 1000 } as object)) as InvalidOptionsError).option).toBe(
        'timeoutMs',
      );
      expect((thrown(() => applyProfile('auto', { speed: 'max' } as object)) as Error).message).toBe(
        "applyProfile() has no option 'speed'; its options are force, allowAboveHardware, trace, strict, timeoutMs",
      );
      expect((thrown(() => applyProfile('auto', { trace: 'on' } as object)) as Error).message).toBe(
        'applyProfile() option \'trace\' must be a boolean, got the string "on"',
      );
      expect(status().active).toBe(false);
    });

    it('applyProfile’s own options reach the apply: trace', () => {
      expect(applyProfile('auto', { trace: true, strict: true, force: false }).applied).toBe(true);
      expect(status()).toMatchObject({ active: true, profile: VERIFIED, tracing: true });
    });

    it('a named profile goes straight through, also with applyProfile’s own options', () => {
      const r = applyProfile('apple7', { strict: true });
      expect([r.applied, r.profile, 'auto' in r]).toEqual([true, profiles.apple7!.profile, false]);
      // The default, host-family, is applied bound to this guest's host: an M1 Ultra, Apple7.
      expect(applyProfile().profile).toEqual({
        ...profiles[DEFAULT_PROFILE]!.profile,
        appleFamilyMax: 1007,
        mlxArchitecture: 'applegpu_g13d',
      });
    });

    it('MLX_METAL_GPU_ARCH: set to what the applied profile offers, replaced or taken away by the next profile; a value of the user’s wins', () => {
      const saved = process.env.MLX_METAL_GPU_ARCH;
      try {
        delete process.env.MLX_METAL_GPU_ARCH;
        const seen = [];
        for (const p of ['host-family', 'apple7', 'host-family', 'host-family'] as const) {
          const r = applyProfile(p);
          seen.push([p, process.env.MLX_METAL_GPU_ARCH, r.warnings.map((w) => w.code)]);
        }
        process.env.MLX_METAL_GPU_ARCH = 'applegpu_g13s';
        const mine = applyProfile('host-family');
        seen.push(['user', process.env.MLX_METAL_GPU_ARCH, mine.warnings.map((w) => w.code)]);
        expect(seen).toEqual([
          ['host-family', 'applegpu_g13d', []],
          ['apple7', undefined, []],
          ['host-family', 'applegpu_g13d', []],
          ['host-family', 'applegpu_g13d', []],
          ['user', 'applegpu_g13s', ['mlx-architecture-user-set']],
        ]);
      } finally {
        if (saved === undefined) delete process.env.MLX_METAL_GPU_ARCH;
        else process.env.MLX_METAL_GPU_ARCH = saved;
      }
    });

    it('a fresh measurement while a profile is applied measures the stock answers in its runner and swaps in over it; so does a cached one', () => {
      applyProfile('apple7');
      expect(status().profile?.name).toBe('apple7');
      const fresh = applyProfile('auto');
      expect([fresh.applied, fresh.profile, fresh.auto, status().profile]).toEqual([
        true,
        VERIFIED,
        { from: 'doctor', files: [cacheFile()], ignored: [], cacheError: null, recommendations: RECOMMENDATIONS },
        VERIFIED,
      ]);
      restore();
      applyProfile('apple7');
      expect([applyProfile('auto').auto?.from, status().profile]).toEqual(['cache', VERIFIED]);
    });
  });

  describeSim('profileForExec: --profile, else METAL_CAP_SHIM_PROFILE, else the default', () => {
    beforeAll(requireSimBuild);
    beforeEach(() => {
      process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-exec-profile-'));
    });

    it('the flag wins over the environment', () => {
      expect(profileForExec('apple7', { METAL_CAP_SHIM_PROFILE: 'mask-apple5' })).toEqual({
        profile: profiles.apple7!.profile,
        auto: null,
      });
    });

    it('without the flag: the environment (trimmed); empty or unset: the default', () => {
      expect(profileForExec(undefined, { METAL_CAP_SHIM_PROFILE: ' mask-apple5 ' })).toEqual({
        profile: profiles['mask-apple5']!.profile,
        auto: null,
      });
      const fallback = { profile: profiles[DEFAULT_PROFILE]!.profile, auto: null };
      expect(profileForExec(undefined, { METAL_CAP_SHIM_PROFILE: '  ' })).toEqual(fallback);
      expect(profileForExec(undefined, {})).toEqual(fallback);
    });

    it('off in the environment (any case) is no profile: the program runs unpatched; as a flag it is no profile name', () => {
      expect(profileForExec(undefined, { METAL_CAP_SHIM_PROFILE: 'off' })).toEqual({ profile: null, auto: null });
      expect(profileForExec(undefined, { METAL_CAP_SHIM_PROFILE: ' OFF ' })).toEqual({ profile: null, auto: null });
      expect(thrown(() => profileForExec('off', {}))).toBeInstanceOf(InvalidProfileError);
      // --profile wins over the variable, off or not.
      expect(profileForExec(resolveProfile('apple7'), { METAL_CAP_SHIM_PROFILE: 'off' }).profile?.name).toBe('apple7');
    });

    it('auto, from the flag or the environment, is measured here (and says where it came from) and nothing is applied in this process', () => {
      const measured = profileForExec(' auto ', {});
      const files = readdirSync(doctorCacheDir()).map((f) => path.join(doctorCacheDir(), f));
      expect(files).toHaveLength(1);
      const source = { files, ignored: [], cacheError: null, recommendations: expect.any(Array) };
      expect(measured).toEqual({ profile: VERIFIED, auto: { from: 'doctor', ...source } });
      expect(profileForExec(undefined, { METAL_CAP_SHIM_PROFILE: 'auto' })).toEqual({
        profile: VERIFIED,
        auto: { from: 'cache', ...source },
      });
      expect(status().active).toBe(false);
    });
  });
});

// Profile auto's `timeoutMs` reaches the probes it runs, in this process: the guest's device here never finishes a
// bfloat dispatch (everything else works), so bfloat times out after the deadline given, and the advice quotes it.
// Without the deadline the bfloat run would wait the default 5 s (the hung GPU then takes no more work: the probes after
// it, and the patched run's, are skipped).
describeSim('a guest whose bfloat dispatch never completes', () => {
  useSimulation(() => snapshotFile);

  const temp = mkdtempSync(path.join(tmpdir(), 'mcs-auto-deadline-'));
  const snapshot = JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
  snapshot.id = 'bfloat-hangs';
  snapshot.devices[0].doctor = {
    provenance: 'assumed',
    probes: Object.fromEntries(
      DOCTOR_PROBE_IDS.map((id) => [
        id,
        id === 'bfloat'
          ? { status: 'timeout', detail: 'the bfloat dispatch never completes' }
          : { status: 'not-recorded' },
      ]),
    ),
  };
  const snapshotFile = path.join(temp, 'bfloat-hangs.json');
  writeFileSync(snapshotFile, JSON.stringify(snapshot));

  const BF16 = {
    engine: 'llama.cpp',
    setting: 'GGML_METAL_BF16_DISABLE=1',
    why: 'bfloat timeout: stock: timeout (the bfloat dispatch did not complete within 150 ms); under host-family: skipped (not run: the GPU was left unusable by bfloat (timeout in the stock run)). ggml-metal turns bfloat on for Apple6 or Metal3 devices; this variable keeps BF16 kernels off (node-llama-cpp reads it too)',
  };

  describeSim('auto’s deadline', () => {
    beforeAll(requireSimBuild);
    beforeEach(() => {
      process.env.XDG_CACHE_HOME = mkdtempSync(path.join(temp, 'cache-'));
    });
    afterEach(() => {
      restore();
    });

    it('applyProfile(auto, { timeoutMs })', () => {
      const r = applyProfile('auto', { timeoutMs: 150 });
      expect([r.applied, r.auto!.from, r.auto!.recommendations]).toEqual([true, 'doctor', [BF16]]);
    });

    it('resolveAutoProfile({ timeoutMs })', () => {
      const r = resolveAutoProfile({ timeoutMs: 150 });
      expect([r.auto.from, r.auto.recommendations]).toEqual(['doctor', [BF16]]);
    });
  });
});
