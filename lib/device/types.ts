import type { FamilyName } from '../core/families.js';

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

/** `MTLDeviceLocation` as a string (macOS 10.15+). */
export type DeviceLocation = 'builtIn' | 'slot' | 'external' | 'unspecified';

/** Facts about the machine the process runs on. `null` means the OS could not answer. */
export interface HostInfo {
  /** `ProductVersion`, e.g. `26.5.2`. */
  osVersion: string | null;
  /** `kern.osversion`, e.g. `25F71`. */
  osBuild: string | null;
  /** sysctl `hw.model`: `VirtualMac2,1` in an Apple-silicon Virtualization.framework guest. */
  model: string | null;
  /** sysctl `kern.hv_vmm_present` = 1. */
  isVirtualMachine: boolean | null;
  /** Machine architecture of the kernel (`arm64`, `x86_64`). */
  arch: string | null;
  /** sysctl `hw.memsize`: physical memory in bytes (MLX bounds its allocator by 0.95 × this). */
  memoryBytes: number | null;
  /** sysctl `sysctl.proc_translated` = 1: this process is an x86_64 build running under Rosetta on Apple silicon. */
  translated: boolean | null;
  /** sysctl `machdep.cpu.brand_string`: `Apple M1 Ultra`; in a Virtualization.framework guest the host's, with ` (Virtual)`. */
  cpuBrand: string | null;
  /** The chip parsed from `cpuBrand` as bare metal names it (`Apple M1`); null for Intel and brands not shaped like an Apple chip. */
  chip: string | null;
}

/** `MTLSize` of `maxThreadsPerThreadgroup`. */
export interface ThreadgroupSize {
  width: number;
  height: number;
  depth: number;
}

/** One derived SIMD-group capability, with the rule that decided it. */
export interface DerivedFlag {
  value: boolean | null;
  /** The rule applied, e.g. `apple7 || mac2 (Metal Feature Set Tables: SIMD-scoped reduction)`. */
  rule: string;
}

/** One family's answer, by name. `null` when `supportsFamily:` is unavailable on this OS. */
export type FamilyAnswers = Record<FamilyName, boolean | null>;

/** What one MTLDevice reports. `null` means the running OS cannot answer that property. */
export interface DeviceReport {
  /** Position in `MTLCopyAllDevices()` order (0 for the default device when only it was asked). */
  index: number;
  /** True for the device `MTLCreateSystemDefaultDevice()` returns. */
  isDefault: boolean;
  name: string;
  /** The concrete Objective-C class of the device object, e.g. `AppleParavirtDevice`. */
  className: string;
  registryId: number | null;
  families: FamilyAnswers;
  /** The highest Apple family answered YES, e.g. `{ value: 1005, name: 'apple5' }`; null when none. */
  highestAppleFamily: { value: number; name: FamilyName } | null;
  maxThreadgroupMemoryLength: number | null;
  maxThreadsPerThreadgroup: ThreadgroupSize | null;
  recommendedMaxWorkingSetSize: number | null;
  maxBufferLength: number | null;
  hasUnifiedMemory: boolean | null;
  location: DeviceLocation | null;
  /** `architecture.name` (macOS 14+), e.g. `applegpu_g13d`. */
  architecture: string | null;
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
