/**
 * `doctor --snapshot`: the doctor result a snapshot records, judged as a live run would be. Nothing runs and
 * nothing is guessed: a probe the snapshot does not document stays `not-recorded`, proves nothing and finds no fault.
 */
import { InvalidOptionsError } from '../core/errors.js';
import { loadSnapshot, reportFromSnapshot, type SnapshotDoctorProbe } from '../device/snapshots.js';
import { packageVersion } from '../device/native.js';
import { assessDevice } from './derive.js';
import { judgeProbe } from './judge.js';
import { candidateFor, type CheckedDoctorOptions } from './options.js';
import { DOCTOR_PROBE_IDS, JUDGEMENTS, type DoctorProbeId } from './probes.js';
import { DOCTOR_SCHEMA, type DoctorReport, type DoctorRun } from './types.js';

/** A recorded probe as a run: measurements the recording does not give stay null, and its time is unknown. */
export function runFromRecord(record: SnapshotDoctorProbe | undefined, provenance: string | null): DoctorRun {
  const status = record?.status ?? 'not-recorded';
  // The key only: the snapshot's `sources` spell out the citation.
  const where = provenance === null ? '' : provenance === 'assumed' ? ' [assumed]' : ` [source: ${provenance}]`;
  const said = record?.detail ?? JUDGEMENTS[status].meaning;
  const fault = record?.fault === undefined ? '' : ` (fault: ${record.fault})`;
  return {
    status,
    detail: status === 'not-recorded' ? 'not recorded in this snapshot' : `recorded: ${said}${fault}${where}`,
    ms: null,
    compileMs: null,
    provenThreadgroupMemory: record?.provenThreadgroupMemory ?? null,
    acceptedThreadgroupMemory: record?.acceptedThreadgroupMemory ?? null,
    failedThreadgroupMemory: record?.failedThreadgroupMemory ?? null,
    bufferLength: record?.bufferLength ?? null,
    maxAbsError: record?.maxAbsError ?? null,
  };
}

/** The doctor report a snapshot's recorded results give, on any OS. */
export function doctorFromSnapshot(o: CheckedDoctorOptions & { snapshot: string }): DoctorReport {
  const snapshot = loadSnapshot(o.snapshot);
  const report = reportFromSnapshot(snapshot, { allDevices: true });
  if (o.device !== null && o.device >= report.devices.length) {
    throw new InvalidOptionsError(
      'device',
      `doctor() option 'device' (--device): snapshot ${snapshot.id} has no device ${o.device}; it records ${report.devices.length} (0–${report.devices.length - 1})`,
    );
  }
  const devices = report.devices
    .filter((d) => o.device === null || d.index === o.device)
    .map((stock) => {
      const recorded = snapshot.devices[stock.index]!.doctor;
      const probes = o.probes.map((id) =>
        judgeProbe(id, runFromRecord(recorded?.probes[id], recorded?.provenance ?? null)),
      );
      const unasked = DOCTOR_PROBE_IDS.filter((id) => !o.probes.includes(id)).map((id) =>
        judgeProbe(id, { ...runFromRecord(undefined, null), status: 'skipped', detail: 'not asked' }),
      );
      return assessDevice(stock, null, order([...probes, ...unasked]), report.host);
    });
  // The candidate as this recorded host would get it (its fallback, where the host chip is unknown).
  const candidate = candidateFor(o, report);
  return {
    schema: DOCTOR_SCHEMA,
    packageVersion: packageVersion(),
    generatedAt: new Date().toISOString(),
    supported: true,
    reason: null,
    detail: null,
    source: 'snapshot',
    snapshot: snapshot.id,
    replayed: true,
    host: report.host,
    candidateProfile: candidate.profile,
    candidateWarnings: candidate.plan.warnings,
    patchedRun: { ran: false, why: 'a recorded result is replayed: nothing runs' },
    settings: {
      probes: o.probes,
      timeoutMs: null,
      mmapFile: null,
      mmapSize: null,
      device: o.device,
      allowAboveHardware: null,
    },
    devices,
    restore: null,
    cache: null,
  };
}

/** Probes in DOCTOR_PROBE_IDS order. */
export function order<T extends { id: DoctorProbeId }>(probes: T[]): T[] {
  return [...probes].sort((a, b) => DOCTOR_PROBE_IDS.indexOf(a.id) - DOCTOR_PROBE_IDS.indexOf(b.id));
}
