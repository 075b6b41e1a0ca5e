#!/usr/bin/env node
// The README's API tables, generated from docs/api.json (one row per export cell, keyed by that cell) and checked
// against what each entry point exports:
//
//   node scripts/api-table.mjs           rewrites the regions between `<!-- api:start ENTRY -->` and
//                                        `<!-- api:end ENTRY -->` in README.md (after `npm run build`)
//   node scripts/api-table.mjs --check   exits 1 when README.md differs from what it would write, or when an export
//                                        has no row or a row names no export
//
// The names a row documents are the leading identifiers of the code spans in its first cell (`probe(options?)` is
// probe, `applyProfile('auto', …)` is applyProfile). test/exports.test.ts runs the same check against lib/ and pins
// the export lists themselves.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Each public entry point: its import specifier and the built CommonJS file whose keys are its value exports. */
export const ENTRIES = { 'metal-cap-shim': 'dist/index.cjs', 'metal-cap-shim/tables': 'dist/tables.cjs' };

/** The export names a row's first cell documents. */
export function rowNames(cell) {
  return [...cell.matchAll(/`([^`]+)`/g)]
    .map((m) => /^[A-Za-z_$][\w$]*/.exec(m[1])?.[0])
    .filter((n) => n !== undefined);
}

/** Exports with no row, and names in rows that are not exports, per entry. */
export function apiProblems(rows, exportsByEntry) {
  const problems = {};
  for (const [entry, names] of Object.entries(exportsByEntry)) {
    const documented = new Set(Object.keys(rows[entry] ?? {}).flatMap(rowNames));
    const exported = new Set(names);
    problems[entry] = {
      noRow: [...exported].filter((n) => !documented.has(n)).sort(),
      noExport: [...documented].filter((n) => !exported.has(n)).sort(),
    };
  }
  return problems;
}

/** One entry's table, in the order of docs/api.json. */
export function renderTable(entryRows) {
  const lines = ['| export | returns | what it does |', '|---|---|---|'];
  for (const [cell, { returns, does }] of Object.entries(entryRows))
    lines.push(`| ${cell} |${returns ? ` ${returns} ` : ' '}| ${does} |`);
  return lines.join('\n');
}

/** README.md with each entry's region replaced by its generated table. A missing region is an error. */
export function rewriteReadme(readme, rows) {
  let out = readme;
  for (const entry of Object.keys(rows)) {
    const start = `<!-- api:start ${entry} -->`;
    const end = `<!-- api:end ${entry} -->`;
    const from = out.indexOf(start);
    const to = out.indexOf(end);
    if (from < 0 || to < from) throw new Error(`README.md has no region ${start} … ${end}`);
    out = `${out.slice(0, from + start.length)}\n${renderTable(rows[entry])}\n${out.slice(to)}`;
  }
  return out;
}

function main() {
  const require = createRequire(import.meta.url);
  const rows = JSON.parse(readFileSync(path.join(root, 'docs', 'api.json'), 'utf8'));
  const exportsByEntry = Object.fromEntries(
    Object.entries(ENTRIES).map(([entry, file]) => [entry, Object.keys(require(path.join(root, file)))]),
  );
  const readmeFile = path.join(root, 'README.md');
  const readme = readFileSync(readmeFile, 'utf8');
  const generated = rewriteReadme(readme, rows);
  let failed = false;
  for (const [entry, { noRow, noExport }] of Object.entries(apiProblems(rows, exportsByEntry))) {
    if (noRow.length) console.error(`api-table: ${entry} exports ${noRow.join(', ')} with no row in docs/api.json`);
    if (noExport.length)
      console.error(`api-table: docs/api.json documents ${noExport.join(', ')}, which ${entry} does not export`);
    failed ||= noRow.length > 0 || noExport.length > 0;
  }
  if (process.argv.includes('--check')) {
    if (generated !== readme)
      console.error('api-table: README.md’s API tables differ from docs/api.json; run `node scripts/api-table.mjs`');
    process.exit(failed || generated !== readme ? 1 : 0);
  }
  if (generated !== readme) writeFileSync(readmeFile, generated);
  console.log(`api-table: README.md ${generated === readme ? 'already up to date' : 'rewritten'}`);
  process.exit(failed ? 1 : 0);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
