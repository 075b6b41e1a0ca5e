/**
 * doctor: real Metal work on each device, judged. The native runner executes the probes and reports raw outcomes;
 * the files under lib/doctor/ judge them, derive the verified profile and the recommendations, cache, and replay.
 */
import { checkDoctorOptions, type DoctorOptions } from './options.js';
import { doctorFromSnapshot } from './replay.js';
import { runDoctorLive, type ProbeListener } from './run.js';
import type { DoctorReport } from './types.js';

/**
 * Runs the probes on every device (or `device`): each with stock answers, the capability probes again with the
 * candidate profile installed (default cua-release), then restores. Returns the judged results, each device's
 * verified profile and the engine settings that avoid the faults found. With `snapshot`, replays a recorded result
 * on any OS. Where there is no Metal it returns `supported: false` rather than throwing. Throws typed errors for bad
 * options and MetalCapShimError `ERR_PROFILE_ACTIVE` when a profile is already applied in the process.
 */
export function doctor(options?: DoctorOptions): DoctorReport {
  return doctorWithProgress(options);
}

/** doctor(), telling `listener` as each live probe starts (the CLI's progress line on a terminal). */
export function doctorWithProgress(options?: DoctorOptions, listener?: ProbeListener): DoctorReport {
  const o = checkDoctorOptions(options);
  return o.snapshot !== null ? doctorFromSnapshot({ ...o, snapshot: o.snapshot }) : runDoctorLive(o, listener);
}

export { doctorCacheDir, DOCTOR_CACHE_SCHEMA, type DoctorCacheEntry, type DoctorCacheKey } from './cache.js';
export { deriveVerifiedProfile, leastProfile, recommendationsFor } from './derive.js';
export type { DoctorOptions } from './options.js';
export {
  CAPABILITY_PROBE_IDS,
  DOCTOR_PROBE_IDS,
  DOCTOR_STATUSES,
  JUDGEMENTS,
  MMAP_SIZE,
  THREADGROUP_CANDIDATES,
  TIMEOUT_MS,
  type DoctorProbeId,
  type DoctorStatus,
  type Judgement,
  type RecordedStatus,
} from './probes.js';
export {
  DOCTOR_SCHEMA,
  type DoctorDevice,
  type DoctorProbe,
  type DoctorReport,
  type DoctorRun,
  type DoctorSettings,
  type SupportedDoctorReport,
  type UnsupportedDoctorReport,
  type MeasuredDifference,
  type MeasuredField,
  type PatchedRun,
  type ProbeDifference,
  type Recommendation,
  type ReportedAnswers,
} from './types.js';
