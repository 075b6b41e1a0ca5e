#!/usr/bin/env node
// docs/api.md's API tables, generated from docs/api.json (one row per export cell, keyed by that cell) and checked
// against what each entry point exports. scripts/check/docs.mjs runs it with every other generated part of the docs;
// alone:
//
//   node scripts/check/api-table.mjs           rewrites the regions between `<!-- api:start ENTRY -->` and
//                                              `<!-- api:end ENTRY -->` in docs/api.md (after `npm run build`)
//   node scripts/check/api-table.mjs --check   exits 1 when docs/api.md differs from what it would write, or when
//                                              an export has no row or a row names no export
//
// The names a row documents are the leading identifiers of the code spans in its first cell (`probe(options?)` is
// probe, `applyProfile('auto', …)` is applyProfile). test/repo/exports.test.ts runs the same check against lib/ and
// pins the export lists themselves; test/repo/docs.test.ts runs scripts/check/docs.mjs --check.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

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

/** The file that holds the API tables, relative to the repository. */
export const API_DOC = 'docs/api.md';

/** `text` (the file `file`) with each entry's region replaced by its generated table. A missing region is an error. */
export function rewriteApiDoc(text, rows, file = API_DOC) {
  let out = text;
  for (const entry of Object.keys(rows)) {
    const start = `<!-- api:start ${entry} -->`;
    const end = `<!-- api:end ${entry} -->`;
    const from = out.indexOf(start);
    const to = out.indexOf(end);
    if (from < 0 || to < from) throw new Error(`${file} has no region ${start} … ${end}`);
    out = `${out.slice(0, from + start.length)}\n${renderTable(rows[entry])}\n${out.slice(to)}`;
  }
  return out;
}

/** rewriteApiDoc with README.md named in its error: the name test/repo/exports.test.ts calls. */
export function rewriteReadme(readme, rows) {
  return rewriteApiDoc(readme, rows, 'README.md');
}

/**
 * docs/api.md as it should be, and the problems of docs/api.json against the built entry points' exports (one line
 * each; empty when every export has a row and every row names exports only).
 */
export function generateApiDoc(dir = root) {
  const require = createRequire(import.meta.url);
  const rows = JSON.parse(readFileSync(path.join(dir, 'docs', 'api.json'), 'utf8'));
  const exportsByEntry = Object.fromEntries(
    Object.entries(ENTRIES).map(([entry, file]) => [entry, Object.keys(require(path.join(dir, file)))]),
  );
  const problems = [];
  for (const [entry, { noRow, noExport }] of Object.entries(apiProblems(rows, exportsByEntry))) {
    if (noRow.length) problems.push(`${entry} exports ${noRow.join(', ')} with no row in docs/api.json`);
    if (noExport.length)
      problems.push(`docs/api.json documents ${noExport.join(', ')}, which ${entry} does not export`);
  }
  const current = readFileSync(path.join(dir, API_DOC), 'utf8');
  return { current, generated: rewriteApiDoc(current, rows), problems };
}

function main() {
  const { current, generated, problems } = generateApiDoc();
  for (const p of problems) console.error(`api-table: ${p}`);
  const failed = problems.length > 0;
  if (process.argv.includes('--check')) {
    if (generated !== current)
      console.error(
        `api-table: ${API_DOC}’s API tables differ from docs/api.json; run \`npm run build && node scripts/check/docs.mjs\``,
      );
    process.exit(failed || generated !== current ? 1 : 0);
  }
  if (generated !== current) writeFileSync(path.join(root, API_DOC), generated);
  console.log(`api-table: ${API_DOC} ${generated === current ? 'already up to date' : 'rewritten'}`);
  process.exit(failed ? 1 : 0);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
