// @ts-check
/**
 * Merges the field reports collect.sh gathered into one host × guest OS × profile table (Markdown).
 *
 *   node fleet-report/build-matrix.js [REPORTS_DIR]          # default ./reports; Node 20.12+
 *   node fleet-report/build-matrix.js reports --json          # the matrix as JSON (schema metal-cap-shim/matrix@1)
 *
 * Same result as `npx metal-cap-shim matrix reports/*.json`; this is the library route, for when the table goes into
 * a generated document or a dashboard instead of a terminal.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildMatrix, MetalCapShimError, matrixMarkdown } from 'metal-cap-shim';

/** @returns {number} the exit code */
function main() {
  /** @type {string} */
  let dir;
  /** @type {boolean} */
  let json;
  try {
    const { values, positionals } = parseArgs({ allowPositionals: true, options: { json: { type: 'boolean' } } });
    if (positionals.length > 1) throw new Error('expected one reports folder');
    dir = positionals[0] ?? 'reports';
    json = values.json === true;
  } catch (err) {
    console.error(`usage: build-matrix [REPORTS_DIR] [--json]\n${/** @type {Error} */ (err).message}`);
    return 2;
  }

  /** @type {string[]} */
  let files;
  try {
    // Sorted so the same folder always gives the same table (readdir order is file-system dependent).
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => path.join(dir, f));
  } catch (err) {
    console.error(`build-matrix: cannot read ${dir}: ${/** @type {Error} */ (err).message}`);
    return 1;
  }
  if (files.length === 0) {
    console.error(`build-matrix: no *.json reports in ${dir} (run collect.sh first)`);
    return 1;
  }

  // buildMatrix() takes fieldReport() results as they are, and `{ where, report }` for parsed JSON: `where` names the
  // file in the error when one of them is not a field report. The same report given twice is counted once.
  /** @type {import('metal-cap-shim').MatrixInput[]} */
  const reports = [];
  for (const file of files) {
    try {
      reports.push({ where: file, report: JSON.parse(readFileSync(file, 'utf8')) });
    } catch (err) {
      console.error(`build-matrix: ${file} is not JSON (${/** @type {Error} */ (err).name})`);
      return 1;
    }
  }

  try {
    const matrix = buildMatrix(reports);
    for (const d of matrix.duplicates)
      console.error(`build-matrix: ${d.where} is the same report as ${d.sameAs}: counted once`);
    console.log(json ? JSON.stringify(matrix, null, 2) : matrixMarkdown(matrix));
  } catch (err) {
    if (err instanceof MetalCapShimError) {
      console.error(`build-matrix: ${err.code}: ${err.message}`);
      return 1;
    }
    throw err;
  }
  return 0;
}

process.exitCode = main();
