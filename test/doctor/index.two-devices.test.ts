// doctor and profile auto over a guest with two devices that answer differently (a snapshot written here: the
// Tahoe guest's paravirtual device, whose residency sets fail, and a second device that answers Metal3, computes
// bfloat wrong and runs 48 KiB of threadgroup memory). In this process: the report keeps the devices apart, and auto
// takes the least of both verified profiles and uses the cache only when both are cached.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { restore } from '../../lib/patch/apply.js';
import { doctor } from '../../lib/doctor/index.js';
import { applyProfile } from '../../lib/select/auto.js';
import { cacheKeyFor, readCache } from '../../lib/doctor/cache.js';
import { DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import { stockDevices } from '../support/doctor-helpers.js';
import { describeSim, requireSimBuild, root } from '../support/helpers.js';

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
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = path.join(temp, 'two-devices.json');
writeFileSync(process.env.METAL_CAP_SHIM_SIM_SNAPSHOT, JSON.stringify(snapshot));

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
