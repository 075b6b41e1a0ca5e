// recordSnapshot's failures: the same error for the same reason as applyProfile(…, { strict: true }). This process
// selects no simulated Metal (any non-Mac install); the no-device case runs in a child over the empty snapshot.
delete process.env.METAL_CAP_SHIM_SIM_SNAPSHOT;

import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { notAppliedError } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { NativeError, RefusedError, UnsupportedPlatformError } from '../../lib/core/errors.js';
import { recordSnapshot } from '../../lib/audit/record-snapshot.js';
import { describeSim, dist, requireSimBuild, runNode, thrown } from '../support/helpers.js';

describe('the error for each reason a profile was not applied', () => {
  it.each([
    ['unsupported-platform', UnsupportedPlatformError, 'ERR_UNSUPPORTED_PLATFORM'],
    ['native-module-unavailable', NativeError, 'ERR_NATIVE_UNAVAILABLE'],
    ['no-device', NativeError, 'ERR_NO_DEVICE'],
    ['hook-failed', NativeError, 'ERR_HOOK_FAILED'],
    ['verification-failed', NativeError, 'ERR_VERIFICATION_FAILED'],
    ['refused-bare-metal', RefusedError, 'ERR_REFUSED_BARE_METAL'],
  ] as const)('%s: %o with %s and the detail as its message', (reason, type, code) => {
    const e = notAppliedError(reason, `the detail of ${reason}`);
    expect(e).toBeInstanceOf(type);
    expect({ name: e.name, code: e.code, message: e.message }).toEqual({
      name: type.name,
      code,
      message: `the detail of ${reason}`,
    });
  });

  it('is what applyProfile(…, { strict: true }) throws here (no Metal)', () => {
    const result = applyProfile('cua-release');
    expect(result).toMatchObject({ applied: false, reason: 'unsupported-platform' });
    expect(thrown(() => applyProfile('cua-release', { strict: true }))).toEqual(
      notAppliedError('unsupported-platform', result.detail!),
    );
  });
});

describe('recordSnapshot where it cannot record', () => {
  it('no Metal (not macOS): UnsupportedPlatformError, as strict apply', async () => {
    const e = await recordSnapshot().then(
      () => new Error('expected a rejection, recordSnapshot() resolved'),
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(UnsupportedPlatformError);
    expect(e).toMatchObject({
      code: 'ERR_UNSUPPORTED_PLATFORM',
      message: `Metal exists only on macOS; this is ${process.platform}: there is no Metal device here to record`,
    });
  });
});

describeSim('recordSnapshot over a simulated Metal with no device', () => {
  it('NativeError ERR_NO_DEVICE, as strict apply (it was ERR_UNSUPPORTED_PLATFORM)', () => {
    requireSimBuild();
    const r = runNode(
      `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
       const out = async (f) => { try { await f(); return null; } catch (e) { return { name: e.name, code: e.code, message: e.message }; } };
       console.log(JSON.stringify([await out(() => m.recordSnapshot()), await out(() => m.applyProfile('cua-release', { strict: true }))]));`,
      { METAL_CAP_SHIM_SIM_SNAPSHOT: '' },
    );
    expect(r.stderr).toBe('');
    const [recorded, applied] = JSON.parse(r.stdout) as { name: string; code: string; message: string }[];
    expect(recorded).toEqual({
      name: 'NativeError',
      code: 'ERR_NO_DEVICE',
      message: `${applied!.message}: nothing to record`,
    });
    expect(applied).toMatchObject({ name: 'NativeError', code: 'ERR_NO_DEVICE' });
  });
});
