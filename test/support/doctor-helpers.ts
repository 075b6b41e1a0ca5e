// Shared by the native doctor suites: options with test defaults, and outcomes written the way doctor() returns them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { DOCTOR_PROBE_IDS } from '../../lib/device/doctor-vocabulary.js';
import { loadNative } from '../../lib/device/native.js';
import { stockReport } from '../../lib/device/probe.js';
import type { SupportedReport } from '../../lib/device/types.js';
import type { NativeBinding, NativeDoctorOptions, NativeProbeOutcome } from '../../types/binding.js';

export const SIZES = [16384, 32768, 49152, 65536];
export const MMAP_SIZE = 1 << 20;
export const GENERATED = `a generated ${MMAP_SIZE} bytes file`;
export const SAMPLED = `64 sampled blocks (4096 bytes each) of ${GENERATED}`;

/** The real addon, through lib/device/native.ts. */
export function nativeBinding(): NativeBinding {
  const native = loadNative();
  if (!native.binding) throw new Error(native.detail);
  return native.binding;
}

/** This process's devices with their stock answers; throws where there is none. */
export function stockDevices(): SupportedReport {
  const report = stockReport(nativeBinding());
  if (!report.supported) throw new Error(report.detail);
  return report;
}

const dirs: string[] = [];

/** A fresh temporary directory, removed by removeTempDirs(). */
export function freshDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-'));
  dirs.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * Every probe, 5 s each, four threadgroup sizes run by 1024 threadgroups at once, sizes above a stock limit of 32768
 * allowed (as in a VM), a 1 MiB generated file in a fresh directory.
 */
export function doctorOptions(device: number, extra: Partial<NativeDoctorOptions> = {}): NativeDoctorOptions {
  return {
    device,
    probes: [...DOCTOR_PROBE_IDS],
    timeoutMs: 5000,
    threadgroupSizes: SIZES,
    threadgroupGroups: 1024,
    stockThreadgroupMemory: 32768,
    aboveStockThreadgroupMemory: true,
    mmapFile: null,
    mmapSize: MMAP_SIZE,
    tempDir: freshDir(),
    ...extra,
  };
}

/**
 * An outcome as doctor() returns it, with only the measured values given (the rest null), any wall time and compile
 * time, and a kernel that was built (buildFailed false) unless `measured` says otherwise.
 */
export function outcome(
  id: NativeProbeOutcome['id'],
  status: NativeProbeOutcome['status'],
  detail: string,
  measured: Partial<Omit<NativeProbeOutcome, 'id' | 'status' | 'detail' | 'ms'>> = {},
): NativeProbeOutcome {
  return {
    id,
    status,
    detail,
    ms: expect.any(Number) as unknown as number,
    compileMs: expect.any(Number) as unknown as number,
    buildFailed: false,
    commandBufferError: null,
    gpuTimedOut: false,
    provenThreadgroupMemory: null,
    acceptedThreadgroupMemory: null,
    failedThreadgroupMemory: null,
    bufferLength: null,
    maxAbsError: null,
    ...measured,
  };
}

/** What a device that works answers, probe by probe. */
export const PASSES = {
  reduction: outcome(
    'simdgroup-reduction',
    'pass',
    "simd_sum and simd_max over 256 threads in SIMD-groups of 32 equal the CPU's",
  ),
  matrix: outcome(
    'simdgroup-matrix',
    'pass',
    "8x8 and 32x32 products of simdgroup_float8x8 and simdgroup_half8x8 equal the CPU's within tolerance (max |error| 0)",
    { maxAbsError: 0 },
  ),
  bfloat: outcome(
    'bfloat',
    'pass',
    "bfloat conversion, addition and multiplication of 256 values round to nearest even, as the CPU's reference does",
    { maxAbsError: 0 },
  ),
  threadgroup: outcome(
    'threadgroup-memory',
    'pass',
    '32768 bytes proven by 1024 concurrent threadgroups of 256 threads; 65536 bytes accepted and computed right, unverifiable: threadgroups above 32768 bytes may never share a GPU core (the largest size asked for)',
    {
      provenThreadgroupMemory: 32768,
      acceptedThreadgroupMemory: 65536,
    },
  ),
  nocopy: outcome(
    'nocopy-mmap',
    'pass',
    `the GPU read all ${SAMPLED} through a NoCopy buffer over its mmap as the file holds them, also after the file's pages changed`,
    { bufferLength: MMAP_SIZE },
  ),
  residency: outcome(
    'residency-set',
    'pass',
    'a residency set was created, given a buffer, committed, and used by a dispatch that read it right',
  ),
  heap: outcome(
    'heap',
    'pass',
    'a 1048576 bytes heap (shared, untracked, as MLX makes it) held a 1024 bytes buffer that a dispatch wrote and another read back, as the CPU computes',
  ),
};

export const NO_RESIDENCY_API = outcome(
  'residency-set',
  'unsupported',
  'this OS has no residency sets (newResidencySetWithDescriptor:error: is macOS 15 API)',
);
