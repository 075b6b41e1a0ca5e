// The llama-bench fixtures of every release (test/fixtures/bench/llama-bench-eras/) are what the releases' own
// llama-bench.cpp gives: scripts/build/llama-bench-eras.mjs derives them again from the node-llama-cpp tarballs (the
// conformance suite's, fetched with npm pack and checked by integrity) and they must match. The reader of the source
// is held to refuse what it cannot read: a changed printer, a changed type enum, a field list it cannot find.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type BenchSource,
  benchShape,
  fixtureFile,
  SOURCES,
  sourceFixture,
  sourceOf,
} from '../../scripts/build/llama-bench-eras.mjs';
import { fetchTarball } from '../../test/conformance/build.mjs';

/** Why the tarballs cannot be had here (npm cannot fetch them), or null. */
let skipReason: string | null = null;
try {
  for (const s of SOURCES) await fetchTarball(s.package, s.integrity);
} catch (err) {
  skipReason = `the node-llama-cpp tarballs cannot be fetched here: ${(err as Error).message}`;
  console.warn(`test/repo/llama-bench-eras.test.ts skipped: ${skipReason}`);
}

describe.skipIf(skipReason !== null)("llama-bench's shape, read from each release's source", () => {
  let newest: string;
  beforeAll(async () => {
    newest = (await sourceOf(SOURCES[SOURCES.length - 1] as BenchSource)).text;
  }, 120_000);

  it.each(SOURCES.map((s) => [s.id, s] as const))(
    '%s: the committed fixture is what its llama-bench.cpp gives',
    async (_, src) => {
      const committed = JSON.parse(readFileSync(fixtureFile(src), 'utf8'));
      expect(await sourceFixture(src)).toEqual(committed);
    },
    120_000,
  );

  it('reads the fields in print order with their types, the rest STRING as get_field_type falls through', () => {
    const { fields, formats } = benchShape(newest);
    expect(fields.slice(0, 3)).toEqual([
      ['build_commit', 'STRING'],
      ['build_number', 'INT'],
      ['cpu_info', 'STRING'],
    ]);
    expect(fields.slice(-4)).toEqual([
      ['avg_ns', 'INT'],
      ['stddev_ns', 'INT'],
      ['avg_ts', 'FLOAT'],
      ['stddev_ts', 'FLOAT'],
    ]);
    expect(formats).toEqual(['json', 'jsonl']);
    // A field added to the list and to an if of get_field_type is read with that type.
    const added = newest
      .replace('"avg_ts",         "stddev_ts"', '"avg_ts",         "stddev_ts", "mcs_new"')
      .replace('if (field == "avg_ts" ||', 'if (field == "mcs_new" || field == "avg_ts" ||');
    expect(benchShape(added).fields.slice(-2)).toEqual([
      ['stddev_ts', 'FLOAT'],
      ['mcs_new', 'FLOAT'],
    ]);
  });

  it('refuses a source it cannot read rather than guess a shape', () => {
    const printer = newest.replace('fprintf(fout, "\\n]\\n");', 'fprintf(fout, "]\\n");');
    expect(printer).not.toBe(newest);
    expect(() => benchShape(printer, 'x.cpp')).toThrow(
      /^x\.cpp: llama-bench's JSON printers are new \(sha256 [0-9a-f]{64}\): read them, make renderJson and renderJsonl print as they do, and add them to PRINTERS$/,
    );
    const enumChanged = newest.replace(
      'enum field_type { STRING, BOOL, INT, FLOAT };',
      'enum field_type { STRING, BOOL, INT, FLOAT, LIST };',
    );
    expect(() => benchShape(enumChanged, 'x.cpp')).toThrow(
      'x.cpp: enum field_type is not { STRING, BOOL, INT, FLOAT }',
    );
    const noList = newest.replace('static const std::vector<std::string> & get_fields()', 'static auto fields()');
    expect(() => benchShape(noList, 'x.cpp')).toThrow(
      "x.cpp get_fields(): 'static const std::vector<std::string> & get_fields()' … '};' not found",
    );
    const twice = newest.replace('"avg_ts",         "stddev_ts"', '"avg_ts",         "avg_ts"');
    expect(() => benchShape(twice, 'x.cpp')).toThrow('x.cpp get_fields(): no fields, or a field twice');
  });
});
