// TEMPORARY until branch i11 lands the binding: the doctor part of the native module, as /work/notes/doctor-contract.md states it.
export type DoctorProbeId =
  | 'simdgroup-reduction' | 'simdgroup-matrix' | 'bfloat' | 'threadgroup-memory' | 'nocopy-mmap' | 'residency-set';
export type DoctorStatus = 'pass' | 'wrong-result' | 'fail' | 'unsupported' | 'timeout' | 'skipped' | 'error';
export interface NativeDoctorOptions {
  device: number;
  probes: DoctorProbeId[];
  timeoutMs: number;
  threadgroupSizes: number[];
  mmapFile: string | null;
  mmapSize: number;
  tempDir: string;
}
export interface NativeProbeOutcome {
  id: DoctorProbeId;
  status: DoctorStatus;
  detail: string;
  ms: number;
  provenThreadgroupMemory: number | null;
  failedThreadgroupMemory: number | null;
  bufferLength: number | null;
  maxAbsError: number | null;
}
export interface NativeDoctorResult {
  device: { index: number; name: string; className: string; registryId: number | null };
  outcomes: NativeProbeOutcome[];
}
export interface NativeDoctorBinding {
  doctor(options: NativeDoctorOptions): NativeDoctorResult;
}
