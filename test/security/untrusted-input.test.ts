// Untrusted input stays inert: other people's strings print as text (never as terminal commands or Markdown), every
// public entry point throws only the package's typed errors (a BigInt, a throwing getter, a Proxy), and an error
// quotes at most 200 characters of what it was given.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  applyProfile,
  audit,
  buildMatrix,
  doctor,
  fieldReport,
  InvalidOptionsError,
  type InvalidProfileError,
  InvalidReportError,
  InvalidSnapshotError,
  matrixMarkdown,
  MetalCapShimError,
  predictGates,
  probe,
  recordSnapshot,
  resolveProfile,
  status,
} from '../../lib/index.js';
import * as tables from '../../lib/tables.js';
import { ollamaLlamaCpp, ollamaReleaseRow } from '../../lib/engines/ollama.js';
import { doctorCacheDir, probeSnapshot, resolveAutoProfile, validateSnapshot } from '../../lib/tables.js';
import { root, runCli } from '../support/helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-untrusted-'));
const STOCK = 'vz-guest-m1-ultra-tahoe-stock';
const NO_SIM = { METAL_CAP_SHIM_SIM_SNAPSHOT: undefined };
const stockSnapshot = () =>
  JSON.parse(readFileSync(path.join(root, 'snapshots', `${STOCK}.json`), 'utf8')) as Record<string, any>;
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/;

/** A snapshot file whose first device is named `name`. */
function snapshotNamed(name: string): string {
  const snap = stockSnapshot();
  snap.devices[0].name = name;
  const file = path.join(dir, `named-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(snap));
  return file;
}

/** What a call throws (undefined when it does not). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

/** What `fn` threw or its Promise rejected with (the entry points that run doctor return Promises). */
async function settled(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

function described(e: unknown): { name: string; code: string; field: string | null } {
  if (!(e instanceof MetalCapShimError)) throw new Error(`expected a MetalCapShimError, got ${String(e)}`);
  const field = e instanceof InvalidOptionsError ? e.option : 'field' in e ? (e.field as string | null) : null;
  return { name: e.constructor.name, code: e.code, field };
}

/** The class, code and field of a thrown package error; anything else fails the test with what it was. */
function typed(fn: () => unknown): { name: string; code: string; field: string | null } {
  return described(thrown(fn));
}

describe('terminal output: control characters in other people’s strings are shown, not obeyed', () => {
  const EVIL = 'GPU\u001b[31m red\r\u202eevil\u0007';
  const SHOWN = 'GPU\\u001b[31m red\\r\\u202eevil\\u0007';

  it('probe --snapshot prints a device name with ESC, CR, BEL and a bidi override as escapes', () => {
    const r = runCli(['probe', '--snapshot', snapshotNamed(EVIL)]);
    expect(r.status).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain(`Device 0 (default): ${SHOWN} [AppleParavirtDevice]`);
  });

  it('probe --json keeps the name exact', () => {
    const r = runCli(['probe', '--json', '--snapshot', snapshotNamed(EVIL)]);
    expect((JSON.parse(r.stdout) as { devices: { name: string }[] }).devices[0]!.name).toBe(EVIL);
  });

  it('probe --short, audit and doctor escape it too', () => {
    const file = snapshotNamed(EVIL);
    for (const args of [['probe', '--short'], ['audit'], ['doctor']]) {
      const r = runCli([...args, '--snapshot', file]);
      expect(r.stdout, args.join(' ')).not.toMatch(RAW_CONTROL);
      expect(r.stdout, args.join(' ')).toContain(SHOWN);
    }
  });

  it('report escapes a --host-label with a newline and ESC', () => {
    const r = runCli(['report', '--snapshot', STOCK, '--host-label', 'M1\nFAKE LINE\u001b[2J']);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain('Physical host: M1\\nFAKE LINE\\u001b[2J\n');
  });

  it('an error line escapes the input it quotes, and its JSON form keeps it exact', () => {
    const r = runCli(['probe', '--json', '--snapshot', 'x\u001b[2J\ny']);
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(
      "metal-cap-shim: ERR_SNAPSHOT_NOT_FOUND: no bundled snapshot named 'x\\u001b[2J\\ny'; bundled snapshots: " +
        'github-macos-14-arm64-runner, m1-ultra-bare-metal, macbookpro16-intel-amd-two-gpus, vz-guest-m1-ultra-tahoe-stock (or pass a path to a .json file)',
    );
    expect((JSON.parse(r.stdout) as { error: { message: string } }).error.message).toContain("named 'x\u001b[2J\ny'");
  });
});

describe('matrix: Markdown from other people’s reports stays one cell', () => {
  it('a --host-label with | and a newline neither adds a column nor ends the row', () => {
    const file = path.join(dir, 'piped.json');
    writeFileSync(
      file,
      runCli(['report', '--json', '--snapshot', STOCK, '--host-label', 'a | b\n| c *d* [e](f) <img>']).stdout,
    );
    const r = runCli(['matrix', file]);
    expect(r.status).toBe(0);
    // The table's lines (a legend may follow it, after an empty line).
    const lines = r.stdout.trimEnd().split('\n\n')[0]!.split('\n');
    expect(lines).toHaveLength(3);
    expect(
      lines[2]!.startsWith('| a \\| b\\\\n\\| c \\*d\\* \\[e\\](f) \\<img\\> | macOS 26.5.2 (VirtualMac2,1) | '),
    ).toBe(true);
    expect(lines[2]!.split(/(?<!\\)\|/)).toHaveLength(lines[0]!.split('|').length);
  });

  it('matrixMarkdown takes a matrix parsed back from matrix --json and prints what matrix prints', () => {
    const file = path.join(dir, 'round-trip.json');
    writeFileSync(file, runCli(['report', '--json', '--snapshot', STOCK, '--host-label', 'a | b']).stdout);
    const parsed = JSON.parse(runCli(['matrix', '--json', file]).stdout) as Parameters<typeof matrixMarkdown>[0];
    expect(matrixMarkdown(parsed)).toBe(runCli(['matrix', file]).stdout.trimEnd());
  });

  it.each([
    ['null', null, 'matrix', 'the matrix must be an object, got null'],
    [
      'profiles holding a BigInt',
      { profiles: [1n], rows: [] },
      'profiles[0]',
      'profiles[0] must be a string, got bigint 1n',
    ],
    ['no rows', { profiles: [] }, 'rows', 'rows must be an array, got undefined'],
    [
      'a row without cells',
      { profiles: ['apple7'], rows: [{ host: 'h', guestOs: 'g', doctor: null }] },
      'rows[0].cells',
      'rows[0].cells must be an object, got undefined',
    ],
    [
      'a negative count',
      {
        profiles: ['apple7'],
        rows: [
          {
            host: 'h',
            guestOs: 'g',
            cells: { apple7: { reports: -1, verified: 0, refused: 0, offline: 0, gatesOn: [] } },
            doctor: null,
          },
        ],
      },
      'rows[0].cells.apple7.reports',
      'rows[0].cells.apple7.reports must be a whole number ≥ 0, got number -1',
    ],
    [
      'a fault without its count',
      {
        profiles: [],
        rows: [
          {
            host: 'h',
            guestOs: 'g',
            cells: {},
            doctor: { reports: 1, measured: 0, provenProfile: null, faults: [{ fault: 'x' }] },
          },
        ],
      },
      'rows[0].doctor.faults[0].reports',
      'rows[0].doctor.faults[0].reports must be a whole number ≥ 0, got undefined',
    ],
    [
      'a doctor column without its proven profile',
      {
        profiles: [],
        rows: [{ host: 'h', guestOs: 'g', cells: {}, doctor: { reports: 1, measured: 1, faults: [] } }],
      },
      'rows[0].doctor.provenProfile',
      'rows[0].doctor.provenProfile must be a profile or null, got undefined',
    ],
    [
      'a proven profile that is none',
      {
        profiles: [],
        rows: [
          {
            host: 'h',
            guestOs: 'g',
            cells: {},
            doctor: { reports: 1, measured: 1, provenProfile: { appleFamilyMax: 'x' }, faults: [] },
          },
        ],
      },
      'rows[0].doctor.provenProfile',
      'rows[0].doctor.provenProfile is not a profile (appleFamilyMax must be an MTLGPUFamily value from 1001 (Apple1) to 1010 (Apple10), or "host" (the host chip\'s true family), got "x")',
    ],
    [
      'a throwing getter',
      Object.defineProperty({}, 'profiles', {
        enumerable: true,
        get() {
          throw new Error('no');
        },
      }),
      'profiles',
      'profiles cannot be read (no)',
    ],
  ])('matrixMarkdown(%s): an InvalidOptionsError naming the field', (_name, value, field, problem) => {
    const e = thrown(() => matrixMarkdown(value as never));
    expect(typed(() => matrixMarkdown(value as never))).toEqual({
      name: 'InvalidOptionsError',
      code: 'ERR_INVALID_OPTIONS',
      field,
    });
    expect((e as Error).message).toBe(
      `matrixMarkdown() takes what buildMatrix() returned (or that JSON parsed back); ${problem}`,
    );
  });

  it('matrix --json keeps the label exact', () => {
    const file = path.join(dir, 'piped-json.json');
    writeFileSync(file, runCli(['report', '--json', '--snapshot', STOCK, '--host-label', 'a | b\nc']).stdout);
    const m = JSON.parse(runCli(['matrix', '--json', file]).stdout) as { rows: { host: string }[] };
    expect(m.rows[0]!.host).toBe('a | b\nc');
  });
});

describe('every public entry point throws only typed errors, naming the field', () => {
  const bigint = { appleFamilyMax: 1009n };
  const getter = Object.defineProperty({}, 'appleFamilyMax', {
    enumerable: true,
    get() {
      throw new TypeError('getter says no');
    },
  });
  const trap = new Proxy(
    {},
    {
      ownKeys() {
        throw new TypeError('trap says no');
      },
    },
  );

  it.each([
    ['applyProfile', () => applyProfile(bigint as never)],
    ['resolveProfile', () => resolveProfile(bigint)],
    ['audit({ profile })', () => audit({ profile: bigint as never, snapshot: STOCK })],
    ['doctor({ profile })', () => doctor({ profile: bigint as never, snapshot: STOCK })],
    ['fieldReport({ profile })', () => fieldReport({ profile: bigint as never, snapshot: STOCK })],
  ])('%s with a BigInt: InvalidProfileError on appleFamilyMax, quoting 1009n', async (_name, call) => {
    const e = await settled(call);
    expect(described(e)).toEqual({ name: 'InvalidProfileError', code: 'ERR_INVALID_PROFILE', field: 'appleFamilyMax' });
    expect((e as Error).message).toBe(
      'appleFamilyMax must be an MTLGPUFamily value from 1001 (Apple1) to 1010 (Apple10), or "host" (the host chip\'s true family), got 1009n',
    );
  });

  it('a throwing getter in a profile is that field’s error', () => {
    expect(typed(() => resolveProfile(getter))).toEqual({
      name: 'InvalidProfileError',
      code: 'ERR_INVALID_PROFILE',
      field: 'appleFamilyMax',
    });
    expect((thrown(() => applyProfile(getter)) as Error).message).toBe(
      "the profile's appleFamilyMax cannot be read (getter says no)",
    );
  });

  it('a Proxy whose traps throw is the whole profile’s error', () => {
    expect(typed(() => resolveProfile(trap))).toEqual({
      name: 'InvalidProfileError',
      code: 'ERR_INVALID_PROFILE',
      field: null,
    });
    expect((thrown(() => resolveProfile(trap)) as Error).message).toBe('the profile cannot be read (trap says no)');
  });

  it('a getter read twice cannot pass the check with one value and be used with another', () => {
    let reads = 0;
    const shifty = Object.defineProperty({}, 'appleFamilyMax', {
      enumerable: true,
      get: () => (++reads === 1 ? 1007 : 5000),
    });
    expect(resolveProfile(shifty).appleFamilyMax).toBe(1007);
    expect(reads).toBe(1);
  });

  it.each([
    [
      'probe',
      () =>
        probe(
          Object.defineProperty({}, 'allDevices', {
            enumerable: true,
            get: () => {
              throw new Error('x');
            },
          }) as never,
        ),
      'allDevices',
    ],
    ['status', () => status(trap as never), 'options'],
    ['probeSnapshot', () => probeSnapshot(STOCK, trap as never), 'options'],
    [
      'recordSnapshot',
      () =>
        recordSnapshot(
          Object.defineProperty({}, 'label', {
            enumerable: true,
            get: () => {
              throw new Error('x');
            },
          }) as never,
        ),
      'label',
    ],
    [
      'audit({ engines })',
      () =>
        audit({
          snapshot: STOCK,
          engines: new Proxy([], {
            get() {
              throw new Error('x');
            },
          }) as never,
        }),
      'engines',
    ],
    [
      'audit({ env }) getter',
      () =>
        audit({
          snapshot: STOCK,
          env: Object.defineProperty({}, 'HOME', {
            enumerable: true,
            get: () => {
              throw new Error('x');
            },
          }) as never,
        }),
      'env.HOME',
    ],
    [
      'doctor({ probes })',
      () =>
        doctor({
          snapshot: STOCK,
          probes: new Proxy(['bfloat'], {
            get() {
              throw new Error('x');
            },
          }) as never,
        }),
      'probes',
    ],
    ['resolveAutoProfile', () => resolveAutoProfile(trap as never), 'options'],
    ['doctorCacheDir', () => doctorCacheDir(trap as never, 'linux'), 'env'],
    [
      'predictGates',
      () =>
        predictGates(
          Object.defineProperty({}, 'families', {
            enumerable: true,
            get: () => {
              throw new Error('x');
            },
          }) as never,
          'llama.cpp',
        ),
      'device.families',
    ],
  ])('%s: an InvalidOptionsError naming the option', async (_name, call, option) => {
    expect(described(await settled(call))).toEqual({
      name: 'InvalidOptionsError',
      code: 'ERR_INVALID_OPTIONS',
      field: option,
    });
  });

  it('an options object whose traps throw: the message names the function', () => {
    expect((thrown(() => resolveAutoProfile(trap as never)) as Error).message).toBe(
      'resolveAutoProfile() options cannot be read (trap says no)',
    );
  });

  it('buildMatrix: a BigInt or a throwing getter inside a report is an InvalidReportError naming where', () => {
    const report = JSON.parse(runCli(['report', '--json', '--snapshot', STOCK]).stdout) as Record<string, unknown>;
    expect(typed(() => buildMatrix([{ where: 'a.json', report: { ...report, extra: 1n } }]))).toEqual({
      name: 'InvalidReportError',
      code: 'ERR_INVALID_REPORT',
      field: '[0].report.extra',
    });
    const audit = Object.defineProperty({}, 'mode', {
      enumerable: true,
      get: () => {
        throw new Error('x');
      },
    });
    expect(typed(() => buildMatrix([{ ...report, audit } as never]))).toEqual({
      name: 'InvalidReportError',
      code: 'ERR_INVALID_REPORT',
      field: '[0].audit.mode',
    });
  });

  it('validateSnapshot: a BigInt, a cycle, or a trap is an InvalidSnapshotError naming the field', () => {
    const snap = stockSnapshot();
    expect(typed(() => validateSnapshot({ ...snap, defaultDevice: 0n }))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: 'defaultDevice',
    });
    const cyclic = { ...snap, host: { ...snap.host } };
    (cyclic.host as Record<string, unknown>).self = cyclic;
    expect(typed(() => validateSnapshot(cyclic))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: 'host.self',
    });
    expect(typed(() => validateSnapshot(trap))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: '(root)',
    });
  });

  it('a symbol as a profile value is quoted, not a TypeError from a template string', () => {
    expect((thrown(() => resolveProfile({ mode: Symbol('odd') as never })) as Error).message).toBe(
      "mode must be 'raise' or 'exact', got Symbol(odd)",
    );
  });
});

describe('an error quotes at most 200 characters of its input', () => {
  const long = 'x'.repeat(100_000);

  it('an unknown profile name of 100 000 characters', () => {
    const e = thrown(() => resolveProfile(long)) as InvalidProfileError;
    expect(e.message).toBe(
      `unknown profile '${'x'.repeat(200)}… (100000 characters)'; built-in profiles are host-family, cua-release, apple9-hw-tg, apple7, mask-apple5, host, or pass a JSON object`,
    );
  });

  it('a value of 100 000 characters', () => {
    const e = thrown(() => resolveProfile({ mode: long as never })) as InvalidProfileError;
    expect(e.message).toBe(`mode must be 'raise' or 'exact', got "${'x'.repeat(200)}"… (100000 characters)`);
  });

  it('a key of 100 000 characters: message and field', () => {
    const e = thrown(() => resolveProfile({ [long]: 1 } as never)) as InvalidProfileError;
    expect(e.message.length).toBeLessThan(400);
    expect(e.field!.length).toBeLessThanOrEqual(400);
  });

  it('a JSON profile of 100 000 characters that does not parse', () => {
    const e = thrown(() => resolveProfile(`{"mode": "${long}`)) as InvalidProfileError;
    expect(e.message).toBe(
      'the profile is not JSON: it ends in the middle of a value (line 1, column 100011); pass a built-in name or a JSON object',
    );
  });

  it('on the command line: one short line on stderr for a 100 000-character --profile', () => {
    const r = runCli(['audit', '--snapshot', STOCK, '--profile', long], NO_SIM);
    expect(r.status).toBe(2);
    expect(r.stderr.length).toBeLessThan(600);
    expect(r.stderr).toMatch(/^metal-cap-shim: ERR_INVALID_PROFILE: unknown profile 'x{200}… \(100000 characters\)'/);
  });

  it('whatever a message quotes, the error keeps it under 2 000 characters, start and end', () => {
    const e = new InvalidSnapshotError('f'.repeat(5000), `start ${'m'.repeat(10_000)} end`);
    expect(e.message.length).toBeLessThanOrEqual(2100);
    expect(e.message.startsWith('start ')).toBe(true);
    expect(e.message.endsWith(' end')).toBe(true);
    expect(e.field!.length).toBeLessThanOrEqual(400);
  });
});

describe('errors still name what they must', () => {
  it('InvalidReportError and InvalidOptionsError keep short fields as they are', () => {
    expect(new InvalidReportError('audit.mode', 'm').field).toBe('audit.mode');
    expect(new InvalidOptionsError('allDevices', 'm').option).toBe('allDevices');
  });
});

describe('metal-cap-shim/tables: each helper checks its arguments as the root does', () => {
  const trap = new Proxy(
    {},
    {
      ownKeys() {
        throw new TypeError('trap says no');
      },
    },
  );
  const device = probeSnapshot(STOCK).devices[0]!;
  const options = (field: string) => ({ name: 'InvalidOptionsError', code: 'ERR_INVALID_OPTIONS', field });
  const profile = { name: 'InvalidProfileError', code: 'ERR_INVALID_PROFILE', field: null };
  const snapshot = { name: 'InvalidSnapshotError', code: 'ERR_INVALID_SNAPSHOT', field: '(root)' };

  it.each<[string, () => unknown, ReturnType<typeof options> | typeof profile | typeof snapshot]>([
    ['chipFromBrand(5)', () => tables.chipFromBrand(5 as never), options('brand')],
    ['chipFromBrand(a trap)', () => tables.chipFromBrand(trap as never), options('brand')],
    ['chipFamily({})', () => tables.chipFamily({} as never), options('chip')],
    ['bindToHost(null, null)', () => tables.bindToHost(null as never, null), profile],
    [
      'bindToHost with a host that is a string',
      () => tables.bindToHost(resolveProfile('host'), 'M1' as never),
      options('host'),
    ],
    [
      'bindToHost with a chip that is a number',
      () => tables.bindToHost(resolveProfile('host'), { chip: 1 } as never),
      options('host'),
    ],
    ['patchedName(null)', () => tables.patchedName(null as never), profile],
    [
      'predictPatchedDevice(null, …)',
      () => tables.predictPatchedDevice(null as never, resolveProfile('apple7')),
      options('stock'),
    ],
    [
      'predictPatchedDevice(a trap, …)',
      () => tables.predictPatchedDevice(trap as never, resolveProfile('apple7')),
      options('stock'),
    ],
    ['diffAnswers(null, null)', () => tables.diffAnswers(null as never, null as never), options('before')],
    [
      'diffAnswers with a bad device in after',
      () => tables.diffAnswers([device], [device, 5] as never),
      options('after[1]'),
    ],
    ['gateValues(null)', () => tables.gateValues(null as never), options('prediction')],
    [
      'gateValues of flags without values',
      () => tables.gateValues({ engine: 'llama.cpp', flags: { a: 1 } } as never),
      options('prediction'),
    ],
    ['gateValues of MLX without its flags', () => tables.gateValues({ engine: 'mlx' } as never), options('prediction')],
    ['reportFromSnapshot(null)', () => tables.reportFromSnapshot(null as never), snapshot],
    ['ollamaRelease(5)', () => tables.ollamaRelease(5 as never), options('release')],
    ['ollamaRelease(a trap)', () => tables.ollamaRelease(trap as never), options('release')],
    ['ollamaRelease of a release the table does not cover', () => tables.ollamaRelease('v0.5.7'), options('release')],
    ['reportFromSnapshot(a trap)', () => tables.reportFromSnapshot(trap as never), snapshot],
    [
      'reportFromSnapshot with a bad option',
      () => tables.reportFromSnapshot(tables.loadSnapshot(STOCK), { allDevices: 1 } as never),
      options('allDevices'),
    ],
    ['validateSnapshot with a name that is a number', () => tables.validateSnapshot({}, 5 as never), options('name')],
    [
      'validateSnapshot with maxDevices 0',
      () => tables.validateSnapshot({}, 'x', { maxDevices: 0 }),
      options('maxDevices'),
    ],
    [
      'validateSnapshot with maxDevices 1.5',
      () => tables.validateSnapshot({}, 'x', { maxDevices: 1.5 }),
      options('maxDevices'),
    ],
  ])('%s', (_what, call, error) => {
    expect(typed(call)).toEqual(error);
  });

  it('the messages say what was expected and what came', () => {
    expect((thrown(() => tables.chipFromBrand(5 as never)) as Error).message).toBe(
      'chipFromBrand() takes brand as a string or null, got number 5',
    );
    expect((thrown(() => tables.diffAnswers([device], [device, 5] as never)) as Error).message).toBe(
      'after[1] must be a DeviceReport object with a "families" object; got number 5',
    );
    expect((thrown(() => tables.gateValues({ engine: 'llama.cpp', flags: { a: 1 } } as never)) as Error).message).toBe(
      'gateValues() takes what predictGates() returned (a has no value), got an object',
    );
  });

  it('good arguments give what the unchecked helpers give', () => {
    const bound = tables.bindToHost(resolveProfile('host'), probeSnapshot('github-macos-14-arm64-runner').host);
    expect(bound).toEqual({
      ok: true,
      profile: {
        ...resolveProfile('host'),
        appleFamilyMax: 1007,
        deviceName: 'Apple M1',
        mlxArchitecture: 'applegpu_g13g',
      },
    });
    expect([
      tables.chipFromBrand('Apple M1 (Virtual)'),
      tables.chipFamily('Apple M1'),
      tables.chipFromBrand(null),
    ]).toEqual(['Apple M1', 1007, null]);
    expect(tables.reportFromSnapshot(tables.loadSnapshot(STOCK))).toEqual(probeSnapshot(STOCK));
    expect(tables.validateSnapshot(tables.loadSnapshot(STOCK), 'x', { maxDevices: 1 })).toEqual(
      tables.loadSnapshot(STOCK),
    );
    const patched = tables.predictPatchedDevice(device, resolveProfile('apple7'));
    expect(tables.diffAnswers([device], [patched]).map((c) => c.field)).toEqual(['families.apple6', 'families.apple7']);
    expect(tables.ollamaRelease('0.24.0')).toEqual(ollamaLlamaCpp(ollamaReleaseRow('v0.24.0')!));
  });
});

describe('fieldReport({ bench }) reads its argument as a file is read: once, bounded, into plain data', () => {
  const call = (bench: unknown) =>
    settled(() => fieldReport({ snapshot: STOCK, doctor: false, bench: bench as never }));

  it('a sparse array claiming 2^32 − 1 results is refused unread', async () => {
    const started = Date.now();
    const e = await call(new Array(2 ** 32 - 1));
    expect(described(e)).toEqual({ name: 'InvalidOptionsError', code: 'ERR_INVALID_OPTIONS', field: 'bench' });
    expect((e as Error).message).toBe(
      "fieldReport() option 'bench' has 4294967295 elements, more than the 100000 any input of metal-cap-shim can need",
    );
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('a Proxy whose trap throws, a BigInt and a cycle are typed errors naming the field', async () => {
    const trap = new Proxy([{}], {
      get(target, key) {
        if (key === '0') throw new Error('trap');
        return Reflect.get(target, key);
      },
    });
    const cycle: Record<string, unknown>[] = [{}];
    cycle[0]!.self = cycle;
    const outcomes = await Promise.all([call(trap), call([{ n: 1n }]), call(cycle)]);
    expect(outcomes.map((e) => [described(e).field, (e as Error).message])).toEqual([
      ['bench[0]', "fieldReport() option 'bench[0]' cannot be read (trap)"],
      ['bench[0].n', "fieldReport() option 'bench[0].n' is a BigInt, which JSON cannot hold"],
      ['bench[0].self', "fieldReport() option 'bench[0].self' contains itself (a cycle)"],
    ]);
  });
});
