// doctor() and profile auto through the TypeScript API on real Metal (macOS only; skipped, visibly, elsewhere). The
// native probes themselves are tested in test/live/doctor-live.test.ts; this checks the orchestration around them on a
// real device: stock and patched runs, judging, the verified profile, restore, the cache in ~/Library/Caches and auto.
// Nothing here hard-codes a device's results: expectations come from the machine, and each run is logged for the CI
// record. Each case runs in its own Node process with HOME in a temporary folder, so the user's cache is untouched.
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOCTOR_PROBE_IDS, DOCTOR_STATUSES } from '../../lib/device/doctor-vocabulary.js';
import type { DoctorReport } from '../../lib/doctor/types.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { dist, jsonFrom, runNode } from '../support/helpers.js';

const isMac = process.platform === 'darwin';
const index = JSON.stringify(path.join(dist, 'index.js'));
const home = () => mkdtempSync(path.join(tmpdir(), 'mcs-doctor-home-'));

describe.skipIf(!isMac)('doctor() and profile auto on real Metal (macOS only)', () => {
  it('doctor(): every probe reaches an outcome, the verified profile resolves, nothing stays installed, the result is cached', () => {
    const h = home();
    const r = jsonFrom<{ report: DoctorReport; status: { active: boolean; hooks: unknown[] } }>(
      runNode(
        `const m = await import(${index});
         const report = await m.doctor({ mmapSize: 64 * 1024 * 1024, timeoutMs: 20000 });
         console.log(JSON.stringify({ report, status: m.status() }));`,
        { HOME: h },
      ),
    );
    console.log(
      JSON.stringify({
        patchedRun: r.report.patchedRun,
        devices: r.report.devices.map((d) => ({
          name: d.name,
          probes: d.probes.map((p) => `${p.id}: ${p.status}`),
          verified: d.verifiedProfile,
          faults: d.faults,
        })),
      }),
    );
    if (!r.report.supported) {
      expect(r.report.reason).toBe('no-device');
      return;
    }
    for (const d of r.report.devices) {
      expect(d.probes.map((p) => p.id)).toEqual([...DOCTOR_PROBE_IDS]);
      for (const p of d.probes) expect([...DOCTOR_STATUSES]).toContain(p.status);
      expect(resolveProfile(d.verifiedProfile)).toEqual(d.verifiedProfile);
    }
    expect(r.status).toMatchObject({ active: false, hooks: [] });
    expect(r.report.restore?.conflicts ?? []).toEqual([]);
    expect(readdirSync(path.join(h, 'Library', 'Caches', 'metal-cap-shim'))).toHaveLength(r.report.devices.length);
  });

  it("applyProfile('auto'): measured once, then read from the cache; applied and verified where it may raise", () => {
    const h = home();
    const code = `const m = await import(${index});
      let result = null, code = null;
      try { result = m.applyProfile('auto', { timeoutMs: 20000 }); } catch (e) { code = e.code; }
      const host = m.probe().host;
      console.log(JSON.stringify({ code, host, applied: result?.applied ?? null, reason: result?.reason ?? null,
        verification: result?.verification?.ok ?? null, profile: result?.profile ?? null, from: result?.auto?.from ?? null,
        active: m.status().active }));`;
    const first = jsonFrom<Record<string, any>>(runNode(code, { HOME: h }));
    console.log(JSON.stringify(first));
    if (first.reason === 'no-device') return;
    if (first.code !== null) {
      // Refused only where raising is refused: a host not known to be a VM.
      expect(first.code).toBe('ERR_REFUSED_BARE_METAL');
      expect(first.host.isVirtualMachine).not.toBe(true);
      return;
    }
    expect(first).toMatchObject({ applied: true, verification: true, from: 'doctor', active: true });
    const second = jsonFrom<Record<string, any>>(runNode(code, { HOME: h }));
    expect(second).toMatchObject({ applied: true, verification: true, from: 'cache', profile: first.profile });
  });
});
