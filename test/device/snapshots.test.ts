import { mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidSnapshotError, SnapshotNotFoundError } from '../../lib/core/errors.js';
import { DOCTOR_PROBE_IDS } from '../../lib/device/doctor-vocabulary.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { unsupportedReport } from '../../lib/device/report.js';
import {
  listSnapshots,
  loadSnapshot,
  reportFromSnapshot,
  resolveSnapshotPath,
  snapshotFromReport,
  snapshotId,
  snapshotsDir,
  validateSnapshot,
  type SnapshotDevice,
} from '../../lib/device/snapshots.js';

const stock = () => JSON.parse(readFileSync(path.join(snapshotsDir(), 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));

/** The error a call throws, as a plain record of what a caller can see. */
function thrown(fn: () => unknown): Record<string, unknown> {
  try {
    fn();
  } catch (e) {
    const err = e as Error & { code: string; field?: string | null; option?: string };
    return {
      name: err.constructor.name,
      code: err.code,
      ...('field' in err ? { field: err.field } : {}),
      ...('option' in err ? { option: err.option } : {}),
      message: err.message,
    };
  }
  throw new Error('expected a throw');
}

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
  it('are listed by name, sorted, exactly the .json files of snapshots/', () => {
    const files = readdirSync(snapshotsDir())
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.replace(/\.json$/, ''));
    expect(listSnapshots()).toEqual([...files].sort());
    expect(listSnapshots()).toEqual([
      'github-macos-14-arm64-runner',
      'm1-ultra-bare-metal',
      'macbookpro16-intel-amd-two-gpus',
      'vz-guest-m1-ultra-tahoe-stock',
    ]);
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
      'apple1',
      'apple2',
      'apple3',
      'apple4',
      'apple5',
      'common1',
      'common2',
      'common3',
    ]);
    expect(d.maxThreadgroupMemoryLength).toBe(32768);
    expect(s.host.model).toBe('VirtualMac2,1');
    expect(s.host.isVirtualMachine).toBe(true);
    // The 16 GiB guest of the Cua setup; MLX bounds its allocator by 0.95 × this.
    expect([s.host.memoryBytes, s.host.provenance.memoryBytes]).toEqual([17179869184, 'cua-setup']);
  });

  it('record the bare-metal M1 Ultra as Apple1–7, Mac2, Common1–3, Metal3, not a VM', () => {
    const s = loadSnapshot('m1-ultra-bare-metal');
    expect(FAMILY_NAMES.filter((n) => s.devices[0]!.families[n])).toEqual([
      'apple1',
      'apple2',
      'apple3',
      'apple4',
      'apple5',
      'apple6',
      'apple7',
      'mac2',
      'common1',
      'common2',
      'common3',
      'metal3',
    ]);
    expect(s.host.isVirtualMachine).toBe(false);
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

  it('host.memoryBytes is a positive integer or null, host.translated a boolean or null, both required', () => {
    for (const [value, ok] of [
      [null, true],
      [1, true],
      [17179869184, true],
      [0, false],
      [-1, false],
      [1.5, false],
      ['16 GiB', false],
    ] as const) {
      const s = stock();
      s.host.memoryBytes = value;
      if (value === null) s.host.provenance.memoryBytes = 'unrecorded';
      if (ok) expect(validateSnapshot(s, 'test').host.memoryBytes).toBe(value);
      else expectInvalid(s, 'host.memoryBytes');
    }
    const t = stock();
    t.host.translated = 1;
    expectInvalid(t, 'host.translated');
    const missing = stock();
    delete missing.host.translated;
    expectInvalid(missing, 'host.translated');
    const noProvenance = stock();
    delete noProvenance.host.provenance.memoryBytes;
    expectInvalid(noProvenance, 'host.provenance.memoryBytes');
  });

  it('host.cpuBrand and host.chip: both required, each with its provenance; the chip is what the brand names', () => {
    const valid = stock();
    expect([validateSnapshot(valid, 'test').host.cpuBrand, valid.host.chip]).toEqual([
      'Apple M1 Ultra (Virtual)',
      'Apple M1 Ultra',
    ]);
    for (const field of ['cpuBrand', 'chip']) {
      const missing = stock();
      delete missing.host[field];
      expectInvalid(missing, `host.${field}`);
      const noProvenance = stock();
      delete noProvenance.host.provenance[field];
      expectInvalid(noProvenance, `host.provenance.${field}`);
      const wrongType = stock();
      wrongType.host[field] = 7;
      expectInvalid(wrongType, `host.${field}`);
    }
    // Another chip than the brand names, or a chip where the brand names none.
    const other = stock();
    other.host.chip = 'Apple M1';
    expect(thrown(() => validateSnapshot(other, 'test'))).toMatchObject({
      field: 'host.chip',
      message:
        'test: host.chip must be "Apple M1 Ultra", the chip cpuBrand "Apple M1 Ultra (Virtual)" names; see snapshots/README.md for the format',
    });
    const intel = stock();
    intel.host.cpuBrand = 'Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz';
    expectInvalid(intel, 'host.chip');
    intel.host.chip = null;
    intel.host.provenance.chip = 'unrecorded';
    expect(validateSnapshot(intel, 'test').host.chip).toBeNull();
    // Without a brand string, a chip from a source of its own, if it is a chip name.
    const chipOnly = stock();
    chipOnly.host.cpuBrand = null;
    chipOnly.host.provenance.cpuBrand = 'unrecorded';
    expect(validateSnapshot(chipOnly, 'test').host.chip).toBe('Apple M1 Ultra');
    chipOnly.host.chip = 'M1 Ultra';
    expect(thrown(() => validateSnapshot(chipOnly, 'test'))).toEqual(
      rejection('host.chip', 'must be an Apple chip name as bare metal reports it (e.g. "Apple M1 Ultra") or null'),
    );
    chipOnly.host.chip = 'Apple M1 Ultra (Virtual)';
    expectInvalid(chipOnly, 'host.chip');
  });

  it('a report’s brand string and chip are recorded with the rest of the host', () => {
    const report = reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal'));
    const snap = snapshotFromReport(report, {
      id: 'm1',
      title: 'M1',
      recorded: '2026-02-03',
      describe: 'by hand',
      where: 'test',
    });
    expect([snap.host.cpuBrand, snap.host.chip, snap.host.provenance.cpuBrand, snap.host.provenance.chip]).toEqual([
      'Apple M1 Ultra',
      'Apple M1 Ultra',
      'recording',
      'recording',
    ]);
  });

  it('a bundled snapshot records the chip only where a source gives it', () => {
    const chips = listSnapshots().map((id) => {
      const h = loadSnapshot(id).host;
      return [id, h.cpuBrand, h.chip, h.provenance.cpuBrand, h.provenance.chip];
    });
    expect(chips).toEqual([
      ['github-macos-14-arm64-runner', 'Apple M1 (Virtual)', 'Apple M1', 'runner-brand', 'runner-brand'],
      ['m1-ultra-bare-metal', 'Apple M1 Ultra', 'Apple M1 Ultra', 'm1-ultra-brand', 'm1-ultra-brand'],
      ['macbookpro16-intel-amd-two-gpus', null, null, 'unrecorded', 'unrecorded'],
      [
        'vz-guest-m1-ultra-tahoe-stock',
        'Apple M1 Ultra (Virtual)',
        'Apple M1 Ultra',
        'm1-ultra-guest-brand',
        'm1-ultra-guest-brand',
      ],
    ]);
  });

  it("a bundled chip parsed from a recorded brand string cites the brand string's source, which names it", () => {
    for (const id of listSnapshots()) {
      const s = loadSnapshot(id);
      const h = s.host;
      if (h.cpuBrand === null) continue;
      const source = (s.sources as Record<string, string>)[h.provenance.chip ?? ''];
      expect([id, h.provenance.chip, source?.includes(h.cpuBrand)]).toEqual([id, h.provenance.cpuBrand, true]);
    }
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
    const doctors = Object.fromEntries(
      listSnapshots().map((n) => [n, loadSnapshot(n).devices.map((d) => d.doctor ?? null)]),
    );
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
    expect(loadSnapshot('github-macos-14-arm64-runner').sources['unsloth-pr-37']).toContain(
      'unslothai/llama.cpp PR 37',
    );
    expect(loadSnapshot('vz-guest-m1-ultra-tahoe-stock').sources['cua-mlx-ablation']).toContain('trycua/cua PR 3070');
  });

  it('accepts every field on its own probe', () => {
    const doctor = section({
      'simdgroup-matrix': { status: 'wrong-result', detail: 'off by one', maxAbsError: 1 },
      bfloat: { status: 'pass', maxAbsError: 0 },
      'threadgroup-memory': {
        status: 'pass',
        provenThreadgroupMemory: 32768,
        failedThreadgroupMemory: 49152,
      },
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
    [
      'a field on a not-recorded probe',
      one('bfloat', { status: 'not-recorded', detail: 'maybe' }),
      `${at}probes.bfloat.detail`,
    ],
    [
      'a field of another probe',
      one('residency-set', { status: 'fail', maxAbsError: 1 }),
      `${at}probes.residency-set.maxAbsError`,
    ],
    ['a detail of two lines', one('bfloat', { status: 'fail', detail: 'a\nb' }), `${at}probes.bfloat.detail`],
    [
      'a NoCopy wrong-result without its fault',
      one('nocopy-mmap', { status: 'wrong-result' }),
      `${at}probes.nocopy-mmap.fault`,
    ],
    ['a fault on a pass', one('nocopy-mmap', { status: 'pass', fault: 'stale' }), `${at}probes.nocopy-mmap.fault`],
    [
      'an unknown fault',
      one('nocopy-mmap', { status: 'wrong-result', fault: 'torn' }),
      `${at}probes.nocopy-mmap.fault`,
    ],
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

  it('a file that is not JSON is InvalidSnapshotError saying so', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-')), 'broken.json');
    writeFileSync(file, '{ "schema": ');
    expect(thrown(() => loadSnapshot(file))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: null,
      message: `snapshot file ${file} is not JSON: it ends in the middle of a value (line 1, column 13)`,
    });
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
    expect([stockGuest.simd.reduction.value, stockGuest.simd.matrix.value, stockGuest.simd.bfloat16.value]).toEqual([
      false,
      false,
      false,
    ]);
    const m1 = reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal')).devices[0]!;
    expect(m1.highestAppleFamily).toEqual({ value: 1007, name: 'apple7' });
    expect([m1.simd.reduction.value, m1.simd.matrix.value, m1.simd.bfloat16.value]).toEqual([true, true, true]);
  });
});

/** A copy of the stock-guest snapshot with one change. */
function changed(edit: (s: Record<string, any>) => void): unknown {
  const s = stock();
  edit(s);
  return s;
}

/** The error validateSnapshot gives for a field, in full. */
const rejection = (field: string, says: string) => ({
  name: 'InvalidSnapshotError',
  code: 'ERR_INVALID_SNAPSHOT',
  field,
  message: `test: ${field} ${says}; see snapshots/README.md for the format`,
});

describe('snapshot validation, rule by rule (each case breaks one rule of a valid snapshot)', () => {
  const ID = 'must be a lower-case id (a-z, 0-9, -, .)';
  const DATE = 'must be a date YYYY-MM-DD';
  const TEXT = 'must be a non-empty string';
  const BOOL = 'must be true or false';

  it.each<[string, (s: Record<string, any>) => void, string, string]>([
    ['an unknown top-level field', (s) => (s.extra = 1), 'extra', 'is not a known field'],
    ['a missing title', (s) => delete s.title, 'title', 'is missing'],
    ['an empty title', (s) => (s.title = ''), 'title', TEXT],
    ['a title that is not a string', (s) => (s.title = 5), 'title', TEXT],
    ['a title that is an array of text', (s) => (s.title = ['Stock guest']), 'title', TEXT],
    ['an id with capitals', (s) => (s.id = 'Stock'), 'id', ID],
    ['an id starting with a dash', (s) => (s.id = '-stock'), 'id', ID],
    ['an id ending in an underscore', (s) => (s.id = 'stock_'), 'id', ID],
    ['an id that is a number', (s) => (s.id = 7), 'id', ID],
    ['a date without leading zeros', (s) => (s.recorded = '2026-8-9'), 'recorded', DATE],
    ['a date with text before it', (s) => (s.recorded = 'on 2026-08-09'), 'recorded', DATE],
    ['a date with text after it', (s) => (s.recorded = '2026-08-09Z'), 'recorded', DATE],
    ['a date as a number', (s) => (s.recorded = 20260809), 'recorded', DATE],
    ['a date inside an array', (s) => (s.recorded = ['2026-08-09']), 'recorded', DATE],
    ['sources as a string', (s) => (s.sources = 'cua'), 'sources', 'must be an object of strings'],
    ['sources as an array', (s) => (s.sources = ['cua']), 'sources', 'must be an object of strings'],
    ['one source that is not a string', (s) => (s.sources.extra = 5), 'sources', 'must be an object of strings'],
    [
      '"assumed" as a source key',
      (s) => (s.sources.assumed = 'x'),
      'sources.assumed',
      'is a reserved word, not a source key',
    ],
    [
      '"unrecorded" as a source key',
      (s) => (s.sources.unrecorded = 'x'),
      'sources.unrecorded',
      'is a reserved word, not a source key',
    ],
    ['host as a string', (s) => (s.host = 'mac'), 'host', 'must be an object'],
    ['host as null', (s) => (s.host = null), 'host', 'must be an object'],
    ['a negative default device', (s) => (s.defaultDevice = -1), 'defaultDevice', 'must be an integer ≥ 0'],
    ['a fractional default device', (s) => (s.defaultDevice = 0.5), 'defaultDevice', 'must be an integer ≥ 0'],
    ['a default device as a string', (s) => (s.defaultDevice = '0'), 'defaultDevice', 'must be an integer ≥ 0'],
    ['a default device past the list', (s) => (s.defaultDevice = 1), 'defaultDevice', 'must index into devices (0–0)'],
    ['no devices', (s) => (s.devices = []), 'devices', 'must be a non-empty array'],
    ['devices as a string', (s) => (s.devices = 'gpu'), 'devices', 'must be a non-empty array'],
    ['devices as an object', (s) => (s.devices = { 0: {} }), 'devices', 'must be a non-empty array'],
    ['an empty platform', (s) => (s.host.platform = ''), 'host.platform', TEXT],
    ['an OS version that is a number', (s) => (s.host.osVersion = 26), 'host.osVersion', TEXT],
    ['an empty OS version', (s) => (s.host.osVersion = ''), 'host.osVersion', TEXT],
    ['a VM flag that is a string', (s) => (s.host.isVirtualMachine = 'yes'), 'host.isVirtualMachine', BOOL],
    ['an unknown host field', (s) => (s.host.gpuCores = 48), 'host.gpuCores', 'is not a known field'],
    ['host without provenance', (s) => delete s.host.provenance, 'host.provenance', 'is missing'],
    ['host provenance as a string', (s) => (s.host.provenance = 'cua'), 'host.provenance', 'must be an object'],
    ['a host value without provenance', (s) => delete s.host.provenance.model, 'host.provenance.model', 'is missing'],
    [
      'provenance naming no source, for a null value',
      (s) => (s.host.provenance.osBuild = 'hearsay'),
      'host.provenance.osBuild',
      `must be a key of "sources", "assumed", or "unrecorded" (only for a null value), not 'hearsay'`,
    ],
    [
      '"unrecorded" for a value that is recorded',
      (s) => (s.host.provenance.model = 'unrecorded'),
      'host.provenance.model',
      `must be a key of "sources", "assumed", or "unrecorded" (only for a null value), not 'unrecorded'`,
    ],
    ['a device that is not an object', (s) => (s.devices[0] = 5), 'devices[0]', 'must be an object'],
    ['an unknown device field', (s) => (s.devices[0].cores = 48), 'devices[0].cores', 'is not a known field'],
    [
      'a class name with a space',
      (s) => (s.devices[0].className = 'Apple Paravirt'),
      'devices[0].className',
      'must be an Objective-C class name',
    ],
    [
      'a class name starting with a digit',
      (s) => (s.devices[0].className = '9Device'),
      'devices[0].className',
      'must be an Objective-C class name',
    ],
    [
      'a class name ending in a dash',
      (s) => (s.devices[0].className = 'Device-'),
      'devices[0].className',
      'must be an Objective-C class name',
    ],
    [
      'a class name that is a number',
      (s) => (s.devices[0].className = 9),
      'devices[0].className',
      'must be an Objective-C class name',
    ],
    [
      'a class name inside an array',
      (s) => (s.devices[0].className = ['Device']),
      'devices[0].className',
      'must be an Objective-C class name',
    ],
    [
      'a negative registry id',
      (s) => (s.devices[0].registryId = -1),
      'devices[0].registryId',
      'must be an integer ≥ 0',
    ],
    ['families as an array', (s) => (s.devices[0].families = []), 'devices[0].families', 'must be an object'],
    ['a family missing', (s) => delete s.devices[0].families.apple10, 'devices[0].families.apple10', 'is missing'],
    [
      'an unknown family',
      (s) => (s.devices[0].families.apple11 = false),
      'devices[0].families.apple11',
      'is not a known field',
    ],
    ['a family answer that is null', (s) => (s.devices[0].families.apple7 = null), 'devices[0].families.apple7', BOOL],
    [
      'threadgroup memory of 0',
      (s) => (s.devices[0].maxThreadgroupMemoryLength = 0),
      'devices[0].maxThreadgroupMemoryLength',
      'must be an integer ≥ 1',
    ],
    [
      'threadgroup size as a number',
      (s) => (s.devices[0].maxThreadsPerThreadgroup = 1024),
      'devices[0].maxThreadsPerThreadgroup',
      'must be an object',
    ],
    [
      'a threadgroup width of 0',
      (s) => (s.devices[0].maxThreadsPerThreadgroup.width = 0),
      'devices[0].maxThreadsPerThreadgroup.width',
      'must be an integer ≥ 1',
    ],
    [
      'a threadgroup depth missing',
      (s) => delete s.devices[0].maxThreadsPerThreadgroup.depth,
      'devices[0].maxThreadsPerThreadgroup.depth',
      'is missing',
    ],
    [
      'a negative working set',
      (s) => (s.devices[0].recommendedMaxWorkingSetSize = -1),
      'devices[0].recommendedMaxWorkingSetSize',
      'must be an integer ≥ 0',
    ],
    [
      'a buffer length of 0',
      (s) => (s.devices[0].maxBufferLength = 0),
      'devices[0].maxBufferLength',
      'must be an integer ≥ 1',
    ],
    ['unified memory as null', (s) => (s.devices[0].hasUnifiedMemory = null), 'devices[0].hasUnifiedMemory', BOOL],
    [
      'an unknown location',
      (s) => (s.devices[0].location = 'moon'),
      'devices[0].location',
      'must be one of builtIn, slot, external, unspecified',
    ],
    ['an empty architecture', (s) => (s.devices[0].architecture = ''), 'devices[0].architecture', TEXT],
    ['a device without provenance', (s) => delete s.devices[0].provenance, 'devices[0].provenance', 'is missing'],
    [
      'a device value without provenance',
      (s) => delete s.devices[0].provenance.architecture,
      'devices[0].provenance.architecture',
      'is missing',
    ],
  ])('rejects %s', (_what, edit, field, says) => {
    expect(thrown(() => validateSnapshot(changed(edit), 'test'))).toEqual(rejection(field, says));
  });

  it.each<[string, (s: Record<string, any>) => void]>([
    ['ids of digits, dots and dashes', (s) => (s.id = '0.9-x')],
    [
      'a null OS version recorded as unrecorded',
      (s) => ((s.host.osVersion = null), (s.host.provenance.osVersion = 'unrecorded')),
    ],
    [
      'an unknown VM status recorded as unrecorded',
      (s) => ((s.host.isVirtualMachine = null), (s.host.provenance.isVirtualMachine = 'unrecorded')),
    ],
    ['a value marked as assumed', (s) => (s.host.provenance.arch = 'assumed')],
    [
      'a null architecture',
      (s) => ((s.devices[0].architecture = null), (s.devices[0].provenance.architecture = 'unrecorded')),
    ],
    [
      'a registry id and working set of 0',
      (s) => ((s.devices[0].registryId = 0), (s.devices[0].recommendedMaxWorkingSetSize = 0)),
    ],
    [
      'threadgroup memory, buffer length and a threadgroup size of 1',
      (s) => (
        (s.devices[0].maxThreadgroupMemoryLength = 1),
        (s.devices[0].maxBufferLength = 1),
        (s.devices[0].maxThreadsPerThreadgroup.width = 1)
      ),
    ],
    ['a class name with an underscore first', (s) => (s.devices[0].className = '_Device9')],
  ])('accepts %s', (_what, edit) => {
    const data = changed(edit);
    expect(validateSnapshot(data, 'test')).toEqual(data);
  });

  it.each([
    ['a number', 5],
    ['null', null],
    ['an array', []],
  ])('rejects %s as a whole', (_what, data) => {
    expect(thrown(() => validateSnapshot(data, 'test'))).toEqual(rejection('(root)', 'must be an object'));
  });

  it('names the snapshot "snapshot" when no name is given', () => {
    expect((thrown(() => validateSnapshot(5)).message as string).startsWith('snapshot: (root) must be an object')).toBe(
      true,
    );
  });
});

describe('finding a snapshot by name or path', () => {
  const bundled =
    'github-macos-14-arm64-runner, m1-ultra-bare-metal, macbookpro16-intel-amd-two-gpus, vz-guest-m1-ultra-tahoe-stock (or pass a path to a .json file)';

  it('a bundled name resolves into snapshots/', () => {
    expect(resolveSnapshotPath('m1-ultra-bare-metal')).toBe(path.join(snapshotsDir(), 'm1-ultra-bare-metal.json'));
  });

  it('an unknown name lists the bundled names', () => {
    expect(thrown(() => resolveSnapshotPath('no-such-snapshot'))).toEqual({
      name: 'SnapshotNotFoundError',
      code: 'ERR_SNAPSHOT_NOT_FOUND',
      message: `no bundled snapshot named 'no-such-snapshot'; bundled snapshots: ${bundled}`,
    });
  });

  it('a selector with a slash, or ending in .json, is a path (relative to the working directory)', () => {
    expect(thrown(() => resolveSnapshotPath('/nonexistent/x.json'))).toEqual({
      name: 'SnapshotNotFoundError',
      code: 'ERR_SNAPSHOT_NOT_FOUND',
      message: 'snapshot file /nonexistent/x.json does not exist',
    });
    expect(thrown(() => resolveSnapshotPath('m1-ultra-bare-metal.json')).message).toBe(
      `snapshot file ${path.resolve('m1-ultra-bare-metal.json')} does not exist (did you mean the bundled snapshot 'm1-ultra-bare-metal'?)`,
    );
    expect(thrown(() => resolveSnapshotPath('snapshots/m1-ultra-bare-metal')).message).toBe(
      `snapshot file ${path.resolve('snapshots/m1-ultra-bare-metal')} does not exist (did you mean the bundled snapshot 'm1-ultra-bare-metal'?)`,
    );
    const file = path.join(snapshotsDir(), 'm1-ultra-bare-metal.json');
    expect(resolveSnapshotPath(path.relative(process.cwd(), file))).toBe(file);
  });

  it('an empty or blank name is SnapshotNotFoundError; a non-string is InvalidOptionsError', () => {
    const blank = {
      name: 'SnapshotNotFoundError',
      code: 'ERR_SNAPSHOT_NOT_FOUND',
      message: 'a snapshot is named by a non-empty string: a bundled name or a path to a .json file',
    };
    expect(thrown(() => resolveSnapshotPath(''))).toEqual(blank);
    expect(thrown(() => resolveSnapshotPath('  '))).toEqual(blank);
    expect(thrown(() => resolveSnapshotPath(5 as unknown as string))).toEqual({
      name: 'InvalidOptionsError',
      code: 'ERR_INVALID_OPTIONS',
      option: 'snapshot',
      message: 'a snapshot is named by a string: a bundled name or a path to a .json file',
    });
  });

  it('loadSnapshot names the file in validation messages', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-')), 'nodevices.json');
    writeFileSync(file, JSON.stringify({ ...stock(), devices: [] }));
    expect(thrown(() => loadSnapshot(file))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: 'devices',
      message: `${file}: devices must be a non-empty array; see snapshots/README.md for the format`,
    });
  });
});

describe('the doctor section and the default object, whole errors', () => {
  const section = (recorded: Record<string, object>, provenance: unknown = 'cua-logs') => ({
    provenance,
    probes: Object.fromEntries(DOCTOR_PROBE_IDS.map((id) => [id, recorded[id] ?? { status: 'not-recorded' }])),
  });
  const withDoctor = (doctor: unknown) => changed((s) => (s.devices[0].doctor = doctor));
  const at = 'devices[0].doctor.';
  const LINE = 'must be one non-empty line of text';

  it.each<[string, unknown, string, string]>([
    ['an empty detail', section({ bfloat: { status: 'fail', detail: '' } }), `${at}probes.bfloat.detail`, LINE],
    ['a detail of blanks', section({ bfloat: { status: 'fail', detail: '   ' } }), `${at}probes.bfloat.detail`, LINE],
    [
      'a detail ending in a carriage return',
      section({ bfloat: { status: 'fail', detail: 'off\r' } }),
      `${at}probes.bfloat.detail`,
      LINE,
    ],
    [
      'a detail that is a number',
      section({ bfloat: { status: 'fail', detail: 5 } }),
      `${at}probes.bfloat.detail`,
      LINE,
    ],
    [
      'an unknown status',
      section({ bfloat: { status: 'flaky' } }),
      `${at}probes.bfloat.status`,
      'must be one of pass, wrong-result, fail, unsupported, timeout, skipped, error, page-fault, access-revoked, not-permitted, out-of-memory, device-removed, aborted, interrupted, not-recorded',
    ],
    [
      'a field on a not-recorded probe',
      section({ bfloat: { status: 'not-recorded', detail: 'maybe' } }),
      `${at}probes.bfloat.detail`,
      'is not allowed: a not-recorded probe carries only its status',
    ],
    [
      'a field of another probe',
      section({ 'residency-set': { status: 'fail', maxAbsError: 1 } }),
      `${at}probes.residency-set.maxAbsError`,
      'is not a known field',
    ],
    [
      'a negative error',
      section({ bfloat: { status: 'pass', maxAbsError: -1 } }),
      `${at}probes.bfloat.maxAbsError`,
      'must be a number ≥ 0',
    ],
    [
      'an infinite error',
      section({ bfloat: { status: 'pass', maxAbsError: Number.POSITIVE_INFINITY } }),
      `${at}probes.bfloat.maxAbsError`,
      'must be a number ≥ 0',
    ],
    [
      'an error given as text',
      section({ bfloat: { status: 'pass', maxAbsError: '0.5' } }),
      `${at}probes.bfloat.maxAbsError`,
      'must be a number ≥ 0',
    ],
    [
      'an unknown fault',
      section({ 'nocopy-mmap': { status: 'wrong-result', fault: 'torn' } }),
      `${at}probes.nocopy-mmap.fault`,
      'must be one of stale, zero-length',
    ],
    [
      'a fault on a pass',
      section({ 'nocopy-mmap': { status: 'pass', fault: 'stale' } }),
      `${at}probes.nocopy-mmap.fault`,
      'is only for a wrong-result',
    ],
    [
      'a NoCopy fault on threadgroup memory',
      section({ 'threadgroup-memory': { status: 'pass', fault: 'stale' } }),
      `${at}probes.threadgroup-memory.fault`,
      'is not a known field',
    ],
    [
      "a simulated fault (the simulation's extension) on a NoCopy probe",
      section({ 'nocopy-mmap': { status: 'wrong-result', fault: 'answered-limit' } }),
      `${at}probes.nocopy-mmap.fault`,
      'must be one of stale, zero-length',
    ],
    [
      'a fault on a probe that records none',
      section({ bfloat: { status: 'timeout', fault: 'compile' } }),
      `${at}probes.bfloat.fault`,
      'is not a known field',
    ],
    [
      'a NoCopy wrong-result without its fault',
      section({ 'nocopy-mmap': { status: 'wrong-result' } }),
      `${at}probes.nocopy-mmap.fault`,
      'is missing: a wrong-result says which (stale or zero-length)',
    ],
    [
      'a failed size equal to the proven one',
      section({
        'threadgroup-memory': { status: 'pass', provenThreadgroupMemory: 32768, failedThreadgroupMemory: 32768 },
      }),
      `${at}probes.threadgroup-memory.failedThreadgroupMemory`,
      'must be larger than provenThreadgroupMemory',
    ],
    [
      'a buffer length below zero',
      section({ 'nocopy-mmap': { status: 'pass', bufferLength: -1 } }),
      `${at}probes.nocopy-mmap.bufferLength`,
      'must be an integer ≥ 0',
    ],
    [
      'provenance naming no source',
      section({}, 'hearsay'),
      `${at}provenance`,
      'must be a key of "sources" or "assumed"',
    ],
    ['provenance that is a number', section({}, 5), `${at}provenance`, 'must be a key of "sources" or "assumed"'],
    ['probes as a list', { provenance: 'cua-logs', probes: [] }, `${at}probes`, 'must be an object'],
  ])('rejects %s', (_what, doctor, field, says) => {
    expect(thrown(() => validateSnapshot(withDoctor(doctor), 'test'))).toEqual(rejection(field, says));
  });

  it('accepts the edges: an error of 0, a failed size one byte above the proven, "assumed" provenance, a buffer of 0', () => {
    const doctor = section(
      {
        bfloat: { status: 'pass', maxAbsError: 0 },
        'threadgroup-memory': {
          status: 'fail',
          provenThreadgroupMemory: 32768,
          failedThreadgroupMemory: 32769,
          detail: 'one line',
        },
        'nocopy-mmap': { status: 'wrong-result', fault: 'stale', bufferLength: 0 },
        'residency-set': { status: 'pass', detail: 'created' },
      },
      'assumed',
    );
    expect(validateSnapshot(withDoctor(doctor), 'test').devices[0]!.doctor).toEqual(doctor);
  });

  it('doctor provenance is a string even where a source key reads as the same number', () => {
    const s = changed((x) => {
      x.sources['5'] = 'a source keyed by a number';
      x.devices[0].doctor = {
        provenance: 5,
        probes: Object.fromEntries(DOCTOR_PROBE_IDS.map((id) => [id, { status: 'not-recorded' }])),
      };
    });
    expect(thrown(() => validateSnapshot(s, 'test'))).toEqual(
      rejection('devices[0].doctor.provenance', 'must be a key of "sources" or "assumed"'),
    );
  });
});

describe('a snapshot from a probe report', () => {
  const meta = {
    id: 'my-mac',
    title: 'My Mac',
    recorded: '2026-02-03',
    describe: 'metal-cap-shim snapshot, by hand',
    where: 'here',
  };

  it.each([
    ['M1 Ultra, macOS 26.6.1', 'm1-ultra-macos-26.6.1'],
    ['  --Leading and trailing--  ', 'leading-and-trailing'],
    ['...dots first', 'dots-first'],
    ['keep.dots-and--dashes', 'keep.dots-and--dashes'],
    ['ends.with.dash-', 'ends.with.dash'],
    ['Ünïcödé', 'n-c-d'],
    ['!!!', 'snapshot'],
    ['', 'snapshot'],
  ])('snapshotId(%j) is %j', (text, id) => {
    expect(snapshotId(text)).toBe(id);
  });

  it('records every device and host value, each with its provenance; the default device is the report’s', () => {
    const recorded = loadSnapshot('macbookpro16-intel-amd-two-gpus');
    const snap = snapshotFromReport(reportFromSnapshot(recorded, { allDevices: true }), meta);
    // The values are the recorded ones (what the doctor section adds is not a report's).
    const values = (d: SnapshotDevice) => {
      const { provenance: _p, doctor: _d, ...rest } = d;
      return rest;
    };
    expect(snap.devices.map(values)).toEqual(recorded.devices.map(values));
    expect(snap.devices.map((d) => d.provenance)).toMatchInlineSnapshot(`
      [
        {
          "architecture": "unrecorded",
          "className": "recording",
          "families": "recording",
          "hasUnifiedMemory": "recording",
          "location": "recording",
          "maxBufferLength": "recording",
          "maxThreadgroupMemoryLength": "recording",
          "maxThreadsPerThreadgroup": "recording",
          "name": "recording",
          "recommendedMaxWorkingSetSize": "recording",
          "registryId": "recording",
        },
        {
          "architecture": "unrecorded",
          "className": "recording",
          "families": "recording",
          "hasUnifiedMemory": "recording",
          "location": "recording",
          "maxBufferLength": "recording",
          "maxThreadgroupMemoryLength": "recording",
          "maxThreadsPerThreadgroup": "recording",
          "name": "recording",
          "recommendedMaxWorkingSetSize": "recording",
          "registryId": "recording",
        },
      ]
    `);
    expect({ ...snap, devices: null }).toEqual({
      schema: 'metal-cap-shim/snapshot@1',
      id: 'my-mac',
      title: 'My Mac',
      recorded: '2026-02-03',
      sources: { recording: 'metal-cap-shim snapshot, by hand' },
      host: {
        platform: 'darwin',
        osVersion: '13.6.9',
        osBuild: null,
        model: 'MacBookPro16,1',
        isVirtualMachine: false,
        arch: 'x86_64',
        memoryBytes: null,
        translated: false,
        cpuBrand: null,
        chip: null,
        provenance: {
          platform: 'recording',
          osVersion: 'recording',
          osBuild: 'unrecorded',
          model: 'recording',
          isVirtualMachine: 'recording',
          arch: 'recording',
          memoryBytes: 'unrecorded',
          translated: 'recording',
          cpuBrand: 'unrecorded',
          chip: 'unrecorded',
        },
      },
      defaultDevice: 1,
      devices: null,
    });
  });

  it('a report listing no default device records device 0 as the default', () => {
    const report = reportFromSnapshot(loadSnapshot('macbookpro16-intel-amd-two-gpus'), { allDevices: true });
    report.devices[1]!.isDefault = false;
    expect(snapshotFromReport(report, meta).defaultDevice).toBe(0);
  });

  it('a report without devices, or a device without an answer other than architecture, is no snapshot', () => {
    expect(thrown(() => snapshotFromReport(unsupportedReport('unsupported-platform', 'Linux'), meta))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: 'supported',
      message:
        'here: the report has no devices (supported: false, unsupported-platform), so it cannot stand for a machine',
    });
    const report = reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal'));
    report.devices[0]!.maxBufferLength = null;
    report.devices[0]!.families.apple7 = null;
    report.devices[0]!.architecture = null;
    expect(thrown(() => snapshotFromReport(report, meta))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: 'devices[0].maxBufferLength',
      message:
        'here: device 0 has no answer for maxBufferLength, families.apple7 (the OS could not answer), and a snapshot needs every value but architecture',
    });
    const onlyFamily = reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal'));
    onlyFamily.devices[0]!.families.metal4 = null;
    expect(thrown(() => snapshotFromReport(onlyFamily, meta)).field).toBe('devices[0].families.metal4');
  });

  it('loadSnapshot reads a probe report file as a snapshot dated by the file', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-'));
    const named = path.join(dir, 'probe.json');
    writeFileSync(named, JSON.stringify(reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal'))));
    utimesSync(named, new Date('2026-03-04T12:00:00Z'), new Date('2026-03-04T12:00:00Z'));
    const fromNamed = loadSnapshot(named);
    expect([fromNamed.id, fromNamed.title, fromNamed.recorded, fromNamed.sources]).toEqual([
      'm1-ultra-bare-metal',
      'probe report probe.json',
      '2026-03-04',
      { recording: `metal-cap-shim probe report ${named} (date: the file's modification time)` },
    ]);
    // A live report names no snapshot: the file name gives the id.
    const live = path.join(dir, 'My Mac Studio.json');
    writeFileSync(
      live,
      JSON.stringify({ ...reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal')), snapshot: null, source: 'live' }),
    );
    expect(loadSnapshot(live).id).toBe('my-mac-studio');
  });

  it('a probe report file lists at most 64 devices, each an object with its families, and a host when supported', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-'));
    const base = reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal'));
    const device = base.devices[0]!;
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ ...device, index: i, isDefault: i === 0 }));
    const load = (name: string, change: Record<string, unknown>) => {
      const file = path.join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify({ ...base, ...change }));
      return () => loadSnapshot(file);
    };
    const refused = (name: string, field: string, says: string) => ({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field,
      message: `${path.join(dir, `${name}.json`)}: ${field} ${says}; see snapshots/README.md for the format`,
    });
    expect(load('at-limit', { devices: many(64) })().devices).toHaveLength(64);
    expect([
      thrown(load('over-limit', { devices: many(65) })),
      thrown(load('no-host', { host: null })),
      thrown(load('device-text', { devices: ['gpu'] })),
      thrown(load('no-families', { devices: [{ ...device, families: null }] })),
      thrown(load('unsupported', { supported: false, reason: 'no-device', host: null, devices: [] })),
    ]).toEqual([
      refused('over-limit', 'devices', 'must list at most 64 devices, not 65'),
      refused('no-host', 'host', 'must be an object'),
      refused('device-text', 'devices[0]', 'must be an object'),
      refused('no-families', 'devices[0].families', 'must be an object'),
      {
        name: 'InvalidSnapshotError',
        code: 'ERR_INVALID_SNAPSHOT',
        field: 'supported',
        message: `${path.join(dir, 'unsupported.json')}: the report has no devices (supported: false, no-device), so it cannot stand for a machine`,
      },
    ]);
  });

  it.each<[string, Record<string, unknown>]>([
    ['supported missing', { supported: undefined }],
    ['devices not a list', { devices: {} }],
    ['platform not text', { platform: 5 }],
    ['host missing', { host: undefined }],
  ])('a file with the report tag but %s is refused', (_what, change) => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-')), 'broken-report.json');
    writeFileSync(file, JSON.stringify({ ...reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal')), ...change }));
    expect(thrown(() => loadSnapshot(file))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: null,
      message: `${file}: says it is a probe report (metal-cap-shim/report@1) but lacks supported, platform, host or devices`,
    });
  });
});

describe('a recorded threadgroup size is proven up to what the device can prove', () => {
  const withThreadgroup = (id: string, proven: number | null, accepted: number | null) => {
    const s = structuredClone(loadSnapshot(id)) as unknown as {
      sources: Record<string, string>;
      devices: { doctor?: unknown }[];
    };
    const probes = Object.fromEntries(DOCTOR_PROBE_IDS.map((p) => [p, { status: 'not-recorded' }]));
    probes['threadgroup-memory'] = {
      status: 'pass',
      detail: 'recorded',
      ...(proven === null ? {} : { provenThreadgroupMemory: proven }),
      ...(accepted === null ? {} : { acceptedThreadgroupMemory: accepted }),
    } as never;
    s.devices[1 % s.devices.length]!.doctor = { provenance: 'assumed', probes };
    return s;
  };

  it('an Intel Mac’s AMD GPU (65536 stock) proves 65536; above that a size is only accepted', () => {
    expect(() =>
      validateSnapshot(withThreadgroup('macbookpro16-intel-amd-two-gpus', 65536, null), 'test'),
    ).not.toThrow();
    expectInvalid(
      withThreadgroup('macbookpro16-intel-amd-two-gpus', 65536, 65536),
      'devices[1].doctor.probes.threadgroup-memory.acceptedThreadgroupMemory',
    );
  });

  it('an Apple GPU (a guest’s paravirtual device) proves at most 32768', () => {
    expectInvalid(
      withThreadgroup('vz-guest-m1-ultra-tahoe-stock', 65536, null),
      'devices[0].doctor.probes.threadgroup-memory.provenThreadgroupMemory',
    );
    expect(() =>
      validateSnapshot(withThreadgroup('vz-guest-m1-ultra-tahoe-stock', 32768, 65536), 'test'),
    ).not.toThrow();
  });
});
