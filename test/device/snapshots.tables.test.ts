// The snapshot format's own tables (lib/device/snapshots.ts): which measurements and faults each doctor probe
// records, what a probe's detail and error may be, which queries a simulated class can lack, which kinds of JSON
// --snapshot reads, and the source a recording cites. The module is imported afresh before each test, so its tables
// are built inside the test that reads them (as in test/patch/profiles.builtin.test.ts); imported once at the top, a
// change to them would be built before the test and could not fail it.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { DOCTOR_PROBE_IDS } from '../../lib/device/doctor-vocabulary.js';
import type * as Snapshots from '../../lib/device/snapshots.js';

let m: typeof Snapshots;
beforeEach(async () => {
  vi.resetModules();
  m = await import('../../lib/device/snapshots.js');
});

/** The stock-guest snapshot, as parsed JSON, with one change. */
function stockWith(edit: (s: Record<string, any>) => void): Record<string, any> {
  const s = JSON.parse(readFileSync(path.join(m.snapshotsDir(), 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
  edit(s);
  return s;
}

/** `accepted`, or the message validateSnapshot gives (after the snapshot's name). */
function outcome(data: unknown): string {
  try {
    m.validateSnapshot(data, 'test');
    return 'accepted';
  } catch (e) {
    return (e as Error).message.replace(/^test: /, '').replace(/; see snapshots\/README\.md for the format$/, '');
  }
}

/** The stock guest with one recorded doctor probe; the others are not recorded. */
const withProbe = (id: string, probe: object) =>
  stockWith((s) => {
    s.devices[0].doctor = {
      provenance: 'assumed',
      probes: Object.fromEntries(DOCTOR_PROBE_IDS.map((p) => [p, p === id ? probe : { status: 'not-recorded' }])),
    };
  });

describe('the doctor section of a snapshot', () => {
  it('each probe records its own measurements and no other', () => {
    const values: Record<string, unknown> = {
      maxAbsError: 0.5,
      provenThreadgroupMemory: 4096,
      acceptedThreadgroupMemory: 49152,
      failedThreadgroupMemory: 8192,
      bufferLength: 16,
    };
    const fields = Object.fromEntries(
      DOCTOR_PROBE_IDS.map((id) => {
        const results = Object.entries(values).map(([f, v]) => [f, outcome(withProbe(id, { status: 'fail', [f]: v }))]);
        const takes = results.filter(([, r]) => r === 'accepted').map(([f]) => f);
        // Every other field is refused as one the probe does not have.
        const refused = results.filter(([, r]) => r !== 'accepted');
        expect(refused).toEqual(refused.map(([f]) => [f, `devices[0].doctor.probes.${id}.${f} is not a known field`]));
        return [id, takes];
      }),
    );
    expect(fields).toMatchInlineSnapshot(`
      {
        "bfloat": [
          "maxAbsError",
        ],
        "heap": [],
        "nocopy-mmap": [
          "bufferLength",
        ],
        "residency-set": [],
        "simdgroup-matrix": [
          "maxAbsError",
        ],
        "simdgroup-reduction": [],
        "threadgroup-memory": [
          "provenThreadgroupMemory",
          "acceptedThreadgroupMemory",
          "failedThreadgroupMemory",
        ],
      }
    `);
  });

  it('only nocopy-mmap records a fault, which of two on a wrong-result; the simulated faults are not the format’s', () => {
    const faults = Object.fromEntries(
      DOCTOR_PROBE_IDS.map((id) => [
        id,
        [
          outcome(withProbe(id, { status: 'wrong-result', fault: 'stale' })),
          outcome(withProbe(id, { status: 'timeout', fault: 'compile' })),
        ],
      ]),
    );
    const unknown = (id: string) => `devices[0].doctor.probes.${id}.fault is not a known field`;
    expect(faults).toEqual(
      Object.fromEntries(
        DOCTOR_PROBE_IDS.map((id) => [
          id,
          id === 'nocopy-mmap'
            ? ['accepted', 'devices[0].doctor.probes.nocopy-mmap.fault must be one of stale, zero-length']
            : [unknown(id), unknown(id)],
        ]),
      ),
    );
  });

  it('a detail is one non-empty line; an error a finite number from 0', () => {
    const probe = (extra: object) => outcome(withProbe('bfloat', { status: 'fail', ...extra }));
    expect([
      probe({ detail: 'one line' }),
      probe({ detail: '' }),
      probe({ detail: ' ' }),
      probe({ detail: 'two\nlines' }),
      probe({ detail: 5 }),
      probe({ maxAbsError: 0 }),
      probe({ maxAbsError: -0.001 }),
      probe({ maxAbsError: Number.POSITIVE_INFINITY }),
      probe({ maxAbsError: '0' }),
    ]).toMatchInlineSnapshot(`
      [
        "accepted",
        "devices[0].doctor.probes.bfloat.detail must be one non-empty line of text",
        "devices[0].doctor.probes.bfloat.detail must be one non-empty line of text",
        "devices[0].doctor.probes.bfloat.detail must be one non-empty line of text",
        "devices[0].doctor.probes.bfloat.detail must be one non-empty line of text",
        "accepted",
        "devices[0].doctor.probes.bfloat.maxAbsError must be a number ≥ 0",
        "devices[0].doctor.probes.bfloat.maxAbsError must be a number ≥ 0",
        "devices[0].doctor.probes.bfloat.maxAbsError must be a number ≥ 0",
      ]
    `);
  });
});

describe('what --snapshot reads', () => {
  it('names the three kinds of JSON it reads, and what makes each, when a file is another kind', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-snapshot-tables-')), 'doctor.json');
    writeFileSync(file, JSON.stringify({ schema: 'metal-cap-shim/doctor@1' }));
    let message = '';
    try {
      m.loadSnapshot(file);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message.replace(file, '<file>')).toMatchInlineSnapshot(
      `"snapshot file <file> has schema "metal-cap-shim/doctor@1"; expected metal-cap-shim/snapshot@1 (metal-cap-shim snapshot), metal-cap-shim/report@1 (metal-cap-shim probe --json), metal-cap-shim/field-report@1 (metal-cap-shim report --json)"`,
    );
  });

  it('a snapshot made from a report cites one source, the recording, for every recorded value', () => {
    const recorded = m.loadSnapshot('m1-ultra-bare-metal');
    const snap = m.snapshotFromReport(m.reportFromSnapshot(recorded), {
      id: 'mine',
      title: 'Mine',
      recorded: '2026-01-02',
      describe: 'by hand',
      where: 'here',
    });
    const cited = new Set([snap.host.provenance, snap.devices[0]!.provenance].flatMap((p) => Object.values(p)));
    expect([snap.sources, [...cited].sort()]).toEqual([{ recording: 'by hand' }, ['recording', 'unrecorded']]);
    expect(m.RECORDING_SOURCE).toBe('recording');
  });
});
