import { notAppliedError } from '../patch/apply.js';
import { loadNative, packageVersion } from '../device/native.js';
import { checkOptions } from '../core/options.js';
import { stockReport } from '../device/probe.js';
import { doctor, type DoctorProgress } from '../doctor/index.js';
import { checkDoctorOptions } from '../doctor/options.js';
import { InvalidOptionsError } from '../core/errors.js';
import { recordingOf, snapshotFromReport, snapshotId, validateSnapshot, type Snapshot } from '../device/snapshots.js';

/** Options for recordSnapshot(). */
export interface RecordOptions {
  /** A title for the snapshot, e.g. `M1 Ultra guest, Tahoe 26.5.2`; its id is made from it. */
  label?: string | undefined;
  /** Also run doctor on every device and record its results, so `doctor --snapshot` replays them. Default false. */
  doctor?: boolean | undefined;
  /** With `doctor`: its nocopy-mmap probe maps this file (your model, read only) instead of a generated one. */
  mmapFile?: string | undefined;
  /** With `doctor`: bytes of the file its nocopy-mmap probe generates (default 1 GiB). */
  mmapSize?: number | undefined;
  /** With `doctor`: the deadline of each probe in milliseconds (default 5000). */
  timeoutMs?: number | undefined;
  /**
   * With `doctor`: also dispatch threadgroup sizes above what the GPU can prove (doctor's `allowAboveHardware`), so the
   * snapshot records what a claim above the hardware does there. Default false.
   */
  allowAboveHardware?: boolean | undefined;
  /** With `doctor`: called as each of its probes starts. */
  onProgress?: ((event: DoctorProgress) => void) | undefined;
}

/**
 * Records this machine as a snapshot in the bundled snapshots' format: every device's stock answers (a profile active
 * in this process does not show), the host facts, and the provenance `recorded by metal-cap-shim <version> on <date>`.
 * Throws what applyProfile(…, { strict: true }) throws for the same reason: UnsupportedPlatformError where there is no
 * Metal, NativeError ERR_NATIVE_UNAVAILABLE where the native module will not load, NativeError ERR_NO_DEVICE where
 * Metal has no device.
 */
export async function recordSnapshot(options?: RecordOptions): Promise<Snapshot> {
  const {
    label,
    doctor: withDoctor,
    ...doctorOptions
  } = checkOptions<RecordOptions>('recordSnapshot', options, {
    label: 'string',
    doctor: 'boolean',
    mmapFile: 'string',
    mmapSize: 'number',
    timeoutMs: 'number',
    allowAboveHardware: 'boolean',
    onProgress: 'function',
  });
  for (const key of Object.keys(doctorOptions)) {
    if (withDoctor !== true)
      throw new InvalidOptionsError(key, `recordSnapshot() option '${key}' is doctor's: it needs doctor: true`);
  }
  // Checked before anything runs, as doctor() itself would.
  if (withDoctor === true) checkDoctorOptions(doctorOptions);
  const native = loadNative();
  // The same error for the same reason as applyProfile(…, { strict: true }): a script branches on one set of codes.
  if (native.binding === null)
    throw notAppliedError(native.reason, `${native.detail}: there is no Metal device here to record`);
  const report = stockReport(native.binding);
  if (!report.supported) throw notAppliedError(report.reason, `${report.detail}: nothing to record`);
  const date = new Date().toISOString().slice(0, 10);
  const { model, osVersion } = report.host;
  const title = label?.trim() || `${model ?? 'unknown model'}, macOS ${osVersion ?? 'unknown'}, recorded ${date}`;
  const snapshot = snapshotFromReport(report, {
    id: snapshotId(label?.trim() || `${model ?? 'mac'}-macos-${osVersion ?? 'unknown'}`),
    title,
    recorded: date,
    describe: `recorded by metal-cap-shim ${packageVersion()} on ${date}`,
    where: 'this machine',
  });
  if (withDoctor !== true) return snapshot;
  // Every probe, stock and under the default candidate, as `doctor` runs them; each device's combined verdicts are
  // what the snapshot records (the worse of the two runs, as doctor reports it).
  const checkup = await doctor(doctorOptions);
  const devices = snapshot.devices.map((device, i) => {
    const measured = checkup.devices.find((d) => d.index === report.devices[i]!.index);
    return measured ? { ...device, doctor: recordingOf(measured.probes) } : device;
  });
  return validateSnapshot({ ...snapshot, devices }, 'this machine');
}
