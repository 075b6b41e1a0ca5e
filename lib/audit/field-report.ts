import { createRequire } from 'node:module';
import { audit, type AuditResult } from './audit.js';
import { doctor, type DoctorProgress, type DoctorReport } from '../doctor/index.js';
import { leastProfile } from '../doctor/derive.js';
import { DOCTOR_SCHEMA } from '../doctor/types.js';
import { checkBenchResult } from '../bench/result.js';
import type { BenchResult } from '../bench/run.js';
import { keyText } from '../bench/rows.js';
import { LLAMA_CPP_SWITCH_FLAGS } from '../engines/llama-cpp.js';
import { recordedBuildName } from '../engines/llama-cpp-releases.js';
import { pairedSpeedup, type SpeedupEstimate } from '../bench/stats.js';
import { InvalidOptionsError, InvalidReportError } from '../core/errors.js';
import { clip, describeValue, isObject, own, quote, readInput } from '../core/input.js';
import { markdownCell, markdownCode } from '../core/escape.js';
import { schemaProblem } from '../core/jsonfile.js';
import { shapeReader } from '../core/shape.js';

export { InvalidReportError };
import { packageVersion } from '../device/native.js';

export { packageVersion };
import { checkOptions, optionFailure } from '../core/options.js';
import { HOST_VALUE, profileAnswers, resolveProfile, type ProfileInput, type Profile } from '../patch/profiles.js';
import { FIELD_REPORT_SCHEMA } from '../device/report.js';
import { architectureText } from '../core/words.js';
import type { HostInfo } from '../device/types.js';

export { FIELD_REPORT_SCHEMA };

/** A report to attach to an issue: this machine, its devices, and what a profile did (or would do) here. */
export interface FieldReport {
  schema: typeof FIELD_REPORT_SCHEMA;
  packageVersion: string;
  generatedAt: string;
  node: string;
  /** The physical host as the reporter describes it (a guest cannot see its host's chip or OS). */
  hostLabel: string | null;
  host: HostInfo | null;
  /** The audit of the profile: stock devices, patched devices, engine flags, verification, verdict. */
  audit: AuditResult;
  /** doctor's results on this machine (replayed from the snapshot offline); null when skipped. Reports made before
   * doctor existed have no such field. */
  doctor: DoctorReport | null;
  /** `bench` results measured on this machine (`report --bench FILE`), each as `bench --json` wrote it; absent in
   * reports made before bench existed. */
  bench?: BenchResult[];
}

/** Options for fieldReport(). */
export interface FieldReportOptions {
  profile?: ProfileInput | undefined;
  /** Report on a recorded snapshot instead of this machine. */
  snapshot?: string | undefined;
  /** Describe the physical host, e.g. `M1 Ultra, macOS 26.6.1`. */
  hostLabel?: string | undefined;
  force?: boolean | undefined;
  /** Run doctor too (live: every probe, the profile as its candidate; offline: the snapshot's recording). Default true. */
  doctor?: boolean | undefined;
  /** doctor's nocopy-mmap probe maps this file (your model, read only) instead of a generated one. */
  mmapFile?: string | undefined;
  /** Bytes of the file doctor's nocopy-mmap probe generates (default 1 GiB). */
  mmapSize?: number | undefined;
  /** doctor's threadgroup-memory probe also dispatches sizes above what the GPU can prove (doctor's option). */
  allowAboveHardware?: boolean | undefined;
  /** Called as each of doctor's live probes starts. */
  onProgress?: ((event: DoctorProgress) => void) | undefined;
  /** bench results to attach (parsed `bench --json` output), checked first. */
  bench?: unknown[] | undefined;
}

/** Builds a field report: on a Mac it applies the profile, verifies and restores; with `snapshot`, offline. */
export async function fieldReport(options?: FieldReportOptions): Promise<FieldReport> {
  const o = checkOptions<FieldReportOptions>('fieldReport', options, {
    profile: 'any',
    snapshot: 'string',
    hostLabel: 'string',
    force: 'boolean',
    doctor: 'boolean',
    mmapFile: 'string',
    mmapSize: 'number',
    allowAboveHardware: 'boolean',
    onProgress: 'function',
    bench: 'any',
  });
  // Read once into plain data, as a file is (bounded, getters called once, a Proxy trap or a BigInt a typed error):
  // what is checked is what the report keeps.
  const given =
    o.bench === undefined ? undefined : readInput(o.bench, optionFailure('fieldReport'), { json: true }, 'bench');
  if (given !== undefined && !Array.isArray(given))
    throw new InvalidOptionsError('bench', 'fieldReport() option bench takes an array of bench results (bench --json)');
  const bench = (given ?? []).map((b, i) => checkBenchResult(b, `bench result ${i + 1}`));
  const result = audit({
    ...(o.profile !== undefined ? { profile: o.profile } : {}),
    ...(o.snapshot !== undefined ? { snapshot: o.snapshot } : {}),
    force: o.force ?? false,
  });
  for (const [i, b] of bench.entries()) refuseForeignBench(result.host, b, `bench result ${i + 1}`);
  // After the audit, which has restored the process: doctor measures stock answers first.
  const doctorReport =
    o.doctor === false
      ? null
      : await doctor({
          profile: result.profile,
          ...(o.onProgress !== undefined && o.snapshot === undefined ? { onProgress: o.onProgress } : {}),
          ...(o.snapshot !== undefined ? { snapshot: o.snapshot } : { force: o.force ?? false }),
          ...(o.mmapFile !== undefined ? { mmapFile: o.mmapFile } : {}),
          ...(o.mmapSize !== undefined ? { mmapSize: o.mmapSize } : {}),
          ...(o.allowAboveHardware !== undefined ? { allowAboveHardware: o.allowAboveHardware } : {}),
        });
  return {
    schema: FIELD_REPORT_SCHEMA,
    packageVersion: packageVersion(),
    generatedAt: new Date().toISOString(),
    node: process.version,
    hostLabel: o.hostLabel ?? null,
    host: result.host,
    audit: result,
    doctor: doctorReport,
    ...(bench.length > 0 ? { bench } : {}),
  };
}

/**
 * How the host a bench result was measured on differs from a report's host (the chip, the model, the macOS build,
 * guest or not), one `field: bench's vs the report's` each; empty when it is the same host. A result measured
 * elsewhere would put another machine's speed-ups in this machine's row.
 */
export function benchHostDifferences(reportHost: HostInfo | null, benchHost: HostInfo | null): string[] {
  const fields = ['cpuBrand', 'model', 'osBuild', 'isVirtualMachine'] as const;
  const shown = (v: unknown) => (v === null || v === undefined ? 'unrecorded' : JSON.stringify(v));
  return fields.flatMap((f) => {
    const a = benchHost?.[f] ?? null;
    const b = reportHost?.[f] ?? null;
    return a === b ? [] : [`${f}: ${shown(a)} (bench) vs ${shown(b)} (report)`];
  });
}

/** Throws InvalidReportError when `bench` was measured on another host than `host` (benchHostDifferences). */
function refuseForeignBench(host: HostInfo | null, bench: BenchResult, where: string): void {
  const diff = benchHostDifferences(host, bench.host);
  if (diff.length > 0)
    throw new InvalidReportError(
      'bench.host',
      `${clip(where)} was measured on another host than the report's (${clip(diff.join('; '), 400)}): attach a bench result to a report made on the machine that measured it`,
    );
}

/**
 * Where a report's answers come from: `measured` by a live audit on macOS, `simulated` by a live audit over the
 * simulated Metal (Linux test build), `predicted` from a recorded snapshot offline (answers replayed, engines
 * predicted).
 */
export type ReportProvenance = 'measured' | 'simulated' | 'predicted';

/** The provenance of a report's audit (see ReportProvenance). */
export function reportProvenance(r: Pick<FieldReport, 'audit'>): ReportProvenance {
  if (r.audit.mode === 'offline') return 'predicted';
  return r.audit.snapshot === null ? 'measured' : 'simulated';
}

/** One cell of the matrix: every report for one host, guest OS and profile. */
export interface MatrixCell {
  reports: number;
  verified: number;
  refused: number;
  offline: number;
  /** Live reports made over the simulated Metal (counted in `verified` when they verified): never a Mac's answer. */
  simulated: number;
  /** llama.cpp flags true after the profile on the default device, in every report of the cell. */
  gatesOn: string[];
}

/** What doctor proved and found on one host and guest OS pair, over every report that carries a doctor result. */
export interface MatrixDoctor {
  reports: number;
  /**
   * The reports whose doctor result measured something: it ran on Metal (not a `--snapshot` replay) and some probe
   * was proven or faulty. Only these set `provenProfile`: a replay or a run that learnt nothing proves nothing.
   */
  measured: number;
  /** The reports whose doctor ran over the simulated Metal: they prove nothing about a Mac, and set no proven profile. */
  simulated: number;
  /** The least of the measured reports' verified profiles (over every device); null when none measured anything. */
  provenProfile: Profile | null;
  /** Each fault (`probe: status`) with the number of reports that found it. */
  faults: { fault: string; reports: number }[];
}

/**
 * What bench measured on one host and guest OS pair, over every report that carries a bench result: per profile and
 * llama-bench test the median speed-up and the llama.cpp builds that measured it (does it transfer, per release?);
 * per profile the fidelity verdict (differs when any report differs) and the largest mean KLD; per profile the greedy
 * generation of bench --node-llama-cpp against stock's (the earliest token where any report's left stock's).
 */
export interface MatrixBench {
  speed: MatrixSpeed[];
  fidelity: { profile: string; verdict: 'within-tolerance' | 'differs'; meanKld: number; reports: number }[];
  /**
   * bench --node-llama-cpp's greedy comparison per profile: the fewest tokens any report compared, the earliest index
   * where a report's tokens left stock's (null when every report's matched), and how many reports matched.
   */
  greedy: { profile: string; tokens: number; firstDivergence: number | null; same: number; reports: number }[];
}

/**
 * One profile's speed-up on one test over a row's bench results: the per-round ratios of every result pooled (each is
 * a paired round), so the centre and the 95 % interval are computed as for one result. Results are pooled only when
 * their tests are the same test (the same llama-bench key: model, settings, sizes).
 */
export interface MatrixSpeed {
  profile: string;
  /** The test as its results labelled it, with the model's file name. */
  test: string;
  /** The llama-bench key of the test (lib/bench/rows.ts keyText). */
  key: string;
  speedup: number | null;
  low: number | null;
  high: number | null;
  verdict: SpeedupEstimate['verdict'];
  rounds: number;
  reports: number;
  builds: string[];
  /** `measured` (macOS), `simulated`, or `mixed` when the pooled results disagree. */
  provenance: 'measured' | 'simulated' | 'mixed';
  /** How many of the pooled results were partial. */
  partial: number;
  /** False when the tool ran on a backend no profile changes (the CPU): the ratios are noise. */
  affected: boolean | null;
}

/** One row: a host and guest OS pair. */
export interface MatrixRow {
  host: string;
  guestOs: string;
  /**
   * The GPU architecture (`architecture.name`) the default device reported, stock, in the row's reports: each value
   * once, sorted, null (unrecorded: a snapshot without it, or macOS before 14) last. What a real guest's paravirtual
   * device reports is what field reports tell. Absent from matrices made before it existed.
   */
  architectures?: (string | null)[];
  cells: Record<string, MatrixCell>;
  /** Null when no report of the row carries a doctor result. */
  doctor: MatrixDoctor | null;
  /** Null when no report of the row carries a bench result. */
  bench: MatrixBench | null;
}

/** The tested matrix built from field reports. */
export interface Matrix {
  schema: 'metal-cap-shim/matrix@2';
  profiles: string[];
  rows: MatrixRow[];
  /** Reports given more than once (the same file twice, or a copy): each is counted once, here is what was skipped. */
  duplicates: { where: string; sameAs: string }[];
  /**
   * What each custom profile's column stands for (`custom-<8 hex digits>`): its answers. Built-in columns are named
   * by the profile itself. Absent from matrices made before it existed.
   */
  legend?: Record<string, Omit<Profile, 'name'>>;
}

/** A report read from somewhere (a file) that `where` names in errors; `report` is checked, not trusted. */
export interface MatrixInput {
  where?: string;
  report: unknown;
}

/**
 * The column a report's profile goes in: its built-in name, or `custom-` and the first 8 hex digits of the SHA-256 of
 * the normalised profile's JSON (`resolveProfile`, name null), so reports made with different custom profiles stay
 * apart and the same custom profile, however it was written, shares a column.
 */
export function profileColumn(p: Profile): string {
  if (p.name !== null) return p.name;
  // Loaded here rather than imported: node:crypto costs every importer of the package start-up time.
  const { createHash } = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
  return `custom-${createHash('sha256')
    .update(JSON.stringify({ ...p, name: null }))
    .digest('hex')
    .slice(0, 8)}`;
}

function checkReport(input: unknown, where: string): FieldReport {
  const fail = (field: string | null, what: string): never => {
    throw new InvalidReportError(
      field,
      `${clip(where)} is not a usable metal-cap-shim field report (${what}); make one with \`metal-cap-shim report --json\``,
    );
  };
  const value = input;
  if (!isObject(value)) fail(null, 'not a JSON object');
  const r = value as Record<string, unknown>;
  const wrongKind = schemaProblem(r, { [FIELD_REPORT_SCHEMA]: 'metal-cap-shim report --json' });
  if (wrongKind !== null) fail('schema', `it ${wrongKind}`);
  if (r.host !== null && !isObject(r.host)) fail('host', 'host must be an object or null');
  if (isObject(r.host)) {
    for (const f of ['model', 'osVersion', 'osBuild', 'arch'] as const) {
      if (r.host[f] !== undefined && r.host[f] !== null && typeof r.host[f] !== 'string')
        fail(`host.${f}`, `host.${f} must be a string or null`);
    }
    const vm = r.host.isVirtualMachine;
    if (vm !== undefined && vm !== null && typeof vm !== 'boolean')
      fail('host.isVirtualMachine', 'host.isVirtualMachine must be true, false or null');
  }
  if (r.hostLabel !== null && typeof r.hostLabel !== 'string') fail('hostLabel', 'hostLabel must be a string or null');
  const a = r.audit;
  if (!isObject(a)) fail('audit', 'audit is missing');
  const audit = a as Record<string, unknown>;
  if (audit.mode !== 'offline' && audit.mode !== 'live') fail('audit.mode', "audit.mode must be 'offline' or 'live'");
  if (typeof audit.refused !== 'boolean') fail('audit.refused', 'audit.refused must be true or false');
  if (!isObject(audit.profile) || !('name' in audit.profile)) fail('audit.profile', 'audit.profile is missing');
  const name = (audit.profile as Record<string, unknown>).name;
  if (name !== null && typeof name !== 'string')
    fail('audit.profile.name', `audit.profile.name must be a string or null, got ${quote(name)}`);
  try {
    resolveProfile(audit.profile);
  } catch (e) {
    fail('audit.profile', `audit.profile is not a profile: ${(e as Error).message}`);
  }
  if (!isObject(audit.verdict) || typeof audit.verdict.ok !== 'boolean')
    fail('audit.verdict', 'audit.verdict is missing');
  if (!Array.isArray(audit.devices)) fail('audit.devices', 'audit.devices must be an array');
  (audit.devices as unknown[]).forEach((d, i) => {
    if (!isObject(d) || typeof d.isDefault !== 'boolean' || !Array.isArray(d.engines)) {
      fail(`audit.devices[${i}]`, `audit.devices[${i}] must have isDefault and engines`);
    }
    ((d as Record<string, unknown>).engines as unknown[]).forEach((e, j) => {
      const field = `audit.devices[${i}].engines[${j}]`;
      if (!isObject(e) || typeof e.engine !== 'string') fail(field, `${field} must be an object naming its engine`);
      const after = (e as Record<string, unknown>).after;
      if (!isObject(after) || typeof after.engine !== 'string')
        fail(`${field}.after`, `${field}.after must be the engine's prediction`);
      // llama.cpp's gates are read from its flags.
      const flags = (after as Record<string, unknown>).flags;
      if (
        (after as Record<string, unknown>).engine === 'llama.cpp' &&
        (!isObject(flags) || !Object.values(flags).every(isObject))
      ) {
        fail(`${field}.after.flags`, `${field}.after.flags must hold llama.cpp's flags`);
      }
    });
  });
  if (r.doctor !== undefined && r.doctor !== null) {
    const doc = r.doctor;
    if (!isObject(doc) || doc.schema !== DOCTOR_SCHEMA)
      fail('doctor', `doctor must be null or a ${DOCTOR_SCHEMA} result`);
    if (typeof (doc as Record<string, unknown>).source !== 'string')
      fail('doctor.source', 'doctor.source must be a string');
    const devices = (doc as Record<string, unknown>).devices;
    if (!Array.isArray(devices)) fail('doctor.devices', 'doctor.devices must be an array');
    (devices as unknown[]).forEach((d, i) => {
      const field = `doctor.devices[${i}]`;
      if (!isObject(d) || !Array.isArray(d.faults) || !d.faults.every((f) => typeof f === 'string')) {
        fail(`${field}.faults`, `${field}.faults must be an array of strings`);
      }
      const probes = (d as Record<string, unknown>).probes;
      if (!Array.isArray(probes) || !probes.every((p) => isObject(p) && typeof p.judgement === 'string')) {
        fail(`${field}.probes`, `${field}.probes must be an array of judged probes`);
      }
      try {
        resolveProfile((d as Record<string, unknown>).verifiedProfile);
      } catch (e) {
        fail(`${field}.verifiedProfile`, `${field}.verifiedProfile is not a profile: ${(e as Error).message}`);
      }
    });
  }
  if (r.bench !== undefined) {
    if (!Array.isArray(r.bench)) fail('bench', 'bench must be an array of bench results');
    // The checked results replace what was written: their speed-ups and verdicts are computed again.
    r.bench = (r.bench as unknown[]).map((b, i) => {
      try {
        const checked = checkBenchResult(b, `${where} bench[${i}]`);
        refuseForeignBench((r.host ?? null) as HostInfo | null, checked, `${where} bench[${i}]`);
        return checked;
      } catch (e) {
        return fail(`bench[${i}]`, (e as Error).message);
      }
    });
  }
  return value as unknown as FieldReport;
}

/**
 * The report's whole content as text, to find the same report given twice. A value nested too deeply for the stack (a
 * report from a file is bounded by JSON_LIMITS; one handed to buildMatrix() is not) is a damaged report, not a crash.
 */
function identityOf(r: FieldReport, where: string): string {
  try {
    return JSON.stringify(r);
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    throw new InvalidReportError(
      null,
      `${where} is not a usable metal-cap-shim field report (it nests too deeply to read); make one with \`metal-cap-shim report --json\``,
    );
  }
}

function rowKey(r: FieldReport): { host: string; guestOs: string } {
  const h = r.host;
  const model = h?.model ?? 'unknown model';
  const host = r.hostLabel ?? (h?.isVirtualMachine ? 'unlabelled host' : model);
  const os = h?.osVersion ? `macOS ${h.osVersion}` : 'unknown OS';
  const guestOs = h?.isVirtualMachine ? `${os} (${model})` : `${os} (bare metal)`;
  return { host, guestOs };
}

function isFieldReportLike(entry: unknown): boolean {
  return typeof entry === 'object' && entry !== null && (entry as { schema?: unknown }).schema === FIELD_REPORT_SCHEMA;
}

/**
 * Merges field reports into a host × guest OS × profile table. Takes what fieldReport() returns, and `{ where, report }`
 * pairs for reports read from files (`where` names the file in errors). The same report given twice counts once.
 */
export function buildMatrix(reports: readonly (FieldReport | MatrixInput)[]): Matrix {
  const usage =
    'buildMatrix() takes an array of field reports (fieldReport() results, or { where, report } for parsed JSON)';
  // Read once into plain JSON data: a getter that throws, a BigInt, a cycle or deep nesting anywhere is a typed error
  // naming where it is, and nothing can change between the checks and the table.
  const list = readInput(
    reports,
    (field, problem) => {
      throw new InvalidReportError(field || null, `buildMatrix(): reports${field} ${problem}`);
    },
    // The list and each `{ where, report }` pair are ours: a report file nests as deep as readJsonFile lets it.
    { json: true, wrappers: 2 },
  );
  if (!Array.isArray(list)) throw new InvalidOptionsError('reports', usage);
  const rows = new Map<string, MatrixRow>();
  const doctors = new Map<string, DoctorReport[]>();
  const benches = new Map<string, BenchResult[]>();
  const profileNames = new Set<string>();
  const legend = new Map<string, Omit<Profile, 'name'>>();
  const seen = new Map<string, string>();
  const duplicates: Matrix['duplicates'] = [];
  list.forEach((entry: unknown, i) => {
    const pair = isFieldReportLike(entry) ? { where: `reports[${i}]`, report: entry } : (entry as MatrixInput | null);
    const where = typeof pair?.where === 'string' ? pair.where : `reports[${i}]`;
    const r = checkReport(pair?.report, where);
    // One report, however often it is given: two runs never produce the same timestamp and content.
    const identity = identityOf(r, where);
    const first = seen.get(identity);
    if (first !== undefined) {
      duplicates.push({ where, sameAs: first });
      return;
    }
    seen.set(identity, where);
    const key = rowKey(r);
    const id = `${key.host}\u0000${key.guestOs}`;
    const row = rows.get(id) ?? { ...key, architectures: [], cells: {}, doctor: null, bench: null };
    rows.set(id, row);
    const stock = (r.audit.devices.find((d) => d.isDefault) ?? r.audit.devices[0])?.stock as
      | { architecture?: unknown }
      | undefined;
    const architecture = typeof stock?.architecture === 'string' ? stock.architecture : null;
    if (!row.architectures!.includes(architecture))
      row.architectures = sortArchitectures([...row.architectures!, architecture]);
    if (r.doctor) doctors.set(id, [...(doctors.get(id) ?? []), r.doctor]);
    if (r.bench?.length) benches.set(id, [...(benches.get(id) ?? []), ...r.bench]);
    const resolved = resolveProfile(r.audit.profile);
    const name = profileColumn(resolved);
    profileNames.add(name);
    if (resolved.name === null) legend.set(name, profileAnswers(resolved));
    const cell = row.cells[name] ?? { reports: 0, verified: 0, refused: 0, offline: 0, simulated: 0, gatesOn: [] };
    const device = r.audit.devices.find((d) => d.isDefault) ?? r.audit.devices[0];
    const llama = device?.engines.find((e) => e.engine === 'llama.cpp');
    const on =
      llama && llama.after.engine === 'llama.cpp'
        ? Object.entries(llama.after.flags)
            .filter(([k, f]) => f.value === true && (LLAMA_CPP_SWITCH_FLAGS as readonly string[]).includes(k))
            .map(([k]) => k)
        : [];
    cell.gatesOn = cell.reports === 0 ? on : cell.gatesOn.filter((g) => on.includes(g));
    cell.reports++;
    if (r.audit.refused) cell.refused++;
    else if (r.audit.mode === 'offline') cell.offline++;
    else {
      if (reportProvenance(r) === 'simulated') cell.simulated++;
      if (r.audit.verdict.ok) cell.verified++;
    }
    row.cells[name] = cell;
  });
  for (const [id, list] of doctors) rows.get(id)!.doctor = matrixDoctor(list);
  for (const [id, list] of benches) rows.get(id)!.bench = matrixBench(list);
  const sorted = [...rows.values()].sort((a, b) => a.host.localeCompare(b.host) || a.guestOs.localeCompare(b.guestOs));
  return {
    schema: 'metal-cap-shim/matrix@2',
    profiles: [...profileNames].sort(),
    rows: sorted,
    duplicates,
    // Built from entries: a column name is never an assignment to a prototype key.
    legend: Object.fromEntries([...legend].sort(([a], [b]) => a.localeCompare(b))),
  };
}

/** Architectures sorted by name, null (unrecorded) last. */
function sortArchitectures(list: (string | null)[]): (string | null)[] {
  return [...list].sort((a, b) => (a === null ? 1 : b === null ? -1 : a.localeCompare(b)));
}

/** A row's architectures as Markdown text: `applegpu_g13d`, `unrecorded`, both, or – for a matrix made before them. */
export function architecturesText(list: readonly (string | null)[] | undefined): string {
  return list === undefined || list.length === 0 ? '–' : list.map(architectureText).join(', ');
}

/**
 * True when a doctor result ran on a Mac's Metal and learnt something. A replay's verified profile claims nothing for
 * the probes its recording leaves out, a run over the simulated Metal ran no GPU, and a run where every probe errored
 * claims nothing at all: each would pass off as a measurement what is not one.
 */
function measuredSomething(r: DoctorReport): boolean {
  if (r.source !== 'live') return false;
  return r.devices.some((d) => d.faults.length > 0 || d.probes.some((p) => p.judgement === 'proven'));
}

function matrixDoctor(list: DoctorReport[]): MatrixDoctor {
  const counts = new Map<string, number>();
  for (const report of list) {
    for (const fault of new Set(report.devices.flatMap((d) => d.faults)))
      counts.set(fault, (counts.get(fault) ?? 0) + 1);
  }
  const measured = list.filter(measuredSomething);
  return {
    reports: list.length,
    measured: measured.length,
    simulated: list.filter((r) => r.source === 'simulated').length,
    provenProfile:
      measured.length === 0
        ? null
        : leastProfile(measured.flatMap((r) => r.devices.map((d) => resolveProfile(d.verifiedProfile)))),
    faults: [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([fault, reports]) => ({ fault, reports })),
  };
}

/** A row's bench results merged: see MatrixBench and MatrixSpeed. */
function matrixBench(results: readonly BenchResult[]): MatrixBench {
  const speed = new Map<
    string,
    {
      profile: string;
      test: string;
      key: string;
      ratios: number[];
      reports: number;
      builds: Set<string>;
      provenance: Set<BenchResult['provenance']>;
      partial: number;
      affected: (boolean | null)[];
    }
  >();
  const fidelity = new Map<string, MatrixBench['fidelity'][number]>();
  const greedy = new Map<string, MatrixBench['greedy'][number]>();
  for (const b of results) {
    for (const g of b.greedy?.profiles ?? []) {
      const was = greedy.get(g.name);
      const at = g.divergence?.index ?? null;
      const before = was?.firstDivergence ?? null;
      greedy.set(g.name, {
        profile: g.name,
        tokens: Math.min(was?.tokens ?? g.tokens, g.tokens),
        firstDivergence: at === null ? before : before === null ? at : Math.min(before, at),
        same: (was?.same ?? 0) + (at === null ? 1 : 0),
        reports: (was?.reports ?? 0) + 1,
      });
    }
    for (const row of b.speed ?? []) {
      const key = keyText(row.key);
      // The model's file name always shows: one result's label leaves it out when it measured one model.
      const test = row.model === null || row.label.includes(row.model) ? row.label : `${row.label} ${row.model}`;
      for (const p of row.profiles) {
        const id = `${p.name}\u0000${key}`;
        const entry = speed.get(id) ?? {
          profile: p.name,
          test,
          key,
          ratios: [],
          reports: 0,
          builds: new Set<string>(),
          provenance: new Set<BenchResult['provenance']>(),
          partial: 0,
          affected: [],
        };
        entry.ratios.push(...p.ratios);
        entry.reports++;
        if (row.build !== null) entry.builds.add(row.build);
        entry.provenance.add(b.provenance);
        if (b.partial) entry.partial++;
        entry.affected.push(b.validity.affected);
        speed.set(id, entry);
      }
    }
    for (const f of b.fidelity ?? []) {
      const was = fidelity.get(f.name);
      fidelity.set(f.name, {
        profile: f.name,
        verdict: was?.verdict === 'differs' || f.verdict === 'differs' ? 'differs' : 'within-tolerance',
        meanKld: Math.max(was?.meanKld ?? 0, f.meanKld),
        reports: (was?.reports ?? 0) + 1,
      });
    }
  }
  return {
    speed: [...speed.values()]
      .map((e): MatrixSpeed => {
        const estimate = pairedSpeedup(e.ratios);
        const [only] = e.provenance;
        return {
          profile: e.profile,
          test: e.test,
          key: e.key,
          speedup: estimate.centre,
          low: estimate.low,
          high: estimate.high,
          verdict: estimate.verdict,
          rounds: estimate.rounds,
          reports: e.reports,
          builds: [...e.builds].sort(),
          provenance: e.provenance.size === 1 ? only! : 'mixed',
          partial: e.partial,
          affected: e.affected.includes(false) ? false : e.affected.includes(null) ? null : true,
        };
      })
      .sort((a, b) => a.profile.localeCompare(b.profile) || a.test.localeCompare(b.test) || a.key.localeCompare(b.key)),
    fidelity: [...fidelity.values()].sort((a, b) => a.profile.localeCompare(b.profile)),
    greedy: [...greedy.values()].sort((a, b) => a.profile.localeCompare(b.profile)),
  };
}

/** A speed entry's markers: where its evidence came from and what it is worth, as the legend explains them. */
export function speedMarkers(e: Pick<MatrixSpeed, 'provenance' | 'partial' | 'affected'>): string[] {
  return [
    e.provenance === 'measured' ? null : e.provenance,
    e.partial > 0 ? 'partial' : null,
    e.affected === false ? 'CPU' : null,
  ].filter((m): m is string => m !== null);
}

/** What each marker the matrix prints means (the legend under the table). */
export const MATRIX_MARKERS: Readonly<Record<string, string>> = {
  simulated:
    'made over the simulated Metal of the Linux test build: the tools ran, no GPU did; it says nothing about a Mac',
  mixed: 'pooled from results measured on macOS and results made over the simulated Metal',
  partial: 'from a result whose measuring stopped early (a signal, a failed run): the rounds that finished',
  CPU: 'the tool ran on a backend no profile can change (the CPU): the speed-up is noise around 1x',
  predicted: 'predicted offline from a recorded snapshot: nothing ran',
};

/** A speed entry as Markdown text: `pp512 1.41x [1.22x, 1.68x] faster (b7010)`, with its markers. */
function speedText(e: MatrixSpeed): string {
  const x = (n: number | null) => (n === null ? '–' : `${n.toFixed(2)}x`);
  const interval = e.low === null ? ' (no interval)' : ` [${x(e.low)}, ${x(e.high)}]`;
  const words =
    e.verdict === 'no-difference-shown' ? ' no difference shown' : e.verdict === 'no-interval' ? '' : ` ${e.verdict}`;
  const builds = e.builds.length > 0 ? ` (${e.builds.map((b) => recordedBuildName(b, true)).join(', ')})` : '';
  const markers = speedMarkers(e);
  return `${e.test} ${x(e.speedup)}${interval}${words}${builds}${markers.length > 0 ? ` [${markers.join(', ')}]` : ''}`;
}

/** The bench columns of a row as Markdown text. */
export function benchText(b: MatrixBench | null | undefined): { speed: string; fidelity: string } {
  if (b === null || b === undefined) return { speed: '–', fidelity: '–' };
  const byProfile = new Map<string, string[]>();
  for (const e of b.speed) {
    const list = byProfile.get(e.profile);
    if (list === undefined) byProfile.set(e.profile, [speedText(e)]);
    else list.push(speedText(e));
  }
  const speed = [...byProfile].map(([p, tests]) => `${p}: ${tests.join(', ')}`).join('; ') || '–';
  const greedy = b.greedy.map((g) => {
    const of = g.reports > 1 ? ` (${g.same} of ${g.reports} reports the same)` : '';
    return g.firstDivergence === null
      ? `${g.profile}: greedy same ${g.tokens} tokens${of}`
      : `${g.profile}: greedy leaves stock at token ${g.firstDivergence} of ${g.tokens}${of}`;
  });
  const fidelity =
    [
      ...b.fidelity.map(
        (f) => `${f.profile}: ${f.verdict === 'differs' ? 'differs' : 'within'} (KLD ≤ ${f.meanKld.toFixed(6)})`,
      ),
      ...greedy,
    ].join('; ') || '–';
  return { speed, fidelity };
}

/**
 * A verified profile in a few words, one form for every profile: what it raises (`Apple7, tg 65536`, or `no raise`),
 * then the built-in it is, when it is one (`Apple7, profile apple7`), so that no cell says a name where another says
 * what it does.
 */
export function provenProfileText(p: Profile): string {
  const raises =
    [
      p.appleFamilyMax === null
        ? null
        : p.appleFamilyMax === HOST_VALUE
          ? 'host family'
          : `Apple${p.appleFamilyMax - 1000}`,
      p.maxThreadgroupMemoryLength === null ? null : `tg ${p.maxThreadgroupMemoryLength}`,
      p.families.metal3 === true ? 'Metal3' : null,
      p.deviceName === null ? null : `name ${JSON.stringify(p.deviceName)}`,
    ]
      .filter(Boolean)
      .join(', ') || 'no raise';
  return p.name ? `${raises}, profile ${p.name}` : raises;
}

/** The doctor columns of a row as Markdown text. */
export function doctorText(d: MatrixDoctor | null): { proven: string; faults: string } {
  if (d === null) return { proven: '–', faults: '–' };
  const faults = d.faults.map((f) => `${f.fault} (${f.reports}/${d.reports})`).join('; ');
  const count = d.measured === d.reports ? `${d.reports}` : `${d.measured} of ${d.reports} measured`;
  const simulated = d.simulated ?? 0;
  const notMeasured =
    simulated > 0 ? `not measured (${d.reports}; ${simulated} simulated)` : `not measured (${d.reports})`;
  const proven = d.provenProfile === null ? notMeasured : `${provenProfileText(d.provenProfile)} (${count})`;
  return { proven, faults: faults || 'none found' };
}

const SHORT_GATES: Record<string, string> = {
  has_simdgroup_reduction: 'reduction',
  has_simdgroup_mm: 'mm',
  has_bfloat: 'bfloat',
  has_tensor: 'tensor',
};

/** One cell as Markdown text. */
export function cellText(cell: MatrixCell | undefined): string {
  if (!cell) return '–';
  const gates = cell.gatesOn.flatMap((g) => own(SHORT_GATES, g) ?? []);
  const gateText = gates.length ? `; gates: ${gates.join(', ')}` : '; gates: none';
  if (cell.refused === cell.reports) return `refused (${cell.reports})`;
  if (cell.offline === cell.reports) return `predicted offline (${cell.reports})${gateText}`;
  const live = cell.reports - cell.offline - cell.refused;
  const mark = cell.verified === live ? '✓' : '✗';
  // A matrix written before simulated reports were counted apart has no count: none is claimed.
  const simulated = cell.simulated ?? 0;
  const where = simulated === 0 ? '' : simulated === live ? ' [simulated]' : ` [${simulated} of ${live} simulated]`;
  return `${mark} verified ${cell.verified}/${live}${where}${gateText}`;
}

const MATRIX_TAKES = 'matrixMarkdown() takes what buildMatrix() returned (or that JSON parsed back)';

/**
 * A matrix from the caller, read once and checked to the fields matrixMarkdown reads: a wrong shape is an
 * InvalidOptionsError naming the field (`rows[0].cells.apple7.reports`), never a TypeError from inside.
 */
function checkMatrix(value: unknown): Matrix {
  const fail = (field: string, problem: string): never => {
    throw new InvalidOptionsError(field || 'matrix', `${MATRIX_TAKES}; ${field || 'the matrix'} ${problem}`);
  };
  const m = readInput(value, fail);
  const want = (ok: boolean, field: string, what: string, got: unknown): void => {
    if (!ok) fail(field, `must be ${what}, got ${describeValue(got)}`);
  };
  const count = (v: unknown, field: string): void =>
    want(typeof v === 'number' && Number.isSafeInteger(v) && v >= 0, field, 'a whole number ≥ 0', v);
  const text = (v: unknown, field: string): void => want(typeof v === 'string', field, 'a string', v);
  const list = (v: unknown, field: string, each: (x: unknown, f: string) => void): void => {
    want(Array.isArray(v), field, 'an array', v);
    for (const [i, x] of (v as unknown[]).entries()) each(x, `${field}[${i}]`);
  };
  const object = (v: unknown, field: string): Record<string, unknown> => {
    want(isObject(v), field, 'an object', v);
    return v as Record<string, unknown>;
  };
  const top = object(m, '');
  list(top.profiles, 'profiles', text);
  list(top.rows, 'rows', (r, field) => {
    const row = object(r, field);
    text(row.host, `${field}.host`);
    text(row.guestOs, `${field}.guestOs`);
    if (row.architectures !== undefined)
      list(row.architectures, `${field}.architectures`, (a, af) =>
        want(a === null || typeof a === 'string', af, 'a string or null', a),
      );
    const cells = object(row.cells, `${field}.cells`);
    for (const [name, c] of Object.entries(cells)) {
      const cell = object(c, `${field}.cells.${name}`);
      for (const k of ['reports', 'verified', 'refused', 'offline']) count(cell[k], `${field}.cells.${name}.${k}`);
      if (cell.simulated !== undefined) count(cell.simulated, `${field}.cells.${name}.simulated`);
      list(cell.gatesOn, `${field}.cells.${name}.gatesOn`, text);
    }
    // A matrix written before bench existed has no bench: read as null.
    if (row.bench === undefined) row.bench = null;
    if (row.bench !== null) {
      const b = object(row.bench, `${field}.bench`);
      const shape = shapeReader(fail);
      list(b.speed, `${field}.bench.speed`, (e, ef) => {
        const x = object(e, ef);
        text(x.profile, `${ef}.profile`);
        text(x.test, `${ef}.test`);
        text(x.key, `${ef}.key`);
        for (const k of ['speedup', 'low', 'high']) shape.numberOrNull(x[k], `${ef}.${k}`, { above: 0 });
        shape.oneOf(x.verdict, `${ef}.verdict`, ['faster', 'slower', 'no-difference-shown', 'no-interval'] as const);
        for (const k of ['rounds', 'reports', 'partial']) count(x[k], `${ef}.${k}`);
        list(x.builds, `${ef}.builds`, text);
        shape.oneOf(x.provenance, `${ef}.provenance`, ['measured', 'simulated', 'mixed'] as const);
        shape.boolOrNull(x.affected, `${ef}.affected`);
      });
      list(b.fidelity, `${field}.bench.fidelity`, (e, ef) => {
        const x = object(e, ef);
        text(x.profile, `${ef}.profile`);
        want(x.verdict === 'within-tolerance' || x.verdict === 'differs', `${ef}.verdict`, 'a verdict', x.verdict);
        want(typeof x.meanKld === 'number' && Number.isFinite(x.meanKld), `${ef}.meanKld`, 'a number', x.meanKld);
        count(x.reports, `${ef}.reports`);
      });
      // A matrix written before the greedy comparison was merged has none.
      if (b.greedy === undefined) b.greedy = [];
      list(b.greedy, `${field}.bench.greedy`, (e, ef) => {
        const x = object(e, ef);
        text(x.profile, `${ef}.profile`);
        for (const k of ['tokens', 'same', 'reports']) count(x[k], `${ef}.${k}`);
        if (x.firstDivergence !== null) count(x.firstDivergence, `${ef}.firstDivergence`);
      });
    }
    if (row.doctor === null) return;
    const d = object(row.doctor, `${field}.doctor`);
    count(d.reports, `${field}.doctor.reports`);
    count(d.measured, `${field}.doctor.measured`);
    if (d.simulated !== undefined) count(d.simulated, `${field}.doctor.simulated`);
    list(d.faults, `${field}.doctor.faults`, (f, ff) => {
      const fault = object(f, ff);
      text(fault.fault, `${ff}.fault`);
      count(fault.reports, `${ff}.reports`);
    });
    const proven = `${field}.doctor.provenProfile`;
    if (d.provenProfile === undefined) fail(proven, 'must be a profile or null, got undefined');
    if (d.provenProfile === null) return;
    try {
      d.provenProfile = resolveProfile(d.provenProfile as ProfileInput);
    } catch (err) {
      fail(proven, `is not a profile (${err instanceof Error ? err.message : String(err)})`);
    }
  });
  return m as Matrix;
}

/**
 * The matrix as a Markdown table, for a caller's matrix: checked first (checkMatrix), since it may come from another
 * program's JSON. The package's own callers, which hold what buildMatrix returned, use matrixTable.
 */
export function matrixMarkdown(matrix: Matrix): string {
  return matrixTable(checkMatrix(matrix));
}

/** The Markdown table of a matrix buildMatrix returned (unchecked: see matrixMarkdown). */
export function matrixTable(m: Matrix): string {
  const header = [
    'Host',
    'Guest OS',
    'Architecture',
    ...m.profiles,
    'Proven profile (doctor)',
    'Faults (doctor)',
    'Speed-up (bench)',
    'Fidelity (bench)',
  ];
  const row = (cells: string[]) => `| ${cells.map(markdownCell).join(' | ')} |`;
  const lines = [row(header), `| ${header.map(() => '---').join(' | ')} |`];
  for (const r of m.rows) {
    const d = doctorText(r.doctor);
    const b = benchText(r.bench);
    lines.push(
      row([
        r.host,
        r.guestOs,
        architecturesText(r.architectures),
        ...m.profiles.map((p) => cellText(own(r.cells, p))),
        d.proven,
        d.faults,
        b.speed,
        b.fidelity,
      ]),
    );
  }
  const custom = m.profiles.flatMap((p) => {
    const answers = m.legend === undefined ? undefined : own(m.legend, p);
    // A custom profile's device name is anyone's text: a backtick in it must not close the code span.
    return answers === undefined ? [] : [`- ${markdownCode(p)}: ${markdownCode(JSON.stringify(answers))}`];
  });
  if (custom.length > 0) lines.push('', 'Custom profiles:', ...custom);
  const used = new Set(m.rows.flatMap((r) => (r.bench?.speed ?? []).flatMap(speedMarkers)));
  if (m.rows.some((r) => Object.values(r.cells).some((c) => (c.simulated ?? 0) > 0))) used.add('simulated');
  if (m.rows.some((r) => Object.values(r.cells).some((c) => c.offline > 0))) used.add('predicted');
  const legend = Object.entries(MATRIX_MARKERS).filter(([marker]) => used.has(marker));
  if (legend.length > 0)
    lines.push(
      '',
      'Where the evidence comes from: unmarked is measured on macOS; speed-ups are geometric means with their 95 % interval (paired t on log ratios).',
      ...legend.map(([marker, meaning]) => `- ${marker}: ${meaning}`),
    );
  return lines.join('\n');
}
