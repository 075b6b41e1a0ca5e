import { UnsupportedPlatformError } from './errors.js';
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
 * Throws UnsupportedPlatformError where there is no Metal to ask, or no device.
 */
export function recordSnapshot(options?: RecordOptions): Snapshot {
  const { label } = checkOptions<RecordOptions>('recordSnapshot', options, { label: 'string' });
  const native = loadNative();
  if (native.binding === null) throw new UnsupportedPlatformError(`${native.detail}: there is no Metal device here to record`);
  const report = stockReport(native.binding);
  if (!report.supported) throw new UnsupportedPlatformError(`${report.detail}: nothing to record`);
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
