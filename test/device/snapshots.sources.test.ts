// What --snapshot reads besides a snapshot, in-process: a field report (its stock devices, and doctor's results when
// it measured), doctor's results as a snapshot records them (recordingOf), the wrong kind of JSON named, `-`, and
// "did you mean" for a bundled name.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { fileLabel } from '../../lib/core/jsonfile.js';
import type { FieldReport } from '../../lib/audit/field-report.js';
import {
  loadSnapshot,
  recordingOf,
  reportFromSnapshot,
  resolveSnapshotPath,
  validateSnapshot,
  type DoctorProbeResult,
} from '../../lib/device/snapshots.js';
import { root, runCli } from '../support/helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-snapshot-sources-'));
const STOCK = 'vz-guest-m1-ultra-tahoe-stock';

function thrown(fn: () => unknown): { name: string; field: unknown; message: string } | undefined {
  try {
    fn();
  } catch (e) {
    return {
      name: (e as Error).constructor.name,
      field: (e as { field?: unknown }).field,
      message: (e as Error).message,
    };
  }
  return undefined;
}

const probe = (
  id: DoctorProbeResult['id'],
  status: DoctorProbeResult['status'],
  extra: Partial<DoctorProbeResult> = {},
): DoctorProbeResult => ({
  id,
  status,
  detail: `${id} ${status}`,
  provenThreadgroupMemory: null,
  failedThreadgroupMemory: null,
  bufferLength: null,
  maxAbsError: null,
  ...extra,
});

describe('recordingOf: doctor’s results as a snapshot records them', () => {
  it('each probe keeps its status, one line of detail and the measurements its format has; a missing probe is not recorded', () => {
    expect(
      recordingOf([
        probe('simdgroup-reduction', 'pass', { maxAbsError: 0.5 }),
        probe('simdgroup-matrix', 'pass', { maxAbsError: 0.001 }),
        probe('bfloat', 'unsupported', { detail: 'line one\r\nline two ' }),
        probe('threadgroup-memory', 'pass', { provenThreadgroupMemory: 32768, failedThreadgroupMemory: 40960 }),
        probe('nocopy-mmap', 'wrong-result', { bufferLength: 0 }),
      ]),
    ).toEqual({
      provenance: 'recording',
      probes: {
        'simdgroup-reduction': { status: 'pass', detail: 'simdgroup-reduction pass' },
        'simdgroup-matrix': { status: 'pass', detail: 'simdgroup-matrix pass', maxAbsError: 0.001 },
        bfloat: { status: 'unsupported', detail: 'line one line two' },
        'threadgroup-memory': {
          status: 'pass',
          detail: 'threadgroup-memory pass',
          provenThreadgroupMemory: 32768,
          failedThreadgroupMemory: 40960,
        },
        'nocopy-mmap': {
          status: 'wrong-result',
          detail: 'nocopy-mmap wrong-result',
          bufferLength: 0,
          fault: 'zero-length',
        },
        'residency-set': { status: 'not-recorded' },
        heap: { status: 'not-recorded' },
      },
    });
  });

  it('a NoCopy wrong-result with a buffer of its length is stale pages; a NoCopy pass has no fault', () => {
    const stale = recordingOf([probe('nocopy-mmap', 'wrong-result', { bufferLength: 1 << 20 })]).probes['nocopy-mmap'];
    const pass = recordingOf([probe('nocopy-mmap', 'pass', { bufferLength: 1 << 20 })]).probes['nocopy-mmap'];
    expect([stale, pass]).toEqual([
      { status: 'wrong-result', detail: 'nocopy-mmap wrong-result', bufferLength: 1 << 20, fault: 'stale' },
      { status: 'pass', detail: 'nocopy-mmap pass', bufferLength: 1 << 20 },
    ]);
  });

  it('only a NoCopy wrong-result says which fault: a wrong bfloat result has none', () => {
    expect(recordingOf([probe('bfloat', 'wrong-result', { maxAbsError: 2 })]).probes.bfloat).toEqual({
      status: 'wrong-result',
      detail: 'bfloat wrong-result',
      maxAbsError: 2,
    });
  });

  it('not-recorded, an unknown status, a blank or missing detail, and a fault given as a field', () => {
    const r = recordingOf([
      probe('simdgroup-reduction', 'not-recorded'),
      probe('simdgroup-matrix', 'bogus' as never),
      probe('bfloat', 'error', { detail: '  ' }),
      probe('residency-set', 'fail', { detail: 7 as never }),
      {
        ...probe('threadgroup-memory', 'pass', { provenThreadgroupMemory: 65536 }),
        fault: 'answered-limit',
      } as DoctorProbeResult,
    ]).probes;
    expect([
      r['simdgroup-reduction'],
      r['simdgroup-matrix'],
      r.bfloat,
      r['residency-set'],
      r['threadgroup-memory'],
    ]).toEqual([
      { status: 'not-recorded' },
      { status: 'not-recorded' },
      { status: 'error' },
      { status: 'fail' },
      { status: 'pass', detail: 'threadgroup-memory pass', provenThreadgroupMemory: 65536 },
    ]);
  });

  it('a probe read from a file without its measurements records none: no key is left undefined', () => {
    const bare = { id: 'threadgroup-memory', status: 'fail' } as DoctorProbeResult;
    expect(recordingOf([bare]).probes['threadgroup-memory']).toStrictEqual({ status: 'fail' });
  });

  it('what it records is a valid doctor section', () => {
    const snap = JSON.parse(readFileSync(path.join(root, 'snapshots', `${STOCK}.json`), 'utf8')) as {
      devices: Record<string, unknown>[];
    };
    snap.devices[0]!.doctor = recordingOf([
      probe('nocopy-mmap', 'wrong-result', { bufferLength: 0 }),
      probe('bfloat', 'pass', { maxAbsError: 0 }),
    ]);
    snap.devices[0]!.provenance = { ...(snap.devices[0]!.provenance as object) };
    (snap as unknown as { sources: Record<string, string> }).sources.recording = 'a test';
    expect(validateSnapshot(snap).devices[0]!.doctor!.probes.bfloat).toEqual({
      status: 'pass',
      detail: 'bfloat pass',
      maxAbsError: 0,
    });
  });
});

describe('a field report read as a snapshot, in-process', () => {
  let report: FieldReport & Record<string, unknown>;
  const write = (name: string, data: unknown) => {
    const file = path.join(dir, name);
    writeFileSync(file, JSON.stringify(data));
    return file;
  };
  beforeAll(() => {
    report = JSON.parse(
      runCli(['report', '--json', '--snapshot', STOCK, '--host-label', 'lab host']).stdout,
    ) as FieldReport & Record<string, unknown>;
  });

  it('its devices answer as the report’s stock side; titled by file and label, dated by the report, id from its snapshot', () => {
    const file = write('offline.json', report);
    const snap = loadSnapshot(file);
    expect(reportFromSnapshot(snap, { allDevices: true }).devices).toEqual(
      reportFromSnapshot(loadSnapshot(STOCK), { allDevices: true }).devices,
    );
    expect([snap.id, snap.title, snap.recorded, snap.host.platform, snap.devices.map((d) => 'doctor' in d)]).toEqual([
      STOCK,
      'field report offline.json, lab host',
      report.generatedAt.slice(0, 10),
      'darwin',
      // The report's doctor section (a replay of the snapshot's recording) comes along, as matrix reads it.
      [true],
    ]);
  });

  it('without a label, a snapshot name or a date: titled by the file, named by it, dated by it', () => {
    const { hostLabel: _l, generatedAt: _g, ...rest } = report;
    const file = write('Bare Report.json', { ...rest, audit: { ...report.audit, snapshot: null } });
    const snap = loadSnapshot(file);
    expect([snap.id, snap.title, snap.recorded]).toEqual([
      'bare-report',
      'field report Bare Report.json',
      new Date().toISOString().slice(0, 10),
    ]);
  });

  it('a generatedAt that starts with a date gives the date; anything else leaves the date to the file', () => {
    // The file is written today, so each date here differs from the file's.
    const recorded = (generatedAt: unknown) => loadSnapshot(write('dated.json', { ...report, generatedAt })).recorded;
    const today = new Date().toISOString().slice(0, 10);
    expect(
      [
        '2025-07-04T09:30:00.000Z',
        '2025-07-04',
        'yesterday',
        'on 2025-07-04',
        '2025-07-4T09:30',
        '2025-7-04',
        20250704,
      ].map(recorded),
    ).toEqual(['2025-07-04', '2025-07-04', today, today, today, today, today]);
  });

  it('a doctor that measured brings each device’s results, and so does a replay (matrix reads the same)', () => {
    const measured = { ...report, doctor: { ...report.doctor!, source: 'simulated' } };
    const snap = loadSnapshot(write('measured.json', measured));
    expect(snap.devices[0]!.doctor).toEqual(recordingOf(report.doctor!.devices[0]!.probes));
    const live = loadSnapshot(write('live.json', { ...report, doctor: { ...report.doctor!, source: 'live' } }));
    expect(live.devices[0]!.doctor).toEqual(recordingOf(report.doctor!.devices[0]!.probes));
    expect(loadSnapshot(write('replayed.json', report)).devices[0]!.doctor).toEqual(
      recordingOf(report.doctor!.devices[0]!.probes),
    );
  });

  it('doctor results for another device index, or without probes, record nothing for the device', () => {
    const other = {
      ...report,
      doctor: { ...report.doctor!, source: 'live', devices: [{ ...report.doctor!.devices[0]!, index: 5 }] },
    };
    const noProbes = {
      ...report,
      doctor: { ...report.doctor!, source: 'live', devices: [{ ...report.doctor!.devices[0]!, probes: null }] },
    };
    expect([
      'doctor' in loadSnapshot(write('other.json', other)).devices[0]!,
      'doctor' in loadSnapshot(write('no-probes.json', noProbes)).devices[0]!,
    ]).toEqual([false, false]);
  });

  it.each([
    ['no audit', (r: Record<string, unknown>) => ({ ...r, audit: null }), 'audit', 'its audit'],
    [
      'no host',
      (r: Record<string, unknown>) => ({ ...r, host: null }),
      'host',
      'its host facts (host is not an object)',
    ],
    [
      'no devices',
      (r: Record<string, unknown>) => ({ ...r, audit: { ...(r.audit as object), devices: [] } }),
      'audit.devices',
      'a non-empty audit.devices',
    ],
    [
      'devices not a list',
      (r: Record<string, unknown>) => ({ ...r, audit: { ...(r.audit as object), devices: {} } }),
      'audit.devices',
      'a non-empty audit.devices',
    ],
    [
      'a device without stock',
      (r: Record<string, unknown>) => ({ ...r, audit: { ...(r.audit as object), devices: [{}] } }),
      'audit.devices[0].stock',
      'audit.devices[0].stock with its families',
    ],
    [
      'a stock side without families',
      (r: Record<string, unknown>) => ({
        ...r,
        audit: { ...(r.audit as object), devices: [{ stock: { name: 'x' } }] },
      }),
      'audit.devices[0].stock',
      'audit.devices[0].stock with its families',
    ],
  ])('%s: InvalidSnapshotError naming the field', (_what, edit, field, needs) => {
    const file = write('broken.json', edit(report));
    expect(thrown(() => loadSnapshot(file))).toEqual({
      name: 'InvalidSnapshotError',
      field,
      message: `${file}: a field report (metal-cap-shim/field-report@1) read as a snapshot needs ${needs}`,
    });
  });
});

describe('what --snapshot names', () => {
  it('another kind of JSON, in-process: the schema it has and the three accepted', () => {
    const file = path.join(dir, 'profiles.json');
    writeFileSync(file, runCli(['profiles', '--json']).stdout);
    expect(thrown(() => loadSnapshot(file))).toEqual({
      name: 'InvalidSnapshotError',
      field: 'schema',
      message: `snapshot file ${file} has schema "metal-cap-shim/profiles@1"; expected metal-cap-shim/snapshot@1 (metal-cap-shim snapshot), metal-cap-shim/report@1 (metal-cap-shim probe --json), metal-cap-shim/field-report@1 (metal-cap-shim report --json)`,
    });
  });

  it('- is standard input: it names no file, and reads as "standard input (-)"', () => {
    expect([resolveSnapshotPath('-'), fileLabel('-'), fileLabel('a.json'), fileLabel(`/${'d'.repeat(300)}`)]).toEqual([
      '-',
      'standard input (-)',
      'a.json',
      `/${'d'.repeat(199)}… (301 characters)`,
    ]);
  });

  it('a mistyped bundled name gets a suggestion; one nowhere near gets none', () => {
    expect(thrown(() => resolveSnapshotPath('m1-ultra-bare-metl'))?.message).toMatch(
      /^no bundled snapshot named 'm1-ultra-bare-metl' \(did you mean the bundled snapshot 'm1-ultra-bare-metal'\?\); bundled snapshots: /,
    );
    expect(thrown(() => resolveSnapshotPath('zzzz'))?.message).toMatch(
      /^no bundled snapshot named 'zzzz'; bundled snapshots: /,
    );
    expect(thrown(() => resolveSnapshotPath('/nowhere/M1-ULTRA-BARE-METAL.JSON'))?.message).toBe(
      "snapshot file /nowhere/M1-ULTRA-BARE-METAL.JSON does not exist (did you mean the bundled snapshot 'm1-ultra-bare-metal'?)",
    );
    // Only a final .json is the bundled name's extension: '.jsonl' is part of the name.
    expect(thrown(() => resolveSnapshotPath('/nowhere/m1-ultra-bare-metal.jsonl'))?.message).toBe(
      'snapshot file /nowhere/m1-ultra-bare-metal.jsonl does not exist',
    );
  });
});
