/**
 * metal-cap-shim: probe Apple Metal device capabilities and patch them inside one process.
 *
 * Nothing here touches Metal or loads native code at import time; the addon loads on the first call that needs it.
 */
export { probe, probeSnapshot, SIM_SNAPSHOT_ENV, type ProbeOptions } from './probe.js';
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
} from './apply.js';
export {
  bindToHost,
  DEFAULT_PROFILE,
  diffAnswers,
  encodeNativeProfile,
  HOST_VALUE,
  patchedName,
  predictPatchedDevice,
  profiles,
  resolveProfile,
  type AnswerChange,
  type HostBinding,
  type BuiltinProfile,
  type Profile,
  type ProfileInput,
  type ProfileMode,
  type ProfileSpec,
} from './profiles.js';
export {
  audit,
  gateValues,
  type AuditOptions,
  type AuditResult,
  type DeviceAudit,
  type LiveAudit,
  type OfflineAudit,
  type RefusedLiveAudit,
  type EngineComparison,
  type GateFlip,
} from './audit.js';
export {
  buildMatrix,
  fieldReport,
  matrixMarkdown,
  packageVersion,
  type FieldReport,
  type FieldReportOptions,
  type Matrix,
  type MatrixCell,
  type MatrixInput,
  type MatrixRow,
} from './fieldreport.js';
export {
  AUTO_PROFILE,
  applyProfile,
  CAPABILITY_PROBE_IDS,
  doctor,
  doctorCacheDir,
  DOCTOR_PROBE_IDS,
  DOCTOR_SCHEMA,
  DOCTOR_STATUSES,
  JUDGEMENTS,
  resolveAutoProfile,
  type AutoApplyOptions,
  type AutoApplyResult,
  type AutoSource,
  type DoctorDevice,
  type DoctorOptions,
  type DoctorProbe,
  type DoctorProbeId,
  type DoctorReport,
  type DoctorRun,
  type SupportedDoctorReport,
  type UnsupportedDoctorReport,
  type DoctorStatus,
  type Judgement,
  type Recommendation,
} from './doctor.js';
export { listSnapshots, loadSnapshot, reportFromSnapshot, validateSnapshot, type Snapshot } from './snapshots.js';
export { recordSnapshot, type RecordOptions } from './record.js';
export { FAMILY_NAMES, FAMILY_VALUES, type FamilyName } from './families.js';
export { CHIP_FAMILIES, chipFamily, chipFromBrand, type ChipFamilyRow } from './chips.js';
export { SIMD_RULES } from './report.js';
export {
  ENGINES,
  predictGates,
  RULE_TABLES,
  type Engine,
  type GatePrediction,
  type LlamaCppPrediction,
  type MlxPrediction,
  type PredictOptions,
} from './gates.js';
export {
  InvalidOptionsError,
  InvalidProfileError,
  InvalidReportError,
  InvalidSnapshotError,
  MetalCapShimError,
  NativeError,
  RefusedError,
  SnapshotNotFoundError,
  UnsupportedPlatformError,
  UsageError,
  type ErrorCode,
  type NativeErrorCode,
  type RefusedErrorCode,
} from './errors.js';
export type * from './types.js';
