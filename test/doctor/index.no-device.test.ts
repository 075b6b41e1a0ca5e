// doctor and profile auto where Metal lists no device: the simulated build with no snapshot (on a Mac, a headless
// session or a VM without a paravirtual GPU). doctor says why; auto claims nothing and says so when asked directly.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { doctor } from '../../lib/doctor/index.js';
import { applyProfile, profileForExec, resolveAutoProfile } from '../../lib/select/auto.js';
import { UnsupportedPlatformError } from '../../lib/core/errors.js';
import { DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import { packageVersion } from '../../lib/device/native.js';
import { profiles, resolveProfile } from '../../lib/patch/profiles.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = '';
process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-no-device-'));

const DETAIL = 'the simulated Metal has no device: set METAL_CAP_SHIM_SIM_SNAPSHOT to a snapshot name (see snapshots/)';
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
      settings: { probes: [...DOCTOR_PROBE_IDS], timeoutMs: 5000, mmapFile: null, mmapSize: 1 << 30, device: null },
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
