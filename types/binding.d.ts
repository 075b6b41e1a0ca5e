// The shape of the native module (src-native/addon/addon.mm). lib/device/native.ts is the only importer.
import type { DoctorProbeId, DoctorStatus } from '../lib/device/doctor-vocabulary.js';
import type { DeviceFacts } from '../lib/device/fields.js';
import type { HostInfo } from '../lib/device/types.js';

export type { DoctorProbeId, DoctorStatus };

/**
 * One device as the addon reads it: where it is in the list, and the facts lib/fields.ts lists. Families and location
 * come as the addon names them; the fields' `fromRaw` makes them a report's.
 */
export interface NativeDevice extends Omit<DeviceFacts, 'families' | 'location'> {
  index: number;
  isDefault: boolean;
  families: Record<string, boolean | null>;
  location: string | null;
}

/** The host facts the addon reads; `chip` is parsed from `cpuBrand` in TypeScript (lib/device/chips.ts). */
export type NativeHostFacts = Omit<HostInfo, 'chip'>;

/** What host() reads: no Metal device is created for it. */
export interface NativeHost {
  /** `darwin` for real Metal, `simulated` for the Linux test build. */
  platform: 'darwin' | 'simulated';
  snapshot: string | null;
  /** Simulated build: the platform recorded in the snapshot. */
  recordedPlatform: string | null;
  host: NativeHostFacts;
}

export interface NativeProbe extends NativeHost {
  devices: NativeDevice[];
}

export interface NativeSelectorPatch {
  selector: string;
  outcome: 'installed' | 'already-installed';
  mode: 'replaced' | 'added';
}

/** apply(): every class hooked and the profile swapped in; or, with the engine's code, nothing changed at all. */
export type NativeApplyResult =
  | { ok: true; classes: { className: string; selectors: NativeSelectorPatch[] }[] }
  /** ERR_NO_DEVICE: Metal listed no device to patch; ERR_HOOK_FAILED: a class could not be hooked (none is left hooked). */
  | { ok: false; code: 'ERR_NO_DEVICE' | 'ERR_HOOK_FAILED'; message: string };

export interface NativeHookRef {
  className: string;
  selector: string;
}

export interface NativeRestoreResult {
  restored: NativeHookRef[];
  conflicts: NativeHookRef[];
}

export interface NativeStatus {
  active: boolean;
  profileJson: string | null;
  trace: boolean;
  hooks: (NativeHookRef & { mode: 'replaced' | 'added'; ours: boolean })[];
}

export interface NativeTraceRow {
  selector: string;
  family: number | null;
  calls: number;
  /** `name`: the last names answered stock and given; the other selectors: numbers. */
  stock: number | string;
  given: number | string;
}

/** Options of `doctor()`; lib/ validates them. */
export interface NativeDoctorOptions {
  /** Index in MTLCopyAllDevices() order; when that list is empty, 0 is the default device. */
  device: number;
  /** Which probes to run, in this order. */
  probes: DoctorProbeId[];
  /** Deadline of each probe's GPU work (dispatch, completion), and separately of its compiling. */
  timeoutMs: number;
  /** threadgroup-memory: ascending candidate sizes in bytes. */
  threadgroupSizes: number[];
  /** threadgroup-memory: how many threadgroups run each size at once (1–65535). */
  threadgroupGroups: number;
  /** threadgroup-memory: the device's stock maxThreadgroupMemoryLength, read before any profile was applied. */
  stockThreadgroupMemory: number;
  /** threadgroup-memory: whether sizes above the stock limit may be dispatched (only in a VM). */
  aboveStockThreadgroupMemory: boolean;
  /** threadgroup-memory: the largest size that can be proven (lib/device/chips.ts provableThreadgroupMemory); a larger
   * one that works is only accepted. Default 32768. */
  provableThreadgroupMemory?: number;
  /** nocopy-mmap: the user's file, opened read-only and never modified; null: a generated file. */
  mmapFile: string | null;
  /** nocopy-mmap: bytes of the generated file. */
  mmapSize: number;
  /** Where the generated file is created (and deleted after). */
  tempDir: string;
}

/** What one probe found on one device: raw facts, judged by TypeScript. */
export interface NativeProbeOutcome {
  id: DoctorProbeId;
  status: DoctorStatus;
  /** One line, no trailing newline. */
  detail: string;
  /** Wall time of this probe. */
  ms: number;
  /** The part of `ms` Metal's compiler took (libraries and pipelines). */
  compileMs: number;
  /**
   * True when the status (fail, unsupported) comes from compiling the kernel or creating its pipeline, or from
   * creating the residency set: the feature's object could not be made at all.
   */
  buildFailed: boolean;
  /**
   * The MTLCommandBufferError code of a command buffer that failed in MTLCommandBufferErrorDomain (read by domain and
   * code); null: no such failure.
   */
  commandBufferError: number | null;
  /** True when the GPU did not finish a dispatch before the deadline (not the compiler). */
  gpuTimedOut: boolean;
  /** threadgroup-memory: the largest size up to 32768 bytes that compiled, ran and computed right under concurrency. */
  provenThreadgroupMemory: number | null;
  /** threadgroup-memory: the largest size above 32768 bytes that ran and computed right (unverifiable). */
  acceptedThreadgroupMemory: number | null;
  /** threadgroup-memory: the smallest size that failed (rejected, or computed wrong). */
  failedThreadgroupMemory: number | null;
  /** nocopy-mmap: the length the NoCopy buffer reports. */
  bufferLength: number | null;
  /** simdgroup-matrix, bfloat: the worst deviation from the CPU reference. */
  maxAbsError: number | null;
}

export interface NativeDoctorResult {
  device: { index: number; name: string; className: string; registryId: number | null };
  outcomes: NativeProbeOutcome[];
}

export interface NativeBinding {
  probe(allDevices?: boolean, stock?: boolean): NativeProbe;
  host(): NativeHost;
  families(): [string, number][];
  apply(nativeProfile: string, profileJson: string): NativeApplyResult;
  restore(): NativeRestoreResult;
  status(): NativeStatus;
  trace(reset?: boolean): { rows: NativeTraceRow[]; dropped: number };
  baseline(json?: string): string | null;
  loadedConsumers(): string[];
  /** Every loaded ggml-metal: its image, ggml_version() of its ggml (null without one), and which `markers` it exports. */
  ggmlMetalImages(markers: string[]): { image: string; ggmlVersion: string | null; markers: string[] }[];
  info(): { platform: 'darwin' | 'simulated'; runtime: 'apple' | 'gcc'; maxHooks: number };
  /** Process-group ids for signal forwarding; -1 where there is none (no controlling terminal, child gone). */
  processGroups(childPid: number): { own: number; terminal: number; child: number };
  /**
   * Runs the probes on one device, synchronously; each probe is bounded by `timeoutMs`. Installs nothing, leaves no
   * file or descriptor behind. Throws `ERR_NO_DEVICE` when Metal has no such device, `ERR_INVALID_ARGUMENT` (a
   * TypeError) for malformed options.
   */
  doctor(options: NativeDoctorOptions): NativeDoctorResult;
}
