// The host profile where the host's chip is unknown: the stock Tahoe guest with no brand string recorded. Resolving
// it is a result (`host-unknown`), never a guess: applyProfile, strict, register and a custom 'host' value alike.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { editedSnapshot } from '../support/apply-helpers.js';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = editedSnapshot(
  'vz-guest-m1-ultra-tahoe-stock',
  'guest-of-an-unknown-host',
  (s) => {
    s.host.cpuBrand = null;
    s.host.chip = null;
    s.host.provenance.cpuBrand = 'unrecorded';
    s.host.provenance.chip = 'unrecorded';
  },
);

const { restore, status } = await import('../../lib/patch/apply.js');
const { applyProfile } = await import('../../lib/select/auto.js');
const { RefusedError } = await import('../../lib/core/errors.js');
const { resolveProfile } = await import('../../lib/patch/profiles.js');
const { registerFromEnvironment } = await import('../../lib/select/registration.js');
const { describeSim, requireSimBuild, runCli, thrown } = await import('../support/helpers.js');

const DETAIL =
  'host claims the host chip’s own answers, but this host’s chip is unknown (it reports no machdep.cpu.brand_string), so nothing is claimed rather than a guess';

describeSim('the host profile where the chip is unknown', () => {
  beforeAll(requireSimBuild);
  afterEach(() => {
    restore();
  });

  it('applyProfile: not applied, reason host-unknown, nothing installed', () => {
    expect(applyProfile('host')).toEqual({
      applied: false,
      reason: 'host-unknown',
      detail: DETAIL,
      profile: resolveProfile('host'),
      patchedClasses: [],
      before: null,
      after: null,
      changed: [],
      warnings: [],
      verification: null,
    });
    expect(status()).toMatchObject({ active: false, hooks: [] });
  });

  it('strict: RefusedError ERR_HOST_UNKNOWN', () => {
    expect(thrown(() => applyProfile('host', { strict: true }))).toEqual(new RefusedError(DETAIL, 'ERR_HOST_UNKNOWN'));
    expect(status().active).toBe(false);
  });

  it('a custom profile with one "host" value is refused the same way; one without applies', () => {
    const custom = applyProfile({ appleFamilyMax: 1007, deviceName: 'host' });
    expect([custom.applied, custom.reason, custom.detail]).toEqual([
      false,
      'host-unknown',
      DETAIL.replace('host claims', 'the profile claims'),
    ]);
    expect(applyProfile({ appleFamilyMax: 1007, deviceName: 'Apple M1' }).applied).toBe(true);
  });

  it('exec: refused with exit 125 (a failure of exec itself) before the program starts; --allow-unpatched runs it', () => {
    const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: process.env.METAL_CAP_SHIM_SIM_SNAPSHOT };
    const refused = runCli(['exec', '--profile', 'host', '--', process.execPath, '-e', 'console.log("ran")'], env);
    expect([refused.status, refused.stdout, refused.stderr]).toEqual([
      125,
      '',
      `metal-cap-shim: ERR_HOST_UNKNOWN: ${DETAIL} (--allow-unpatched runs the program unpatched)\n`,
    ]);
    const unpatched = runCli(
      ['exec', '--allow-unpatched', '--profile', 'host', '--', process.execPath, '-e', 'console.log("ran")'],
      env,
    );
    expect([unpatched.status, unpatched.stdout]).toEqual([0, 'ran\n']);
  });

  it('the default (host-family) falls back to apple7 and says so once: applyProfile, exec and audit alike', () => {
    const FALLBACK =
      'host-family claims the host chip’s own family, but this host’s chip is unknown (it reports no machdep.cpu.brand_string): profile apple7 is used instead (name a profile to choose another)';
    const r = applyProfile();
    expect([r.applied, r.profile, r.warnings]).toEqual([
      true,
      resolveProfile('apple7'),
      [{ code: 'host-unknown-fallback', message: FALLBACK }],
    ]);
    restore();
    const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: process.env.METAL_CAP_SHIM_SIM_SNAPSHOT };
    const ran = runCli(['exec', '--', process.execPath, '-e', 'console.log("ran")'], env);
    expect([ran.status, ran.stdout, ran.stderr]).toEqual([0, 'ran\n', `metal-cap-shim: warning: ${FALLBACK}\n`]);
    const quiet = runCli(['exec', '-q', '--', process.execPath, '-e', 'console.log("ran")'], env);
    expect([quiet.status, quiet.stdout, quiet.stderr]).toEqual([0, 'ran\n', `metal-cap-shim: warning: ${FALLBACK}\n`]);
    const audit = JSON.parse(
      runCli(['audit', '--json', '--snapshot', process.env.METAL_CAP_SHIM_SIM_SNAPSHOT!], env).stdout,
    );
    expect([audit.profile, audit.warnings[0]]).toEqual([
      resolveProfile('apple7'),
      { code: 'host-unknown-fallback', message: FALLBACK },
    ]);
  });

  it('doctor names the profile it ran under, the fallback, and says why: live and replayed alike', () => {
    const FALLBACK =
      'host-family claims the host chip’s own family, but this host’s chip is unknown (it reports no machdep.cpu.brand_string): profile apple7 is used instead (name a profile to choose another)';
    const file = process.env.METAL_CAP_SHIM_SIM_SNAPSHOT!;
    const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: file, XDG_CACHE_HOME: mkdtempSync(path.join(tmpdir(), 'mcs-cache-')) };
    const live = runCli(['doctor', '--json', '--mmap-size', '1M'], env);
    const replayed = runCli(['doctor', '--json', '--snapshot', file], env);
    // Exit 1 for both: the stock guest's recorded residency-set failure is a fault found.
    for (const r of [live, replayed]) {
      const report = JSON.parse(r.stdout);
      expect([r.status, report.candidateProfile, report.candidateWarnings]).toEqual([
        1,
        resolveProfile('apple7'),
        [{ code: 'host-unknown-fallback', message: FALLBACK }],
      ]);
    }
    const text = runCli(['doctor', '--mmap-size', '1M'], env).stdout.split('\n');
    expect(text.filter((l) => l.startsWith('Patched runs') || l.includes('[host-unknown-fallback]'))).toEqual([
      'Patched runs: under apple7, then restored',
      `  ! ${FALLBACK} [host-unknown-fallback]`,
    ]);
  });

  it('register: not applied, and why', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'host' })).toEqual({
      action: 'not-applied',
      why: `host-unknown: ${DETAIL}`,
      auto: null,
    });
    expect(status().active).toBe(false);
  });
});
