// doctor and profile auto where there is no Metal at all: Linux without the simulated build selected (the same
// paths a non-Mac install takes). Nothing throws for the platform; doctor says why, auto claims nothing. Option
// checks still run first. The package-level version of this (dist/ without the native build) is in
// test/doctor/options.test.ts.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { doctor } from '../../lib/doctor/index.js';
import { applyProfile, profileForExec, resolveAutoProfile } from '../../lib/select/auto.js';
import { DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import { type InvalidOptionsError, UnsupportedPlatformError } from '../../lib/core/errors.js';
import { packageVersion } from '../../lib/device/native.js';
import { profiles, resolveProfile } from '../../lib/patch/profiles.js';
import { isSimulatedPlatform, thrown } from '../support/helpers.js';

delete process.env.METAL_CAP_SHIM_SIM_SNAPSHOT;
const dir = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-no-metal-'));
process.env.XDG_CACHE_HOME = dir;
const model = path.join(dir, 'model.gguf');
writeFileSync(model, Buffer.alloc(4096, 1));

const DETAIL = 'Metal exists only on macOS; this is linux';
const NOTHING = { ...resolveProfile({}), name: null };

describe.skipIf(!isSimulatedPlatform)('without Metal', () => {
  it('doctor() reports supported: false with the reason, and what it was asked', async () => {
    const r = await doctor();
    expect(r).toEqual({
      schema: 'metal-cap-shim/doctor@1',
      packageVersion: packageVersion(),
      generatedAt: r.generatedAt,
      supported: false,
      reason: 'unsupported-platform',
      detail: DETAIL,
      source: 'none',
      snapshot: null,
      host: null,
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
    expect(Date.parse(r.generatedAt)).not.toBeNaN();
  });

  it('settings: the mmap file or size only when nocopy-mmap was asked for', async () => {
    expect((await doctor({ probes: ['bfloat'], mmapSize: 1 << 20, device: 3, timeoutMs: 100 })).settings).toEqual({
      probes: ['bfloat'],
      timeoutMs: 100,
      mmapFile: null,
      mmapSize: null,
      device: 3,
      allowAboveHardware: false,
    });
    expect((await doctor({ probes: ['bfloat'], allowAboveHardware: true })).settings).toMatchObject({
      allowAboveHardware: true,
    });
    expect((await doctor({ probes: ['nocopy-mmap'], mmapSize: 1 << 20 })).settings).toMatchObject({
      mmapFile: null,
      mmapSize: 1 << 20,
    });
    expect((await doctor({ probes: ['nocopy-mmap', 'bfloat'], mmapFile: model })).settings).toMatchObject({
      mmapFile: model,
      mmapSize: null,
    });
    expect((await doctor({ probes: ['bfloat'], mmapFile: model })).settings).toMatchObject({
      mmapFile: null,
      mmapSize: null,
    });
  });

  it('bad options are still typed errors', async () => {
    await expect(doctor({ timeoutMs: 99 })).rejects.toMatchObject({ option: 'timeoutMs' });
    expect((thrown(() => applyProfile('auto', { timeoutMs: 600_001 })) as InvalidOptionsError).option).toBe(
      'timeoutMs',
    );
  });

  it('applyProfile(auto) applies nothing, like any profile here; strict throws', () => {
    const r = applyProfile('auto');
    expect(r).toEqual({
      applied: false,
      reason: 'unsupported-platform',
      detail: DETAIL,
      profile: NOTHING,
      patchedClasses: [],
      changed: [],
      before: null,
      after: null,
      verification: null,
      warnings: [],
    });
    const err = thrown(() => applyProfile('auto', { strict: true }));
    expect(err).toBeInstanceOf(UnsupportedPlatformError);
  });

  it('resolveAutoProfile throws, saying there is nothing to measure', () => {
    const err = thrown(() => resolveAutoProfile());
    expect(err).toBeInstanceOf(UnsupportedPlatformError);
    expect((err as Error).message).toBe(`profile auto needs Metal to measure: ${DETAIL}`);
  });

  it('exec’s auto claims nothing here; named profiles resolve as anywhere', () => {
    expect(profileForExec('auto', {})).toEqual({ profile: NOTHING, auto: null });
    expect(profileForExec(undefined, { METAL_CAP_SHIM_PROFILE: 'auto' })).toEqual({ profile: NOTHING, auto: null });
    expect(profileForExec('apple7', {})).toEqual({ profile: profiles.apple7!.profile, auto: null });
  });
});
