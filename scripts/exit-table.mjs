#!/usr/bin/env node
// The README's exit-code table, generated from the table the CLI uses (lib/cli/exit.ts, exported by
// metal-cap-shim/tables as EXIT_TABLE and EXEC_EXIT), between `<!-- exit:start -->` and `<!-- exit:end -->`:
//   node scripts/exit-table.mjs           rewrites the region (after `npm run build`)
//   node scripts/exit-table.mjs --check   exits 1 when README.md differs from what it would write
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { EXIT_TABLE, EXEC_EXIT } = await import(pathToFileURL(path.join(root, 'dist', 'tables.js')).href);
const START = '<!-- exit:start -->';
const END = '<!-- exit:end -->';

const table = [
  START,
  '| code | name | meaning |',
  '|---|---|---|',
  ...EXIT_TABLE.map((r) => `| ${r.code} | \`${r.name}\` | ${r.meaning} |`),
  '',
  `\`exec\` passes the program's own exit code through; its own failures are **${EXEC_EXIT.failed}** (exec itself failed, any of`,
  `the above), **${EXEC_EXIT.notRunnable}** (the program cannot be run) and **${EXEC_EXIT.notFound}** (not found), as with \`env\`.`,
  END,
].join('\n');

const file = path.join(root, 'README.md');
const readme = readFileSync(file, 'utf8');
const at = readme.indexOf(START);
const end = readme.indexOf(END);
if (at < 0 || end < at) {
  console.error(`exit-table: README.md has no ${START} … ${END} region`);
  process.exit(1);
}
const generated = readme.slice(0, at) + table + readme.slice(end + END.length);
if (process.argv.includes('--check')) {
  if (generated !== readme) {
    console.error(
      "exit-table: README.md's exit-code table differs from lib/cli/exit.ts; run `npm run build && node scripts/exit-table.mjs`",
    );
    process.exit(1);
  }
  console.log('exit-table: README.md is up to date');
} else {
  writeFileSync(file, generated);
  console.log(`exit-table: README.md ${generated === readme ? 'already up to date' : 'rewritten'}`);
}
