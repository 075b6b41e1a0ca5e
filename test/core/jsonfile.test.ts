// The JSON files a user hands the CLI: a UTF-8 byte order mark is no error, a syntax error says its line and column
// on every Node version, the wrong kind of JSON is named as what it is, a field report is a snapshot too, and `-`
// reads standard input wherever a file is read.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { jsonSyntaxError, parseJsonText, readJsonFile, schemaProblem } from '../../lib/core/jsonfile.js';
import type { FieldReport, Matrix } from '../../lib/audit/field-report.js';
import type { DoctorReport } from '../../lib/doctor/index.js';
import { loadSnapshot, validateSnapshot } from '../../lib/device/snapshots.js';
import { InvalidSnapshotError } from '../../lib/core/errors.js';
import { cli, describeSim, requireSimBuild, root, runCli } from '../support/helpers.js';
import { spawnSync } from 'node:child_process';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-json-inputs-'));
const STOCK = 'vz-guest-m1-ultra-tahoe-stock';
const BOM = '\uFEFF';
const write = (name: string, text: string) => {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
};
const bundled = (name: string) => readFileSync(path.join(root, 'snapshots', `${name}.json`), 'utf8');

describe('a binary file is one that is not UTF-8 (or holds a NUL); U+FFFD written as text is text', () => {
  const BINARY = { ok: false, problem: 'is not a text file (it holds binary data), so it is not JSON' };
  const bytes = (name: string, ...parts: (string | number[])[]) => {
    const file = path.join(dir, name);
    writeFileSync(file, Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p)))));
    return file;
  };

  it('a file: U+FFFD (a model token for part of a character) reads; an invalid byte or a NUL is binary', () => {
    expect(readJsonFile(bytes('fffd.json', '{"t": "a\uFFFDb"}'))).toEqual({
      ok: true,
      value: { t: 'a\uFFFDb' },
      modified: expect.any(Date),
    });
    expect(readJsonFile(bytes('invalid.json', '{"t": "', [0xff], '"}'))).toEqual(BINARY);
    expect(readJsonFile(bytes('truncated-char.json', '{"t": "', [0xe2, 0x82], '"}'))).toEqual(BINARY);
    expect(readJsonFile(bytes('nul.json', '{"t": "', [0x00], '"}'))).toEqual(BINARY);
    expect(parseJsonText('{"t": "\u0000"}')).toEqual(BINARY);
    expect(parseJsonText('{"t": "\uFFFD"}')).toEqual({ ok: true, value: { t: '\uFFFD' }, modified: null });
  });

  it('standard input alike: matrix - reads a report whose text holds U+FFFD, and refuses invalid bytes', () => {
    const report = runCli(['report', '--json', '--snapshot', STOCK, '--host-label', 'M2 \uFFFD host']).stdout;
    const read = runCli(['matrix', '--json', '-'], {}, report);
    expect([read.status, read.stderr]).toEqual([0, '']);
    expect(JSON.parse(read.stdout).rows.map((r: { host: string }) => r.host)).toEqual(['M2 \uFFFD host']);
    const invalid = spawnSync(process.execPath, [cli, 'matrix', '-'], {
      input: Buffer.concat([
        Buffer.from(report.slice(0, 20)),
        Buffer.from([0xc3, 0x28]),
        Buffer.from(report.slice(20)),
      ]),
      encoding: 'utf8',
    });
    expect([invalid.status, invalid.stderr]).toEqual([
      2,
      'metal-cap-shim: ERR_FILE: - is not a text file (it holds binary data), so it is not JSON\n',
    ]);
  });
});

describe('a UTF-8 byte order mark at the start of a JSON file is accepted', () => {
  it('--snapshot', () => {
    const r = runCli(['probe', '--json', '--snapshot', write('bom-snapshot.json', BOM + bundled(STOCK))]);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(JSON.parse(runCli(['probe', '--json', '--snapshot', STOCK]).stdout));
  });

  it('--profile FILE', () => {
    const r = runCli([
      'audit',
      '--json',
      '--snapshot',
      STOCK,
      '--profile',
      write('bom-profile.json', `${BOM}{"appleFamilyMax":1007}`),
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { profile: unknown }).profile).toEqual({
      name: null,
      appleFamilyMax: 1007,
      deviceName: null,
      maxThreadgroupMemoryLength: null,
      recommendedMaxWorkingSetSize: null,
      families: {},
      mode: 'raise',
    });
  });

  it('matrix', () => {
    const report = runCli(['report', '--json', '--snapshot', STOCK]).stdout;
    const r = runCli(['matrix', '--json', write('bom-report.json', BOM + report)]);
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as Matrix).rows).toHaveLength(1);
  });

  it('a byte order mark elsewhere than the start is still not JSON', () => {
    expect(parseJsonText(`{"a": 1}${BOM}`)).toEqual({
      ok: false,
      problem: 'is not JSON (syntax error at line 1, column 9: expected nothing after the JSON value)',
    });
  });
});

describe('a JSON syntax error names its line and column', () => {
  it.each([
    // V8 names no position for an unexpected token: the line and column come from our own scan.
    [
      '{\n  "schema": "x",\n  "id": oops\n}',
      'line 3, column 9: expected a value (an object, array, string, number, true, false or null)',
    ],
    ['{"a": 1,}', 'line 1, column 9: expected a property name in double quotes'],
    ['[1 2]', "line 1, column 4: expected ',' or ']'"],
    ['{"a" 1}', "line 1, column 6: expected ':' after the property name"],
    ['{"a": "x\ty"}', 'line 1, column 9: expected no control character inside a string (write it as an escape)'],
    ['{"a": "\\q"}', 'line 1, column 8: expected a valid escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)'],
    ['{"a": "\\u12g4"}', 'line 1, column 8: expected four hex digits after \\u'],
    ['{"a": tru}', 'line 1, column 7: expected a value (an object, array, string, number, true, false or null)'],
    ['{} {}', 'line 1, column 4: expected nothing after the JSON value'],
    ['{\r\n"a":\r\n -}', 'line 3, column 2: expected a value (an object, array, string, number, true, false or null)'],
  ])('%j: %s', (text, where) => {
    expect(parseJsonText(text)).toEqual({ ok: false, problem: `is not JSON (syntax error at ${where})` });
  });

  it('a text that ends inside a value says so, with where it ends', () => {
    expect(parseJsonText('{\n  "a": [1,')).toEqual({
      ok: false,
      problem: 'is not JSON: it ends in the middle of a value (line 2, column 11)',
    });
    expect(parseJsonText('{"a": "open')).toEqual({
      ok: false,
      problem: 'is not JSON: it ends in the middle of a value (line 1, column 12)',
    });
  });

  it('the scan agrees that valid JSON is valid, nested or not', () => {
    for (const text of ['{}', '[]', ' [1, -2.5e3, "x\\u00e9", true, false, null, {"a": {"b": []}}] ', '"s"', '0']) {
      expect(jsonSyntaxError(text)).toBeNull();
    }
  });

  it('deep nesting is scanned without recursion: 200 000 open brackets end in the middle of a value', () => {
    expect(jsonSyntaxError('['.repeat(200_000))).toEqual({
      offset: 200_000,
      expected: 'more: the text ends in the middle of a value',
    });
  });

  it('on the command line, for --snapshot, --profile and matrix alike', () => {
    const bad = write('bad.json', '{\n  "schema": x\n}');
    expect(runCli(['probe', '--snapshot', bad]).stderr).toBe(
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: snapshot file ${bad} is not JSON (syntax error at line 2, column 13: expected a value (an object, array, string, number, true, false or null))\n`,
    );
    expect(runCli(['audit', '--snapshot', STOCK, '--profile', bad]).stderr).toBe(
      `metal-cap-shim: ERR_INVALID_PROFILE: profile file ${bad} is not JSON (syntax error at line 2, column 13: expected a value (an object, array, string, number, true, false or null))\n`,
    );
    expect(runCli(['matrix', bad]).stderr).toBe(
      `metal-cap-shim: ERR_FILE: ${bad} is not JSON (syntax error at line 2, column 13: expected a value (an object, array, string, number, true, false or null))\n`,
    );
  });
});

describe('the wrong kind of JSON is named as what it is', () => {
  const EXPECTED =
    'expected metal-cap-shim/snapshot@1 (metal-cap-shim snapshot), metal-cap-shim/report@1 (metal-cap-shim probe --json), metal-cap-shim/field-report@1 (metal-cap-shim report --json)';

  it('audit --snapshot doctor.json: the schema found and the ones expected, not "packageVersion is not a known field"', () => {
    const file = write('doctor.json', runCli(['doctor', '--json', '--snapshot', STOCK]).stdout);
    const r = runCli(['audit', '--snapshot', file]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: snapshot file ${file} has schema "metal-cap-shim/doctor@1"; ${EXPECTED}\n`,
    );
  });

  it('JSON without a schema, or not an object', () => {
    expect(runCli(['probe', '--snapshot', write('plain.json', '{"devices": []}')]).stderr).toBe(
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: snapshot file ${path.join(dir, 'plain.json')} has no "schema" field; ${EXPECTED}\n`,
    );
    expect(runCli(['probe', '--snapshot', write('list.json', '[1, 2]')]).stderr).toBe(
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: snapshot file ${path.join(dir, 'list.json')} is a JSON array, not an object with a "schema"; ${EXPECTED}\n`,
    );
  });

  it('validateSnapshot names the schema of another package format, with the field', () => {
    const doctorJson = JSON.parse(runCli(['doctor', '--json', '--snapshot', STOCK]).stdout) as unknown;
    let error: unknown;
    try {
      validateSnapshot(doctorJson, 'doctor.json');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidSnapshotError);
    expect({ field: (error as InvalidSnapshotError).field, message: (error as Error).message }).toEqual({
      field: 'schema',
      message:
        'doctor.json: it has schema "metal-cap-shim/doctor@1"; expected metal-cap-shim/snapshot@1 (metal-cap-shim snapshot); see snapshots/README.md for the format',
    });
  });

  it('validateSnapshot: no schema, or one that is not text, goes to the field checks, which say what is wrong', () => {
    const message = (data: unknown, name?: unknown) => {
      try {
        validateSnapshot(data, name as string);
      } catch (e) {
        return (e as Error).message;
      }
      return 'accepted';
    };
    const { schema: _schema, ...untagged } = JSON.parse(bundled(STOCK)) as Record<string, unknown>;
    expect(message(untagged, 'x.json')).toBe('x.json: schema is missing; see snapshots/README.md for the format');
    expect(message({ ...untagged, schema: 7 }, 'x.json')).toBe(
      'x.json: schema must be "metal-cap-shim/snapshot@1" (or the file must be a probe --json report, "metal-cap-shim/report@1"); see snapshots/README.md for the format',
    );
    expect(message({ ...untagged, schema: 7 }, 42)).toMatch(/^snapshot: schema must be /);
  });

  it('validateSnapshot refuses what JSON cannot hold, saying so', () => {
    let error: unknown;
    try {
      validateSnapshot({ ...(JSON.parse(bundled(STOCK)) as object), defaultDevice: 0n }, 'x.json');
    } catch (e) {
      error = e;
    }
    expect((error as Error).message).toBe(
      'x.json: defaultDevice is a BigInt, which JSON cannot hold; see snapshots/README.md for the format',
    );
  });

  it('matrix given a snapshot: the schema found and the one expected', () => {
    const file = path.join(root, 'snapshots', `${STOCK}.json`);
    const r = runCli(['matrix', file]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      `metal-cap-shim: ERR_INVALID_REPORT: ${file} is not a usable metal-cap-shim field report (it has schema "metal-cap-shim/snapshot@1"; expected metal-cap-shim/field-report@1 (metal-cap-shim report --json)); make one with \`metal-cap-shim report --json\`\n`,
    );
  });

  it('schemaProblem: null for an accepted schema, a clipped name for a long one', () => {
    expect(schemaProblem({ schema: 'a@1' }, { 'a@1': 'x' })).toBeNull();
    expect(schemaProblem({ schema: 'z'.repeat(1000) }, { 'a@1': 'x' })).toBe(
      `has schema "${'z'.repeat(200)}… (1000 characters)"; expected a@1 (x)`,
    );
    expect(schemaProblem({ schema: 7 }, { 'a@1': 'x' })).toBe('has schema of type number; expected a@1 (x)');
  });
});

describe('a field report is a snapshot too', () => {
  let reportFile: string;
  beforeAll(() => {
    reportFile = write(
      'field-report.json',
      runCli(['report', '--json', '--snapshot', STOCK, '--host-label', 'M1 Ultra, macOS 26.6.1']).stdout,
    );
  });

  it('probe --snapshot report.json lists the devices the report audited, with their stock answers', () => {
    const fromReport = JSON.parse(runCli(['probe', '--json', '--all-devices', '--snapshot', reportFile]).stdout) as {
      devices: unknown[];
      host: unknown;
    };
    const original = JSON.parse(runCli(['probe', '--json', '--all-devices', '--snapshot', STOCK]).stdout) as {
      devices: unknown[];
      host: unknown;
    };
    expect([fromReport.devices, fromReport.host]).toEqual([original.devices, original.host]);
  });

  it('audit --snapshot report.json re-audits it offline: the same verdict', () => {
    const again = JSON.parse(runCli(['audit', '--json', '--snapshot', reportFile]).stdout) as {
      verdict: unknown;
      devices: { changes: unknown }[];
    };
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as FieldReport;
    expect([again.verdict, again.devices.map((d) => d.changes)]).toEqual([
      report.audit.verdict,
      report.audit.devices.map((d) => d.changes),
    ]);
  });

  it('loadSnapshot titles it by the file and the host label; its id is the snapshot the report was made from', () => {
    const snap = loadSnapshot(reportFile);
    expect([snap.id, snap.title, snap.sources]).toEqual([
      STOCK,
      'field report field-report.json, M1 Ultra, macOS 26.6.1',
      { recording: `metal-cap-shim field report ${reportFile}` },
    ]);
  });

  it('a field report without its audit devices is refused naming the field', () => {
    const broken = JSON.parse(readFileSync(reportFile, 'utf8')) as { audit: { devices: unknown[] } };
    broken.audit.devices = [];
    const file = write('no-devices.json', JSON.stringify(broken));
    expect(runCli(['probe', '--snapshot', file]).stderr).toBe(
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: ${file}: a field report (metal-cap-shim/field-report@1) read as a snapshot needs a non-empty audit.devices\n`,
    );
  });
});

describeSim('a live field report carries doctor’s results, replayed whole by doctor --snapshot', () => {
  beforeAll(requireSimBuild);

  it('doctor --snapshot report.json gives the statuses and faults the report measured', () => {
    const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'github-macos-14-arm64-runner', XDG_CACHE_HOME: dir };
    const made = runCli(['report', '--json', '--mmap-size', '1M'], env);
    expect(made.status, made.stderr).toBe(0);
    const report = JSON.parse(made.stdout) as FieldReport;
    const file = write('live-report.json', made.stdout);
    const replay = JSON.parse(runCli(['doctor', '--json', '--snapshot', file]).stdout) as DoctorReport;
    const measured = report.doctor!.devices;
    expect(replay.devices.map((d) => [d.faults, d.probes.map((p) => p.status)])).toEqual(
      measured.map((d) => [d.faults, d.probes.map((p) => p.status)]),
    );
    expect(replay.replayed).toBe(true);
  });
});

describe('- reads standard input wherever a file is read', () => {
  it('probe --snapshot -', () => {
    const r = runCli(['probe', '--json', '--snapshot', '-'], {}, bundled('m1-ultra-bare-metal'));
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(
      JSON.parse(runCli(['probe', '--json', '--snapshot', 'm1-ultra-bare-metal']).stdout),
    );
  });

  it('audit --profile - (the snapshot by name)', () => {
    const r = runCli(['audit', '--json', '--snapshot', STOCK, '--profile', '-'], {}, '{"appleFamilyMax": 1008}');
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { profile: { appleFamilyMax: number } }).profile.appleFamilyMax).toBe(1008);
  });

  it('matrix -, and - twice is the same report, counted once', () => {
    const report = runCli(['report', '--json', '--snapshot', STOCK]).stdout;
    const r = runCli(['matrix', '--json', '-', '-'], {}, report);
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as Matrix).duplicates).toEqual([{ where: '-', sameAs: '-' }]);
  });

  it('an empty standard input says so', () => {
    expect(runCli(['probe', '--snapshot', '-'], {}, '').stderr).toBe(
      'metal-cap-shim: ERR_INVALID_SNAPSHOT: snapshot file standard input (-) is empty\n',
    );
  });
});
