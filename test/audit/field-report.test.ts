// The matrix's doctor columns, in this process over the simulated Tahoe guest: a live report's proven profile is
// kept whatever replays (`--snapshot` reports, which record rather than measure) or runs that learnt nothing join it
// in the row; those still count as reports and for the faults they carry.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, beforeEach, expect, it } from 'vitest';
import {
  buildMatrix,
  doctorText,
  fieldReport,
  matrixMarkdown,
  type FieldReport,
} from '../../lib/audit/field-report.js';
import type { Profile } from '../../lib/patch/profiles.js';
import { describeSim, requireSimBuild } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

const LABEL = 'M1 Ultra, macOS 26.6.1';
// The simulated guest proves Apple7's features; threadgroup memory stays at the 32768 it reports (no more is claimed).
// The guest's host is an M1 Ultra, and the live run proves a heap there: its name is part of what was proven.
const PROVEN: Profile = {
  name: null,
  appleFamilyMax: 1007,
  maxThreadgroupMemoryLength: null,
  recommendedMaxWorkingSetSize: null,
  deviceName: 'Apple M1 Ultra',
  families: {},
  mode: 'raise',
};

/**
 * The simulated live report as a Mac would have written it: the same answers and probes, its doctor run `live` and its
 * audit made on Metal rather than the simulation. The matrix counts only such runs as measured.
 */
function asMac(simulated: FieldReport): FieldReport {
  const r = structuredClone(simulated);
  r.doctor!.source = 'live';
  r.doctor!.snapshot = null;
  if (r.audit.mode === 'live') r.audit.snapshot = null;
  return r;
}

/** A live report whose doctor run learnt nothing: every probe an error, so no fault and nothing proven. */
function learntNothing(live: FieldReport): FieldReport {
  const r = structuredClone(live);
  for (const d of r.doctor!.devices) {
    d.probes = d.probes.map((p) => ({ ...p, status: 'error', judgement: 'unknown' }));
    d.faults = [];
    d.verifiedProfile = {
      ...d.verifiedProfile,
      appleFamilyMax: null,
      maxThreadgroupMemoryLength: null,
      deviceName: null,
    };
  }
  return { ...r, generatedAt: '2026-01-01T00:00:00.000Z' };
}

describeSim('matrix: the proven profile comes from reports that measured something', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');
  let simulated: FieldReport;
  let live: FieldReport;
  let replay: FieldReport;
  beforeAll(async () => {
    requireSimBuild();
    process.env.XDG_CACHE_HOME = mkdtempSync(path.join(tmpdir(), 'mcs-matrix-doctor-'));
    simulated = await fieldReport({ hostLabel: LABEL, mmapSize: 1 << 20 });
    live = asMac(simulated);
    replay = await fieldReport({ hostLabel: LABEL, snapshot: 'vz-guest-m1-ultra-tahoe-stock' });
  });
  beforeEach(() => {
    expect([simulated.doctor?.source, live.doctor?.source, replay.doctor?.source]).toEqual([
      'simulated',
      'live',
      'snapshot',
    ]);
  });

  it('a run over the simulated Metal measured nothing about a Mac: counted as simulated, never as measured or verified plainly', () => {
    const m = buildMatrix([simulated]);
    expect(m.rows[0]!.doctor).toEqual({
      reports: 1,
      measured: 0,
      simulated: 1,
      provenProfile: null,
      faults: [{ fault: 'residency-set: fail', reports: 1 }],
    });
    expect(doctorText(m.rows[0]!.doctor).proven).toBe('not measured (1; 1 simulated)');
    expect(m.rows[0]!.cells['host-family']).toMatchObject({ reports: 1, verified: 1, simulated: 1 });
    expect(matrixMarkdown(m).split('\n')[2]).toContain('✓ verified 1/1 \\[simulated\\]; gates: reduction, mm, bfloat');
  });

  it('a live report and a replay of the same guest: one row, proven as the live report proved it', () => {
    const m = buildMatrix([live, replay]);
    expect(m.rows).toHaveLength(1);
    expect(m.rows[0]!.doctor).toEqual({
      reports: 2,
      measured: 1,
      simulated: 0,
      provenProfile: PROVEN,
      faults: [{ fault: 'residency-set: fail', reports: 2 }],
    });
    expect(doctorText(m.rows[0]!.doctor)).toEqual({
      proven: 'Apple7, name "Apple M1 Ultra" (1 of 2 measured)',
      faults: 'residency-set: fail (2/2)',
    });
    expect(matrixMarkdown(m).split('\n')[2]).toBe(
      '| M1 Ultra, macOS 26.6.1 | macOS 26.5.2 (VirtualMac2,1) | unrecorded | ✓ verified 1/1; gates: reduction, mm, bfloat | Apple7, name "Apple M1 Ultra" (1 of 2 measured) | residency-set: fail (2/2) | – | – |',
    );
  });

  it('a live run that learnt nothing is left out too; the order of the reports does not matter', () => {
    const m = buildMatrix([learntNothing(live), replay, live]);
    expect(m.rows[0]!.doctor).toEqual({
      reports: 3,
      measured: 1,
      simulated: 0,
      provenProfile: PROVEN,
      faults: [{ fault: 'residency-set: fail', reports: 2 }],
    });
  });

  it('only replays, or only runs that learnt nothing: not measured, rather than no raise', () => {
    for (const reports of [[replay], [learntNothing(live)], [replay, learntNothing(live)]]) {
      const d = buildMatrix(reports).rows[0]!.doctor;
      expect(d).toMatchObject({ reports: reports.length, measured: 0, provenProfile: null });
      expect(doctorText(d).proven).toBe(`not measured (${reports.length})`);
    }
  });

  it('two live reports: the least of both, counted plainly', () => {
    // Two runs that claimed different sizes (a device answering less than it proved, say).
    const higher = structuredClone(live);
    higher.doctor!.devices[0]!.verifiedProfile = { ...PROVEN, name: null, maxThreadgroupMemoryLength: 32768 };
    const lower = structuredClone(live);
    lower.generatedAt = '2026-01-02T00:00:00.000Z';
    lower.doctor!.devices[0]!.verifiedProfile = { ...PROVEN, maxThreadgroupMemoryLength: 24576 };
    const d = buildMatrix([higher, lower]).rows[0]!.doctor;
    expect(d).toEqual({
      reports: 2,
      measured: 2,
      simulated: 0,
      provenProfile: { ...PROVEN, maxThreadgroupMemoryLength: 24576 },
      faults: [{ fault: 'residency-set: fail', reports: 2 }],
    });
    expect(doctorText(d).proven).toBe('Apple7, tg 24576, name "Apple M1 Ultra" (2)');
  });
});
