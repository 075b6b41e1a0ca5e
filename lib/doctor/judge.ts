import { familyLabel } from '../core/families.js';
import type { DeviceReport } from '../device/types.js';
import type { NativeProbeOutcome } from '../../types/binding.js';
import {
  COMMAND_BUFFER_STATUSES,
  GPU_LEFT_UNUSABLE,
  JUDGEMENTS,
  PROBE_GATING_FAMILIES,
  STATUS_SEVERITY,
  type DoctorProbeId,
  type DoctorStatus,
  type RecordedStatus,
} from './probes.js';
import type { DoctorProbe, DoctorRun, MeasuredField, ProbeDifference } from './types.js';

/** One probe's raw outcome as the native runner returns it. */
export type RawOutcome = NativeProbeOutcome;

/**
 * A raw outcome as a run (without its id). A feature whose object could not be made (`fail` with `buildFailed`: a
 * kernel that could not be compiled or given a pipeline, a residency set that could not be created) on a device whose
 * stock answers claim none of the families that gate the probe's feature (PROBE_GATING_FAMILIES) is `unsupported`:
 * the device never said it had the feature. `stock` is the device's stock report (never the answers
 * under a profile, which claim what was not proven).
 */
export function runFrom(outcome: RawOutcome, stock?: DeviceReport): DoctorRun {
  const gates = PROBE_GATING_FAMILIES[outcome.id];
  const unclaimed = stock !== undefined && gates.length > 0 && gates.every((f) => stock.families[f] !== true);
  const absent = outcome.status === 'fail' && outcome.buildFailed && unclaimed;
  return {
    status: absent ? 'unsupported' : statusOf(outcome),
    detail: absent
      ? `the device does not claim ${gates.map(familyLabel).join(' or ')}, which gates this feature: ${outcome.detail}`
      : outcome.detail,
    // A probe that never ran (skipped) or whose runner died (aborted, interrupted) has no time of its own.
    ms: notTimed(outcome) ? null : outcome.ms,
    compileMs: notTimed(outcome) ? null : outcome.compileMs,
    provenThreadgroupMemory: outcome.provenThreadgroupMemory,
    acceptedThreadgroupMemory: outcome.acceptedThreadgroupMemory,
    failedThreadgroupMemory: outcome.failedThreadgroupMemory,
    bufferLength: outcome.bufferLength,
    maxAbsError: outcome.maxAbsError,
  };
}

function notTimed(outcome: RawOutcome): boolean {
  return outcome.status === 'skipped' || outcome.status === 'aborted' || outcome.status === 'interrupted';
}

/** A raw outcome's status: a failed command buffer's is named after its MTLCommandBufferError code (read by code). */
function statusOf(outcome: RawOutcome): DoctorStatus {
  if (outcome.status !== 'fail' || outcome.commandBufferError === null) return outcome.status;
  return COMMAND_BUFFER_STATUSES.get(outcome.commandBufferError) ?? outcome.status;
}

/**
 * The status that leaves the device unusable for the probes after this one (GPU_LEFT_UNUSABLE), or null. A timeout
 * counts only when it was the GPU's: a compiler that ran out of time says nothing about the GPU.
 */
export function leftGpuUnusable(outcome: RawOutcome): DoctorStatus | null {
  const status = statusOf(outcome);
  if (!GPU_LEFT_UNUSABLE.includes(status)) return null;
  return status !== 'timeout' || outcome.gpuTimedOut || outcome.commandBufferError !== null ? status : null;
}

/** The worse of two statuses (see STATUS_SEVERITY). */
export function worseStatus(a: RecordedStatus, b: RecordedStatus): RecordedStatus {
  return STATUS_SEVERITY.indexOf(a) <= STATUS_SEVERITY.indexOf(b) ? a : b;
}

function both<T>(a: T | null, b: T | null, pick: (x: T, y: T) => T): T | null {
  return a === null || b === null ? null : pick(a, b);
}

function either(a: number | null, b: number | null, pick: (x: number, y: number) => number): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return pick(a, b);
}

/**
 * A probe's verdict from its stock run and, for capability probes, its run under the candidate profile. Something
 * counts as proven only when every run proved it: the worse status wins, and a threadgroup size is proven only as far
 * as both runs proved it.
 */
export function judgeProbe(
  id: DoctorProbeId,
  stock: DoctorRun,
  patched?: DoctorRun,
  candidate = 'the candidate profile',
): DoctorProbe {
  if (patched === undefined) return { id, ...stock, judgement: JUDGEMENTS[stock.status].judgement };
  const status = worseStatus(stock.status, patched.status);
  const detail =
    stock.status === patched.status
      ? stock.detail
      : `stock: ${stock.status} (${stock.detail}); under ${candidate}: ${patched.status} (${patched.detail})`;
  return {
    id,
    status,
    detail,
    ms: both(stock.ms, patched.ms, (a, b) => a + b),
    compileMs: both(stock.compileMs, patched.compileMs, (a, b) => a + b),
    provenThreadgroupMemory: both(stock.provenThreadgroupMemory, patched.provenThreadgroupMemory, Math.min),
    acceptedThreadgroupMemory: both(stock.acceptedThreadgroupMemory, patched.acceptedThreadgroupMemory, Math.min),
    failedThreadgroupMemory: either(stock.failedThreadgroupMemory, patched.failedThreadgroupMemory, Math.min),
    bufferLength: stock.bufferLength,
    maxAbsError: either(stock.maxAbsError, patched.maxAbsError, Math.max),
    judgement: JUDGEMENTS[status].judgement,
    stock,
    patched,
  };
}

/** The probes whose stock and patched runs ended with different statuses or measured different sizes. */
export function differencesOf(probes: DoctorProbe[]): ProbeDifference[] {
  // The threadgroup sizes are where Metal may follow the answered limit. An error bound (maxAbsError) is left out: it
  // may vary from run to run whatever the answers, as a time always does.
  const fields: MeasuredField[] = ['provenThreadgroupMemory', 'acceptedThreadgroupMemory', 'failedThreadgroupMemory'];
  const out: ProbeDifference[] = [];
  for (const p of probes) {
    if (p.stock === undefined || p.patched === undefined) continue;
    const { stock, patched } = p;
    const measured = fields
      .filter((field) => stock[field] !== patched[field])
      .map((field) => ({
        field,
        stock: stock[field],
        patched: patched[field],
      }));
    if (stock.status !== patched.status || measured.length > 0) {
      out.push({ id: p.id, stock: stock.status, patched: patched.status, measured });
    }
  }
  return out;
}

/** `id: status` of every probe judged faulty. */
export function faultsOf(probes: DoctorProbe[]): string[] {
  return probes.filter((p) => p.judgement === 'faulty').map((p) => `${p.id}: ${p.status}`);
}
