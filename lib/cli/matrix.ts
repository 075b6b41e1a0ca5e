import { FileError, MetalCapShimError, UsageError } from '../core/errors.js';
import { buildMatrix, matrixTable, type MatrixInput } from '../audit/field-report.js';
import { readJsonFile } from '../core/jsonfile.js';
import { writeFileSafely } from '../core/safefs.js';
import { matrixSvg } from '../format/svg.js';
import { err, EXIT, out, printJson, text, type Command } from './shared.js';

const command: Command = {
  help: () => `Usage: metal-cap-shim matrix [--json] [--svg OUT] FILE…

Merges field reports (metal-cap-shim report --json) into a host × guest OS × profile table (Markdown, or JSON).
The Architecture column is the GPU architecture (architecture.name) each row's default device reported, stock:
every value once, unrecorded where a report has none (a snapshot that did not record it, or macOS before 14).
The same report given twice (the same file, or a copy) is counted once. A file that cannot be read or is no
field report is skipped with one warning naming it; the table of the others is printed, and the exit code is 2.
A custom profile's column (custom-<hash>) is listed below the table with its answers (--json: legend).
Reports with bench results (report --bench) add a speed-up column (median per profile and llama-bench test,
with the llama.cpp builds that measured it) and a fidelity column (differs when any report differs; for
bench --node-llama-cpp, the earliest token where a report's greedy generation left stock's).
  --svg OUT   also draw the speed-ups as a bar chart (by host, guest OS and profile; log scale, stock = 1x) to
              OUT, a new file or a regular file of yours (never a link); when no report has a speed result,
              nothing is written and the exit code is 2`,
  options: { json: { type: 'boolean' }, svg: { type: 'string' } },
  positionals: 'files',
  run({ values, positionals }) {
    if (positionals.length === 0) throw new UsageError('matrix needs at least one report file');
    // Each file on its own: one that cannot be read or is no field report is skipped, said once, and the rest counted.
    const skipped: MetalCapShimError[] = [];
    const reports: MatrixInput[] = positionals.flatMap((file) => {
      const read = readJsonFile(file);
      if (!read.ok) {
        skipped.push(new FileError(`${file} ${read.problem}`));
        return [];
      }
      const input = { where: file, report: read.value };
      try {
        buildMatrix([input]);
      } catch (e) {
        if (!(e instanceof MetalCapShimError)) throw e;
        skipped.push(e);
        return [];
      }
      return [input];
    });
    // Nothing to table: a single file's error is the error, as for any command given one file.
    if (reports.length === 0 && skipped.length === 1) throw skipped[0]!;
    for (const e of skipped) err(`metal-cap-shim: warning: skipped ${e.message}`);
    if (reports.length === 0) throw new FileError(`no report could be read (${skipped.length} skipped)`);
    const matrix = buildMatrix(reports);
    for (const d of matrix.duplicates)
      err(`metal-cap-shim: ${d.where} is the same report as ${d.sameAs}: counted once`);
    if (values.json) printJson(matrix);
    else out(matrixTable(matrix));
    const svgFile = text(values, 'svg');
    if (svgFile !== undefined) {
      const svg = matrixSvg(matrix);
      // Nothing to draw is a usage error: a script that asked for a chart must not take a missing one for a chart.
      if (svg === null) {
        err('metal-cap-shim: --svg: no report has a bench speed result, so there is no chart; nothing written');
        return EXIT.usage;
      }
      try {
        writeFileSafely(svgFile, svg);
      } catch (e) {
        throw new FileError(`--svg ${(e as Error).message}`);
      }
    }
    return skipped.length > 0 ? EXIT.usage : EXIT.ok;
  },
};

export default command;
