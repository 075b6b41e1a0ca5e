import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidSnapshotError, SnapshotNotFoundError } from '../lib/errors.js';
import { DOCTOR_PROBE_IDS } from '../lib/doctor-probes.js';
import { FAMILY_NAMES } from '../lib/families.js';
import { listSnapshots, loadSnapshot, reportFromSnapshot, snapshotsDir, validateSnapshot } from '../lib/snapshots.js';
import { root } from './helpers.js';

const stock = () => JSON.parse(readFileSync(path.join(snapshotsDir(), 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));

function expectInvalid(data: unknown, field: string | null) {
  try {
    validateSnapshot(data, 'test');
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidSnapshotError);
    expect((e as InvalidSnapshotError).code).toBe('ERR_INVALID_SNAPSHOT');
    expect((e as InvalidSnapshotError).field).toBe(field);
    expect((e as Error).message).toContain('snapshots/README.md');
    return;
  }
  throw new Error('validateSnapshot accepted invalid data');
}

describe('bundled snapshots', () => {
  it('include the three the design requires', () => {
    expect(listSnapshots()).toEqual(
      expect.arrayContaining(['vz-guest-m1-ultra-tahoe-stock', 'm1-ultra-bare-metal', 'macbookpro16-intel-amd-two-gpus']),
    );
  });

  it.each(listSnapshots())('%s validates and its id matches its file name', (name) => {
    expect(loadSnapshot(name).id).toBe(name);
  });

  it('record the stock guest as REFERENCE.md states it', () => {
    const s = loadSnapshot('vz-guest-m1-ultra-tahoe-stock');
    const d = s.devices[0]!;
    expect(d.name).toBe('Apple Paravirtual device');
    expect(d.className).toBe('AppleParavirtDevice');
    expect(FAMILY_NAMES.filter((n) => d.families[n])).toEqual([
      'apple1', 'apple2', 'apple3', 'apple4', 'apple5', 'common1', 'common2', 'common3',
    ]);
    expect(d.maxThreadgroupMemoryLength).toBe(32768);
    expect(s.host.model).toBe('VirtualMac2,1');
    expect(s.host.isVirtualMachine).toBe(true);
  });

  it('record the bare-metal M1 Ultra as Apple1–7, Mac2, Common1–3, Metal3, not a VM', () => {
    const s = loadSnapshot('m1-ultra-bare-metal');
    expect(FAMILY_NAMES.filter((n) => s.devices[0]!.families[n])).toEqual([
      'apple1', 'apple2', 'apple3', 'apple4', 'apple5', 'apple6', 'apple7', 'mac2', 'common1', 'common2', 'common3', 'metal3',
    ]);
    expect(s.host.isVirtualMachine).toBe(false);
  });

  it('give both class layouts the hook tests need: inherited methods and own methods', () => {
    const layouts = listSnapshots().flatMap((n) => loadSnapshot(n).devices.map((d) => d.simulation?.methodsOnConcreteClass ?? false));
    expect(layouts).toContain(true);
    expect(layouts).toContain(false);
    const two = loadSnapshot('macbookpro16-intel-amd-two-gpus');
    expect(two.devices.map((d) => d.simulation?.methodsOnConcreteClass)).toEqual([false, true]);
  });
});

describe('snapshot validation', () => {
  it('rejects a missing field, naming it', () => {
    const s = stock();
    delete s.devices[0].maxThreadgroupMemoryLength;
    expectInvalid(s, 'devices[0].maxThreadgroupMemoryLength');
  });

  it('rejects an unknown field', () => {
    const s = stock();
    s.host.gpuCores = 48;
    expectInvalid(s, 'host.gpuCores');
  });

  it('rejects a family answer that is not a boolean', () => {
    const s = stock();
    s.devices[0].families.apple7 = 'yes';
    expectInvalid(s, 'devices[0].families.apple7');
  });

  it('rejects a value without provenance, and provenance that names no source', () => {
    const a = stock();
    delete a.devices[0].provenance.name;
    expectInvalid(a, 'devices[0].provenance.name');
    const b = stock();
    b.devices[0].provenance.name = 'hearsay';
    expectInvalid(b, 'devices[0].provenance.name');
  });

  it('rejects "unrecorded" for a value that is recorded', () => {
    const s = stock();
    s.host.provenance.model = 'unrecorded';
    expectInvalid(s, 'host.provenance.model');
  });

  it('rejects a default device index out of range', () => {
    const s = stock();
    s.defaultDevice = 3;
    expectInvalid(s, 'defaultDevice');
  });

  it('rejects a wrong schema tag', () => {
    const s = stock();
    s.schema = 'other@1';
    expectInvalid(s, 'schema');
  });
});

describe('the doctor section', () => {
  const notRecorded = { status: 'not-recorded' };
  const section = (recorded: Record<string, object>, provenance = 'cua-logs') => ({
    provenance,
    probes: Object.fromEntries(DOCTOR_PROBE_IDS.map((id) => [id, recorded[id] ?? notRecorded])),
  });
  const withDoctor = (doctor: unknown) => {
    const s = stock();
    s.devices[0].doctor = doctor;
    return s;
  };

  it('bundled snapshots record only what a source documents: stale NoCopy pages on the macos-14 runner, no residency set in the Tahoe guest', () => {
    const doctors = Object.fromEntries(listSnapshots().map((n) => [n, loadSnapshot(n).devices.map((d) => d.doctor ?? null)]));
    expect(doctors).toEqual({
      'github-macos-14-arm64-runner': [
        section(
          {
            'nocopy-mmap': {
              status: 'wrong-result',
              detail:
                'stale data when Metal read model weights through newBufferWithBytesNoCopy over a file-backed mmap (empty or garbage llama.cpp output; --no-mmap correct)',
              fault: 'stale',
            },
          },
          'unsloth-pr-37',
        ),
      ],
      'm1-ultra-bare-metal': [null],
      'macbookpro16-intel-amd-two-gpus': [null, null],
      'vz-guest-m1-ultra-tahoe-stock': [
        section(
          {
            'residency-set': {
              status: 'fail',
              detail: 'MLX could not construct a residency set in this guest ("Unable to construct residency set")',
            },
          },
          'cua-mlx-ablation',
        ),
      ],
    });
    expect(loadSnapshot('github-macos-14-arm64-runner').sources['unsloth-pr-37']).toContain('unslothai/llama.cpp PR 37');
    expect(loadSnapshot('vz-guest-m1-ultra-tahoe-stock').sources['cua-mlx-ablation']).toContain('trycua/cua PR 3070');
  });

  it('the fault fixture validates, with every status and both NoCopy faults', () => {
    const s = loadSnapshot(path.join(root, 'test', 'fixtures', 'snapshots', 'doctor-faults.json'));
    const recorded = s.devices.flatMap((d) => Object.values(d.doctor?.probes ?? {}));
    expect(new Set(recorded.map((p) => p.status))).toEqual(
      new Set(['not-recorded', 'pass', 'wrong-result', 'fail', 'unsupported', 'timeout']),
    );
    expect(new Set(recorded.map((p) => p.fault).filter(Boolean))).toEqual(new Set(['stale', 'zero-length']));
  });

  it('accepts every field on its own probe', () => {
    const doctor = section({
      'simdgroup-matrix': { status: 'wrong-result', detail: 'off by one', maxAbsError: 1 },
      bfloat: { status: 'pass', maxAbsError: 0 },
      'threadgroup-memory': { status: 'pass', provenThreadgroupMemory: 32768, failedThreadgroupMemory: 49152 },
      'nocopy-mmap': { status: 'wrong-result', fault: 'zero-length', bufferLength: 0 },
      'residency-set': { status: 'unsupported', detail: 'macOS 14' },
    });
    expect(validateSnapshot(withDoctor(doctor), 'test').devices[0]!.doctor).toEqual(doctor);
  });

  const at = 'devices[0].doctor.';
  const probes = (edit: (p: Record<string, unknown>) => void) => {
    const d = section({});
    edit(d.probes);
    return d;
  };
  const one = (id: string, value: object) => section({ [id]: value });
  it.each([
    ['a missing probe', probes((p) => delete p.bfloat), `${at}probes.bfloat`],
    ['an unknown probe', probes((p) => (p.tensor = notRecorded)), `${at}probes.tensor`],
    ['an unknown status', one('bfloat', { status: 'flaky' }), `${at}probes.bfloat.status`],
    ['a field on a not-recorded probe', one('bfloat', { status: 'not-recorded', detail: 'maybe' }), `${at}probes.bfloat.detail`],
    ['a field of another probe', one('residency-set', { status: 'fail', maxAbsError: 1 }), `${at}probes.residency-set.maxAbsError`],
    ['a detail of two lines', one('bfloat', { status: 'fail', detail: 'a\nb' }), `${at}probes.bfloat.detail`],
    ['a NoCopy wrong-result without its fault', one('nocopy-mmap', { status: 'wrong-result' }), `${at}probes.nocopy-mmap.fault`],
    ['a fault on a pass', one('nocopy-mmap', { status: 'pass', fault: 'stale' }), `${at}probes.nocopy-mmap.fault`],
    ['an unknown fault', one('nocopy-mmap', { status: 'wrong-result', fault: 'torn' }), `${at}probes.nocopy-mmap.fault`],
    [
      'a failed size not above the proven one',
      one('threadgroup-memory', { status: 'pass', provenThreadgroupMemory: 32768, failedThreadgroupMemory: 32768 }),
      `${at}probes.threadgroup-memory.failedThreadgroupMemory`,
    ],
    [
      'a size of zero',
      one('threadgroup-memory', { status: 'pass', provenThreadgroupMemory: 0 }),
      `${at}probes.threadgroup-memory.provenThreadgroupMemory`,
    ],
    ['a negative error', one('bfloat', { status: 'pass', maxAbsError: -1 }), `${at}probes.bfloat.maxAbsError`],
    ['provenance that names no source', section({}, 'hearsay'), `${at}provenance`],
    ['an unknown key', { ...section({}), when: 'today' }, `${at}when`],
  ])('rejects %s, naming the field', (_name, doctor, field) => {
    expectInvalid(withDoctor(doctor), field);
  });
});

describe('loading snapshots', () => {
  it('an unknown name is SnapshotNotFoundError listing the bundled names', () => {
    expect(() => loadSnapshot('no-such-snapshot')).toThrow(SnapshotNotFoundError);
    try {
      loadSnapshot('no-such-snapshot');
    } catch (e) {
      expect((e as SnapshotNotFoundError).code).toBe('ERR_SNAPSHOT_NOT_FOUND');
      expect((e as Error).message).toContain('vz-guest-m1-ultra-tahoe-stock');
    }
  });

  it('a missing path is SnapshotNotFoundError', () => {
    expect(() => loadSnapshot('/nonexistent/x.json')).toThrow(SnapshotNotFoundError);
  });

  it('a file that is not JSON is InvalidSnapshotError', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-')), 'broken.json');
    writeFileSync(file, '{ "schema": ');
    expect(() => loadSnapshot(file)).toThrow(InvalidSnapshotError);
  });

  it('a valid file outside the package loads by path', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-')), 'mine.json');
    writeFileSync(file, JSON.stringify({ ...stock(), id: 'mine' }));
    expect(loadSnapshot(file).id).toBe('mine');
  });
});

describe('reportFromSnapshot', () => {
  it('reports only the default device unless all are asked', () => {
    const s = loadSnapshot('macbookpro16-intel-amd-two-gpus');
    const one = reportFromSnapshot(s);
    expect(one.devices.map((d) => d.name)).toEqual(['AMD Radeon Pro 5500M']);
    expect(one.devices[0]!.isDefault).toBe(true);
    const all = reportFromSnapshot(s, { allDevices: true });
    expect(all.devices.map((d) => [d.index, d.isDefault])).toEqual([
      [0, false],
      [1, true],
    ]);
  });

  it('derives the highest Apple family and the SIMD-group flags', () => {
    const stockGuest = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock')).devices[0]!;
    expect(stockGuest.highestAppleFamily).toEqual({ value: 1005, name: 'apple5' });
    expect([stockGuest.simd.reduction.value, stockGuest.simd.matrix.value, stockGuest.simd.bfloat16.value]).toEqual([false, false, false]);
    const m1 = reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal')).devices[0]!;
    expect(m1.highestAppleFamily).toEqual({ value: 1007, name: 'apple7' });
    expect([m1.simd.reduction.value, m1.simd.matrix.value, m1.simd.bfloat16.value]).toEqual([true, true, true]);
  });
});
