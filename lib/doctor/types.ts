import type { HookRef } from '../patch/apply.js';
import type { FamilyName } from '../core/families.js';
import type { Profile } from '../patch/profiles.js';
import type { ApplyWarning } from '../patch/plan.js';
import type { HostInfo, ReportSource, UnsupportedReason } from '../device/types.js';
import type { DoctorProbeId, Judgement, RecordedStatus } from './probes.js';

/** Told as each live probe starts (doctor()'s `onProgress`): the device (of how many), the probe, and which run. */
export interface DoctorProgress {
  device: number;
  devices: number;
  probe: DoctorProbeId;
  /** `stock`: the device's own answers; `patched`: the candidate profile installed in the runner. */
  run: 'stock' | 'patched';
}

/** The doctor report's format tag; bumps when a field changes meaning. */
export const DOCTOR_SCHEMA = 'metal-cap-shim/doctor@1' as const;

/** One execution of a probe: its status and what it measured (`null`: not applicable or not reached). */
export interface DoctorRun {
  status: RecordedStatus;
  /** One line. */
  detail: string;
  /** Wall time of the run; `null` for a replayed recording. */
  ms: number | null;
  /** The part of `ms` that Metal's compiler took (the probe's libraries and pipelines); `null` when not measured. */
  compileMs: number | null;
  /** threadgroup-memory: the largest size that compiled, ran and computed right. */
  provenThreadgroupMemory: number | null;
  /**
   * threadgroup-memory: the largest size above what the device can prove (32768 bytes on an Apple GPU, another GPU's
   * own stock limit: provableThreadgroupMemory) that ran and computed right. Threadgroups that large may
   * never share a GPU core, so concurrency cannot prove the memory exists: accepted, unverifiable, never proven.
   */
  acceptedThreadgroupMemory: number | null;
  /** threadgroup-memory: the smallest size that failed. */
  failedThreadgroupMemory: number | null;
  /** nocopy-mmap: the NoCopy buffer's reported length. */
  bufferLength: number | null;
  /** simdgroup-matrix, bfloat: the worst deviation from the CPU reference. */
  maxAbsError: number | null;
}

/**
 * A probe's verdict on one device. Its status, detail and measurements combine both runs when there were two (the
 * worse status; the smaller proven threadgroup size; the summed time), and `stock` / `patched` keep each run.
 */
export interface DoctorProbe extends DoctorRun {
  id: DoctorProbeId;
  judgement: Judgement;
  /** The run with stock answers (only when the probe also ran under the candidate profile). */
  stock?: DoctorRun;
  /** The run with the candidate profile installed. */
  patched?: DoctorRun;
}

/** The measurements compared between a probe's stock and patched runs. */
export type MeasuredField = 'provenThreadgroupMemory' | 'acceptedThreadgroupMemory' | 'failedThreadgroupMemory';

/** A measurement that differs between the two runs (`null`: that run did not measure it). */
export interface MeasuredDifference {
  field: MeasuredField;
  stock: number | null;
  patched: number | null;
}

/**
 * A probe whose stock and patched runs ended differently, in status or in what they measured: the device's answers
 * changed what Metal did. `stock` and `patched` are the runs' statuses, equal when only a measurement differs;
 * `measured` lists the differing measurements (empty when only the status differs).
 */
export interface ProbeDifference {
  id: DoctorProbeId;
  stock: RecordedStatus;
  patched: RecordedStatus;
  measured: MeasuredDifference[];
}

/** An engine setting that avoids a fault doctor found, with the evidence. */
export interface Recommendation {
  engine: 'llama.cpp' | 'node-llama-cpp' | 'mlx';
  setting: string;
  why: string;
}

/** The answers a device gave, for comparing with what was proven. */
export interface ReportedAnswers {
  highestAppleFamily: FamilyName | null;
  maxThreadgroupMemoryLength: number | null;
  metal3: boolean | null;
}

/** doctor's findings on one device. */
export interface DoctorDevice {
  index: number;
  isDefault: boolean;
  name: string;
  className: string;
  registryId: number | null;
  /** What the device answered stock, and under the candidate profile (null when there was no patched run). */
  reported: { stock: ReportedAnswers; patched: ReportedAnswers | null };
  probes: DoctorProbe[];
  differences: ProbeDifference[];
  /** The least profile that turns on what was proven here, nothing more (`resolveProfile` accepts it). */
  verifiedProfile: Profile;
  /** One line per choice the verified profile makes: Apple family ceiling, threadgroup memory, Metal3. */
  verifiedProfileReasons: string[];
  recommendations: Recommendation[];
  /** `id: status` of every probe judged faulty. */
  faults: string[];
}

/** Whether the probes also ran under the candidate profile, and why not. Narrow it on `ran`. */
export type PatchedRun = { ran: true; why: null } | { ran: false; why: string };

/** What a run was asked to do. */
export interface DoctorSettings {
  probes: DoctorProbeId[];
  /** Per-probe deadline; null for a replay. */
  timeoutMs: number | null;
  mmapFile: string | null;
  /** Size of the generated file; null when `mmapFile` is used, nocopy-mmap does not run, or for a replay. */
  mmapSize: number | null;
  /** The device asked for, or null for every device. */
  device: number | null;
  /**
   * Whether threadgroup-memory dispatched sizes above what each device can prove (`allowAboveHardware`); null for a
   * replay. When false, its detail names the sizes left out.
   */
  allowAboveHardware: boolean | null;
}

/** What every doctor report has, whether or not anything could run. */
interface DoctorReportBase {
  schema: typeof DOCTOR_SCHEMA;
  packageVersion: string;
  generatedAt: string;
  /** `live`, `simulated` (the Linux test build), `snapshot` (a replayed recording) or `none`. */
  source: ReportSource;
  snapshot: string | null;
  /**
   * True when the results are a recording replayed (`snapshot` option, `doctor --snapshot`): nothing ran, and each
   * fault was found when the recording was made, not now.
   */
  replayed: boolean;
  /** The profile installed for the patched runs, bound to the host (its fallback where the host chip is unknown). */
  candidateProfile: Profile;
  /** What planPatch warned of the candidate on this machine (its fallback, claims above the host), as applyProfile does. */
  candidateWarnings: ApplyWarning[];
  patchedRun: PatchedRun;
  settings: DoctorSettings;
  /** After the patched runs: the hooks taken out, and any left because another library hooked on top. */
  restore: { restoredHooks: HookRef[]; conflicts: HookRef[] } | null;
  /** Cache files written (live runs of every capability probe), or why they could not be. */
  cache: { written: string[]; error: string | null } | null;
}

/** A doctor report where the probes ran (or a recording was replayed): `host` is known. */
export interface SupportedDoctorReport extends DoctorReportBase {
  supported: true;
  reason: null;
  detail: null;
  host: HostInfo;
  devices: DoctorDevice[];
}

/** A doctor report where nothing could run; `reason` says why and `detail` what to do. */
export interface UnsupportedDoctorReport extends DoctorReportBase {
  supported: false;
  reason: UnsupportedReason;
  detail: string;
  /** Known when Metal loaded but had no device; null when nothing could be asked at all. */
  host: HostInfo | null;
  devices: [];
  patchedRun: { ran: false; why: string };
  restore: null;
  cache: null;
}

/** The outcome of doctor(): real Metal work on each device, judged. Narrow it on `supported`. */
export type DoctorReport = SupportedDoctorReport | UnsupportedDoctorReport;
