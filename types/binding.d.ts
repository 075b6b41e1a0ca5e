// The shape of the native module (src-native/addon.mm). lib/native.ts is the only importer.
import type { HostInfo } from '../lib/types.js';

export interface NativeDevice {
  index: number;
  isDefault: boolean;
  name: string;
  className: string;
  registryId: number | null;
  families: Record<string, boolean | null>;
  maxThreadgroupMemoryLength: number | null;
  maxThreadsPerThreadgroup: { width: number; height: number; depth: number } | null;
  recommendedMaxWorkingSetSize: number | null;
  maxBufferLength: number | null;
  hasUnifiedMemory: boolean | null;
  location: string | null;
  architecture: string | null;
}

/** What host() reads: no Metal device is created for it. */
export interface NativeHost {
  /** `darwin` for real Metal, `simulated` for the Linux test build. */
  platform: 'darwin' | 'simulated';
  snapshot: string | null;
  /** Simulated build: the platform recorded in the snapshot. */
  recordedPlatform: string | null;
  host: HostInfo;
}

export interface NativeProbe extends NativeHost {
  devices: NativeDevice[];
}

export interface NativeSelectorPatch {
  selector: string;
  outcome: 'installed' | 'already-installed';
  mode: 'replaced' | 'added';
}

export interface NativeApplyResult {
  ok: boolean;
  code?: string;
  message?: string;
  classes?: { className: string; selectors: NativeSelectorPatch[] }[];
}

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
  stock: number;
  given: number;
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
  info(): { platform: 'darwin' | 'simulated'; runtime: 'apple' | 'gcc'; maxHooks: number };
  /** Process-group ids for signal forwarding; -1 where there is none (no controlling terminal, child gone). */
  processGroups(childPid: number): { own: number; terminal: number; child: number };
}
