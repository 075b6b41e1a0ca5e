import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { DOCTOR_PROBE_IDS, DOCTOR_STATUSES, type DoctorProbeId, type DoctorStatus } from './doctor-vocabulary.js';
import { InvalidOptionsError, InvalidSnapshotError, SnapshotNotFoundError } from '../core/errors.js';
import { chipFromBrand, provableThreadgroupMemory } from './chips.js';
import {
  count,
  DEVICE_FIELD_NAMES,
  DEVICE_FIELDS,
  HOST_FIELD_NAMES,
  HOST_FIELDS,
  pickFields,
  recordedChecks,
  str,
  unansweredFields,
  unrecordedFields,
  type Check,
  type HostFacts,
  type RecordedDeviceFacts,
} from './fields.js';
import { packageRoot } from './native.js';
import { clip, isObject, own, readInput } from '../core/input.js';
import { fileLabel, JSON_LIMITS, readJsonFile, schemaProblem, STDIN, type JsonLimits } from '../core/jsonfile.js';
import { deviceReportFrom, FIELD_REPORT_SCHEMA, REPORT_SCHEMA } from './report.js';
import { didYouMean } from '../core/suggest.js';
import type { CapabilityReport, HostInfo, SupportedReport } from './types.js';

/** The snapshot format tag (snapshots/README.md documents the format). */
export const SNAPSHOT_SCHEMA = 'metal-cap-shim/snapshot@1' as const;

/** Host facts as recorded (lib/fields.ts lists them). `null`: not recorded or not answerable there. */
export interface SnapshotHost extends HostFacts {
  platform: string;
  /** For each field: a key of `sources`, `assumed`, or (for null values) `unrecorded`. */
  provenance: Record<string, string>;
}

/** A recorded probe status, or `not-recorded` where no source documents one. */
export type SnapshotDoctorStatus = DoctorStatus | 'not-recorded';

const NOCOPY_FAULTS = ['stale', 'zero-length'] as const;
/** How a NoCopy buffer over an mmap went wrong: stale pages, or a buffer that reports length 0. */
export type NocopyFault = (typeof NOCOPY_FAULTS)[number];

/** One probe's recorded outcome (snapshots/README.md says which fields belong to which probe). */
export interface SnapshotDoctorProbe {
  status: SnapshotDoctorStatus;
  /** One line, as a source reports it. */
  detail?: string;
  /** threadgroup-memory: the largest size that worked. */
  provenThreadgroupMemory?: number;
  /** threadgroup-memory: the largest size above what the device can prove (32768 bytes on an Apple GPU, another GPU's
   * own stock limit) that ran and computed right (unverifiable: threadgroups that large may never share a core). */
  acceptedThreadgroupMemory?: number;
  /** threadgroup-memory: the smallest size that failed. */
  failedThreadgroupMemory?: number;
  /** nocopy-mmap: the length the NoCopy buffer reported. */
  bufferLength?: number;
  /** nocopy-mmap, exactly when `status` is `wrong-result`: what went wrong. */
  fault?: NocopyFault;
  /** simdgroup-matrix, bfloat: the worst deviation from the CPU reference. */
  maxAbsError?: number;
}

/** What a doctor run on a device recorded; every probe id is present. */
export interface SnapshotDoctor {
  /** A key of the snapshot's `sources`, or `assumed`. */
  provenance: string;
  probes: Record<DoctorProbeId, SnapshotDoctorProbe>;
}

/** One device as recorded: the facts lib/fields.ts lists, with their provenance. */
export interface SnapshotDevice extends RecordedDeviceFacts {
  /** A recorded doctor result; absent: none. */
  doctor?: SnapshotDoctor;
  provenance: Record<string, string>;
}

/** A recorded capability snapshot: the single source of truth for simulated devices and offline audits. */
export interface Snapshot {
  schema: typeof SNAPSHOT_SCHEMA;
  id: string;
  title: string;
  /** `YYYY-MM-DD` the values were recorded or published. */
  recorded: string;
  sources: Record<string, string>;
  host: SnapshotHost;
  /** Index into `devices` of the device MTLCreateSystemDefaultDevice() returns. */
  defaultDevice: number;
  devices: SnapshotDevice[];
}

/** The fields of a snapshot's host, each with its provenance: the report's platform, then the host's facts. */
const SNAPSHOT_HOST_FIELDS = ['platform', ...HOST_FIELD_NAMES] as const;
/** The optional fields of a recorded doctor probe, per probe (`status` and `detail` belong to every probe). */
const DOCTOR_PROBE_FIELDS: Record<DoctorProbeId, string[]> = {
  'simdgroup-reduction': [],
  'simdgroup-matrix': ['maxAbsError'],
  bfloat: ['maxAbsError'],
  'threadgroup-memory': ['provenThreadgroupMemory', 'acceptedThreadgroupMemory', 'failedThreadgroupMemory'],
  'nocopy-mmap': ['bufferLength', 'fault'],
  'residency-set': [],
  heap: [],
};
const SNAPSHOT_DOCTOR_STATUSES: readonly string[] = [...DOCTOR_STATUSES, 'not-recorded'];
/**
 * What a snapshot may be: a file of at most `maxBytes` whose JSON nests at most `maxDepth` levels (loadSnapshot), with
 * at most `maxDevices` devices (validateSnapshot). A Mac has a handful of GPUs and a snapshot is a few kilobytes; the
 * bounds keep a hostile or broken file from costing unbounded memory or time.
 */
export interface SnapshotLimits extends JsonLimits {
  maxDevices: number;
}

/** 16 MiB, 64 levels, 64 devices. */
export const SNAPSHOT_LIMITS: Readonly<SnapshotLimits> = Object.freeze({ ...JSON_LIMITS, maxDevices: 64 });

/** The folder of bundled snapshots. */
export function snapshotsDir(): string {
  return path.join(packageRoot(), 'snapshots');
}

/** Names of the bundled snapshots, sorted. */
export function listSnapshots(): string[] {
  return readdirSync(snapshotsDir())
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
}

/** True when a selector names a file rather than a bundled snapshot. */
export function looksLikePath(selector: string): boolean {
  return selector.includes('/') || selector.includes(path.sep) || selector.endsWith('.json');
}

/** `; did you mean the bundled snapshot 'x'?` for a mistyped name, or a file name that is a bundled name + .json. */
function bundledSuggestion(selector: string): string {
  return didYouMean(path.basename(selector).replace(/\.json$/i, ''), listSnapshots(), 'the bundled snapshot ');
}

/** The file a snapshot name or path refers to (`-`: standard input); throws SnapshotNotFoundError when there is none. */
export function resolveSnapshotPath(selector: string): string {
  if (typeof selector !== 'string') {
    throw new InvalidOptionsError(
      'snapshot',
      'a snapshot is named by a string: a bundled name or a path to a .json file',
    );
  }
  if (selector.trim() === '') {
    throw new SnapshotNotFoundError(
      'a snapshot is named by a non-empty string: a bundled name or a path to a .json file',
    );
  }
  if (selector === STDIN) return STDIN;
  if (looksLikePath(selector)) {
    const file = path.resolve(selector);
    if (!existsSync(file))
      throw new SnapshotNotFoundError(`snapshot file ${clip(file)} does not exist${bundledSuggestion(selector)}`);
    return file;
  }
  const file = path.join(snapshotsDir(), `${selector}.json`);
  // A bundled name first; then a file of that name (`snapshot > guest` writes one without .json): never "not found"
  // for a file that is there.
  if (!existsSync(file) && existsSync(path.resolve(selector))) return path.resolve(selector);
  if (!existsSync(file)) {
    throw new SnapshotNotFoundError(
      `no bundled snapshot named '${clip(selector)}'${bundledSuggestion(selector)}; bundled snapshots: ${listSnapshots().join(', ')} (or pass a path to a .json file)`,
    );
  }
  return file;
}

/** What `--snapshot` reads, by schema, and what makes each. */
const SNAPSHOT_INPUTS: Record<string, string> = {
  [SNAPSHOT_SCHEMA]: 'metal-cap-shim snapshot',
  [REPORT_SCHEMA]: 'metal-cap-shim probe --json',
  [FIELD_REPORT_SCHEMA]: 'metal-cap-shim report --json',
};

/**
 * Reads and validates a snapshot by bundled name or by path (`-`: standard input). A path may also name a
 * `probe --json` report (`metal-cap-shim/report@1`), read as a snapshot of the devices it lists, or a field report
 * (`metal-cap-shim/field-report@1`), read as a snapshot of its stock devices and their doctor results. Any other JSON is refused naming the schema it has and the ones accepted.
 */
export function loadSnapshot(selector: string): Snapshot {
  const file = resolveSnapshotPath(selector);
  const label = fileLabel(file);
  const read = readJsonFile(file, SNAPSHOT_LIMITS);
  if (!read.ok) throw new InvalidSnapshotError(null, `snapshot file ${label} ${read.problem}`);
  const data = read.value;
  const wrongKind = schemaProblem(data, SNAPSHOT_INPUTS);
  if (wrongKind !== null) throw new InvalidSnapshotError('schema', `snapshot file ${label} ${wrongKind}`);
  const record = data as Record<string, unknown>;
  if (record.schema === REPORT_SCHEMA) return snapshotFromReportFile(record, file, read.modified);
  if (record.schema === FIELD_REPORT_SCHEMA) return snapshotFromFieldReport(record, file, read.modified);
  return validateSnapshot(data, label);
}

/** The `sources` key of values a snapshot took from a report or a recording. */
export const RECORDING_SOURCE = 'recording';

/** Turns a slug-unsafe text (a label, a file name, a model) into a snapshot id. */
export function snapshotId(text: string): string {
  const id = text
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .replace(/-+$/, '');
  return id || 'snapshot';
}

/**
 * A snapshot of the devices a supported report lists; `describe` is the provenance text of every value. Throws
 * InvalidSnapshotError when the report has no devices or a device lacks a value a snapshot must have.
 */
export function snapshotFromReport(
  report: CapabilityReport,
  meta: { id: string; title: string; recorded: string; describe: string; where: string },
): Snapshot {
  if (!report.supported) {
    throw new InvalidSnapshotError(
      'supported',
      `${meta.where}: the report has no devices (supported: false, ${report.reason}), so it cannot stand for a machine`,
    );
  }
  const provenanceOf = (values: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(values).map(([f, v]) => [f, v === null ? 'unrecorded' : RECORDING_SOURCE]));
  const host = report.host as unknown as Record<string, unknown>;
  const hostValues = {
    platform: report.platform,
    ...Object.fromEntries(HOST_FIELD_NAMES.map((f) => [f, host[f] ?? null])),
  };
  const snapshotHost = { ...hostValues, provenance: provenanceOf(hostValues) } as SnapshotHost;
  const devices = report.devices.map((d, i): SnapshotDevice => {
    const missing = unansweredFields(d as unknown as Record<string, unknown>, DEVICE_FIELDS);
    const noFamily = Object.entries(d.families)
      .filter(([, v]) => v === null)
      .map(([k]) => `families.${k}`);
    if (missing.length + noFamily.length > 0) {
      throw new InvalidSnapshotError(
        `devices[${i}].${[...missing, ...noFamily][0]}`,
        `${meta.where}: device ${i} has no answer for ${[...missing, ...noFamily].join(', ')} (the OS could not answer), and a snapshot needs every value but ${unrecordedFields(DEVICE_FIELDS).join(', ')}`,
      );
    }
    const values = pickFields(d, DEVICE_FIELD_NAMES) as unknown as RecordedDeviceFacts;
    return { ...values, provenance: provenanceOf(values) };
  });
  const defaultDevice = Math.max(
    0,
    report.devices.findIndex((d) => d.isDefault),
  );
  return validateSnapshot(
    {
      schema: SNAPSHOT_SCHEMA,
      id: meta.id,
      title: meta.title,
      recorded: meta.recorded,
      sources: { [RECORDING_SOURCE]: meta.describe },
      host: snapshotHost,
      defaultDevice,
      devices,
    },
    meta.where,
  );
}

/**
 * The date a file was written: its modification time as the descriptor that was read gave it (never the path asked
 * again, which may be another file by now), or today for standard input.
 */
function fileDate(modified: Date | null): string {
  return (modified ?? new Date()).toISOString().slice(0, 10);
}

function snapshotFromReportFile(data: Record<string, unknown>, file: string, modified: Date | null): Snapshot {
  const label = fileLabel(file);
  const isReport =
    typeof data.supported === 'boolean' &&
    Array.isArray(data.devices) &&
    typeof data.platform === 'string' &&
    'host' in data;
  if (!isReport) {
    throw new InvalidSnapshotError(
      null,
      `${label}: says it is a probe report (${REPORT_SCHEMA}) but lacks supported, platform, host or devices`,
    );
  }
  checkReportShape(data, file);
  const report = data as unknown as CapabilityReport;
  const base = file === STDIN ? 'stdin' : path.basename(file, '.json');
  return snapshotFromReport(report, {
    id: snapshotId(typeof report.snapshot === 'string' ? report.snapshot : base),
    title: `probe report ${file === STDIN ? label : path.basename(file)}`,
    recorded: fileDate(modified),
    describe: `metal-cap-shim probe report ${label} (date: ${file === STDIN ? 'when it was read' : "the file's modification time"})`,
    where: label,
  });
}

/**
 * A field report (`report --json`) as a snapshot: the host it describes, each device's stock answers from its audit,
 * and each device's doctor results when it has them (measured, or replayed from a recording), so `audit --snapshot` and
 * `doctor --snapshot` re-read a fleet's reports offline as `matrix` reads them.
 */
function snapshotFromFieldReport(data: Record<string, unknown>, file: string, modified: Date | null): Snapshot {
  const label = fileLabel(file);
  const fail = (field: string, what: string): never => {
    throw new InvalidSnapshotError(
      field,
      `${label}: a field report (${FIELD_REPORT_SCHEMA}) read as a snapshot needs ${what}`,
    );
  };
  const audit = isObject(data.audit) ? data.audit : fail('audit', 'its audit');
  if (!isObject(data.host)) fail('host', 'its host facts (host is not an object)');
  const devices =
    Array.isArray(audit.devices) && audit.devices.length > 0
      ? (audit.devices as unknown[])
      : fail('audit.devices', 'a non-empty audit.devices');
  const stock = devices.map((d, i) => {
    if (!isObject(d) || !isObject(d.stock) || !isObject(d.stock.families))
      return fail(`audit.devices[${i}].stock`, `audit.devices[${i}].stock with its families`);
    return d.stock;
  });
  const report = {
    schema: REPORT_SCHEMA,
    supported: true,
    // A field report does not say its platform: only a Mac (or the Linux simulation of one) has devices to report.
    platform: 'darwin',
    source: 'snapshot',
    snapshot: null,
    reason: null,
    detail: null,
    host: data.host,
    devices: stock,
  } as unknown as CapabilityReport;
  const base = file === STDIN ? 'stdin' : path.basename(file, '.json');
  const hostLabel = typeof data.hostLabel === 'string' ? `, ${data.hostLabel}` : '';
  const snapshot = snapshotFromReport(report, {
    id: snapshotId(typeof audit.snapshot === 'string' ? audit.snapshot : base),
    title: `field report ${file === STDIN ? label : path.basename(file)}${hostLabel}`,
    recorded:
      typeof data.generatedAt === 'string' && /^\d{4}-\d{2}-\d{2}/.test(data.generatedAt)
        ? data.generatedAt.slice(0, 10)
        : fileDate(modified),
    describe: `metal-cap-shim field report ${label}`,
    where: label,
  });
  // The report's doctor results, measured or replayed from a recording: what `matrix` reads of the same report, so a
  // fault one shows the other shows too.
  const doctor = data.doctor;
  if (!isObject(doctor) || !Array.isArray(doctor.devices)) return snapshot;
  const byIndex = new Map<unknown, unknown>(
    (doctor.devices as unknown[]).map((d) => [isObject(d) ? d.index : undefined, d]),
  );
  const withDoctor = snapshot.devices.map((device, i) => {
    const found = byIndex.get(stock[i]!.index);
    return isObject(found) && Array.isArray(found.probes)
      ? { ...device, doctor: recordingOf(found.probes as DoctorProbeResult[]) }
      : device;
  });
  return validateSnapshot({ ...snapshot, devices: withDoctor }, label);
}

/** What a doctor result says of one probe, as `recordingOf` reads it (a DoctorProbe, or the same from a file). */
export interface DoctorProbeResult {
  id: DoctorProbeId;
  status: SnapshotDoctorStatus;
  detail: string;
  provenThreadgroupMemory: number | null;
  /** Optional: results from before accepted sizes were told apart have none. */
  acceptedThreadgroupMemory?: number | null;
  failedThreadgroupMemory: number | null;
  bufferLength: number | null;
  maxAbsError: number | null;
}

/**
 * A device's doctor results as a snapshot records them (provenance: the recording), so `doctor --snapshot` replays
 * them. Each probe keeps its status, detail and the measurements its format has; a NoCopy wrong-result says which
 * fault it was (a buffer of length 0, or stale pages).
 */
export function recordingOf(probes: readonly DoctorProbeResult[]): SnapshotDoctor {
  const recorded = {} as Record<DoctorProbeId, SnapshotDoctorProbe>;
  for (const id of DOCTOR_PROBE_IDS) {
    const p = probes.find((x) => isObject(x) && x.id === id);
    if (p === undefined || p.status === 'not-recorded' || !SNAPSHOT_DOCTOR_STATUSES.includes(p.status)) {
      recorded[id] = { status: 'not-recorded' };
      continue;
    }
    const detail = typeof p.detail === 'string' ? p.detail.replace(/[\r\n]+/g, ' ').trim() : '';
    const probe: SnapshotDoctorProbe = { status: p.status, ...(detail ? { detail } : {}) };
    for (const field of DOCTOR_PROBE_FIELDS[id]) {
      const value = (p as unknown as Record<string, unknown>)[field];
      if (field !== 'fault' && value !== null && value !== undefined)
        (probe as unknown as Record<string, unknown>)[field] = value;
    }
    if (id === 'nocopy-mmap' && p.status === 'wrong-result')
      probe.fault = p.bufferLength === 0 ? 'zero-length' : 'stale';
    recorded[id] = probe;
  }
  return { provenance: RECORDING_SOURCE, probes: recorded };
}

// ---- validation ----

/**
 * The shapes snapshotFromReport() reads from a probe report file, checked before it reads them: the host an object
 * (or null when not supported), each device an object whose families are an object, and no more devices than
 * SNAPSHOT_LIMITS allows. The values themselves are checked by validateSnapshot() afterwards.
 */
function checkReportShape(data: Record<string, unknown>, file: string): void {
  const devices = data.devices as unknown[];
  if (devices.length > SNAPSHOT_LIMITS.maxDevices) {
    fail(file, 'devices', `must list at most ${SNAPSHOT_LIMITS.maxDevices} devices, not ${devices.length}`);
  }
  if (data.supported === true && !isObject(data.host)) fail(file, 'host', 'must be an object');
  devices.forEach((d, i) => {
    if (!isObject(d)) fail(file, `devices[${i}]`, 'must be an object');
    if (!isObject(d.families)) fail(file, `devices[${i}].families`, 'must be an object');
  });
}

function fail(where: string, field: string, message: string): never {
  throw new InvalidSnapshotError(field, `${where}: ${field} ${message}; see snapshots/README.md for the format`);
}

function checkFields(
  where: string,
  prefix: string,
  obj: unknown,
  checks: Record<string, Check>,
  optional: string[] = [],
) {
  if (!isObject(obj)) fail(where, prefix.replace(/\.$/, '') || '(root)', 'must be an object');
  for (const key of Object.keys(obj)) {
    if (!Object.hasOwn(checks, key) && !optional.includes(key)) fail(where, `${prefix}${key}`, 'is not a known field');
  }
  for (const [key, check] of Object.entries(checks)) {
    if (!Object.hasOwn(obj, key)) fail(where, `${prefix}${key}`, 'is missing');
    const problem = check(obj[key]);
    if (problem) fail(where, `${prefix}${key}`, `must be ${problem}`);
  }
}

function checkProvenance(
  where: string,
  prefix: string,
  section: Record<string, unknown>,
  fields: readonly string[],
  sources: Record<string, unknown>,
) {
  const provenance = section.provenance;
  checkFields(where, `${prefix}provenance.`, provenance, Object.fromEntries(fields.map((f) => [f, str])));
  for (const field of fields) {
    const said = own(provenance as Record<string, unknown>, field);
    const known =
      said === 'assumed' ||
      (said === 'unrecorded' && section[field] === null) ||
      (typeof said === 'string' && Object.hasOwn(sources, said));
    if (!known) {
      fail(
        where,
        `${prefix}provenance.${field}`,
        `must be a key of "sources", "assumed", or "unrecorded" (only for a null value), not '${said}'`,
      );
    }
  }
}

const doctorFieldChecks: Record<string, Check> = {
  detail: (v) => (typeof v === 'string' && v.trim() !== '' && !/[\r\n]/.test(v) ? null : 'one non-empty line of text'),
  provenThreadgroupMemory: count(1),
  acceptedThreadgroupMemory: count(1),
  failedThreadgroupMemory: count(1),
  bufferLength: count(0),
  maxAbsError: (v) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? null : 'a number ≥ 0'),
};

function checkDoctorProbe(where: string, prefix: string, id: DoctorProbeId, probe: unknown, provable: number) {
  const allowed = ['status', 'detail', ...DOCTOR_PROBE_FIELDS[id]];
  const status: Check = (v) =>
    SNAPSHOT_DOCTOR_STATUSES.includes(v as string) ? null : `one of ${SNAPSHOT_DOCTOR_STATUSES.join(', ')}`;
  checkFields(where, prefix, probe, { status }, allowed);
  const p = probe as Record<string, unknown>;
  for (const key of Object.keys(p)) {
    if (key === 'status') continue;
    if (p.status === 'not-recorded') {
      fail(where, `${prefix}${key}`, 'is not allowed: a not-recorded probe carries only its status');
    }
    const problem =
      key === 'fault'
        ? NOCOPY_FAULTS.includes(p[key] as NocopyFault)
          ? null
          : `one of ${NOCOPY_FAULTS.join(', ')}`
        : (own(doctorFieldChecks, key) ?? (() => 'a known field'))(p[key]);
    if (problem) fail(where, `${prefix}${key}`, `must be ${problem}`);
  }
  const proven = p.provenThreadgroupMemory,
    accepted = p.acceptedThreadgroupMemory,
    failed = p.failedThreadgroupMemory;
  // Above what the device can prove (what any Apple GPU has, or another GPU's own limit), a size is only accepted.
  if (typeof proven === 'number' && proven > provable) {
    fail(
      where,
      `${prefix}provenThreadgroupMemory`,
      `must be at most ${provable}: a larger size that worked is acceptedThreadgroupMemory`,
    );
  }
  if (typeof accepted === 'number' && accepted <= provable) {
    fail(where, `${prefix}acceptedThreadgroupMemory`, `must be larger than ${provable}`);
  }
  const worked = typeof accepted === 'number' ? accepted : proven;
  if (typeof worked === 'number' && typeof failed === 'number' && failed <= worked) {
    fail(
      where,
      `${prefix}failedThreadgroupMemory`,
      `must be larger than ${typeof accepted === 'number' ? 'acceptedThreadgroupMemory' : 'provenThreadgroupMemory'}`,
    );
  }
  // A recorded nocopy-mmap wrong-result says which fault it was: a replay and the simulation show that fault.
  if (id === 'nocopy-mmap' && (p.status === 'wrong-result') !== 'fault' in p) {
    const problem =
      'fault' in p ? 'is only for a wrong-result' : 'is missing: a wrong-result says which (stale or zero-length)';
    fail(where, `${prefix}fault`, problem);
  }
}

function checkDoctor(
  where: string,
  prefix: string,
  doctor: unknown,
  sources: Record<string, unknown>,
  provable: number,
) {
  checkFields(where, prefix, doctor, {
    provenance: (v) =>
      v === 'assumed' || (typeof v === 'string' && Object.hasOwn(sources, v))
        ? null
        : 'a key of "sources" or "assumed"',
    probes: (v) => (isObject(v) ? null : 'an object'),
  });
  const probes = (doctor as { probes: Record<string, unknown> }).probes;
  checkFields(where, `${prefix}probes.`, probes, Object.fromEntries(DOCTOR_PROBE_IDS.map((id) => [id, () => null])));
  for (const id of DOCTOR_PROBE_IDS) checkDoctorProbe(where, `${prefix}probes.${id}.`, id, probes[id], provable);
}

/**
 * The chip must be what the brand string names (null when it names none); without a brand string it may come from
 * a source of its own, but must still be a chip name.
 */
function checkChip(where: string, host: Record<string, unknown>) {
  const brand = host.cpuBrand as string | null;
  const chip = host.chip as string | null;
  if (brand !== null && chip !== chipFromBrand(brand)) {
    fail(
      where,
      'host.chip',
      `must be ${JSON.stringify(chipFromBrand(brand))}, the chip cpuBrand ${JSON.stringify(brand)} names`,
    );
  }
  if (brand === null && chip !== null && chipFromBrand(chip) !== chip) {
    fail(where, 'host.chip', 'must be an Apple chip name as bare metal reports it (e.g. "Apple M1 Ultra") or null');
  }
}

/**
 * Validates parsed JSON as a snapshot; `where` names it in messages. Throws InvalidSnapshotError naming the field.
 * Linear in the snapshot's size; at most `limits.maxDevices` devices are accepted.
 */
export function validateSnapshot(
  input: unknown,
  name: string = 'snapshot',
  limits: Pick<SnapshotLimits, 'maxDevices'> = SNAPSHOT_LIMITS,
): Snapshot {
  const where = typeof name === 'string' ? clip(name) : 'snapshot';
  // Read once into plain JSON data: a getter that throws, a BigInt or a cycle is a typed error naming the field.
  const data = readInput(input, (field, problem) => fail(where, field || '(root)', problem), { json: true });
  // Another kind of JSON (a doctor result, a field report) is named as what it is, before its fields are judged.
  const tagged = isObject(data) && typeof data.schema === 'string';
  const wrongKind = tagged ? schemaProblem(data, { [SNAPSHOT_SCHEMA]: 'metal-cap-shim snapshot' }) : null;
  if (wrongKind !== null)
    throw new InvalidSnapshotError('schema', `${where}: it ${wrongKind}; see snapshots/README.md for the format`);
  checkFields(where, '', data, {
    schema: (v) =>
      v === SNAPSHOT_SCHEMA
        ? null
        : `"${SNAPSHOT_SCHEMA}" (or the file must be a probe --json report, "${REPORT_SCHEMA}")`,
    id: (v) => (typeof v === 'string' && /^[a-z0-9][a-z0-9.-]*$/.test(v) ? null : 'a lower-case id (a-z, 0-9, -, .)'),
    title: str,
    recorded: (v) => (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) ? null : 'a date YYYY-MM-DD'),
    sources: (v) =>
      isObject(v) && Object.values(v).every((s) => typeof s === 'string') ? null : 'an object of strings',
    host: (v) => (isObject(v) ? null : 'an object'),
    defaultDevice: count(0),
    devices: (v) => {
      if (!Array.isArray(v) || v.length === 0) return 'a non-empty array';
      return v.length > limits.maxDevices ? `an array of at most ${limits.maxDevices} devices, not ${v.length}` : null;
    },
  });
  const snap = data as Record<string, unknown> & { sources: Record<string, unknown>; devices: unknown[] };
  for (const reserved of ['assumed', 'unrecorded']) {
    if (reserved in snap.sources) fail(where, `sources.${reserved}`, 'is a reserved word, not a source key');
  }
  checkFields(where, 'host.', snap.host, { platform: str, ...recordedChecks(HOST_FIELDS), provenance: () => null });
  checkChip(where, snap.host as Record<string, unknown>);
  checkProvenance(where, 'host.', snap.host as Record<string, unknown>, SNAPSHOT_HOST_FIELDS, snap.sources);
  snap.devices.forEach((device, i) => {
    const prefix = `devices[${i}].`;
    checkFields(where, prefix, device, { ...recordedChecks(DEVICE_FIELDS), provenance: () => null }, ['doctor']);
    const d = device as Record<string, unknown>;
    for (const [f, spec] of Object.entries(DEVICE_FIELDS)) {
      if (spec.members) checkFields(where, `${prefix}${f}.`, d[f], spec.members);
    }
    if ('doctor' in d) {
      const provable = provableThreadgroupMemory(d as Parameters<typeof provableThreadgroupMemory>[0]);
      checkDoctor(where, `${prefix}doctor.`, d.doctor, snap.sources, provable);
    }
    checkProvenance(where, prefix, d, DEVICE_FIELD_NAMES, snap.sources);
  });
  if ((snap.defaultDevice as number) >= snap.devices.length) {
    fail(where, 'defaultDevice', `must index into devices (0–${snap.devices.length - 1})`);
  }
  return data as Snapshot;
}

/** The capability report a snapshot records, as probe() would return it on that machine. */
export function reportFromSnapshot(snapshot: Snapshot, options: { allDevices?: boolean } = {}): SupportedReport {
  // A device keeps its number (its place in MTLCopyAllDevices()) when it is listed alone, as probe() numbers it.
  const indexes = options.allDevices ? snapshot.devices.map((_, i) => i) : [snapshot.defaultDevice];
  const devices = indexes.map((i) =>
    deviceReportFrom({
      index: i,
      isDefault: i === snapshot.defaultDevice,
      ...(pickFields(snapshot.devices[i]!, DEVICE_FIELD_NAMES) as unknown as RecordedDeviceFacts),
    }),
  );
  const { platform } = snapshot.host;
  return {
    schema: REPORT_SCHEMA,
    supported: true,
    platform,
    source: 'snapshot',
    snapshot: snapshot.id,
    reason: null,
    detail: null,
    host: pickFields(snapshot.host, HOST_FIELD_NAMES) as HostInfo,
    devices,
  };
}
