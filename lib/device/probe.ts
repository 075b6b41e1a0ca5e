import type { NativeBinding } from '../../types/binding.js';
import { loadNative, SIM_SNAPSHOT_ENV, SIMULATION_FILE_SCHEMA } from './native.js';

export { SIM_SNAPSHOT_ENV };
import { checkOptions } from '../core/options.js';
import { reportFromNative, unsupportedReport } from './report.js';
import { isObject } from '../core/input.js';
import { readJsonFile } from '../core/jsonfile.js';
import { loadSnapshot, reportFromSnapshot, resolveSnapshotPath, SNAPSHOT_LIMITS } from './snapshots.js';
import type { CapabilityReport, SupportedReport } from './types.js';

/** Options for probe(). */
export interface ProbeOptions {
  /** Report every device in MTLCopyAllDevices() order, not only the default one. */
  allDevices?: boolean | undefined;
}

/**
 * In the simulated build, the snapshot named by METAL_CAP_SHIM_SIM_SNAPSHOT is validated here, before native code
 * reads it, so a bad name or file is a typed error rather than a device-less report. A simulation file is the
 * simulated Metal's own format, validated by the tests that write it (test/sim-metal/simulation.ts).
 */
export function checkSimulatedSnapshot(binding: NativeBinding): void {
  const selector = process.env[SIM_SNAPSHOT_ENV];
  // The simulated library reads the variable at its first call (tests load others through it, test/sim-metal/), so a
  // selector is checked when it differs from the last one checked.
  if (!selector || selector === checkedSelector || binding.info().platform !== 'simulated') return;
  const read = readJsonFile(resolveSnapshotPath(selector), SNAPSHOT_LIMITS);
  if (!(read.ok && isObject(read.value) && read.value.schema === SIMULATION_FILE_SCHEMA)) loadSnapshot(selector);
  checkedSelector = selector;
}

let checkedSelector: string | undefined;

/** Every device's stock answers (hooks bypassed), as a report. */
export function stockReport(binding: NativeBinding): CapabilityReport {
  checkSimulatedSnapshot(binding);
  return reportFromNative(binding.probe(true, true));
}

/** Asks Metal what this process's devices report. Never throws for a missing Mac: see `supported` and `reason`. */
export function probe(options?: ProbeOptions): CapabilityReport {
  const { allDevices = false } = checkOptions<ProbeOptions>('probe', options, { allDevices: 'boolean' });
  const native = loadNative();
  if (native.binding === null) return unsupportedReport(native.reason, native.detail);
  checkSimulatedSnapshot(native.binding);
  return reportFromNative(native.binding.probe(allDevices, false));
}

/** The report a recorded snapshot (bundled name or path) gives, on any OS, without native code. */
export function probeSnapshot(snapshot: string, options?: ProbeOptions): SupportedReport {
  const { allDevices = false } = checkOptions<ProbeOptions>('probeSnapshot', options, { allDevices: 'boolean' });
  return reportFromSnapshot(loadSnapshot(snapshot), { allDevices });
}
