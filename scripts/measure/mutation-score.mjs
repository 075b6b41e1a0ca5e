#!/usr/bin/env node
// Prints the mutation score per file from Stryker's JSON report, computed as the project defines it:
//
//   score = detected ÷ (detected + survived + no coverage)
//
// detected = killed, plus timed out (a test run that hangs under a mutant has noticed it); a mutant no test covers
// counts as not killed; static mutants (ignoreStatic) and other ignored mutants are left out, as are mutants that
// do not compile or break the module before any test runs (they say nothing about the tests).
//
//   node scripts/measure/mutation-score.mjs [report.json] [--check] [--min N] [--min-file FILE=N] [--json]
//
// --check enforces the minimums (MINIMUMS below: 85 % per file, the files of lib/exec/ 75 %, 90 % for the engines,
// the profiles, apply and the snapshots); --min N sets the minimum of every file not named otherwise, --min-file
// FILE=N one file's or, for a FILE ending in '/', a folder's (repeatable; either implies a check). With a check the script exits 1 and prints, on
// stderr, a table of the files below their minimum. A file with no counted mutant has no score and passes. Default
// report: build/mutation/mutation.json. Exit 2: unusable report or arguments.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The minimum scores, in percent: `default` for every file not listed. A key ending in '/' is a folder's, for each
 * file under it. exec is held to less because part of it is reached only through a terminal or macOS's codesign
 * (docs/testing.md lists what survives there). The engines, the profiles, the patch plan and its engine warnings,
 * apply and the snapshots measured above 90 % and are held to it (docs/measurements.md); a file not measured there
 * keeps the default.
 */
export const MINIMUMS = Object.freeze({
  default: 85,
  'lib/exec/': 75,
  'lib/engines/': 90,
  'lib/patch/profiles.ts': 90,
  'lib/patch/plan.ts': 90,
  'lib/patch/engine-warnings.ts': 90,
  'lib/patch/apply.ts': 90,
  'lib/device/snapshots.ts': 90,
});

/**
 * The minimum that applies to `file` (a path as Stryker's report names it, relative to the repository): its own key,
 * else the key of the innermost folder listed that holds it, else `default`.
 */
export function minimumFor(file, minimums) {
  if (Object.hasOwn(minimums, file) && file !== 'default') return minimums[file];
  let folder = null;
  for (const key of Object.keys(minimums)) {
    if (key.endsWith('/') && file.startsWith(key) && (folder === null || key.length > folder.length)) folder = key;
  }
  return folder === null ? minimums.default : minimums[folder];
}

/** The scored files whose score is below their minimum, each with that minimum. Files without a score pass. */
export function belowMinimum(files, minimums) {
  return files
    .filter((f) => f.score !== null && f.score < minimumFor(f.file, minimums))
    .map((f) => ({ file: f.file, score: f.score, minimum: minimumFor(f.file, minimums) }));
}

/** Counts and score for one file's mutants. */
export function scoreFile(mutants) {
  const c = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, static: 0, errors: 0, pending: 0 };
  for (const m of mutants) {
    switch (m.status) {
      case 'Killed':
        c.killed++;
        break;
      case 'Timeout':
        c.timeout++;
        break;
      case 'Survived':
        c.survived++;
        break;
      case 'NoCoverage':
        c.noCoverage++;
        break;
      case 'Ignored':
        if (m.static === true || /static/i.test(m.statusReason ?? '')) c.static++;
        else c.ignored++;
        break;
      case 'CompileError':
      case 'RuntimeError':
        c.errors++;
        break;
      default:
        c.pending++;
    }
  }
  const detected = c.killed + c.timeout;
  const counted = detected + c.survived + c.noCoverage;
  return { ...c, counted, score: counted === 0 ? null : (100 * detected) / counted };
}

/** Scores every file of a Stryker JSON report (mutation-testing-report-schema), plus the total. */
export function scoreReport(report) {
  if (report === null || typeof report !== 'object' || typeof report.files !== 'object' || report.files === null) {
    throw new Error('not a Stryker JSON report: no "files" object');
  }
  const files = Object.entries(report.files)
    .map(([file, { mutants }]) => ({ file, ...scoreFile(mutants ?? []) }))
    .sort((a, b) => a.file.localeCompare(b.file));
  const all = Object.values(report.files).flatMap((f) => f.mutants ?? []);
  return { files, total: { file: 'all files', ...scoreFile(all) } };
}

function table(rows) {
  const head = ['file', 'score', 'killed', 'timeout', 'survived', 'no cov', 'static', 'ignored', 'errors'];
  const body = rows.map((r) =>
    [
      r.file,
      r.score === null ? '–' : `${r.score.toFixed(2)} %`,
      r.killed,
      r.timeout,
      r.survived,
      r.noCoverage,
      r.static,
      r.ignored,
      r.errors,
    ].map(String),
  );
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(head), ...body.map(line)].join('\n');
}

/** The table printed when files fall below their minimum. */
export function belowTable(low) {
  const rows = low.map((r) => [r.file, `${r.score.toFixed(2)} %`, `${r.minimum} %`]);
  const head = ['below its minimum', 'score', 'minimum'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(head), ...rows.map(line)].join('\n');
}

function percent(text, what) {
  const n = Number(text);
  if (text === undefined || text.trim() === '' || !Number.isFinite(n) || n < 0 || n > 100) {
    throw new Error(`${what} needs a percentage from 0 to 100, got ${text === undefined ? 'nothing' : `'${text}'`}`);
  }
  return n;
}

/** Reads the command line: the report file and the minimums to check (null: no check). */
export function parseArgs(argv) {
  let file = path.join(root, 'build', 'mutation', 'mutation.json');
  let minimums = null;
  let json = false;
  const checking = () => (minimums ??= { ...MINIMUMS });
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--check') checking();
    else if (a === '--min') checking().default = percent(argv[++i], '--min');
    else if (a === '--min-file') {
      const spec = argv[++i] ?? '';
      const eq = spec.lastIndexOf('=');
      if (eq <= 0) throw new Error(`--min-file needs FILE=PERCENT, got '${spec}'`);
      checking()[spec.slice(0, eq)] = percent(spec.slice(eq + 1), `--min-file ${spec.slice(0, eq)}`);
    } else if (a === '--json') json = true;
    else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else file = path.resolve(a);
  }
  return { file, minimums, json };
}

function main(argv) {
  const { file, minimums, json } = parseArgs(argv);
  const { files, total } = scoreReport(JSON.parse(readFileSync(file, 'utf8')));
  const low = minimums === null ? [] : belowMinimum(files, minimums);
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ report: path.relative(root, file), files, total, minimums, below: low })}\n`,
    );
  } else {
    process.stdout.write(
      `mutation score per file (killed + timeout) ÷ (killed + timeout + survived + no coverage); static mutants left out\n`,
    );
    process.stdout.write(`${table([...files, total])}\n`);
  }
  if (low.length > 0) {
    process.stderr.write(
      `mutation-score: ${low.length} of ${files.length} files below their minimum\n${belowTable(low)}\n`,
    );
    return 1;
  }
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`mutation-score: ${err.message}\n`);
    process.exitCode = 2;
  }
}
