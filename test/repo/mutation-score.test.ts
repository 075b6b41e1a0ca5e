// scripts/measure/mutation-score.mjs: the project's score (timeouts detected, no coverage not, static left out) and its
// per-file minimums (85 %, exec 75 %, 90 % for the files raised), over a small synthetic Stryker report, both
// in-process and as the command scripts/measure/mutation.mjs and the weekly workflow run.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from '../support/helpers.js';

interface Scored {
  file: string;
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  ignored: number;
  static: number;
  errors: number;
  pending: number;
  counted: number;
  score: number | null;
}
interface Below {
  file: string;
  score: number;
  minimum: number;
}
interface ScoreModule {
  MINIMUMS: Record<string, number>;
  scoreFile(mutants: { status: string; static?: boolean; statusReason?: string }[]): Omit<Scored, 'file'>;
  scoreReport(report: unknown): { files: Scored[]; total: Scored };
  minimumFor(file: string, minimums: Record<string, number>): number;
  belowMinimum(files: Scored[], minimums: Record<string, number>): Below[];
  parseArgs(argv: string[]): { file: string; minimums: Record<string, number> | null; json: boolean };
}

const script = path.join(root, 'scripts', 'measure', 'mutation-score.mjs');
// A path in a variable: the script is plain JavaScript, typed here by the interface above.
const m = (await import(script)) as ScoreModule;

const many = (status: string, n: number, extra: Record<string, unknown> = {}) =>
  Array.from({ length: n }, () => ({ status, ...extra }));
const REPORT = {
  schemaVersion: '1',
  files: {
    // 17 killed + 1 timeout of 20 counted: 90 %. Static, compile errors and pending mutants are not counted.
    'lib/apply.ts': {
      mutants: [
        ...many('Killed', 17),
        ...many('Timeout', 1),
        ...many('Survived', 1),
        ...many('NoCoverage', 1),
        ...many('Ignored', 2, { static: true }),
        ...many('Ignored', 1, { statusReason: 'Static mutant (and "ignoreStatic" was enabled)' }),
        ...many('Ignored', 1, { statusReason: 'excluded by a comment' }),
        ...many('CompileError', 1),
        ...many('RuntimeError', 1),
        ...many('Pending', 1),
      ],
    },
    // Exactly exec's 75 %.
    'lib/exec/run.ts': { mutants: [...many('Killed', 3), ...many('Survived', 1)] },
    // 75 %, but the default minimum is 85 %; no coverage counts as not killed.
    'lib/format/text.ts': {
      mutants: [...many('Killed', 5), ...many('Timeout', 1), ...many('NoCoverage', 1), ...many('Survived', 1)],
    },
    // Not listed: exactly the default 85 %.
    'lib/doctor/new.ts': { mutants: [...many('Killed', 17), ...many('Survived', 3)] },
    // Just below 85 %.
    'lib/profiles.ts': { mutants: [...many('Killed', 84), ...many('Survived', 16)] },
    // Raised to 90 %: exactly 90 % passes, 89 % (above the default) fails.
    'lib/engines/index.ts': { mutants: [...many('Killed', 9), ...many('Survived', 1)] },
    'lib/engines/llama-cpp.ts': { mutants: [...many('Killed', 89), ...many('Survived', 11)] },
    // Nothing counted: no score, and no failure.
    'lib/empty.ts': { mutants: many('Ignored', 3, { static: true }) },
  },
};
const dir = mkdtempSync(path.join(tmpdir(), 'mcs-mutation-score-'));
const reportFile = path.join(dir, 'mutation.json');
writeFileSync(reportFile, JSON.stringify(REPORT));

const row = (file: string, c: Partial<Scored>, counted: number, score: number | null): Scored => ({
  file,
  killed: 0,
  timeout: 0,
  survived: 0,
  noCoverage: 0,
  ignored: 0,
  static: 0,
  errors: 0,
  pending: 0,
  ...c,
  counted,
  score,
});
const TEXT_BELOW = { file: 'lib/format/text.ts', score: 75, minimum: 85 };
const PROFILES_BELOW = { file: 'lib/profiles.ts', score: 84, minimum: 85 };
const LLAMA_BELOW = { file: 'lib/engines/llama-cpp.ts', score: 89, minimum: 90 };
/** The minimums scripts/measure/mutation-score.mjs holds the files to. */
const MINIMUMS_NOW = {
  default: 85,
  'lib/exec/': 75,
  'lib/engines/': 90,
  'lib/patch/profiles.ts': 90,
  'lib/patch/plan.ts': 90,
  'lib/patch/apply.ts': 90,
  'lib/patch/engine-warnings.ts': 90,
  'lib/device/snapshots.ts': 90,
};

function runScript(args: string[]) {
  return spawnSync(process.execPath, [script, reportFile, ...args], { encoding: 'utf8' });
}

describe('the score: detected over detected, survived and not covered', () => {
  it('every file and the total: detected = killed + timeout over detected + survived + no coverage', () => {
    expect(m.scoreReport(REPORT)).toEqual({
      files: [
        row(
          'lib/apply.ts',
          { killed: 17, timeout: 1, survived: 1, noCoverage: 1, static: 3, ignored: 1, errors: 2, pending: 1 },
          20,
          90,
        ),
        row('lib/doctor/new.ts', { killed: 17, survived: 3 }, 20, 85),
        row('lib/empty.ts', { static: 3 }, 0, null),
        row('lib/engines/index.ts', { killed: 9, survived: 1 }, 10, 90),
        row('lib/engines/llama-cpp.ts', { killed: 89, survived: 11 }, 100, 89),
        row('lib/exec/run.ts', { killed: 3, survived: 1 }, 4, 75),
        row('lib/format/text.ts', { killed: 5, timeout: 1, survived: 1, noCoverage: 1 }, 8, 75),
        row('lib/profiles.ts', { killed: 84, survived: 16 }, 100, 84),
      ],
      total: row(
        'all files',
        { killed: 224, timeout: 2, survived: 34, noCoverage: 2, static: 6, ignored: 1, errors: 2, pending: 1 },
        262,
        (100 * 226) / 262,
      ),
    });
  });

  it('a report without a files object is refused', () => {
    expect(() => m.scoreReport({ schemaVersion: '1' })).toThrow('not a Stryker JSON report: no "files" object');
    expect(() => m.scoreReport(null)).toThrow('not a Stryker JSON report: no "files" object');
  });
});

describe('the per-file minimums', () => {
  it('85 % for every file, 75 % for exec, 90 % for the files raised; a file not listed gets the default', () => {
    expect(m.MINIMUMS).toEqual(MINIMUMS_NOW);
    expect(
      [
        'lib/patch/apply.ts',
        'lib/patch/engine-warnings.ts',
        'lib/select/auto.ts',
        'lib/exec/run.ts',
        'lib/engines/llama-cpp.ts',
        'lib/device/snapshots.ts',
        'lib/device/fields.ts',
        'lib/doctor/new.ts',
        'default',
      ].map((f) => m.minimumFor(f, m.MINIMUMS)),
    ).toEqual([90, 90, 85, 75, 90, 90, 85, 85, 85]);
  });

  it("a folder's minimum holds for each file under it; a file's own key, then the innermost folder, wins", () => {
    const minimums = { default: 85, 'lib/': 80, 'lib/exec/': 75, 'lib/exec/run.ts': 70 };
    expect(
      [
        'lib/exec/run.ts',
        'lib/exec/trace.ts',
        'lib/exec/deep/x.ts',
        'lib/execution.ts',
        'lib/apply.ts',
        'bin/x.ts',
      ].map((f) => m.minimumFor(f, minimums)),
    ).toEqual([70, 75, 75, 80, 80, 85]);
    expect(
      ['lib/exec/trace.ts', 'lib/x.ts'].map((f) => m.minimumFor(f, { 'lib/exec/': 75, 'lib/': 80, default: 85 })),
    ).toEqual([75, 80]);
  });

  it('the files below their minimum, on both sides of each bound (75 passes for exec, fails elsewhere; 85 passes, 84 fails; 90 passes, 89 fails where raised)', () => {
    expect(m.belowMinimum(m.scoreReport(REPORT).files, m.MINIMUMS)).toEqual([LLAMA_BELOW, TEXT_BELOW, PROFILES_BELOW]);
    expect(m.belowMinimum(m.scoreReport(REPORT).files, { default: 75 })).toEqual([]);
    expect(m.belowMinimum(m.scoreReport(REPORT).files, { default: 90, 'lib/exec/': 76 })).toEqual([
      { file: 'lib/doctor/new.ts', score: 85, minimum: 90 },
      LLAMA_BELOW,
      { file: 'lib/exec/run.ts', score: 75, minimum: 76 },
      { ...TEXT_BELOW, minimum: 90 },
      { ...PROFILES_BELOW, minimum: 90 },
    ]);
  });

  it('the command line: no check by default; --check is the table; --min and --min-file change it', () => {
    const file = path.join(root, 'build', 'mutation', 'mutation.json');
    expect(m.parseArgs([])).toEqual({ file, minimums: null, json: false });
    expect(m.parseArgs(['r.json', '--check', '--json'])).toEqual({
      file: path.resolve('r.json'),
      minimums: MINIMUMS_NOW,
      json: true,
    });
    expect(m.parseArgs(['--min', '90', '--min-file', 'lib/format/text.ts=70'])).toEqual({
      file,
      minimums: { ...MINIMUMS_NOW, default: 90, 'lib/format/text.ts': 70 },
      json: false,
    });
    expect(m.MINIMUMS).toEqual(MINIMUMS_NOW);
  });

  it.each([
    [['--min', 'x'], "--min needs a percentage from 0 to 100, got 'x'"],
    [['--min', '101'], "--min needs a percentage from 0 to 100, got '101'"],
    [['--min'], '--min needs a percentage from 0 to 100, got nothing'],
    [['--min-file', 'lib/exec/run.ts'], "--min-file needs FILE=PERCENT, got 'lib/exec/run.ts'"],
    [['--min-file', 'lib/exec/run.ts=-1'], "--min-file lib/exec/run.ts needs a percentage from 0 to 100, got '-1'"],
    [['--mni', '85'], 'unknown option --mni'],
  ])('%j is refused: %s', (args, message) => {
    expect(() => m.parseArgs(args)).toThrow(message);
  });
});

describe('as a command', () => {
  it('--check: exit 1, the full table on stdout, and on stderr the files below their minimum', () => {
    const r = runScript(['--check']);
    expect(r.status).toBe(1);
    expect(
      r.stdout
        .split('\n')
        .slice(2, 10)
        .map((l) => l.split(/\s{2,}/).slice(0, 2)),
    ).toEqual([
      ['lib/apply.ts', '90.00 %'],
      ['lib/doctor/new.ts', '85.00 %'],
      ['lib/empty.ts', '–'],
      ['lib/engines/index.ts', '90.00 %'],
      ['lib/engines/llama-cpp.ts', '89.00 %'],
      ['lib/exec/run.ts', '75.00 %'],
      ['lib/format/text.ts', '75.00 %'],
      ['lib/profiles.ts', '84.00 %'],
    ]);
    expect(r.stderr).toBe(
      [
        'mutation-score: 3 of 8 files below their minimum',
        'below its minimum           score  minimum',
        'lib/engines/llama-cpp.ts  89.00 %     90 %',
        'lib/format/text.ts        75.00 %     85 %',
        'lib/profiles.ts           84.00 %     85 %',
        '',
      ].join('\n'),
    );
  });

  it('without a check, or with minimums every file meets: exit 0 and nothing on stderr', () => {
    for (const args of [
      [],
      // --min changes the default only: a raised file keeps its own minimum.
      ['--min', '75', '--min-file', 'lib/engines/llama-cpp.ts=89'],
      [
        '--check',
        '--min-file',
        'lib/format/text.ts=75',
        '--min-file',
        'lib/profiles.ts=84',
        '--min-file',
        'lib/engines/llama-cpp.ts=89',
      ],
    ]) {
      const r = runScript(args);
      expect(r.status).toBe(0);
      expect(r.stderr).toBe('');
    }
  });

  it('--json carries the minimums and the files below them', () => {
    const r = runScript(['--check', '--json']);
    expect(r.status).toBe(1);
    const printed = JSON.parse(r.stdout) as { minimums: unknown; below: unknown };
    expect([printed.minimums, printed.below]).toEqual([MINIMUMS_NOW, [LLAMA_BELOW, TEXT_BELOW, PROFILES_BELOW]]);
  });

  it('bad arguments or an unusable report: exit 2 and one line', () => {
    expect(runScript(['--min', 'x'])).toMatchObject({
      status: 2,
      stdout: '',
      stderr: "mutation-score: --min needs a percentage from 0 to 100, got 'x'\n",
    });
    const r = spawnSync(process.execPath, [script, path.join(dir, 'missing.json')], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^mutation-score: ENOENT: no such file or directory/);
  });
});
