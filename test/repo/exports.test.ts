// The public surface: what `metal-cap-shim` and `metal-cap-shim/tables` export, pinned here so that any change to
// either list shows in the diff of this file, and the README's API tables generated from docs/api.json
// (scripts/check/api-table.mjs) row for row against those lists.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as rootEntry from '../../lib/index.js';
import * as tablesEntry from '../../lib/tables.js';
import { dist, root } from '../support/helpers.js';

type Rows = Record<string, Record<string, { returns: string; does: string }>>;
interface ApiTable {
  ENTRIES: Record<string, string>;
  rowNames(cell: string): string[];
  apiProblems(
    rows: Rows,
    exportsByEntry: Record<string, string[]>,
  ): Record<string, { noRow: string[]; noExport: string[] }>;
  rewriteReadme(readme: string, rows: Rows): string;
}
const script = path.join(root, 'scripts', 'check', 'api-table.mjs');
const api = (await import(script)) as ApiTable;
const rows = JSON.parse(readFileSync(path.join(root, 'docs', 'api.json'), 'utf8')) as Rows;
/** The names a built declaration file exports (tsup writes them as `export { a as Name, type Other, … } from './chunk'`). */
function declared(file: string): string[] {
  const text = readFileSync(path.join(dist, file), 'utf8');
  const names = [...text.matchAll(/^export (?:type )?\{([^}]*)\}/gm)].flatMap((m) =>
    m[1]!.split(',').map((part) =>
      part
        .trim()
        .replace(/^type /, '')
        .split(' as ')
        .pop()!
        .trim(),
    ),
  );
  return names.filter((n) => n !== '').sort();
}
const typesOnly = (file: string, values: string[]) => declared(file).filter((n) => !values.includes(n));
const EXPORTS = {
  'metal-cap-shim': Object.keys(rootEntry).sort(),
  'metal-cap-shim/tables': Object.keys(tablesEntry).sort(),
};

describe('the export lists', () => {
  it('metal-cap-shim: the verbs, the profiles and the errors', () => {
    expect(EXPORTS['metal-cap-shim']).toMatchInlineSnapshot(`
      [
        "DEFAULT_PROFILE",
        "FileError",
        "InvalidOptionsError",
        "InvalidProfileError",
        "InvalidReportError",
        "InvalidSnapshotError",
        "MetalCapShimError",
        "NativeError",
        "ProfileActiveError",
        "RefusedError",
        "SnapshotNotFoundError",
        "SpawnError",
        "TraceFileError",
        "UnsupportedPlatformError",
        "UsageError",
        "applyProfile",
        "audit",
        "buildMatrix",
        "doctor",
        "fieldReport",
        "matrixMarkdown",
        "predictGates",
        "probe",
        "profiles",
        "recordSnapshot",
        "resolveProfile",
        "restore",
        "status",
      ]
    `);
  });

  it('metal-cap-shim/tables: the tables and helpers', () => {
    expect(EXPORTS['metal-cap-shim/tables']).toMatchInlineSnapshot(`
      [
        "ABOVE_HARDWARE_REFERENCE",
        "AUTO_PROFILE",
        "CAPABILITY_PROBE_IDS",
        "CHIP_ARCHITECTURES",
        "CHIP_FAMILIES",
        "CHIP_GPU_GENERATIONS",
        "DOCTOR_PROBE_IDS",
        "DOCTOR_SCHEMA",
        "DOCTOR_STATUSES",
        "ENGINES",
        "EXEC_EXIT",
        "EXIT",
        "EXIT_TABLE",
        "FAMILY_NAMES",
        "FAMILY_VALUES",
        "HOST_VALUE",
        "JUDGEMENTS",
        "LLAMA_CPP_RULE_SETS",
        "LLAMA_CPP_RULE_SET_INFO",
        "MLX_RULE_SETS",
        "MLX_RULE_SET_INFO",
        "MLX_SWITCHES",
        "OLLAMA_METAL_PATCHES",
        "OLLAMA_RELEASE_REGISTRY",
        "RULE_TABLES",
        "SIMD_RULES",
        "SNAPSHOT_LIMITS",
        "aboveHardwareRuleSets",
        "bindToHost",
        "chipFamily",
        "chipFromBrand",
        "diffAnswers",
        "doctorCacheDir",
        "gateValues",
        "listSnapshots",
        "loadSnapshot",
        "ollamaRelease",
        "patchedName",
        "predictPatchedDevice",
        "probeSnapshot",
        "reportFromSnapshot",
        "resolveAutoProfile",
        "validateSnapshot",
      ]
    `);
  });

  it('metal-cap-shim: the types (the built declarations; tables exports no type of its own)', () => {
    expect(typesOnly('index.d.ts', EXPORTS['metal-cap-shim'])).toMatchInlineSnapshot(`
      [
        "AnswerChange",
        "Applied",
        "ApplyFailureReason",
        "ApplyOptions",
        "ApplyResult",
        "ApplyWarning",
        "AuditOptions",
        "AuditResult",
        "AutoApplyOptions",
        "AutoApplyResult",
        "AutoSource",
        "BuiltinProfile",
        "BuiltinProfileName",
        "CapabilityReport",
        "ChipArchitectureRow",
        "ChipFamilyRow",
        "ChipGpuGenerationRow",
        "DerivedFlag",
        "DeviceAudit",
        "DeviceLocation",
        "DeviceReport",
        "DoctorDevice",
        "DoctorOptions",
        "DoctorProbe",
        "DoctorProbeId",
        "DoctorProgress",
        "DoctorReport",
        "DoctorRun",
        "DoctorStatus",
        "Engine",
        "EngineComparison",
        "ErrorCode",
        "FamilyAnswers",
        "FamilyName",
        "FieldReport",
        "FieldReportOptions",
        "GateFlip",
        "GatePrediction",
        "HookRef",
        "HostBinding",
        "HostInfo",
        "JsonProfileText",
        "Judgement",
        "LiveAudit",
        "LlamaCppPrediction",
        "LlamaCppRuleSet",
        "LlamaCppRuleSetInfo",
        "LlamaCppRulesUsed",
        "LoadedLlamaCpp",
        "Matrix",
        "MatrixCell",
        "MatrixInput",
        "MatrixRow",
        "Mismatch",
        "MlxFlag",
        "MlxIgnoredSwitch",
        "MlxPrediction",
        "MlxRuleSet",
        "MlxRuleSetInfo",
        "NativeErrorCode",
        "NotApplied",
        "NotRestored",
        "OfflineAudit",
        "OllamaLlamaCpp",
        "OllamaMetalPatch",
        "OllamaMetalPatchName",
        "OllamaOpGate",
        "OllamaPin",
        "OllamaReleaseRow",
        "PackageError",
        "PatchedClass",
        "PredictOptions",
        "ProbeOptions",
        "Profile",
        "ProfileInput",
        "ProfileMode",
        "ProfileSpec",
        "Recommendation",
        "RecordOptions",
        "RefusedErrorCode",
        "RefusedLiveAudit",
        "ReportSource",
        "RestoreResult",
        "RestoreSkipReason",
        "Restored",
        "Snapshot",
        "SnapshotLimits",
        "SpawnErrorCode",
        "Status",
        "SupportedDoctorReport",
        "SupportedReport",
        "ThreadgroupSize",
        "TraceEntry",
        "TuningTier",
        "UnsupportedDoctorReport",
        "UnsupportedReason",
        "UnsupportedReport",
        "Verification",
      ]
    `);
    expect([
      typesOnly('tables.d.ts', EXPORTS['metal-cap-shim/tables']),
      typesOnly('tables.d.cts', EXPORTS['metal-cap-shim/tables']),
    ]).toEqual([[], []]);
  });

  it('the built declarations declare every value export, in ESM and CommonJS', () => {
    const missing = (file: string, values: string[]) => values.filter((n) => !declared(file).includes(n));
    expect({
      index: missing('index.d.ts', EXPORTS['metal-cap-shim']),
      indexCjs: missing('index.d.cts', EXPORTS['metal-cap-shim']),
      tables: missing('tables.d.ts', EXPORTS['metal-cap-shim/tables']),
      tablesCjs: missing('tables.d.cts', EXPORTS['metal-cap-shim/tables']),
    }).toEqual({ index: [], indexCjs: [], tables: [], tablesCjs: [] });
    expect(declared('index.d.cts')).toEqual(declared('index.d.ts'));
  });

  it('no name is exported by both entries, and the internals by neither', () => {
    const both = EXPORTS['metal-cap-shim'].filter((n) => EXPORTS['metal-cap-shim/tables'].includes(n));
    const internals = ['encodeNativeProfile', 'SIM_SNAPSHOT_ENV', 'packageVersion'].filter(
      (n) => n in rootEntry || n in tablesEntry,
    );
    expect({ both, internals }).toEqual({ both: [], internals: [] });
  });

  it('the package.json exports map names the same two entries the API tables document, and register', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    expect([Object.keys(pkg.exports), Object.keys(api.ENTRIES), Object.keys(rows)]).toEqual([
      ['.', './tables', './register', './package.json'],
      ['metal-cap-shim', 'metal-cap-shim/tables'],
      ['metal-cap-shim', 'metal-cap-shim/tables'],
    ]);
  });
});

describe("the README's API tables (scripts/check/api-table.mjs, docs/api.json)", () => {
  it('every export has a row, and every row names exports only', () => {
    expect(api.apiProblems(rows, EXPORTS)).toEqual({
      'metal-cap-shim': { noRow: [], noExport: [] },
      'metal-cap-shim/tables': { noRow: [], noExport: [] },
    });
  });

  it('docs/api.md holds the tables the script generates', () => {
    const readme = readFileSync(path.join(root, 'docs', 'api.md'), 'utf8');
    expect(api.rewriteReadme(readme, rows)).toBe(readme);
  });

  it('an export with no row, and a row with no export, are both reported', () => {
    const oneRow: Rows = { 'metal-cap-shim': { '`probe(options?)`, `gone`': { returns: '', does: '' } } };
    expect(api.apiProblems(oneRow, { 'metal-cap-shim': ['probe', 'audit'] })).toEqual({
      'metal-cap-shim': { noRow: ['audit'], noExport: ['gone'] },
    });
  });

  it("a row's names are the leading identifiers of the code spans in its first cell", () => {
    expect(
      api.rowNames(
        "`applyProfile('auto', options?)`, `buildMatrix(reports: (FieldReport \\| { where? })[])`, `HOST_VALUE`",
      ),
    ).toEqual(['applyProfile', 'buildMatrix', 'HOST_VALUE']);
  });

  it('a table out of date in the README is rewritten, and the text around it is kept', () => {
    const readme = 'before\n<!-- api:start metal-cap-shim -->\n| old |\n<!-- api:end metal-cap-shim -->\nafter\n';
    const oneRow: Rows = { 'metal-cap-shim': { '`probe()`': { returns: '`CapabilityReport`', does: 'Asks.' } } };
    expect(api.rewriteReadme(readme, oneRow)).toBe(
      'before\n<!-- api:start metal-cap-shim -->\n| export | returns | what it does |\n|---|---|---|\n| `probe()` | `CapabilityReport` | Asks. |\n<!-- api:end metal-cap-shim -->\nafter\n',
    );
  });

  it('a README without the region is an error naming it', () => {
    expect(() => api.rewriteReadme('no tables here\n', { 'metal-cap-shim': {} })).toThrow(
      'README.md has no region <!-- api:start metal-cap-shim --> … <!-- api:end metal-cap-shim -->',
    );
  });
});
