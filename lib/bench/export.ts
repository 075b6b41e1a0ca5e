/**
 * A speed result as llama.cpp's own `scripts/compare-llama-bench.py` reads it: llama-bench's records of every run, one
 * JSON object a line, each side told apart by its `build_commit`, which is how the script tells builds apart.
 */
import { UsageError } from '../core/errors.js';
import { jsonText } from '../core/escape.js';
import { isObject } from '../core/input.js';
import type { BenchResult } from './run.js';

// The script puts a build_commit between single quotes in its SQL and asks for it on the command line (-b, -c):
// letters, digits, dot and hyphen need neither quoting nor escaping. Anything else in a side's name becomes a hyphen.
const UNSAFE = /[^A-Za-z0-9.-]/g;
// When the commits differ in length the script cuts every one to the shortest (its _builds_init), which would merge
// `host-family` and `host-other` into `host-`: each is padded to the longest with a character the names never hold,
// so distinct names stay distinct.
const PAD = '_';

/**
 * The build_commit each side's records carry in the export, by side name: the name made safe for the script (see
 * above, starting with a letter or digit) and padded to one length; a name that two sides would share gets its side's
 * position appended.
 */
export function exportCommits(sides: readonly string[]): Map<string, string> {
  const safe: string[] = [];
  for (const [i, side] of sides.entries()) {
    const replaced = side.replace(UNSAFE, '-');
    // A commit starting with a hyphen would be read as an option of the script's: each starts with a letter or digit.
    const name = /^[A-Za-z0-9]/.test(replaced) ? replaced : `side${replaced}`;
    safe.push(safe.includes(name) ? `${name}.${i}` : name);
  }
  const length = Math.max(...safe.map((s) => s.length));
  return new Map(sides.map((side, i) => [side, safe[i]!.padEnd(length, PAD)]));
}

/** The sides of a result in the order it ran them: stock first, then each profile. */
function sidesOf(result: BenchResult): string[] {
  return [...new Set(['stock', ...result.profiles.map((p) => p.name), ...result.records.map((r) => r.side)])];
}

/** The commits of `result`'s sides (exportCommits), to name in the command that compares them. */
export function resultCommits(result: BenchResult): Map<string, string> {
  return exportCommits(sidesOf(result));
}

/** A model path as its file name: the script keys rows by it, and folders differ from machine to machine. */
function fileName(path: string): string {
  return path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
}

/**
 * JSONL of every llama-bench record of every run of a speed result, as llama-bench printed it but for `build_commit`
 * (the side's, exportCommits) and `model_filename` (its file name alone). Throws UsageError for a result of another
 * mode, which holds no llama-bench records.
 */
export function llamaBenchExport(result: BenchResult): string {
  if (result.mode !== 'speed')
    throw new UsageError(
      `a ${result.mode} result holds no llama-bench records: only bench -- llama-bench can be exported for compare-llama-bench.py`,
    );
  const commits = resultCommits(result);
  const lines: string[] = [];
  for (const run of result.records)
    for (const record of run.records) {
      if (!isObject(record)) continue;
      const out: Record<string, unknown> = { ...record, build_commit: commits.get(run.side)! };
      if (typeof record.model_filename === 'string') out.model_filename = fileName(record.model_filename);
      lines.push(jsonText(out));
    }
  return lines.map((l) => `${l}\n`).join('');
}
