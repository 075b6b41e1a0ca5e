import { audit, type AuditResult } from './audit.js';
import { doctor, type DoctorReport } from './doctor.js';
import { leastProfile } from './doctor/derive.js';
import { DOCTOR_SCHEMA } from './doctor/types.js';
import { InvalidOptionsError, InvalidReportError } from './errors.js';

export { InvalidReportError };
import { packageVersion } from './native.js';

export { packageVersion };
import { checkOptions } from './options.js';
import { HOST_VALUE, resolveProfile, type ProfileInput, type Profile } from './profiles.js';
import type { HostInfo } from './types.js';

/** The field-report format tag. */
export const FIELD_REPORT_SCHEMA = 'metal-cap-shim/field-report@1' as const;

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
}

/** Options for fieldReport(). */
export interface FieldReportOptions {
  profile?: ProfileInput;
  /** Report on a recorded snapshot instead of this machine. */
  snapshot?: string;
  /** Describe the physical host, e.g. `M1 Ultra, macOS 26.6.1`. */
  hostLabel?: string;
  force?: boolean;
  /** Run doctor too (live: every probe, the profile as its candidate; offline: the snapshot's recording). Default true. */
  doctor?: boolean;
  /** doctor's nocopy-mmap probe maps this file (your model, read only) instead of a generated one. */
  mmapFile?: string;
  /** Bytes of the file doctor's nocopy-mmap probe generates (default 1 GiB). */
  mmapSize?: number;
}

/** Builds a field report: on a Mac it applies the profile, verifies and restores; with `snapshot`, offline. */
export function fieldReport(options?: FieldReportOptions): FieldReport {
  const o = checkOptions<FieldReportOptions>('fieldReport', options, {
    profile: 'any',
    snapshot: 'string',
    hostLabel: 'string',
    force: 'boolean',
    doctor: 'boolean',
    mmapFile: 'string',
    mmapSize: 'number',
  });
  const result = audit({
    ...(o.profile !== undefined ? { profile: o.profile } : {}),
    ...(o.snapshot !== undefined ? { snapshot: o.snapshot } : {}),
    force: o.force ?? false,
  });
  // After the audit, which has restored the process: doctor measures stock answers first.
  const doctorReport =
    o.doctor === false
      ? null
      : doctor({
          profile: result.profile,
          ...(o.snapshot !== undefined ? { snapshot: o.snapshot } : { force: o.force ?? false }),
          ...(o.mmapFile !== undefined ? { mmapFile: o.mmapFile } : {}),
          ...(o.mmapSize !== undefined ? { mmapSize: o.mmapSize } : {}),
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
  };
}

/** One cell of the matrix: every report for one host, guest OS and profile. */
export interface MatrixCell {
  reports: number;
  verified: number;
  refused: number;
  offline: number;
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
  /** The least of the measured reports' verified profiles (over every device); null when none measured anything. */
  provenProfile: Profile | null;
  /** Each fault (`probe: status`) with the number of reports that found it. */
  faults: { fault: string; reports: number }[];
}

/** One row: a host and guest OS pair. */
export interface MatrixRow {
  host: string;
  guestOs: string;
  cells: Record<string, MatrixCell>;
  /** Null when no report of the row carries a doctor result. */
  doctor: MatrixDoctor | null;
}

/** The tested matrix built from field reports. */
export interface Matrix {
  schema: 'metal-cap-shim/matrix@1';
  profiles: string[];
  rows: MatrixRow[];
  /** Reports given more than once (the same file twice, or a copy): each is counted once, here is what was skipped. */
  duplicates: { where: string; sameAs: string }[];
}

/** A report read from somewhere (a file) that `where` names in errors; `report` is checked, not trusted. */
export interface MatrixInput {
  where?: string;
  report: unknown;
}

function profileName(p: Profile): string {
  return p.name ?? 'custom';
}

function checkReport(value: unknown, where: string): FieldReport {
  const fail = (field: string | null, what: string): never => {
    throw new InvalidReportError(
      field,
      `${where} is not a usable metal-cap-shim field report (${what}); make one with \`metal-cap-shim report --json\``,
    );
  };
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(value)) fail(null, 'not a JSON object');
  const r = value as Record<string, unknown>;
  if (r.schema !== FIELD_REPORT_SCHEMA) fail('schema', `schema is not ${FIELD_REPORT_SCHEMA}`);
  if (r.host !== null && !isObject(r.host)) fail('host', 'host must be an object or null');
  if (r.hostLabel !== null && typeof r.hostLabel !== 'string') fail('hostLabel', 'hostLabel must be a string or null');
  const a = r.audit;
  if (!isObject(a)) fail('audit', 'audit is missing');
  const audit = a as Record<string, unknown>;
  if (audit.mode !== 'offline' && audit.mode !== 'live') fail('audit.mode', "audit.mode must be 'offline' or 'live'");
  if (typeof audit.refused !== 'boolean') fail('audit.refused', 'audit.refused must be true or false');
  if (!isObject(audit.profile) || !('name' in audit.profile)) fail('audit.profile', 'audit.profile is missing');
  if (!isObject(audit.verdict) || typeof audit.verdict.ok !== 'boolean') fail('audit.verdict', 'audit.verdict is missing');
  if (!Array.isArray(audit.devices)) fail('audit.devices', 'audit.devices must be an array');
  (audit.devices as unknown[]).forEach((d, i) => {
    if (!isObject(d) || typeof d.isDefault !== 'boolean' || !Array.isArray(d.engines)) {
      fail(`audit.devices[${i}]`, `audit.devices[${i}] must have isDefault and engines`);
    }
  });
  if (r.doctor !== undefined && r.doctor !== null) {
    const doc = r.doctor;
    if (!isObject(doc) || doc.schema !== DOCTOR_SCHEMA) fail('doctor', `doctor must be null or a ${DOCTOR_SCHEMA} result`);
    if (typeof (doc as Record<string, unknown>).source !== 'string') fail('doctor.source', 'doctor.source must be a string');
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
  return value as FieldReport;
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
  if (!Array.isArray(reports)) {
    throw new InvalidOptionsError('reports', 'buildMatrix() takes an array of field reports (fieldReport() results, or { where, report } for parsed JSON)');
  }
  const rows = new Map<string, MatrixRow>();
  const doctors = new Map<string, DoctorReport[]>();
  const profileNames = new Set<string>();
  const seen = new Map<string, string>();
  const duplicates: Matrix['duplicates'] = [];
  reports.forEach((entry: unknown, i) => {
    const pair = isFieldReportLike(entry) ? { where: `reports[${i}]`, report: entry } : (entry as MatrixInput | null);
    const where = typeof pair?.where === 'string' ? pair.where : `reports[${i}]`;
    const r = checkReport(pair?.report, where);
    // One report, however often it is given: two runs never produce the same timestamp and content.
    const identity = JSON.stringify(r);
    const first = seen.get(identity);
    if (first !== undefined) {
      duplicates.push({ where, sameAs: first });
      return;
    }
    seen.set(identity, where);
    const key = rowKey(r);
    const id = `${key.host}\u0000${key.guestOs}`;
    const row = rows.get(id) ?? { ...key, cells: {}, doctor: null };
    rows.set(id, row);
    if (r.doctor) doctors.set(id, [...(doctors.get(id) ?? []), r.doctor]);
    const name = profileName(r.audit.profile);
    profileNames.add(name);
    const cell = row.cells[name] ?? { reports: 0, verified: 0, refused: 0, offline: 0, gatesOn: [] };
    const device = r.audit.devices.find((d) => d.isDefault) ?? r.audit.devices[0];
    const llama = device?.engines.find((e) => e.engine === 'llama.cpp');
    const on = llama && llama.after.engine === 'llama.cpp'
      ? Object.entries(llama.after.flags).filter(([, f]) => f.value).map(([k]) => k)
      : [];
    cell.gatesOn = cell.reports === 0 ? on : cell.gatesOn.filter((g) => on.includes(g));
    cell.reports++;
    if (r.audit.refused) cell.refused++;
    else if (r.audit.mode === 'offline') cell.offline++;
    else if (r.audit.verdict.ok) cell.verified++;
    row.cells[name] = cell;
  });
  for (const [id, list] of doctors) rows.get(id)!.doctor = matrixDoctor(list);
  const sorted = [...rows.values()].sort((a, b) => a.host.localeCompare(b.host) || a.guestOs.localeCompare(b.guestOs));
  return { schema: 'metal-cap-shim/matrix@1', profiles: [...profileNames].sort(), rows: sorted, duplicates };
}

/**
 * True when a doctor result ran on Metal and learnt something. A replay's verified profile claims nothing for the
 * probes its recording leaves out, and a run where every probe errored claims nothing at all: either would pull the
 * row's proven profile down to no raise.
 */
function measuredSomething(r: DoctorReport): boolean {
  if (r.source !== 'live' && r.source !== 'simulated') return false;
  return r.devices.some((d) => d.faults.length > 0 || d.probes.some((p) => p.judgement === 'proven'));
}

function matrixDoctor(list: DoctorReport[]): MatrixDoctor {
  const counts = new Map<string, number>();
  for (const report of list) {
    for (const fault of new Set(report.devices.flatMap((d) => d.faults))) counts.set(fault, (counts.get(fault) ?? 0) + 1);
  }
  const measured = list.filter(measuredSomething);
  return {
    reports: list.length,
    measured: measured.length,
    provenProfile:
      measured.length === 0 ? null : leastProfile(measured.flatMap((r) => r.devices.map((d) => resolveProfile(d.verifiedProfile)))),
    faults: [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([fault, reports]) => ({ fault, reports })),
  };
}

/** A verified profile in a few words: its built-in name, or what it raises. */
export function provenProfileText(p: Profile): string {
  if (p.name) return p.name;
  const parts = [
    p.appleFamilyMax === null ? null : p.appleFamilyMax === HOST_VALUE ? 'host family' : `Apple${p.appleFamilyMax - 1000}`,
    p.maxThreadgroupMemoryLength === null ? null : `tg ${p.maxThreadgroupMemoryLength}`,
    p.families.metal3 === true ? 'Metal3' : null,
    p.deviceName === null ? null : `name ${JSON.stringify(p.deviceName)}`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'no raise';
}

/** The doctor columns of a row as Markdown text. */
export function doctorText(d: MatrixDoctor | null): { proven: string; faults: string } {
  if (d === null) return { proven: '–', faults: '–' };
  const faults = d.faults.map((f) => `${f.fault} (${f.reports}/${d.reports})`).join('; ');
  const count = d.measured === d.reports ? `${d.reports}` : `${d.measured} of ${d.reports} measured`;
  const proven = d.provenProfile === null ? `not measured (${d.reports})` : `${provenProfileText(d.provenProfile)} (${count})`;
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
  const gates = cell.gatesOn.filter((g) => g in SHORT_GATES).map((g) => SHORT_GATES[g]);
  const gateText = gates.length ? `; gates: ${gates.join(', ')}` : '; gates: none';
  if (cell.refused === cell.reports) return `refused (${cell.reports})`;
  if (cell.offline === cell.reports) return `predicted offline (${cell.reports})${gateText}`;
  const live = cell.reports - cell.offline - cell.refused;
  const mark = cell.verified === live ? '✓' : '✗';
  return `${mark} verified ${cell.verified}/${live}${gateText}`;
}

/** The matrix as a Markdown table. */
export function matrixMarkdown(m: Matrix): string {
  const header = ['Host', 'Guest OS', ...m.profiles, 'Proven profile (doctor)', 'Faults (doctor)'];
  const lines = [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`];
  for (const row of m.rows) {
    const d = doctorText(row.doctor);
    lines.push(`| ${[row.host, row.guestOs, ...m.profiles.map((p) => cellText(row.cells[p])), d.proven, d.faults].join(' | ')} |`);
  }
  return lines.join('\n');
}
