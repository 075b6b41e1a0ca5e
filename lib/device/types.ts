import type { FamilyName } from '../core/families.js';
import type { DeviceFacts, HostFacts } from './fields.js';

/** Where a report's answers came from. */
export type ReportSource =
  /** Real Metal.framework on macOS. */
  | 'live'
  /** The addon built against test/sim-metal (Linux test build); answers come from a recorded snapshot. */
  | 'simulated'
  /** A recorded snapshot read offline (`--snapshot`); no native code ran. */
  | 'snapshot'
  /** Nothing could be asked (`supported: false`). */
  | 'none';

/** Why a report or an apply result could not use Metal. */
export type UnsupportedReason =
  /** Not macOS (and no simulated Metal selected with METAL_CAP_SHIM_SIM_SNAPSHOT). */
  | 'unsupported-platform'
  /** macOS, but the native addon could not be loaded (see `detail`). */
  | 'native-module-unavailable'
  /** Metal answered, but there is no device (a headless session, or a VM without a paravirtual GPU). */
  | 'no-device';

export type { DeviceLocation, FamilyAnswers, ThreadgroupSize } from './fields.js';

/** Facts about the machine the process runs on (lib/fields.ts lists them). `null` means the OS could not answer. */
export type HostInfo = HostFacts;

/** One derived SIMD-group capability, with the rule that decided it. */
export interface DerivedFlag {
  value: boolean | null;
  /** The rule applied, e.g. `apple7 || mac2 (Metal Feature Set Tables: SIMD-scoped reduction)`. */
  rule: string;
}

/**
 * What one MTLDevice reports: its facts (lib/fields.ts lists them; `null` means the running OS cannot answer that
 * property), where it is in the device list, and what is derived from its families.
 */
export interface DeviceReport extends DeviceFacts {
  /**
   * Position in `MTLCopyAllDevices()` order, also when only the default device was asked: the number `doctor --device`,
   * audit and every report give the same device.
   */
  index: number;
  /** True for the device `MTLCreateSystemDefaultDevice()` returns. */
  isDefault: boolean;
  /** The highest Apple family answered YES, e.g. `{ value: 1005, name: 'apple5' }`; null when none. */
  highestAppleFamily: { value: number; name: FamilyName } | null;
  /** SIMD-group capabilities as Apple's Metal Feature Set Tables assign them to families. */
  simd: {
    reduction: DerivedFlag;
    matrix: DerivedFlag;
    bfloat16: DerivedFlag;
  };
}

/** Fields every capability report has, whatever its outcome. */
interface ReportBase {
  /** Report format tag; bumps when a field changes meaning. */
  schema: 'metal-cap-shim/report@1';
  /** `process.platform` of the process that made the report (for snapshots: the recorded host's platform). */
  platform: string;
  source: ReportSource;
  /** Snapshot id when `source` is `simulated` or `snapshot`. */
  snapshot: string | null;
}

/** A report where Metal answered: `host` is known and there is at least one device. */
export interface SupportedReport extends ReportBase {
  supported: true;
  reason: null;
  detail: null;
  host: HostInfo;
  devices: DeviceReport[];
}

/** A report where nothing could be asked; `reason` says why and `detail` says what to do. */
export interface UnsupportedReport extends ReportBase {
  supported: false;
  reason: UnsupportedReason;
  detail: string;
  /** Known when the native module loaded but Metal had no device; null when nothing could be asked at all. */
  host: HostInfo | null;
  devices: [];
}

/** The result of `probe()`: what Metal says about this process's devices. Narrow it on `supported`. */
export type CapabilityReport = SupportedReport | UnsupportedReport;
