// Profile auto's `timeoutMs` reaches the probes it runs, in this process: the guest's device here never finishes a
// bfloat dispatch (everything else works), so bfloat times out after the deadline given, and the advice quotes it.
// Without the deadline the bfloat run would wait the default 5 s (the hung GPU then takes no more work: the probes after
// it, and the patched run's, are skipped).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { restore } from '../../lib/patch/apply.js';
import { applyProfile, resolveAutoProfile } from '../../lib/select/auto.js';
import { DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import { describeSim, requireSimBuild, root } from '../support/helpers.js';

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
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = path.join(temp, 'bfloat-hangs.json');
writeFileSync(process.env.METAL_CAP_SHIM_SIM_SNAPSHOT, JSON.stringify(snapshot));

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
