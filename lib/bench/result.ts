/**
 * A bench result read back (`report --bench FILE`, a field report's `bench` section, `matrix`): checked before it is
 * trusted, since it comes from a file someone sent. Only what the report and the matrix read is checked.
 */
import { InvalidReportError } from '../core/errors.js';
import { clip, isObject } from '../core/input.js';
import { schemaProblem } from '../core/jsonfile.js';
import { BENCH_SCHEMA, type BenchResult } from './run.js';

/** Checks parsed JSON as a bench result; `where` names it in messages. Throws InvalidReportError naming the field. */
export function checkBenchResult(value: unknown, where: string): BenchResult {
  const fail = (field: string, what: string): never => {
    throw new InvalidReportError(
      field,
      `${clip(where)} is not a usable bench result (${what}); make one with \`metal-cap-shim bench --json\``,
    );
  };
  if (!isObject(value)) return fail('(root)', 'not a JSON object');
  const wrongKind = schemaProblem(value, { [BENCH_SCHEMA]: 'metal-cap-shim bench --json' });
  if (wrongKind !== null) fail('schema', `it ${wrongKind}`);
  if (value.mode !== 'speed' && value.mode !== 'fidelity' && value.mode !== 'node-llama-cpp')
    fail('mode', "mode must be 'speed', 'fidelity' or 'node-llama-cpp'");
  const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
  const positive = (v: unknown) => finite(v) && (v as number) > 0;
  // node-llama-cpp's rows are speed rows (its tests named `node-llama-cpp pp512`, …): the matrix reads them alike.
  if (value.mode === 'speed' || value.mode === 'node-llama-cpp') {
    if (!Array.isArray(value.speed)) fail('speed', 'speed must be an array');
    for (const [i, row] of (value.speed as unknown[]).entries()) {
      const field = `speed[${i}]`;
      if (!isObject(row) || typeof row.test !== 'string') fail(field, `${field} must name its test`);
      const r = row as Record<string, unknown>;
      if (r.build !== null && typeof r.build !== 'string')
        fail(`${field}.build`, `${field}.build must be text or null`);
      if (!Array.isArray(r.profiles)) fail(`${field}.profiles`, `${field}.profiles must be an array`);
      for (const [j, p] of (r.profiles as unknown[]).entries()) {
        const pf = `${field}.profiles[${j}]`;
        if (!isObject(p) || typeof p.name !== 'string' || !positive(p.speedup))
          fail(pf, `${pf} must have a name and a speed-up above 0`);
      }
    }
    if (value.greedy !== undefined && value.greedy !== null) {
      const g = value.greedy;
      if (!isObject(g) || !Array.isArray(g.profiles) || !Array.isArray(g.stock))
        fail('greedy', 'greedy must have the stock tokens and the profiles');
      for (const [j, p] of ((g as Record<string, unknown>).profiles as unknown[]).entries())
        if (!isObject(p) || typeof p.name !== 'string' || (p.divergence !== null && !isObject(p.divergence)))
          fail(`greedy.profiles[${j}]`, `greedy.profiles[${j}] must have a name and a divergence (or null)`);
    }
  } else {
    if (!Array.isArray(value.fidelity)) fail('fidelity', 'fidelity must be an array');
    // The statistics a result of this version adds (each ±, median, 99.9 %, RMS Δp): numbers or null when there;
    // a result written before them has none.
    const numberOrNull = (v: unknown) => v === undefined || v === null || finite(v);
    const checkRow = (f: unknown, field: string) => {
      if (
        !isObject(f) ||
        typeof f.name !== 'string' ||
        (f.verdict !== 'within-tolerance' && f.verdict !== 'differs') ||
        !Array.isArray(f.reasons) ||
        !finite(f.meanKld) ||
        !finite(f.sameTopP) ||
        !finite(f.pplRatio)
      )
        fail(field, `${field} must have a name, a verdict with its reasons, meanKld, sameTopP and pplRatio`);
      const r = f as Record<string, unknown>;
      const u = r.uncertainty;
      const extra = [r.medianKld, r.kld99, r.kld999, r.maxKld, r.rmsDp];
      if (!extra.every(numberOrNull) || !(u === undefined || (isObject(u) && Object.values(u).every(numberOrNull))))
        fail(field, `${field}'s statistics and their ± must be numbers or null`);
    };
    (value.fidelity as unknown[]).forEach((f, i) => checkRow(f, `fidelity[${i}]`));
    if (value.control !== undefined && value.control !== null) checkRow(value.control, 'control');
  }
  return value as unknown as BenchResult;
}
