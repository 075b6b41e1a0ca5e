import { notAppliedError } from './apply.js';
import { loadNative, packageVersion } from './native.js';
import { checkOptions } from './options.js';
import { stockReport } from './probe.js';
import { snapshotFromReport, snapshotId, type Snapshot } from './snapshots.js';

/** Options for recordSnapshot(). */
export interface RecordOptions {
  /** A title for the snapshot, e.g. `M1 Ultra guest, Tahoe 26.5.2`; its id is made from it. */
  label?: string;
}

/**
 * Records this machine as a snapshot in the bundled snapshots' format: every device's stock answers (a profile active
 * in this process does not show), the host facts, and the provenance `recorded by metal-cap-shim <version> on <date>`.
 * Throws what applyProfile(…, { strict: true }) throws for the same reason: UnsupportedPlatformError where there is no
 * Metal, NativeError ERR_NATIVE_UNAVAILABLE where the native module will not load, NativeError ERR_NO_DEVICE where
 * Metal has no device.
 */
export function recordSnapshot(options?: RecordOptions): Snapshot {
  const { label } = checkOptions<RecordOptions>('recordSnapshot', options, { label: 'string' });
  const native = loadNative();
  // The same error for the same reason as applyProfile(…, { strict: true }): a script branches on one set of codes.
  if (native.binding === null) throw notAppliedError(native.reason, `${native.detail}: there is no Metal device here to record`);
  const report = stockReport(native.binding);
  if (!report.supported) throw notAppliedError(report.reason, `${report.detail}: nothing to record`);
  const date = new Date().toISOString().slice(0, 10);
  const { model, osVersion } = report.host;
  const title = label?.trim() || `${model ?? 'unknown model'}, macOS ${osVersion ?? 'unknown'}, recorded ${date}`;
  return snapshotFromReport(report, {
    id: snapshotId(label?.trim() || `${model ?? 'mac'}-macos-${osVersion ?? 'unknown'}`),
    title,
    recorded: date,
    describe: `recorded by metal-cap-shim ${packageVersion()} on ${date}`,
    where: 'this machine',
  });
}
