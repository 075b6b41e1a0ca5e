// applyProfile on the two-GPU Intel MacBook Pro (bare metal, default device listed second): warnings follow the
// device they are about, the refusal names the host, and the default device, being listed, is verified once.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'macbookpro16-intel-amd-two-gpus';

import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { RefusedError } from '../../lib/core/errors.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';

const GiB = 1024 ** 3;
const INTEL = 'MTLIGAccelDevice';
const AMD = 'AMDRadeonX6000_AMDNavi14GraphicsDevice';
const VERIFIED = { ok: true, checked: 2 * (FAMILY_NAMES.length + 3), mismatches: [] };
const REFUSAL =
  'refusing to raise Metal answers: this host is not a virtual machine (hw.model MacBookPro16,1), so the GPU really is what it reports. The profile would raise device 0 (MTLIGAccelDevice): recommendedMaxWorkingSetSize 1610612736 → 4294967296. Pass { force: true } (CLI: --force) to do it anyway; a profile that only lowers answers (mask-apple5 on an Apple GPU) needs no force.';

const notParavirtual = (index: number, name: string, className: string) => ({
  code: 'not-paravirtual',
  message: `device ${index} (${name}, ${className}) is not the paravirtual device; raising its answers claims features its GPU may not have`,
});

describeSim('two GPUs on bare metal', () => {
  beforeAll(requireSimBuild);
  afterEach(() => {
    restore();
  });

  it('a raise of the Intel GPU alone warns about the Intel GPU alone', () => {
    const result = applyProfile({ recommendedMaxWorkingSetSize: 4 * GiB }, { force: true });
    expect(result).toMatchObject({
      applied: true,
      changed: [{ device: 0, className: INTEL, field: 'recommendedMaxWorkingSetSize', from: 1.5 * GiB, to: 4 * GiB }],
      warnings: [notParavirtual(0, 'Intel(R) UHD Graphics 630', INTEL)],
      verification: VERIFIED,
    });
  });

  it('a raise of both warns about both, in device order', () => {
    const result = applyProfile({ recommendedMaxWorkingSetSize: 12 * GiB }, { force: true });
    expect(result.warnings).toEqual([
      notParavirtual(0, 'Intel(R) UHD Graphics 630', INTEL),
      notParavirtual(1, 'AMD Radeon Pro 5500M', AMD),
    ]);
    expect(result.verification).toEqual(VERIFIED);
  });

  it('without force a raise is refused, naming the host; with strict it throws RefusedError', () => {
    expect(applyProfile({ recommendedMaxWorkingSetSize: 4 * GiB })).toEqual({
      applied: false,
      reason: 'refused-bare-metal',
      detail: REFUSAL,
      profile: resolveProfile({ recommendedMaxWorkingSetSize: 4 * GiB }),
      patchedClasses: [],
      before: null,
      after: null,
      changed: [],
      warnings: [],
      verification: null,
    });
    let thrown: unknown;
    try {
      applyProfile('apple7', { strict: true });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(RefusedError);
    const apple7 = 'apple1, apple2, apple3, apple4, apple5, apple6, apple7';
    expect(thrown).toMatchObject({
      code: 'ERR_REFUSED_BARE_METAL',
      message: REFUSAL.replace(
        'device 0 (MTLIGAccelDevice): recommendedMaxWorkingSetSize 1610612736 → 4294967296',
        `device 0 (${INTEL}): ${apple7}; device 1 (${AMD}): ${apple7}`,
      ),
    });
  });

  it('a mask needs no force and warns about nothing', () => {
    expect(applyProfile({ families: { metal3: false } })).toMatchObject({
      applied: true,
      changed: [
        { device: 0, className: INTEL, field: 'families.metal3', from: true, to: false },
        { device: 1, className: AMD, field: 'families.metal3', from: true, to: false },
      ],
      warnings: [],
      verification: VERIFIED,
    });
  });
});
