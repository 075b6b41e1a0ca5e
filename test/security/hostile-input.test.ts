// Snapshots and field reports come from other people. Whatever their shape or size, reading them costs time linear in
// their size, within stated bounds, and ends in a typed error naming the field: never "internal error", a stack trace,
// or a stack overflow. (The bench/snapshot.mjs benchmark shows the linear time at 100 000 devices.)
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidReportError, InvalidSnapshotError } from '../../lib/core/errors.js';
import { buildMatrix } from '../../lib/audit/field-report.js';
import { JSON_LIMITS, jsonDepth, readJsonFile } from '../../lib/core/jsonfile.js';
import { SNAPSHOT_LIMITS, snapshotsDir, validateSnapshot } from '../../lib/device/snapshots.js';
import { runCli, thrown } from '../support/helpers.js';

const STOCK = 'vz-guest-m1-ultra-tahoe-stock';
const stock = () => JSON.parse(readFileSync(path.join(snapshotsDir(), `${STOCK}.json`), 'utf8')) as Record<string, any>;
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'mcs-hostile-'));
});

function file(name: string, content: string): string {
  const f = path.join(dir, name);
  writeFileSync(f, content);
  return f;
}

/** A snapshot of `n` devices, each its own class (Device0 … Device<n-1>). */
function snapshotOf(n: number): Record<string, any> {
  const s = stock();
  const template = s.devices[0];
  s.devices = Array.from({ length: n }, (_, i) => ({ ...template, className: `Device${i}`, registryId: i }));
  s.defaultDevice = 0;
  return s;
}

describe('bounds: file size, nesting depth, device count', () => {
  it('the limits, in one place', () => {
    expect({ JSON_LIMITS, SNAPSHOT_LIMITS }).toMatchInlineSnapshot(`
      {
        "JSON_LIMITS": {
          "maxBytes": 16777216,
          "maxDepth": 64,
        },
        "SNAPSHOT_LIMITS": {
          "maxBytes": 16777216,
          "maxDepth": 64,
          "maxDevices": 64,
        },
      }
    `);
  });

  it('file size: up to maxBytes is read, one byte more is refused unread', () => {
    const at = file('at.json', '[1,  2]');
    expect(readJsonFile(at, { maxBytes: 7, maxDepth: 64 })).toEqual({
      ok: true,
      value: [1, 2],
      modified: statSync(at).mtime,
    });
    expect(readJsonFile(at, { maxBytes: 6, maxDepth: 64 })).toEqual({
      ok: false,
      problem: 'is larger than 6 bytes, far more than any metal-cap-shim file',
    });
  });

  it('a named pipe is no file: refused before any read, with a writer or without (`-` reads a pipe)', () => {
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const refused = {
      ok: false,
      problem: 'is not a regular file (a FIFO, a socket or a device): give a file, or `-` to read standard input',
    };
    expect(readJsonFile(fifo, { maxBytes: 1000, maxDepth: 64 })).toEqual(refused);
    // A writer that would never stop changes nothing.
    const writer = spawn('sh', ['-c', `exec yes '[1,' > '${fifo}'`], { stdio: 'ignore' });
    try {
      expect(readJsonFile(fifo, { maxBytes: 1000, maxDepth: 64 })).toEqual(refused);
    } finally {
      writer.kill();
    }
  });

  it('depth: up to maxDepth levels parse, one more is refused before parsing', () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const d3 = file('d3.json', deep(3));
    expect(readJsonFile(d3, { maxBytes: 100, maxDepth: 3 })).toEqual({
      ok: true,
      value: [[[]]],
      modified: statSync(d3).mtime,
    });
    expect(readJsonFile(file('d4.json', deep(4)), { maxBytes: 100, maxDepth: 3 })).toEqual({
      ok: false,
      problem: 'nests arrays and objects more than 3 levels deep, far more than any metal-cap-shim file',
    });
  });

  it('depth is counted outside strings only, escapes included, and stops at the limit', () => {
    expect(jsonDepth('{"a": [1, {"b": "[[[{{{"}]}')).toBe(3);
    expect(jsonDepth('["\\"[[[", "\\\\", [[]]]')).toBe(3);
    expect(jsonDepth('1')).toBe(0);
    expect(jsonDepth('[[[[[[', 2)).toBe(3);
    expect(jsonDepth('[][][]')).toBe(1);
  });

  it('devices: maxDevices are taken, one more is refused naming the count', () => {
    expect(validateSnapshot(snapshotOf(64), 'test').devices).toHaveLength(64);
    expect(thrown(() => validateSnapshot(snapshotOf(65), 'test'))).toEqual(
      new InvalidSnapshotError(
        'devices',
        'test: devices must be an array of at most 64 devices, not 65; see snapshots/README.md for the format',
      ),
    );
    expect(validateSnapshot(snapshotOf(65), 'test', { maxDevices: 65 }).devices).toHaveLength(65);
  });
});

describe('malformed shapes through the CLI: one line with a code, never "internal error"', () => {
  const cases: [string, (s: Record<string, any>) => void, string][] = [
    ['families: null', (s) => (s.devices[0].families = null), 'devices[0].families must be an object'],
    ['devices: [null]', (s) => (s.devices = [null]), 'devices[0] must be an object'],
    ['host: null', (s) => (s.host = null), 'host must be an object'],
  ];

  it.each(cases)('a snapshot with %s', (name, edit, says) => {
    const s = stock();
    edit(s);
    const f = file(`snapshot-${name.replace(/\W+/g, '-')}.json`, JSON.stringify(s));
    const r = runCli(['probe', '--snapshot', f]);
    expect([r.status, r.stdout, r.stderr]).toEqual([
      2,
      '',
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: ${f}: ${says}; see snapshots/README.md for the format\n`,
    ]);
  });

  it.each(cases)('a probe --json report with %s, given as a snapshot', (name, edit, says) => {
    const report = JSON.parse(runCli(['probe', '--snapshot', STOCK, '--json']).stdout);
    edit(report);
    const f = file(`report-${name.replace(/\W+/g, '-')}.json`, JSON.stringify(report));
    for (const command of ['probe', 'audit']) {
      const r = runCli([command, '--snapshot', f]);
      expect([r.status, r.stdout, r.stderr]).toEqual([
        2,
        '',
        `metal-cap-shim: ERR_INVALID_SNAPSHOT: ${f}: ${says}; see snapshots/README.md for the format\n`,
      ]);
    }
  });

  it('a probe report of more devices than a snapshot may have', () => {
    const report = JSON.parse(runCli(['probe', '--snapshot', STOCK, '--json']).stdout);
    report.devices = Array.from({ length: 65 }, () => report.devices[0]);
    const f = file('report-65.json', JSON.stringify(report));
    const r = runCli(['audit', '--snapshot', f]);
    expect([r.status, r.stderr]).toEqual([
      2,
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: ${f}: devices must list at most 64 devices, not 65; see snapshots/README.md for the format\n`,
    ]);
  });

  it('a file nested 100 000 deep, and one larger than 16 MiB', () => {
    const deep = file('deep.json', `{"schema":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    const r = runCli(['audit', '--snapshot', deep]);
    expect([r.status, r.stderr]).toEqual([
      2,
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: snapshot file ${deep} nests arrays and objects more than 64 levels deep, far more than any metal-cap-shim file\n`,
    ]);
    const big = file('big.json', `{"pad":"${' '.repeat(16 * 1024 * 1024)}"}`);
    const b = runCli(['probe', '--snapshot', big]);
    expect([b.status, b.stderr]).toEqual([
      2,
      `metal-cap-shim: ERR_INVALID_SNAPSHOT: snapshot file ${big} is larger than 16777216 bytes, far more than any metal-cap-shim file\n`,
    ]);
  });
});

describe('malformed field reports for matrix', () => {
  let report: Record<string, any>;
  beforeAll(() => {
    report = JSON.parse(runCli(['report', '--json', '--snapshot', STOCK]).stdout);
  });
  const broken = (edit: (r: Record<string, any>) => void) => {
    const r = JSON.parse(JSON.stringify(report));
    edit(r);
    return r;
  };
  const usable = (field: string) =>
    `is not a usable metal-cap-shim field report (${field}); make one with \`metal-cap-shim report --json\``;

  it.each([
    [
      'engines: [null]',
      (r: Record<string, any>) => (r.audit.devices[0].engines = [null]),
      'audit.devices[0].engines[0]',
      'audit.devices[0].engines[0] must be an object naming its engine',
    ],
    [
      'an engine without after',
      (r: Record<string, any>) => delete r.audit.devices[0].engines[0].after,
      'audit.devices[0].engines[0].after',
      "audit.devices[0].engines[0].after must be the engine's prediction",
    ],
    [
      'llama.cpp without flags',
      (r: Record<string, any>) => delete r.audit.devices[0].engines[0].after.flags,
      'audit.devices[0].engines[0].after.flags',
      "audit.devices[0].engines[0].after.flags must hold llama.cpp's flags",
    ],
    [
      'a llama.cpp flag that is null',
      (r: Record<string, any>) => (r.audit.devices[0].engines[0].after.flags.has_bfloat = null),
      'audit.devices[0].engines[0].after.flags',
      "audit.devices[0].engines[0].after.flags must hold llama.cpp's flags",
    ],
    [
      'an object as host.osVersion',
      (r: Record<string, any>) => (r.host.osVersion = { major: 26 }),
      'host.osVersion',
      'host.osVersion must be a string or null',
    ],
    [
      'a number as host.model',
      (r: Record<string, any>) => (r.host.model = 2),
      'host.model',
      'host.model must be a string or null',
    ],
    [
      'text as host.isVirtualMachine',
      (r: Record<string, any>) => (r.host.isVirtualMachine = 'yes'),
      'host.isVirtualMachine',
      'host.isVirtualMachine must be true, false or null',
    ],
  ])('%s: InvalidReportError naming the field; the CLI exits 2 with one line', (_, edit, field, says) => {
    const r = broken(edit);
    expect(thrown(() => buildMatrix([{ where: 'r.json', report: r }]))).toEqual(
      new InvalidReportError(field, `r.json ${usable(says)}`),
    );
    const f = file('matrix-input.json', JSON.stringify(r));
    const cli = runCli(['matrix', f]);
    expect([cli.status, cli.stdout, cli.stderr]).toEqual([
      2,
      '',
      `metal-cap-shim: ERR_INVALID_REPORT: ${f} ${usable(says)}\n`,
    ]);
  });

  it('a report nested 100 000 deep: from a file, refused before parsing; in-process, a typed error, not a stack overflow', () => {
    const text = JSON.stringify(report).replace(/^\{/, `{"extra":${'['.repeat(100_000)}${']'.repeat(100_000)},`);
    const f = file('deep-report.json', text);
    const cli = runCli(['matrix', f]);
    expect([cli.status, cli.stderr]).toEqual([
      2,
      `metal-cap-shim: ERR_FILE: ${f} nests arrays and objects more than 64 levels deep, far more than any metal-cap-shim file\n`,
    ]);
    const nested: Record<string, unknown> = {};
    let at = nested;
    for (let i = 0; i < 200_000; i++) at = at.a = {};
    // Read once into plain data first (lib/input.ts): the depth bound names the field where it is crossed.
    const where = `[0].report.extra${'.a'.repeat(63)}`;
    expect(thrown(() => buildMatrix([{ where: 'deep', report: { ...report, extra: nested } }]))).toEqual(
      new InvalidReportError(where, `buildMatrix(): reports${where} is nested more than 64 levels deep`),
    );
  });

  it('a report file nests as deep in matrix as the file reader lets it: 64 levels read, 65 refused', () => {
    // The report is level 1 and `extra` level 2: each array inside adds one.
    const nestedTo = (levels: number) =>
      file(
        `nested-${levels}.json`,
        JSON.stringify(report).replace(/^\{/, `{"extra":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)},`),
      );
    const deepest = nestedTo(JSON_LIMITS.maxDepth);
    expect(jsonDepth(readFileSync(deepest, 'utf8'))).toBe(64);
    const read = runCli(['matrix', '--json', deepest]);
    expect([read.status, read.stderr]).toEqual([0, '']);
    const deeper = nestedTo(JSON_LIMITS.maxDepth + 1);
    expect(runCli(['matrix', deeper]).stderr).toBe(
      `metal-cap-shim: ERR_FILE: ${deeper} nests arrays and objects more than 64 levels deep, far more than any metal-cap-shim file\n`,
    );
  });

  it('what a real report holds still passes: every engine, null host fields', () => {
    expect(buildMatrix([{ where: 'ok', report: broken((r) => (r.host.osBuild = null)) }]).rows).toHaveLength(1);
  });
});
