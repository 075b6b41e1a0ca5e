/**
 * The doctor's probe ids and outcome statuses: defined here once, used by the native binding's types, snapshot
 * validation and the doctor itself.
 */

/** Every probe the native doctor runs, in its default order. */
export const DOCTOR_PROBE_IDS = [
  'simdgroup-reduction',
  'simdgroup-matrix',
  'bfloat',
  'threadgroup-memory',
  'nocopy-mmap',
  'residency-set',
  'heap',
] as const;

/** One doctor probe. */
export type DoctorProbeId = (typeof DOCTOR_PROBE_IDS)[number];

/**
 * A probe's outcome: `pass`; `wrong-result` (ran, but the numbers differ from the CPU reference, or a stale or short
 * buffer); `fail` (a Metal API error); `unsupported` (the OS or MSL version lacks it); `timeout`; `skipped`; `error`
 * (anything else, e.g. the temporary file could not be created); a command buffer's MTLCommandBufferError named after
 * its code (`page-fault`, `access-revoked`, `not-permitted`, `out-of-memory`, `device-removed`); `aborted` (the process
 * running the probe died, or was killed at the deadline, while it ran); `interrupted` (a SIGINT or SIGTERM from outside
 * ended that process: nothing is judged).
 */
export const DOCTOR_STATUSES = [
  'pass',
  'wrong-result',
  'fail',
  'unsupported',
  'timeout',
  'skipped',
  'error',
  'page-fault',
  'access-revoked',
  'not-permitted',
  'out-of-memory',
  'device-removed',
  'aborted',
  'interrupted',
] as const;

/** One probe outcome status. */
export type DoctorStatus = (typeof DOCTOR_STATUSES)[number];
