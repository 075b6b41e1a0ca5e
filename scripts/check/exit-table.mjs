#!/usr/bin/env node
// docs/cli.md's exit-code table, generated from the table the CLI uses (lib/cli/exit.ts, exported by
// metal-cap-shim/tables as EXIT_TABLE and EXEC_EXIT), between `<!-- exit:start -->` and `<!-- exit:end -->`.
// scripts/check/docs.mjs writes it with every other generated part of the docs; alone:
//   node scripts/check/exit-table.mjs           rewrites the region (after `npm run build`)
//   node scripts/check/exit-table.mjs --check   exits 1 when docs/cli.md differs from what it would write
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The file that holds the exit-code table, relative to the repository. */
export const EXIT_DOC = 'docs/cli.md';
const START = '<!-- exit:start -->';
const END = '<!-- exit:end -->';

/** The region, markers included, for the CLI's exit table and exec's own codes. */
export function renderExitTable(exitTable, execExit) {
  return [
    START,
    '| code | name | meaning |',
    '|---|---|---|',
    ...exitTable.map((r) => `| ${r.code} | \`${r.name}\` | ${r.meaning} |`),
    '',
    `\`exec\` passes the program's own exit code through; its own failures are **${execExit.failed}** (exec itself failed, any of`,
    `the above), **${execExit.notRunnable}** (the program cannot be run) and **${execExit.notFound}** (not found), as with \`env\`.`,
    END,
  ].join('\n');
}

/** `text` (the file `file`) with its exit-code region rewritten; a missing region is an error. */
export function rewriteExitTable(text, exitTable, execExit, file = EXIT_DOC) {
  const at = text.indexOf(START);
  const end = text.indexOf(END);
  if (at < 0 || end < at) throw new Error(`${file} has no ${START} … ${END} region`);
  return text.slice(0, at) + renderExitTable(exitTable, execExit) + text.slice(end + END.length);
}

/** docs/cli.md as it is and as it should be, from the built dist/tables.js. */
export async function generateExitDoc(dir = root) {
  const { EXIT_TABLE, EXEC_EXIT } = await import(pathToFileURL(path.join(dir, 'dist', 'tables.js')).href);
  const current = readFileSync(path.join(dir, EXIT_DOC), 'utf8');
  return { current, generated: rewriteExitTable(current, EXIT_TABLE, EXEC_EXIT) };
}

async function main() {
  let result;
  try {
    result = await generateExitDoc();
  } catch (err) {
    console.error(`exit-table: ${err.message}`);
    process.exit(1);
  }
  const { current, generated } = result;
  if (process.argv.includes('--check')) {
    if (generated !== current) {
      console.error(
        `exit-table: ${EXIT_DOC}'s exit-code table differs from lib/cli/exit.ts; run \`npm run build && node scripts/check/docs.mjs\``,
      );
      process.exit(1);
    }
    console.log(`exit-table: ${EXIT_DOC} is up to date`);
  } else {
    writeFileSync(path.join(root, EXIT_DOC), generated);
    console.log(`exit-table: ${EXIT_DOC} ${generated === current ? 'already up to date' : 'rewritten'}`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
