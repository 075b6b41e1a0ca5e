import { FileError, UsageError } from '../core/errors.js';
import { buildMatrix, matrixTable, type MatrixInput } from '../audit/field-report.js';
import { readJsonFile } from '../core/jsonfile.js';
import { err, EXIT, out, printJson, type Command } from './shared.js';

const command: Command = {
  help: () => `Usage: metal-cap-shim matrix [--json] FILE…

Merges field reports (metal-cap-shim report --json) into a host × guest OS × profile table (Markdown, or JSON).
The same report given twice (the same file, or a copy) is counted once.`,
  options: { json: { type: 'boolean' } },
  positionals: 'files',
  run({ values, positionals }) {
    if (positionals.length === 0) throw new UsageError('matrix needs at least one report file');
    const reports: MatrixInput[] = positionals.map((file) => {
      const read = readJsonFile(file);
      if (!read.ok) throw new FileError(`${file} ${read.problem}`);
      return { where: file, report: read.value };
    });
    const matrix = buildMatrix(reports);
    for (const d of matrix.duplicates)
      err(`metal-cap-shim: ${d.where} is the same report as ${d.sameAs}: counted once`);
    if (values.json) printJson(matrix);
    else out(matrixTable(matrix));
    return EXIT.ok;
  },
};

export default command;
