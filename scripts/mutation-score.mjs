#!/usr/bin/env node
// Prints the mutation score per file from Stryker's JSON report, computed as issue 10 defines it:
//
//   score = detected ÷ (detected + survived + no coverage)
//
// detected = killed, plus timed out (a test run that hangs under a mutant has noticed it); a mutant no test covers
// counts as not killed; static mutants (ignoreStatic) and other ignored mutants are left out, as are mutants that
// do not compile or break the module before any test runs (they say nothing about the tests).
//
//   node scripts/mutation-score.mjs [report.json] [--min 85] [--json]
//
// --min N exits 1 when a file scores below N %. Default report: build/mutation/mutation.json.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

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
  const body = rows.map((r) => [
    r.file,
    r.score === null ? '–' : `${r.score.toFixed(2)} %`,
    r.killed,
    r.timeout,
    r.survived,
    r.noCoverage,
    r.static,
    r.ignored,
    r.errors,
  ].map(String));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(head), ...body.map(line)].join('\n');
}

function main(argv) {
  let file = path.join(root, 'build', 'mutation', 'mutation.json');
  let min = null;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--min') {
      min = Number(argv[++i]);
      if (!Number.isFinite(min)) throw new Error('--min needs a number (percent)');
    } else if (a === '--json') json = true;
    else file = path.resolve(a);
  }
  const { files, total } = scoreReport(JSON.parse(readFileSync(file, 'utf8')));
  if (json) {
    process.stdout.write(`${JSON.stringify({ report: path.relative(root, file), files, total })}\n`);
  } else {
    process.stdout.write(`mutation score per file (killed + timeout) ÷ (killed + timeout + survived + no coverage); static mutants left out\n`);
    process.stdout.write(`${table([...files, total])}\n`);
  }
  if (min !== null) {
    const low = files.filter((f) => f.score !== null && f.score < min);
    for (const f of low) process.stderr.write(`mutation-score: ${f.file} ${f.score.toFixed(2)} % < ${min} %\n`);
    if (low.length > 0) return 1;
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
