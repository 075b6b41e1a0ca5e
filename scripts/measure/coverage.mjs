#!/usr/bin/env node
// Line and branch coverage of lib/ across every process the suite starts (scripts/test.sh runs this after vitest).
//
// Two sources, merged per file of lib/:
//   in-process   vitest's own V8 coverage of the test files' imports of lib/*.ts
//                (build/coverage/in-process/coverage-final.json, written by `vitest run --coverage.enabled`);
//   spawned      every Node process the tests start (the CLI, `node --input-type=module -e …` children, register
//                preloads) runs dist/, and writes raw V8 coverage into NODE_V8_COVERAGE=build/coverage/v8 when it
//                exits; dist's source maps lead back to lib/*.ts.
// Both are turned into Istanbul data by the same converter (ast-v8-to-istanbul, which vitest 4 uses): c8's converter
// counts lines where vitest counts AST statements and branches, and the two kinds do not merge into one number.
// Istanbul's merge then adds the hits of equal locations.
//
//   node scripts/measure/coverage.mjs [--check-lines 90] [--check-branches 80] [--json]
//
// Writes build/coverage/index.html (per file, per line), build/coverage/coverage-summary.json, and prints a table.
// --check-* exit 1 when the total is below the percentage.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mergeProcessCovs } from '@bcoe/v8-coverage';
import convert from 'ast-v8-to-istanbul';
import libCoverage from 'istanbul-lib-coverage';
import libReport from 'istanbul-lib-report';
import reports from 'istanbul-reports';
import { parseAstAsync } from 'vitest/node';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const out = path.join(root, 'build', 'coverage');
const rawDir = path.join(out, 'v8');
const inProcessFile = path.join(out, 'in-process', 'coverage-final.json');
const libDir = path.join(root, 'lib') + path.sep;
const distUrl = `${pathToFileURL(path.join(root, 'dist')).href}/`;

function args(argv) {
  const o = { lines: null, branches: null, json: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--check-lines') o.lines = Number(argv[++i]);
    else if (argv[i] === '--check-branches') o.branches = Number(argv[++i]);
    else if (argv[i] === '--json') o.json = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return o;
}

/** The raw V8 coverage of dist/ scripts from every process that wrote some, summed per script. */
function spawnedScriptCoverage() {
  if (!existsSync(rawDir)) return { processes: 0, scripts: [] };
  const files = readdirSync(rawDir).filter((f) => f.endsWith('.json'));
  const processCovs = [];
  for (const f of files) {
    let data;
    try {
      data = JSON.parse(readFileSync(path.join(rawDir, f), 'utf8'));
    } catch {
      continue; // a process killed while writing leaves a truncated file; its counts are lost, not wrong
    }
    const result = (data.result ?? []).filter((s) => s.url.startsWith(distUrl) && /\.c?js$/.test(s.url));
    if (result.length > 0) processCovs.push({ result });
  }
  return { processes: processCovs.length, scripts: processCovs.length > 0 ? mergeProcessCovs(processCovs).result : [] };
}

async function spawnedCoverageMap() {
  const map = libCoverage.createCoverageMap({});
  const { processes, scripts } = spawnedScriptCoverage();
  for (const script of scripts) {
    const file = fileURLToPath(script.url);
    const code = readFileSync(file, 'utf8');
    const mapRef = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(code);
    // Files without a map are post-build's re-export wrappers: no code of lib/ in them.
    if (!mapRef) continue;
    const sourceMap = JSON.parse(readFileSync(path.resolve(path.dirname(file), mapRef[1]), 'utf8'));
    const data = await convert({
      code,
      ast: parseAstAsync(code),
      sourceMap,
      wrapperLength: 0,
      coverage: { url: script.url, functions: script.functions },
    });
    map.merge(data);
  }
  map.filter((f) => f.startsWith(libDir));
  return { map, processes };
}

function pct(covered, total) {
  return total === 0 ? 100 : (100 * covered) / total;
}

function summaryRow(name, s) {
  return {
    file: name,
    lines: { covered: s.lines.covered, total: s.lines.total, pct: pct(s.lines.covered, s.lines.total) },
    branches: { covered: s.branches.covered, total: s.branches.total, pct: pct(s.branches.covered, s.branches.total) },
  };
}

function table(rows) {
  const fmt = (m) => `${m.pct.toFixed(2).padStart(6)} % (${m.covered}/${m.total})`;
  const width = Math.max(...rows.map((r) => r.file.length));
  const head = `${'file'.padEnd(width)}  ${'lines'.padEnd(22)}  branches`;
  return [head, ...rows.map((r) => `${r.file.padEnd(width)}  ${fmt(r.lines).padEnd(22)}  ${fmt(r.branches)}`)].join(
    '\n',
  );
}

async function main() {
  const opts = args(process.argv.slice(2));
  if (!existsSync(inProcessFile)) {
    throw new Error(
      `${path.relative(root, inProcessFile)} is missing: run vitest with --coverage.enabled first (scripts/test.sh does)`,
    );
  }
  const inProcess = libCoverage.createCoverageMap(JSON.parse(readFileSync(inProcessFile, 'utf8')));
  const { map: spawned, processes } = await spawnedCoverageMap();

  // Istanbul's merge keeps the first map's file objects and adds into them: merge copies, so the two halves can
  // still be reported on their own.
  const merged = libCoverage.createCoverageMap(JSON.parse(JSON.stringify(inProcess.toJSON())));
  merged.merge(JSON.parse(JSON.stringify(spawned.toJSON())));

  mkdirSync(out, { recursive: true });
  const context = libReport.createContext({ dir: out, coverageMap: merged, defaultSummarizer: 'flat' });
  reports.create('html', { skipEmpty: false }).execute(context);
  reports.create('json-summary').execute(context);

  const rows = merged
    .files()
    .sort()
    .map((f) => summaryRow(path.relative(root, f), merged.fileCoverageFor(f).toSummary()));
  const totals = {
    all: summaryRow('all of lib/', merged.getCoverageSummary()),
    inProcess: summaryRow('in-process only', inProcess.getCoverageSummary()),
    spawned: summaryRow('spawned only', spawned.getCoverageSummary()),
  };
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ processes, files: rows, totals })}\n`);
  } else {
    process.stdout.write(
      `\ncoverage of lib/: in-process tests + ${processes} spawned Node processes (build/coverage/index.html)\n`,
    );
    process.stdout.write(`${table([...rows, totals.all])}\n`);
    process.stdout.write(`${table([totals.inProcess, totals.spawned]).split('\n').slice(1).join('\n')}\n`);
  }
  writeFileSync(path.join(out, 'totals.json'), `${JSON.stringify({ processes, ...totals }, null, 2)}\n`);

  let status = 0;
  for (const [kind, min] of [
    ['lines', opts.lines],
    ['branches', opts.branches],
  ]) {
    if (min === null) continue;
    const got = totals.all[kind].pct;
    if (got < min) {
      process.stderr.write(`coverage: ${kind} ${got.toFixed(2)} % is below the ${min} % threshold\n`);
      status = 1;
    }
  }
  return status;
}

main().then(
  (status) => {
    process.exitCode = status;
  },
  (err) => {
    process.stderr.write(`coverage: ${err.message}\n`);
    process.exitCode = 2;
  },
);
