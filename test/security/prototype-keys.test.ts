// Keys that name a member of every object (`__proto__`, `toString`, `constructor`, …) and characters that a terminal
// or a bidi-aware viewer obeys, in every JSON input and output: only typed errors or correct results, each at once.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MetalCapShimError } from '../../lib/core/errors.js';
import { own } from '../../lib/core/input.js';
import { jsonText } from '../../lib/core/escape.js';
import { buildMatrix, matrixMarkdown } from '../../lib/audit/field-report.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { loadSnapshot, reportFromSnapshot, validateSnapshot } from '../../lib/device/snapshots.js';
import { readCache } from '../../lib/doctor/cache.js';
import { doctor } from '../../lib/doctor/index.js';
import { CAPABILITY_PROBE_IDS } from '../../lib/doctor/probes.js';
import { root, runCli } from '../support/helpers.js';

const KEYS = ['__proto__', 'toString', 'constructor', 'hasOwnProperty', 'valueOf'];
const VALUES: unknown[] = [1, 'assumed', {}, { value: true }, null];
const dir = mkdtempSync(path.join(tmpdir(), 'mcs-proto-'));
const STOCK = JSON.parse(readFileSync(path.join(root, 'snapshots/vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
const GITHUB = JSON.parse(readFileSync(path.join(root, 'snapshots/github-macos-14-arm64-runner.json'), 'utf8'));

/** Every path to an object (not an array) inside `value`. */
function objectPaths(value: unknown, at: string[] = []): string[][] {
  if (typeof value !== 'object' || value === null) return [];
  const here = Array.isArray(value) ? [] : [at];
  return [...here, ...Object.entries(value).flatMap(([k, v]) => objectPaths(v, [...at, k]))];
}

/** A copy of `base` (through JSON, as a file would be read) with own `key: value` added at `at`. */
function withKey(base: unknown, at: string[], key: string, value: unknown): unknown {
  const copy = JSON.parse(JSON.stringify(base));
  let o = copy;
  for (const k of at) o = o[k];
  Object.defineProperty(o, key, { value, enumerable: true, configurable: true, writable: true });
  return copy;
}

function outcome(fn: () => unknown): 'ok' | 'typed' {
  try {
    fn();
    return 'ok';
  } catch (e) {
    if (e instanceof MetalCapShimError) return 'typed';
    throw e;
  }
}

describe('prototype-named keys in JSON inputs', () => {
  it.each([
    ['the stock guest', STOCK],
    ['a snapshot with a doctor recording', GITHUB],
  ])('%s: each key at every place is refused with a typed error, except as a source of its own', (_name, base) => {
    const started = Date.now();
    const accepted: string[] = [];
    for (const at of objectPaths(base)) {
      for (const key of KEYS) {
        for (const value of VALUES) {
          if (outcome(() => validateSnapshot(withKey(base, at, key, value), 'fuzz')) === 'ok')
            accepted.push(`${[...at, key].join('.')}=${JSON.stringify(value)}`);
        }
      }
    }
    // `sources` is a map of citations: any own key naming a text is a source like any other.
    expect(accepted.sort()).toEqual(KEYS.map((k) => `sources.${k}="assumed"`).sort());
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('a doctor probe with a "__proto__" field is a typed error in every command that reads the file', () => {
    const probes = GITHUB.devices[0].doctor.probes;
    const bad = withKey(GITHUB, ['devices', '0', 'doctor', 'probes', Object.keys(probes)[0]!], '__proto__', 1);
    const file = path.join(dir, 'proto-probe.json');
    writeFileSync(file, JSON.stringify(bad));
    for (const command of ['probe', 'audit', 'doctor', 'report']) {
      const r = runCli([command, '--snapshot', file]);
      expect([command, r.status]).toEqual([command, 2]);
      expect(r.stderr).toContain('ERR_INVALID_SNAPSHOT');
      expect(r.stderr).toContain('__proto__ is not a known field');
      expect(r.stderr).not.toContain('internal error');
    }
  });

  it('a provenance that names an inherited member is no source', () => {
    const bad = JSON.parse(JSON.stringify(STOCK));
    bad.devices[0].provenance.name = 'toString';
    expect(() => validateSnapshot(bad, 'fuzz')).toThrow(/devices\[0\]\.provenance\.name|provenance\.name/);
  });

  it('resolveProfile: each key at the top and in families is a typed error, never an inherited answer', () => {
    for (const key of KEYS) {
      for (const value of [1, true, 'x', {}]) {
        expect(outcome(() => resolveProfile(JSON.parse(`{"${key}": ${JSON.stringify(value)}}`)))).toBe('typed');
        expect(outcome(() => resolveProfile(JSON.parse(`{"families": {"${key}": ${JSON.stringify(value)}}}`)))).toBe(
          'typed',
        );
      }
    }
  });

  it('own() reads only own keys', () => {
    const table: Record<string, number> = { a: 1 };
    expect(KEYS.map((k) => own(table, k))).toEqual(KEYS.map(() => undefined));
    expect(own(table, 'a')).toBe(1);
  });
});

describe('prototype-named keys in a doctor cache file', () => {
  it('each key at every place of a cached result: ignored with a reason, or used, never a crash', async () => {
    const cacheHome = mkdtempSync(path.join(tmpdir(), 'mcs-proto-cache-'));
    const saved = { ...process.env };
    process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'vz-guest-m1-ultra-tahoe-stock';
    process.env.XDG_CACHE_HOME = cacheHome;
    try {
      const report = await doctor({ probes: [...CAPABILITY_PROBE_IDS] });
      const file = report.cache!.written[0]!;
      const entry = JSON.parse(readFileSync(file, 'utf8'));
      const stock = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock'), { allDevices: true }).devices[0]!;
      expect(readCache(entry.key, stock, path.dirname(file)).entry).not.toBe(null);
      const outcomes = new Set<string>();
      for (const at of objectPaths(entry)) {
        for (const key of ['__proto__', 'toString', 'constructor']) {
          writeFileSync(file, JSON.stringify(withKey(entry, at, key, 1)), { mode: 0o600 });
          const read = readCache(entry.key, stock, path.dirname(file));
          outcomes.add(read.entry === null ? 'ignored' : 'used');
          if (read.entry === null) expect(typeof read.ignored).toBe('string');
        }
      }
      expect(outcomes.has('ignored')).toBe(true);
    } finally {
      process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = saved.METAL_CAP_SHIM_SIM_SNAPSHOT;
      process.env.XDG_CACHE_HOME = saved.XDG_CACHE_HOME;
      if (saved.METAL_CAP_SHIM_SIM_SNAPSHOT === undefined) delete process.env.METAL_CAP_SHIM_SIM_SNAPSHOT;
      if (saved.XDG_CACHE_HOME === undefined) delete process.env.XDG_CACHE_HOME;
    }
  });
});

describe('prototype-named keys in matrix input', () => {
  const report = JSON.parse(
    execFileSync(
      process.execPath,
      [
        path.join(root, 'dist/cli.js'),
        'report',
        '--json',
        '--snapshot',
        'vz-guest-m1-ultra-tahoe-stock',
        '--no-doctor',
      ],
      { encoding: 'utf8' },
    ),
  );

  it('each key at every place of a field report: buildMatrix and matrixMarkdown give typed errors or a table, never an inherited member', () => {
    const started = Date.now();
    const seen = new Set<string>();
    for (const at of objectPaths(report)) {
      for (const key of ['__proto__', 'toString', 'constructor']) {
        for (const value of [1, { value: true }]) {
          const bad = withKey(report, at, key, value);
          const result = outcome(() => {
            const text = matrixMarkdown(buildMatrix([{ where: 'r.json', report: bad }]));
            if (/native code|function|\[object /.test(text))
              throw new Error(`inherited member shown at ${at.join('.')}.${key}`);
          });
          seen.add(result);
        }
      }
    }
    expect([...seen].sort()).toEqual(['ok', 'typed']);
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it('each key at every place of a probe report read as a snapshot: a typed error or a snapshot, never a crash', () => {
    const probeReport = JSON.parse(
      execFileSync(
        process.execPath,
        [path.join(root, 'dist/cli.js'), 'probe', '--json', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock'],
        { encoding: 'utf8' },
      ),
    );
    const file = path.join(dir, 'probe-report.json');
    for (const at of objectPaths(probeReport)) {
      for (const key of ['__proto__', 'toString', 'constructor']) {
        writeFileSync(file, JSON.stringify(withKey(probeReport, at, key, 1)));
        outcome(() => loadSnapshot(file));
      }
    }
    writeFileSync(file, JSON.stringify(probeReport));
    expect(loadSnapshot(file).devices).toHaveLength(1);
  });

  it('a llama.cpp flag named toString is no gate of the table', () => {
    const r = JSON.parse(JSON.stringify(report));
    r.audit.devices[0].engines[0].after.flags.toString = { value: true, reason: 'x' };
    const text = matrixMarkdown(buildMatrix([{ where: 'a.json', report: r }]));
    expect(text).not.toContain('function');
    expect(text).not.toContain('native code');
    expect(text).toContain('gates: reduction, mm, bfloat');
  });

  it('matrixMarkdown with a profile column named after an inherited member: a typed error or an empty cell', () => {
    const matrix = buildMatrix([{ where: 'a.json', report }]);
    const named = { ...matrix, profiles: ['toString'] };
    const result = outcome(() => matrixMarkdown(named));
    expect(['ok', 'typed']).toContain(result);
    if (result === 'ok') expect(matrixMarkdown(named)).not.toContain('native code');
  });
});

describe('--json output: characters a terminal obeys are escaped', () => {
  const NAME = 'GPU\u0085next\u202eevil\u2028line\u200fmark\u009b';

  it('jsonText escapes C1, bidi and line separators, and the text parses back to the same value', () => {
    const text = jsonText({ name: NAME, list: [NAME] }, 2);
    expect(text).not.toMatch(/[\u0080-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/);
    expect(text).toContain('GPU\\u0085next\\u202eevil\\u2028line\\u200fmark\\u009b');
    expect(JSON.parse(text)).toEqual({ name: NAME, list: [NAME] });
  });

  it('probe --json prints a device name with them as escapes, and the same name parsed back', () => {
    const snap = JSON.parse(JSON.stringify(STOCK));
    snap.devices[0].name = NAME;
    const file = path.join(dir, 'bidi.json');
    writeFileSync(file, JSON.stringify(snap));
    const r = runCli(['probe', '--json', '--snapshot', file]);
    expect(r.status).toBe(0);
    expect(r.stdout).not.toMatch(/[\u0080-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/);
    expect(JSON.parse(r.stdout).devices[0].name).toBe(NAME);
  });

  it('the {"error": …} line of --json escapes them too', () => {
    const missing = path.join(dir, `no\u202esuch\u0085file.json`);
    const r = runCli(['audit', '--json', '--snapshot', missing]);
    expect(r.status).toBe(2);
    expect(r.stdout).not.toMatch(/[\u0080-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/);
    expect(JSON.parse(r.stdout).error.message).toContain(missing);
  });
});
