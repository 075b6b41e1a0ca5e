/**
 * metal-cap-shim: probe Apple Metal device capabilities and patch them inside one process.
 *
 * Nothing here touches Metal or loads native code at import time; the addon loads on the first call that needs it.
 * The root holds the verbs, the profiles, the errors and the types; the tables and helpers behind them are in
 * `metal-cap-shim/tables` (lib/tables.ts). Adding an export: see CONTRIBUTING.md, "Adding an export".
 */
import { predictGates as predictFromPlainInput, type Engine, type PredictOptions } from './engines/index.js';
import { readInput } from './core/input.js';
import { optionFailure } from './core/options.js';
import type { DeviceReport } from './device/types.js';

export { probe, type ProbeOptions } from './device/probe.js';
export {
  restore,
  status,
  type Applied,
  type ApplyFailureReason,
  type ApplyOptions,
  type ApplyResult,
  type ApplyWarning,
  type HookRef,
  type Mismatch,
  type NotApplied,
  type NotRestored,
  type PatchedClass,
  type Restored,
  type RestoreResult,
  type RestoreSkipReason,
  type Status,
  type TraceEntry,
  type Verification,
} from './patch/apply.js';
export {
  DEFAULT_PROFILE,
  profiles,
  resolveProfile,
  type AnswerChange,
  type HostBinding,
  type BuiltinProfile,
  type Profile,
  type BuiltinProfileName,
  type JsonProfileText,
  type ProfileInput,
  type ProfileMode,
  type ProfileSpec,
} from './patch/profiles.js';
export {
  audit,
  type AuditOptions,
  type AuditResult,
  type DeviceAudit,
  type LiveAudit,
  type OfflineAudit,
  type RefusedLiveAudit,
  type EngineComparison,
  type GateFlip,
  type LlamaCppRulesUsed,
} from './audit/audit.js';
export {
  buildMatrix,
  fieldReport,
  matrixMarkdown,
  type FieldReport,
  type FieldReportOptions,
  type Matrix,
  type MatrixCell,
  type MatrixInput,
  type MatrixRow,
} from './audit/field-report.js';
export { applyProfile, type AutoApplyOptions, type AutoApplyResult, type AutoSource } from './select/auto.js';
export {
  doctor,
  type DoctorDevice,
  type DoctorOptions,
  type DoctorProbe,
  type DoctorProbeId,
  type DoctorProgress,
  type DoctorReport,
  type DoctorRun,
  type SupportedDoctorReport,
  type UnsupportedDoctorReport,
  type DoctorStatus,
  type Judgement,
  type Recommendation,
} from './doctor/index.js';
export type { Snapshot, SnapshotLimits } from './device/snapshots.js';
export { recordSnapshot, type RecordOptions } from './audit/record-snapshot.js';
export type { FamilyName } from './core/families.js';
export type { ChipArchitectureRow, ChipFamilyRow, ChipGpuGenerationRow } from './device/chips.js';
export type {
  Engine,
  GatePrediction,
  LlamaCppPrediction,
  LlamaCppRuleSet,
  LlamaCppRuleSetInfo,
  MlxFlag,
  MlxIgnoredSwitch,
  MlxPrediction,
  MlxRuleSet,
  MlxRuleSetInfo,
  OllamaLlamaCpp,
  OllamaMetalPatch,
  OllamaMetalPatchName,
  OllamaOpGate,
  OllamaPin,
  OllamaReleaseRow,
  PredictOptions,
  TuningTier,
} from './engines/index.js';
export type { LoadedLlamaCpp } from './engines/loaded-llama.js';
export {
  FileError,
  InvalidOptionsError,
  InvalidProfileError,
  InvalidReportError,
  InvalidSnapshotError,
  MetalCapShimError,
  NativeError,
  ProfileActiveError,
  RefusedError,
  SnapshotNotFoundError,
  SpawnError,
  TraceFileError,
  UnsupportedPlatformError,
  UsageError,
  type ErrorCode,
  type NativeErrorCode,
  type PackageError,
  type RefusedErrorCode,
  type SpawnErrorCode,
} from './core/errors.js';
export type * from './device/types.js';

/**
 * Predicts the flags an engine computes at init from a device's answers (see lib/engines/). Its arguments are read
 * once through the package's input guard first, so a getter or Proxy that throws is an InvalidOptionsError naming
 * the field, as for every entry point.
 */
export const predictGates: typeof predictFromPlainInput = ((device: unknown, engine: unknown, options?: unknown) => {
  const fail = optionFailure('predictGates');
  return predictFromPlainInput(
    readInput(device, fail, {}, 'device') as DeviceReport,
    readInput(engine, fail, {}, 'engine') as Engine,
    readInput(options, fail, {}, 'options') as PredictOptions,
  );
}) as typeof predictFromPlainInput;
