import { closeSync, constants, fstatSync, openSync, type Stats } from 'node:fs';
import path from 'node:path';
import { InvalidOptionsError } from '../core/errors.js';
import { readInput } from '../core/input.js';
import { checkOptions, optionFailure } from '../core/options.js';
import { DEFAULT_PROFILE, resolveProfile, type Profile, type ProfileInput } from '../patch/profiles.js';
import { planPatch, type PatchPlan } from '../patch/plan.js';
import type { DeviceReport, HostInfo } from '../device/types.js';
import {
  CAPABILITY_PROBE_IDS,
  DEVICE_INDEX,
  DOCTOR_PROBE_IDS,
  isProbeId,
  MMAP_SIZE,
  TIMEOUT_MS,
  type DoctorProbeId,
} from './probes.js';
import type { DoctorProgress } from './types.js';

/** Options for doctor(). */
export interface DoctorOptions {
  /** The candidate profile installed for the second run of the capability probes; default DEFAULT_PROFILE (host-family). */
  profile?: ProfileInput | undefined;
  /** One device, by its index in MTLCopyAllDevices() order; default every device. */
  device?: number | undefined;
  /** Per-probe deadline in milliseconds (compile + dispatch + completion); default 5000. */
  timeoutMs?: number | undefined;
  /** nocopy-mmap maps this file (a real model file), read only, instead of a generated one. */
  mmapFile?: string | undefined;
  /** nocopy-mmap: bytes of the generated file (default 1 GiB, deleted after); a multiple of 16384. */
  mmapSize?: number | undefined;
  /** The probes to run; default all. */
  probes?: DoctorProbeId[] | undefined;
  /** Also run the probes under a raising candidate profile on a host not known to be a VM. */
  force?: boolean | undefined;
  /**
   * threadgroup-memory also dispatches sizes above what the device can prove (provableThreadgroupMemory: 32768 bytes on
   * an Apple GPU), in a VM too, where the host's GPU runs them; default false. They can only be accepted, unverifiable.
   */
  allowAboveHardware?: boolean | undefined;
  /** Replay the doctor result a snapshot records (bundled name or path) instead of running anything. */
  snapshot?: string | undefined;
  /** Write each device's result to the cache that `auto` reads; default true (live runs only). */
  cache?: boolean | undefined;
  /** Called as each live probe starts (not for a replay), e.g. to show progress. */
  onProgress?: ((event: DoctorProgress) => void) | undefined;
}

/** doctor()'s options, checked and with defaults filled in. */
export interface CheckedDoctorOptions {
  candidate: Profile;
  device: number | null;
  timeoutMs: number;
  mmapFile: string | null;
  /** The generated file's size; with `mmapFile`, that file's size when checked (the runner's budget reads it in). */
  mmapSize: number;
  probes: DoctorProbeId[];
  force: boolean;
  allowAboveHardware: boolean;
  snapshot: string | null;
  cache: boolean;
}

function optionError(option: string, flag: string, message: string): InvalidOptionsError {
  return new InvalidOptionsError(option, `doctor() option '${option}' (${flag}) ${message}`);
}

/**
 * The --mmap-file as doctor will map it: a non-empty regular file we may read. Opened without blocking and checked by
 * fstat on that descriptor, so a FIFO swapped in for the file after any earlier look is refused at once, never waited on.
 */
function checkMmapFile(file: string): { file: string; size: number } {
  if (file.trim() === '') throw optionError('mmapFile', '--mmap-file', 'must name a file, e.g. a model .gguf');
  const resolved = path.resolve(file);
  let fd: number;
  try {
    fd = openSync(resolved, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw optionError('mmapFile', '--mmap-file', `cannot use ${resolved}: no such file`);
    if (code !== 'EACCES' && code !== 'EPERM')
      throw optionError('mmapFile', '--mmap-file', `cannot use ${resolved}: ${(err as Error).message}`);
    throw optionError(
      'mmapFile',
      '--mmap-file',
      `cannot read ${resolved} (${code ?? (err as Error).message}); doctor only reads it`,
    );
  }
  let stats: Stats;
  try {
    stats = fstatSync(fd);
  } finally {
    closeSync(fd);
  }
  if (!stats.isFile()) throw optionError('mmapFile', '--mmap-file', `cannot use ${resolved}: not a regular file`);
  if (stats.size === 0) throw optionError('mmapFile', '--mmap-file', `cannot use ${resolved}: the file is empty`);
  return { file: resolved, size: stats.size };
}

function checkInteger(option: string, flag: string, value: unknown, min: number, max: number, extra = ''): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw optionError(
      option,
      flag,
      `must be a whole number from ${min} to ${max}${extra}, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** Checks doctor()'s options and fills in defaults; throws InvalidOptionsError / InvalidProfileError naming the fault. */
export function checkDoctorOptions(options: unknown): CheckedDoctorOptions {
  return checkDoctorCall(options).options;
}

/**
 * checkDoctorOptions, and doctor()'s `onProgress` apart: the checked options go to the probe runner as JSON, the
 * listener stays in the caller.
 */
export function checkDoctorCall(options: unknown): {
  options: CheckedDoctorOptions;
  onProgress: ((event: DoctorProgress) => void) | null;
} {
  const o = checkOptions<DoctorOptions>('doctor', options, {
    profile: 'any',
    device: 'number',
    timeoutMs: 'number',
    mmapFile: 'string',
    mmapSize: 'number',
    probes: 'any',
    force: 'boolean',
    allowAboveHardware: 'boolean',
    snapshot: 'string',
    cache: 'boolean',
    onProgress: 'function',
  });
  const candidate = resolveProfile(o.profile ?? DEFAULT_PROFILE);
  const device =
    o.device === undefined ? null : checkInteger('device', '--device', o.device, DEVICE_INDEX.min, DEVICE_INDEX.max);
  const timeoutMs =
    o.timeoutMs === undefined
      ? TIMEOUT_MS.default
      : checkInteger('timeoutMs', '--timeout-ms', o.timeoutMs, TIMEOUT_MS.min, TIMEOUT_MS.max);
  if (o.mmapFile !== undefined && o.mmapSize !== undefined) {
    throw optionError(
      'mmapSize',
      '--mmap-size',
      'cannot be given with mmapFile (--mmap-file): nocopy-mmap maps one or the other',
    );
  }
  const mmapSize =
    o.mmapSize === undefined
      ? MMAP_SIZE.default
      : checkInteger(
          'mmapSize',
          '--mmap-size',
          o.mmapSize,
          MMAP_SIZE.min,
          MMAP_SIZE.max,
          ` bytes, a multiple of ${MMAP_SIZE.multipleOf}`,
        );
  if (mmapSize % MMAP_SIZE.multipleOf !== 0) {
    throw optionError(
      'mmapSize',
      '--mmap-size',
      `must be a multiple of ${MMAP_SIZE.multipleOf} bytes (the arm64 page size), got ${mmapSize}`,
    );
  }
  let probes: DoctorProbeId[] = [...DOCTOR_PROBE_IDS];
  if (o.probes !== undefined) {
    const asked = readInput(o.probes, optionFailure('doctor'), {}, 'probes');
    if (!Array.isArray(asked) || asked.length === 0 || !asked.every(isProbeId)) {
      throw new InvalidOptionsError(
        'probes',
        `doctor() option 'probes' must be a non-empty array of ${DOCTOR_PROBE_IDS.join(', ')}`,
      );
    }
    const set = new Set<string>(asked);
    probes = DOCTOR_PROBE_IDS.filter((id) => set.has(id));
  }
  if (o.snapshot !== undefined) {
    for (const live of ['timeoutMs', 'mmapFile', 'mmapSize', 'force', 'allowAboveHardware'] as const) {
      if (o[live] !== undefined) {
        throw new InvalidOptionsError(
          live,
          `doctor() option '${live}' has no effect when a snapshot is replayed: nothing runs`,
        );
      }
    }
  }
  const mmapFile = o.mmapFile === undefined ? null : checkMmapFile(o.mmapFile);
  const checked: CheckedDoctorOptions = {
    candidate,
    device,
    timeoutMs,
    mmapFile: mmapFile?.file ?? null,
    mmapSize: mmapFile?.size ?? mmapSize,
    probes,
    force: o.force ?? false,
    allowAboveHardware: o.allowAboveHardware ?? false,
    snapshot: o.snapshot ?? null,
    cache: o.cache ?? true,
  };
  return { options: checked, onProgress: o.onProgress ?? null };
}

/** The probes `auto` runs when nothing is cached: every capability probe, not nocopy-mmap. */
export const AUTO_PROBES: readonly DoctorProbeId[] = CAPABILITY_PROBE_IDS;

/**
 * The candidate as this host gets it, decided once by planPatch for the runner's patched run and for the report: bound
 * to the host (`host-family`: the chip's own family), or its fallback where the host chip is unknown (with the
 * `host-unknown-fallback` warning). The report names the profile that was used, never only the one asked for.
 */
export function candidateFor(
  o: CheckedDoctorOptions,
  stock: { devices: DeviceReport[]; host: HostInfo | null },
): { profile: Profile; name: string; plan: PatchPlan } {
  const plan = planPatch(stock, o.candidate, {
    force: o.force,
    allowAboveHardware: o.allowAboveHardware,
    env: process.env,
  });
  return { profile: plan.profile, name: plan.profile.name ?? 'the candidate profile', plan };
}
