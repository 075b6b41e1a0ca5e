/**
 * The probe runner: the child process in which doctor's native probes run, never the caller's. It reads the checked
 * options on standard input, does the Metal work one probe at a time and writes one JSON line per step on standard
 * output (RunnerMessage); the parent (run.ts) enforces the deadline from outside, judges and caches. A GPU hang, a
 * revoked device, an abort() in Metal's debug layer or a kill at the deadline ends this process, not the caller.
 */
import { tmpdir } from 'node:os';
import { applyPatch, restore } from '../patch/apply.js';
import { provableThreadgroupMemory } from '../device/chips.js';
import { loadNative } from '../device/native.js';
import { stockReport } from '../device/probe.js';
import type { CapabilityReport, DeviceReport, HostInfo, UnsupportedReason } from '../device/types.js';
import type { NativeDoctorOptions, NativeProbeOutcome } from '../../types/binding.js';
import type { HookRef } from '../patch/apply.js';
import { leftGpuUnusable } from './judge.js';
import { candidateFor, type CheckedDoctorOptions } from './options.js';
import {
  CAPABILITY_PROBE_IDS,
  PAST_STOCK_LIMIT_PROBES,
  runOrder,
  leftOutSizesNote,
  THREADGROUP_PROBE_GROUPS,
  threadgroupSizesFor,
  type DoctorProbeId,
} from './probes.js';

/** Which run a probe belongs to: stock answers, or the candidate profile installed. */
export type RunKind = 'stock' | 'patched';

/** One line the runner writes, in the order it writes them. */
export type RunnerMessage =
  /** Nothing can run: no native module, or Metal has no device (`report` then says what Metal answered). */
  | { type: 'unsupported'; reason: UnsupportedReason; detail: string; report: CapabilityReport | null }
  /** The stock answers, read before any probe; the parent knows every device from here on. */
  | { type: 'stock'; report: CapabilityReport }
  /** The `device` option names no device; `count` devices exist. */
  | { type: 'no-such-device'; count: number }
  /** A probe starts: the parent's deadline for it runs from here. */
  | { type: 'start'; device: number; devices: number; probe: DoctorProbeId; run: RunKind }
  /** A probe's raw outcome (or the runner's own `skipped`, for a device left unusable). */
  | { type: 'outcome'; device: number; run: RunKind; outcome: NativeProbeOutcome }
  /** The patched run: the devices' answers under the candidate, or why there is none. Written once. */
  | { type: 'patched'; devices: DeviceReport[] | null; why: string | null }
  /** The hooks taken out after a patched phase. */
  | { type: 'restored'; restoredHooks: HookRef[]; conflicts: HookRef[] }
  | { type: 'done' };

/** Why the capability probes do not also run under the candidate profile here, or null when they do. */
export function whyNoPatchedRun(o: CheckedDoctorOptions, stock: CapabilityReport & { supported: true }): string | null {
  if (!o.probes.some((id) => CAPABILITY_PROBE_IDS.includes(id))) return 'no capability probe was asked';
  const { name, plan } = candidateFor(o, stock);
  if (plan.reason === 'host-unknown' || plan.reason === 'mlx-architecture-refused') return plan.detail;
  if (plan.changes.length === 0) return `${name} changes no answer on this machine`;
  if (plan.reason === 'refused-bare-metal') {
    return `${name} raises answers and this host is not known to be a virtual machine: pass force (--force) to measure under it too`;
  }
  return null;
}

/**
 * The native runner's options for one probe on one device. Threadgroup sizes above what the device can prove are
 * asked for only with allowAboveHardware (threadgroupSizesFor); of those, the native probe dispatches sizes above the
 * device's stock limit only in a VM: on real hardware that is undefined behaviour, whatever `force` says. The stock
 * limit comes from the stock report, read before any profile was applied (the patched run's answer is the candidate's).
 */
function nativeOptions(
  o: CheckedDoctorOptions,
  device: DeviceReport,
  probe: DoctorProbeId,
  host: HostInfo,
): NativeDoctorOptions {
  const provable = provableThreadgroupMemory(device);
  return {
    device: device.index,
    probes: [probe],
    timeoutMs: o.timeoutMs,
    threadgroupSizes: threadgroupSizesFor(provable, o.allowAboveHardware).dispatched,
    threadgroupGroups: THREADGROUP_PROBE_GROUPS,
    stockThreadgroupMemory: device.maxThreadgroupMemoryLength ?? 0,
    aboveStockThreadgroupMemory: host.isVirtualMachine === true,
    provableThreadgroupMemory: provable,
    mmapFile: o.mmapFile,
    mmapSize: o.mmapSize,
    tempDir: tmpdir(),
  };
}

/** A threadgroup-memory outcome with the sizes threadgroupSizesFor left out named in its detail, so it reads as a choice. */
function withLeftOutSizes(
  o: CheckedDoctorOptions,
  device: DeviceReport,
  outcome: NativeProbeOutcome,
): NativeProbeOutcome {
  if (outcome.id !== 'threadgroup-memory') return outcome;
  const provable = provableThreadgroupMemory(device);
  const note = leftOutSizesNote(threadgroupSizesFor(provable, o.allowAboveHardware).leftOut, provable);
  return note === null ? outcome : { ...outcome, detail: `${outcome.detail}; ${note}` };
}

/** An outcome the runner gives without running the probe. */
export function runnerOutcome(
  id: DoctorProbeId,
  status: 'skipped' | 'error' | 'aborted' | 'interrupted',
  detail: string,
): NativeProbeOutcome {
  return {
    id,
    status,
    detail,
    ms: 0,
    compileMs: 0,
    buildFailed: false,
    commandBufferError: null,
    gpuTimedOut: false,
    provenThreadgroupMemory: null,
    acceptedThreadgroupMemory: null,
    failedThreadgroupMemory: null,
    bufferLength: null,
    maxAbsError: null,
  };
}

/**
 * The order of the work: the stock run, then the patched run, of every probe that stays within the stock limits; then
 * the same for the probes that go past them (PAST_STOCK_LIMIT_PROBES), so a GPU they upset costs no other result.
 */
export function runPhases(probes: readonly DoctorProbeId[]): { run: RunKind; probes: DoctorProbeId[] }[] {
  const order = runOrder(probes);
  const within = order.filter((id) => !PAST_STOCK_LIMIT_PROBES.includes(id));
  const past = order.filter((id) => PAST_STOCK_LIMIT_PROBES.includes(id));
  const capability = (ids: DoctorProbeId[]) => ids.filter((id) => CAPABILITY_PROBE_IDS.includes(id));
  return [
    { run: 'stock' as const, probes: within },
    { run: 'patched' as const, probes: capability(within) },
    { run: 'stock' as const, probes: past },
    { run: 'patched' as const, probes: capability(past) },
  ].filter((phase) => phase.probes.length > 0);
}

/** Runs doctor's probes in this process, telling `emit` each step. Only the probe runner calls it. */
export function runProbes(o: CheckedDoctorOptions, emit: (message: RunnerMessage) => void): void {
  const native = loadNative();
  if (native.binding === null) {
    emit({ type: 'unsupported', reason: native.reason, detail: native.detail, report: null });
    return;
  }
  const binding = native.binding;
  const stock = stockReport(binding);
  if (!stock.supported) {
    emit({ type: 'unsupported', reason: 'no-device', detail: stock.detail, report: stock });
    return;
  }
  emit({ type: 'stock', report: stock });
  if (o.device !== null && !stock.devices.some((d) => d.index === o.device)) {
    emit({ type: 'no-such-device', count: stock.devices.length });
    return;
  }
  const devices = stock.devices.filter((d) => o.device === null || d.index === o.device);
  let patchedWhy = whyNoPatchedRun(o, stock);
  let patchedTold = false;
  // The first probe that left each device unusable, and how.
  const unusable = new Map<number, string>();
  for (const phase of runPhases(o.probes)) {
    if (phase.run === 'patched') {
      if (patchedWhy !== null) continue;
      const applied = applyPatch(o.candidate, { force: o.force });
      if (!applied.applied) {
        patchedWhy = `${candidateFor(o, stock).name} was not applied (${applied.reason}: ${applied.detail})`;
        continue;
      }
      if (!patchedTold) emit({ type: 'patched', devices: applied.after.devices, why: null });
      patchedTold = true;
    }
    try {
      for (const device of devices) {
        for (const probe of phase.probes) {
          emit({ type: 'start', device: device.index, devices: devices.length, probe, run: phase.run });
          const left = unusable.get(device.index);
          const outcome =
            left !== undefined
              ? runnerOutcome(probe, 'skipped', left)
              : withLeftOutSizes(
                  o,
                  device,
                  binding.doctor(nativeOptions(o, device, probe, stock.host)).outcomes[0] ??
                    runnerOutcome(probe, 'error', 'the native runner returned no outcome for it'),
                );
          emit({ type: 'outcome', device: device.index, run: phase.run, outcome });
          if (left !== undefined) continue;
          const status = leftGpuUnusable(outcome);
          if (status !== null) {
            unusable.set(
              device.index,
              `not run: the GPU was left unusable by ${probe} (${status} in the ${phase.run} run)`,
            );
          }
        }
      }
    } finally {
      if (phase.run === 'patched' && binding.status().active) {
        const r = restore();
        emit({ type: 'restored', restoredHooks: r.restoredHooks, conflicts: r.conflicts });
      }
    }
  }
  if (!patchedTold) emit({ type: 'patched', devices: null, why: patchedWhy ?? 'no capability probe ran' });
  emit({ type: 'done' });
}
