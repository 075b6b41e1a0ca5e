// The doctor cache that profile auto reads: where it lives, what makes a file usable, and writes that are atomic.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  cachedResultOf,
  cacheFileFor,
  cacheKeyFor,
  doctorCacheDir,
  readCache,
  writeCache,
  type DoctorCacheKey,
} from '../../lib/doctor/cache.js';
import { assessDevice } from '../../lib/doctor/derive.js';
import { judgeProbe } from '../../lib/doctor/judge.js';
import { DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import { packageVersion } from '../../lib/device/native.js';
import type { Profile } from '../../lib/patch/profiles.js';

const report = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock'), { allDevices: true });
const device = report.devices[0]!;
const unknownChip = { ...report, host: { ...report.host, cpuBrand: null, chip: null } };
const assessed = assessDevice(
  device,
  null,
  DOCTOR_PROBE_IDS.map((id) =>
    judgeProbe(id, {
      status: id === 'residency-set' ? 'fail' : 'pass',
      detail: 'd',
      ms: 1,
      compileMs: 0,
      provenThreadgroupMemory: id === 'threadgroup-memory' ? 32768 : null,
      acceptedThreadgroupMemory: null,
      failedThreadgroupMemory: null,
      bufferLength: null,
      maxAbsError: null,
    }),
  ),
  // Without the host's chip the name is left alone, so the verified profile is the built-in apple7.
  unknownChip.host,
);
// The key of the same host: a doctor run keys its result by the host it derived it on (the cache derives again with
// the key's chip).
const key = cacheKeyFor(unknownChip, device);
const AT = '2026-08-09T10:00:00.000Z';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-cache-'));
});

describe('where the cache lives', () => {
  it('macOS: ~/Library/Caches/metal-cap-shim, whatever XDG says', () => {
    expect(doctorCacheDir({ XDG_CACHE_HOME: '/x' }, 'darwin')).toBe(
      path.join(homedir(), 'Library', 'Caches', 'metal-cap-shim'),
    );
  });
  it('elsewhere: $XDG_CACHE_HOME when absolute, else ~/.cache', () => {
    expect(doctorCacheDir({ XDG_CACHE_HOME: '/var/cache/me' }, 'linux')).toBe('/var/cache/me/metal-cap-shim');
    expect(doctorCacheDir({ XDG_CACHE_HOME: 'relative/dir' }, 'linux')).toBe(
      path.join(homedir(), '.cache', 'metal-cap-shim'),
    );
    expect(doctorCacheDir({}, 'linux')).toBe(path.join(homedir(), '.cache', 'metal-cap-shim'));
  });
});

describe('the key: package version, host, OS build, device', () => {
  it('is built from the probe report', () => {
    expect(cacheKeyFor(report, device)).toEqual({
      packageVersion: packageVersion(),
      source: 'snapshot',
      snapshot: 'vz-guest-m1-ultra-tahoe-stock',
      host: { model: 'VirtualMac2,1', osVersion: '26.5.2', osBuild: null, arch: 'arm64', chip: 'Apple M1 Ultra' },
      device: { index: 0, name: 'Apple Paravirtual device', className: 'AppleParavirtDevice' },
    });
  });
  it('names one file per key, however the key’s fields are ordered', () => {
    const reordered = JSON.parse(
      JSON.stringify({
        device: key.device,
        host: key.host,
        snapshot: key.snapshot,
        source: key.source,
        packageVersion: key.packageVersion,
      }),
    ) as DoctorCacheKey;
    expect(cacheFileFor(reordered, dir)).toBe(cacheFileFor(key, dir));
    expect(path.basename(cacheFileFor(key, dir))).toMatch(/^doctor-[0-9a-f]{16}\.json$/);
    for (const other of [
      { ...key, packageVersion: '9.9.9' },
      { ...key, host: { ...key.host, osBuild: '25F71' } },
      { ...key, device: { ...key.device, index: 1 } },
      { ...key, snapshot: null, source: 'live' },
    ]) {
      expect(cacheFileFor(other, dir)).not.toBe(cacheFileFor(key, dir));
    }
  });
});

describe('reading and writing', () => {
  it('a missing file is a plain miss', () => {
    expect(readCache(key, device, dir)).toEqual({ entry: null, file: cacheFileFor(key, dir), ignored: null });
  });

  it('keeps the decisions, each probe’s status and the proven threadgroup size (what the decisions are derived from)', () => {
    expect(cachedResultOf(assessed)).toEqual({
      probes: DOCTOR_PROBE_IDS.map((id) =>
        id === 'threadgroup-memory'
          ? { id, status: 'pass', provenThreadgroupMemory: 32768 }
          : { id, status: id === 'residency-set' ? 'fail' : 'pass' },
      ),
      verifiedProfile: assessed.verifiedProfile,
      verifiedProfileReasons: assessed.verifiedProfileReasons,
      recommendations: assessed.recommendations,
      faults: ['residency-set: fail'],
    });
    expect(assessed.verifiedProfile.name).toBe('apple7');
  });

  it('a threadgroup-memory probe that proved no size is kept without one', () => {
    const failed = assessDevice(
      device,
      null,
      DOCTOR_PROBE_IDS.map((id) =>
        judgeProbe(id, {
          status: id === 'threadgroup-memory' ? 'fail' : 'pass',
          detail: 'd',
          ms: 1,
          compileMs: null,
          provenThreadgroupMemory: null,
          acceptedThreadgroupMemory: null,
          failedThreadgroupMemory: null,
          bufferLength: null,
          maxAbsError: null,
        }),
      ),
      unknownChip.host,
    );
    expect(cachedResultOf(failed).probes).toEqual(
      DOCTOR_PROBE_IDS.map((id) => ({ id, status: id === 'threadgroup-memory' ? 'fail' : 'pass' })),
    );
    writeCache(key, failed, AT, dir);
    expect(readCache(key, device, dir).entry!.result.probes).toEqual(cachedResultOf(failed).probes);
  });

  it('what is written is read back whole, and no temporary file is left', () => {
    const file = writeCache(key, assessed, AT, dir);
    expect(file).toBe(cacheFileFor(key, dir));
    expect(readdirSync(dir)).toEqual([path.basename(file)]);
    expect(readCache(key, device, dir)).toEqual({
      entry: { schema: 'metal-cap-shim/doctor-cache@1', key, generatedAt: AT, result: cachedResultOf(assessed) },
      file,
      ignored: null,
    });
  });

  it('a newer result replaces the older one', () => {
    writeCache(key, assessed, AT, dir);
    const newer = { ...assessed, faults: [] };
    writeCache(key, newer, '2026-09-01T00:00:00.000Z', dir);
    expect(readCache(key, device, dir).entry).toEqual({
      schema: 'metal-cap-shim/doctor-cache@1',
      key,
      generatedAt: '2026-09-01T00:00:00.000Z',
      result: cachedResultOf(newer),
    });
  });

  it('creates the folder, and a failed write throws and leaves no temporary file behind', () => {
    const nested = path.join(dir, 'a', 'b');
    writeCache(key, assessed, AT, nested);
    expect(readdirSync(nested)).toHaveLength(1);
    // The target is a folder: the rename fails after the temporary file was written.
    const blocked = path.join(dir, 'blocked');
    mkdirSync(cacheFileFor(key, blocked), { recursive: true });
    expect(() => writeCache(key, assessed, AT, blocked)).toThrow();
    expect(readdirSync(blocked)).toEqual([path.basename(cacheFileFor(key, blocked))]);
  });
});

describe('unusable files are ignored, never trusted', () => {
  const entry = () =>
    JSON.parse(
      JSON.stringify({
        schema: 'metal-cap-shim/doctor-cache@1',
        key,
        generatedAt: AT,
        result: cachedResultOf(assessed),
      }),
    ) as Record<string, any>;
  const ignoredFor = (content: string) => {
    writeFileSync(cacheFileFor(key, dir), content);
    const r = readCache(key, device, dir);
    expect(r.entry).toBeNull();
    return r.ignored;
  };

  it.each([
    ['not JSON', '{"schema": "metal-cap-shim/doctor-cache@1", "key":', 'not JSON'],
    ['empty', '', 'not JSON'],
    ['an array', '[]', 'not a JSON object'],
    ['another format', JSON.stringify({ schema: 'someone-else@1' }), 'not a metal-cap-shim/doctor-cache@1 file'],
  ])('%s', (_, content, why) => {
    expect(ignoredFor(content)).toBe(why);
  });

  it('written for another version, host or device (a copied home folder, say)', () => {
    for (const change of [
      (e: Record<string, any>) => (e.key.packageVersion = '0.0.1'),
      (e: Record<string, any>) => (e.key.host.osBuild = '24A335'),
      (e: Record<string, any>) => (e.key.device.name = 'Apple M2'),
      (e: Record<string, any>) => delete e.key.snapshot,
    ]) {
      const e = entry();
      change(e);
      expect(ignoredFor(JSON.stringify(e))).toBe('written for another package version, host, OS build or device');
    }
  });

  it('damaged fields', () => {
    const cases: [(e: Record<string, any>) => void, string][] = [
      [(e) => (e.generatedAt = 'yesterday'), 'damaged: generatedAt'],
      [(e) => (e.result = null), 'damaged: result'],
      [(e) => (e.result.probes[0].status = 'great'), 'damaged: probes'],
      [(e) => (e.result.probes[0].id = 'quantum'), 'damaged: probes'],
      [(e) => (e.result.verifiedProfileReasons = 'x'), 'damaged: verifiedProfileReasons'],
      [(e) => (e.result.recommendations = [{ engine: 'llama.cpp' }]), 'damaged: recommendations'],
      [(e) => delete e.result.faults, 'damaged: faults'],
      [(e) => (e.result.verifiedProfile = 'cua-release'), 'damaged: verifiedProfile'],
    ];
    for (const [change, why] of cases) {
      const e = entry();
      change(e);
      expect(ignoredFor(JSON.stringify(e))).toBe(why);
    }
    const e = entry();
    e.result.verifiedProfile.appleFamilyMax = 2000;
    expect(ignoredFor(JSON.stringify(e))).toMatch(
      /^damaged: verifiedProfile \(appleFamilyMax must be an MTLGPUFamily value/,
    );
  });

  it('partial: a capability probe skipped or missing (nocopy-mmap may be skipped: auto never runs it)', () => {
    const cases: [(e: Record<string, any>) => void, string | null][] = [
      [
        (e) => (e.result.probes[3].status = 'skipped'),
        'partial: threadgroup-memory did not run, so it is measured again',
      ],
      [
        (e) => (e.result.probes = e.result.probes.map((p: { id: string }) => ({ ...p, status: 'skipped' }))),
        'partial: simdgroup-reduction, simdgroup-matrix, bfloat, threadgroup-memory, residency-set, heap did not run, so it is measured again',
      ],
      [(e) => e.result.probes.splice(0, 1), 'partial: simdgroup-reduction did not run, so it is measured again'],
      [(e) => (e.result.probes[4].status = 'skipped'), null],
      [(e) => e.result.probes.splice(4, 1), null],
      // Reduction no longer proven: the stored Apple7 no longer follows (bfloat alone proves Apple6).
      [(e) => (e.result.probes[0].status = 'not-recorded'), NOT_DERIVED(1006)],
    ];
    for (const [change, why] of cases) {
      const e = entry();
      change(e);
      writeFileSync(cacheFileFor(key, dir), JSON.stringify(e));
      const r = readCache(key, device, dir);
      expect([r.entry === null, r.ignored]).toEqual([why !== null, why]);
    }
  });

  it('a hand-edited verified profile is ignored, with the reason: only what the stored results prove is applied', () => {
    const e = entry();
    e.result.verifiedProfile.maxThreadgroupMemoryLength = 1 << 20;
    writeFileSync(cacheFileFor(key, dir), JSON.stringify(e));
    const stored = { ...assessed.verifiedProfile, maxThreadgroupMemoryLength: 1 << 20 };
    expect(readCache(key, device, dir)).toEqual({
      entry: null,
      file: cacheFileFor(key, dir),
      ignored: `the verified profile ${JSON.stringify(answers(stored))} does not follow from the probe results stored with it (they prove ${JSON.stringify(answers(assessed.verifiedProfile))}): edited or damaged`,
    });
  });

  it.each([
    ['a raised Apple family', (e: Record<string, any>) => (e.result.verifiedProfile.appleFamilyMax = 1010)],
    ['Metal3 claimed', (e: Record<string, any>) => (e.result.verifiedProfile.families = { metal3: true })],
    ['exact mode', (e: Record<string, any>) => (e.result.verifiedProfile.mode = 'exact')],
    ['a working set', (e: Record<string, any>) => (e.result.verifiedProfile.recommendedMaxWorkingSetSize = 2 ** 34)],
  ])('%s that the stored results do not prove: ignored', (_, change) => {
    const e = entry();
    change(e);
    writeFileSync(cacheFileFor(key, dir), JSON.stringify(e));
    expect(readCache(key, device, dir).ignored).toMatch(/does not follow from the probe results stored with it/);
  });

  /** The file of a run that proved 65536 bytes on this device (which reports 32768), its profile at `profileTg`. */
  function provenAbove(profileTg?: number): void {
    const e = entry();
    e.result.probes[3].provenThreadgroupMemory = 65536;
    if (profileTg !== undefined) {
      e.result.verifiedProfile.maxThreadgroupMemoryLength = profileTg;
      e.result.verifiedProfile.name = null;
    }
    writeFileSync(cacheFileFor(key, dir), JSON.stringify(e));
  }

  /** What readCache says of the file provenAbove(65536) writes: its profile claims more than any derivation does. */
  const RAISED_ABOVE_32768 = () => ({
    entry: null,
    file: cacheFileFor(key, dir),
    ignored: `the verified profile ${JSON.stringify(answers({ ...assessed.verifiedProfile, maxThreadgroupMemoryLength: 65536 }))} does not follow from the probe results stored with it (they prove ${JSON.stringify(answers(assessed.verifiedProfile))}): edited or damaged`,
  });

  it('a proven size above 32768 stored with a profile that raises to it (as force once derived) is not what it proves, read with force: ignored', () => {
    provenAbove(65536);
    expect(readCache(key, device, dir, true)).toEqual(RAISED_ABOVE_32768());
  });

  it('the same file read without force: ignored, saying so, and measured again', () => {
    provenAbove(65536);
    expect(readCache(key, device, dir)).toEqual(RAISED_ABOVE_32768());
  });

  it('a size above 32768 proven on a device that reports 32768: without force the profile stays at the report, used as it is', () => {
    provenAbove();
    expect(device.maxThreadgroupMemoryLength).toBe(32768);
    expect(readCache(key, device, dir).entry!.result.verifiedProfile).toEqual(assessed.verifiedProfile);
  });

  it('the same file read with force: force claims no more than 32768 either, so the profile is used as it is', () => {
    provenAbove();
    expect(readCache(key, device, dir, true).entry!.result.verifiedProfile).toEqual(assessed.verifiedProfile);
  });

  it('a stored name that does not match is not trusted either: the profile is the derived one', () => {
    const e = entry();
    e.result.verifiedProfile.name = 'cua-release';
    writeFileSync(cacheFileFor(key, dir), JSON.stringify(e));
    expect(readCache(key, device, dir).entry!.result.verifiedProfile).toEqual(assessed.verifiedProfile);
  });

  it.each([
    [
      'a proven size on another probe',
      (e: Record<string, any>) => (e.result.probes[0].provenThreadgroupMemory = 32768),
    ],
    [
      'a proven size that is not a positive integer',
      (e: Record<string, any>) => (e.result.probes[3].provenThreadgroupMemory = -1),
    ],
    ['a proven size given as text', (e: Record<string, any>) => (e.result.probes[3].provenThreadgroupMemory = '32768')],
    ['a field a probe does not have', (e: Record<string, any>) => (e.result.probes[1].detail = 'x')],
    [
      'a field threadgroup-memory does not have, beside its proven size',
      (e: Record<string, any>) => (e.result.probes[3].detail = 'x'),
    ],
    ['a proven size of 0', (e: Record<string, any>) => (e.result.probes[3].provenThreadgroupMemory = 0)],
  ])('%s: damaged', (_, change) => {
    const e = entry();
    change(e);
    writeFileSync(cacheFileFor(key, dir), JSON.stringify(e));
    expect(readCache(key, device, dir).ignored).toBe('damaged: probes');
  });
});

/** A profile's answers, its name aside. */
function answers(p: Profile): Omit<Profile, 'name'> {
  const { name: _name, ...rest } = p;
  return rest;
}

function NOT_DERIVED(family: number): string {
  const stored = answers(assessed.verifiedProfile);
  return `the verified profile ${JSON.stringify(stored)} does not follow from the probe results stored with it (they prove ${JSON.stringify({ ...stored, appleFamilyMax: family })}): edited or damaged`;
}

describe('a cache someone else could have planted or changed is ignored, with the reason', () => {
  const NOBODY = 65534;
  const asRoot = process.getuid?.() === 0;
  const planted = () => {
    const file = writeCache(key, assessed, AT, dir);
    return { file, content: readFileSync(file, 'utf8') };
  };

  it('a folder others may write (created first by an attacker): ignored, and nothing is written into it', () => {
    const { file } = planted();
    chmodSync(dir, 0o777);
    expect(readCache(key, device, dir)).toEqual({
      entry: null,
      file,
      ignored: `the cache folder ${dir} can be written by other users (mode 0777)`,
    });
    expect(() => writeCache(key, assessed, AT, dir)).toThrow(
      `the cache folder ${dir} can be written by other users (mode 0777), so nothing is written there`,
    );
    chmodSync(dir, 0o770);
    expect(readCache(key, device, dir).ignored).toBe(`the cache folder ${dir} can be written by its group (mode 0770)`);
  });

  it.skipIf(!asRoot)('a folder or a file of another user: ignored', () => {
    const { file } = planted();
    chownSync(file, NOBODY, NOBODY);
    expect(readCache(key, device, dir).ignored).toBe(`the cache file belongs to another user (uid ${NOBODY}, not 0)`);
    chownSync(file, 0, 0);
    chownSync(dir, NOBODY, NOBODY);
    expect(readCache(key, device, dir).ignored).toBe(
      `the cache folder ${dir} belongs to another user (uid ${NOBODY}, not 0)`,
    );
    chownSync(dir, 0, 0);
    expect(readCache(key, device, dir).entry).not.toBeNull();
  });

  it('a file others may write: ignored', () => {
    const { file } = planted();
    chmodSync(file, 0o666);
    expect(readCache(key, device, dir).ignored).toBe('the cache file can be written by other users (mode 0666)');
  });

  it('a symbolic link in place of the file, or of the folder: not followed', () => {
    const { file, content } = planted();
    const elsewhere = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-doctor-cache-elsewhere-')), 'real.json');
    writeFileSync(elsewhere, content);
    rmSync(file);
    symlinkSync(elsewhere, file);
    expect(readCache(key, device, dir).ignored).toBe('the cache file is a symbolic link');
    const linked = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-doctor-cache-link-')), 'metal-cap-shim');
    symlinkSync(path.dirname(elsewhere), linked);
    writeFileSync(cacheFileFor(key, path.dirname(elsewhere)), content);
    expect(readCache(key, device, linked).ignored).toBe(`the cache folder ${linked} is a symbolic link`);
  });

  it('a FIFO in place of the file: ignored at once, no hang', () => {
    execFileSync('mkfifo', [cacheFileFor(key, dir)]);
    expect(readCache(key, device, dir).ignored).toBe('the cache file is not a regular file');
  });

  it('a file larger than any result (1 MiB): ignored unread', () => {
    writeFileSync(cacheFileFor(key, dir), ' '.repeat((1 << 20) + 1));
    expect(readCache(key, device, dir).ignored).toBe('the cache file is larger than 1048576 bytes');
  });

  it('the folder and the file are created private: 0700 and 0600', () => {
    const nested = path.join(dir, 'x', 'metal-cap-shim');
    const file = writeCache(key, assessed, AT, nested);
    expect([
      statSync(path.dirname(nested)).mode & 0o777,
      statSync(nested).mode & 0o777,
      statSync(file).mode & 0o777,
    ]).toEqual([0o700, 0o700, 0o600]);
  });
});

describe('the key, field by field', () => {
  it('is read from the report when it is asked for: host facts, OS build, device position, name and class', () => {
    const two = reportFromSnapshot(loadSnapshot('macbookpro16-intel-amd-two-gpus'), { allDevices: true });
    const withBuild = { ...two, host: { ...two.host!, osBuild: '22G830' } };
    expect(cacheKeyFor(withBuild, two.devices[1]!)).toEqual({
      packageVersion: packageVersion(),
      source: 'snapshot',
      snapshot: 'macbookpro16-intel-amd-two-gpus',
      host: { model: 'MacBookPro16,1', osVersion: '13.6.9', osBuild: '22G830', arch: 'x86_64', chip: null },
      device: { index: 1, name: 'AMD Radeon Pro 5500M', className: 'AMDRadeonX6000_AMDNavi14GraphicsDevice' },
    });
  });

  // Each field on its own: another file name, and a file written under it is not used for this key.
  const variants: [string, (k: DoctorCacheKey) => DoctorCacheKey][] = [
    ['package version', (k) => ({ ...k, packageVersion: '0.2.0' })],
    ['source', (k) => ({ ...k, source: 'live' })],
    ['snapshot', (k) => ({ ...k, snapshot: null })],
    ['host model', (k) => ({ ...k, host: { ...k.host, model: 'Mac14,2' } })],
    ['macOS version', (k) => ({ ...k, host: { ...k.host, osVersion: '26.6.1' } })],
    ['OS build', (k) => ({ ...k, host: { ...k.host, osBuild: '25G5' } })],
    ['architecture', (k) => ({ ...k, host: { ...k.host, arch: 'x86_64' } })],
    // A guest image moved to another host keeps its model and OS build: the host's chip tells them apart.
    ['host chip', (k) => ({ ...k, host: { ...k.host, chip: 'Apple M4 Max' } })],
    ['device index', (k) => ({ ...k, device: { ...k.device, index: 1 } })],
    ['device name', (k) => ({ ...k, device: { ...k.device, name: 'Apple M1 Ultra' } })],
    ['device class', (k) => ({ ...k, device: { ...k.device, className: 'AGXG13DDevice' } })],
  ];
  it.each(variants)('%s', (_, change) => {
    const other = change(key);
    expect(cacheFileFor(other, dir)).not.toBe(cacheFileFor(key, dir));
    // A result derived on the other key's host (its chip caps the family and names the device).
    writeCache(
      other,
      other.host.chip === null
        ? assessed
        : assessDevice(device, null, assessed.probes, { ...unknownChip.host, chip: other.host.chip }),
      AT,
      dir,
    );
    // The other key's entry, copied to where this key's result lives.
    writeFileSync(cacheFileFor(key, dir), readFileSync(cacheFileFor(other, dir)));
    expect(readCache(key, device, dir)).toEqual({
      entry: null,
      file: cacheFileFor(key, dir),
      ignored: 'written for another package version, host, OS build or device',
    });
    expect(readCache(other, device, dir).entry!.key).toEqual(other);
  });

  it('a key that is missing, null, or has a field too many or too few is another key', () => {
    const stored = () =>
      JSON.parse(
        JSON.stringify({
          schema: 'metal-cap-shim/doctor-cache@1',
          key,
          generatedAt: AT,
          result: cachedResultOf(assessed),
        }),
      );
    const changes: ((e: Record<string, any>) => void)[] = [
      (e) => delete e.key,
      (e) => (e.key = null),
      (e) => (e.key = [key]),
      (e) => (e.key.extra = 1),
      (e) => (e.key.host = null),
      (e) => (e.key.host.memoryBytes = null),
      (e) => delete e.key.device.className,
    ];
    for (const change of changes) {
      const e = stored();
      change(e);
      writeFileSync(cacheFileFor(key, dir), JSON.stringify(e));
      expect(readCache(key, device, dir).ignored).toBe('written for another package version, host, OS build or device');
    }
  });

  it('the devices of one machine get files of their own, each named by 16 hex digits', () => {
    const names = new Set<string>();
    for (let index = 0; index < 64; index++) {
      const name = path.basename(cacheFileFor({ ...key, device: { ...key.device, index } }, dir));
      expect(name).toMatch(/^doctor-[0-9a-f]{16}\.json$/);
      names.add(name);
    }
    expect(names.size).toBe(64);
  });
});

describe('more damaged files', () => {
  const stored = () =>
    JSON.parse(
      JSON.stringify({
        schema: 'metal-cap-shim/doctor-cache@1',
        key,
        generatedAt: AT,
        result: cachedResultOf(assessed),
      }),
    ) as Record<string, any>;
  const ignoredFor = (change: (e: Record<string, any>) => void) => {
    const e = stored();
    change(e);
    writeFileSync(cacheFileFor(key, dir), JSON.stringify(e));
    return readCache(key, device, dir).ignored;
  };
  const rec = { engine: 'llama.cpp', setting: 'GGML_METAL_NO_RESIDENCY=1', why: 'w' };

  it.each([
    ['generatedAt a number', (e: Record<string, any>) => (e.generatedAt = 2026), 'damaged: generatedAt'],
    [
      'a status that is an array',
      (e: Record<string, any>) => (e.result.probes[0].status = ['pass']),
      'damaged: probes',
    ],
    ['a probe that is not an object', (e: Record<string, any>) => (e.result.probes[1] = 'bfloat'), 'damaged: probes'],
    ['probes not a list', (e: Record<string, any>) => (e.result.probes = {}), 'damaged: probes'],
    [
      'one reason not text',
      (e: Record<string, any>) => (e.result.verifiedProfileReasons = ['a', 2]),
      'damaged: verifiedProfileReasons',
    ],
    [
      'one recommendation of two damaged',
      (e: Record<string, any>) => (e.result.recommendations = [rec, { ...rec, why: 1 }]),
      'damaged: recommendations',
    ],
    [
      'a recommendation without an engine',
      (e: Record<string, any>) => (e.result.recommendations = [{ ...rec, engine: null }]),
      'damaged: recommendations',
    ],
    [
      'a recommendation without a setting',
      (e: Record<string, any>) => (e.result.recommendations = [{ ...rec, setting: 3 }]),
      'damaged: recommendations',
    ],
    [
      'a recommendation that is text',
      (e: Record<string, any>) => (e.result.recommendations = ['GGML_METAL_NO_RESIDENCY=1']),
      'damaged: recommendations',
    ],
    [
      'one fault not text',
      (e: Record<string, any>) => (e.result.faults = ['residency-set: fail', false]),
      'damaged: faults',
    ],
    [
      'a profile without its name field',
      (e: Record<string, any>) => delete e.result.verifiedProfile.name,
      'damaged: verifiedProfile',
    ],
  ])('%s', (_, change, why) => {
    expect(ignoredFor(change)).toBe(why);
  });

  it('what each field of a usable file may hold, up to its limits', () => {
    expect(ignoredFor((e) => (e.result.recommendations = [rec, rec]))).toBeNull();
    expect(ignoredFor((e) => (e.result.verifiedProfileReasons = []))).toBeNull();
    expect(ignoredFor((e) => (e.result.faults = ['a', 'b']))).toBeNull();
  });
});

describe('a folder that cannot be created', () => {
  // Node's recursive mkdirSync loops for ever on this path (ENOENT from mkdir under /proc).
  it.skipIf(process.platform !== 'linux')(
    'under /proc: the write throws within a second, as an unwritable folder does',
    () => {
      const started = Date.now();
      let err: NodeJS.ErrnoException | undefined;
      try {
        writeCache(key, assessed, AT, '/proc/nope/metal-cap-shim');
      } catch (e) {
        err = e as NodeJS.ErrnoException;
      }
      expect([err?.code, err?.syscall, err?.path]).toEqual(['ENOENT', 'mkdir', '/proc/nope']);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(readCache(key, device, '/proc/nope/metal-cap-shim')).toEqual({
        entry: null,
        file: cacheFileFor(key, '/proc/nope/metal-cap-shim'),
        ignored: null,
      });
    },
  );
});

describe('a write that fails', () => {
  // Linux: /proc exists and takes no new files, for root too.
  it.skipIf(process.platform !== 'linux')(
    'reports the write’s own error (here: no file can be created in /proc), not the clean-up’s',
    () => {
      let err: NodeJS.ErrnoException | undefined;
      try {
        // This process's own /proc folder: ours, writable by nobody else, and it takes no new file.
        writeCache(key, assessed, AT, `/proc/${process.pid}`);
      } catch (e) {
        err = e as NodeJS.ErrnoException;
      }
      expect([err?.code, err?.syscall]).toEqual(['ENOENT', 'open']);
    },
  );
});
