/**
 * doctor: real Metal work on each device, judged. The native runner executes the probes and reports raw outcomes;
 * the files under lib/doctor/ judge them, derive the verified profile and the recommendations, cache, and replay.
 */
import { checkDoctorCall, type DoctorOptions } from './options.js';
import { doctorFromSnapshot } from './replay.js';
import { runDoctorLive } from './run.js';
import type { DoctorReport } from './types.js';

/**
 * Runs the probes on every device (or `device`) in a child process, never in this one: each with stock answers, the
 * capability probes again with the candidate profile installed there (default host-family). Resolves to the judged
 * results, each device's verified profile and the engine settings that avoid the faults found; `onProgress` is told
 * as each probe starts, and the event loop keeps turning meanwhile. A probe that hangs past its deadline, crashes or
 * aborts ends the child, not this process, and is reported as `aborted`. This process's devices and any profile
 * applied in it are left as they are. With `snapshot`, replays a recorded result on any OS. Where there is no Metal it
 * resolves to `supported: false`; it rejects with typed errors for bad options.
 */
export async function doctor(options?: DoctorOptions): Promise<DoctorReport> {
  const { options: o, onProgress } = checkDoctorCall(options);
  if (o.snapshot !== null) return doctorFromSnapshot({ ...o, snapshot: o.snapshot });
  return runDoctorLive(o, onProgress ?? undefined);
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
  type DoctorProgress,
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
