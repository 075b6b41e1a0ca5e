/**
 * doctor's results on disk, one file per (package version, host, OS build, device), so `auto` can apply a proven
 * profile without running the probes again. A file that is damaged, of another format, or written for another
 * machine is ignored, never trusted; so is a folder or file another user could have planted or changed, and a
 * verified profile that does not follow from the probe results stored with it. Writes go to a temporary file renamed
 * into place, so a reader never sees half of one.
 */
import { lstatSync, renameSync, rmSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { isObject, readInput } from '../core/input.js';
import { optionFailure } from '../core/options.js';
import { profileAnswers, resolveProfile, type Profile } from '../patch/profiles.js';
import { makeFolders, readOwnFile, untrustedBecause, writeNewFile } from '../core/safefs.js';
import type { DeviceReport, SupportedReport } from '../device/types.js';
import { packageVersion } from '../device/native.js';
import { deriveVerifiedProfile } from './derive.js';
import { judgeProbe } from './judge.js';
import {
  CAPABILITY_PROBE_IDS,
  isProbeId,
  isRecordedStatus,
  type DoctorProbeId,
  type RecordedStatus,
} from './probes.js';
import type { DoctorDevice, Recommendation } from './types.js';
import type { HostChip } from './derive.js';

/** The cache file format tag. */
export const DOCTOR_CACHE_SCHEMA = 'metal-cap-shim/doctor-cache@1' as const;

/** What a cached result must match to be used. */
export interface DoctorCacheKey {
  packageVersion: string;
  /** `live`, or `simulated` for the Linux test build (whose host facts come from a snapshot). */
  source: string;
  /** The simulated build's snapshot; null on a Mac. */
  snapshot: string | null;
  /** `chip` too: a guest image moved to another host keeps its model and OS build, but not its host's chip. */
  host: {
    model: string | null;
    osVersion: string | null;
    osBuild: string | null;
    arch: string | null;
    chip: string | null;
  };
  /** Position, name and class: registry IDs are left out because they need not survive a reboot. */
  device: { index: number; name: string; className: string };
}

/** One probe as the cache keeps it: its status, and for threadgroup-memory the size it proved. */
export interface CachedProbe {
  id: DoctorProbeId;
  status: RecordedStatus;
  /** threadgroup-memory only, when it proved a size. */
  provenThreadgroupMemory?: number;
}

/**
 * What is kept of one device's doctor result: its decisions and what they were derived from (each probe's status,
 * the proven threadgroup size). The full result (details, both runs, timings) is what `doctor --json` prints; the
 * cache keeps what `auto` reads, small, because it is read at the start of every program that uses `auto`.
 */
export interface CachedResult {
  probes: CachedProbe[];
  verifiedProfile: Profile;
  verifiedProfileReasons: string[];
  recommendations: Recommendation[];
  faults: string[];
}

/** One cached doctor result. */
export interface DoctorCacheEntry {
  schema: typeof DOCTOR_CACHE_SCHEMA;
  key: DoctorCacheKey;
  generatedAt: string;
  result: CachedResult;
}

/** The part of a device's doctor result the cache keeps. */
export function cachedResultOf(device: DoctorDevice): CachedResult {
  return {
    probes: device.probes.map((p) =>
      p.id === 'threadgroup-memory' && p.provenThreadgroupMemory !== null
        ? { id: p.id, status: p.status, provenThreadgroupMemory: p.provenThreadgroupMemory }
        : { id: p.id, status: p.status },
    ),
    verifiedProfile: device.verifiedProfile,
    verifiedProfileReasons: device.verifiedProfileReasons,
    recommendations: device.recommendations,
    faults: device.faults,
  };
}

/** A cache lookup: the entry, or why there was none. */
export type CacheLookup =
  | { entry: DoctorCacheEntry; file: string; ignored: null }
  | { entry: null; file: string; ignored: string | null };

/**
 * The cache folder: `~/Library/Caches/metal-cap-shim` on macOS; elsewhere `$XDG_CACHE_HOME/metal-cap-shim` (an
 * absolute path, as the XDG spec requires) or `~/.cache/metal-cap-shim`.
 */
export function doctorCacheDir(env: NodeJS.ProcessEnv = process.env, platform: string = process.platform): string {
  if (platform === 'darwin') return path.join(homedir(), 'Library', 'Caches', 'metal-cap-shim');
  // Read once, through the same guard as every other input: a getter that throws is a typed error.
  const xdg: unknown = (readInput(env, optionFailure('doctorCacheDir'), {}, 'env') as NodeJS.ProcessEnv | null)
    ?.XDG_CACHE_HOME;
  const base = typeof xdg === 'string' && path.isAbsolute(xdg) ? xdg : path.join(homedir(), '.cache');
  return path.join(base, 'metal-cap-shim');
}

/** The key of one device of a probe report (one that found devices, and so has the host's facts). */
export function cacheKeyFor(report: SupportedReport, device: DeviceReport): DoctorCacheKey {
  const h = report.host;
  return {
    packageVersion: packageVersion(),
    source: report.source,
    snapshot: report.snapshot,
    host: { model: h.model, osVersion: h.osVersion, osBuild: h.osBuild, arch: h.arch, chip: h.chip },
    device: { index: device.index, name: device.name, className: device.className },
  };
}

/**
 * JSON with object keys sorted, so equal keys compare equal however they were written. A key holds objects, strings,
 * numbers and nulls only.
 */
function canonical(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const entries = Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

/** The file a key's result lives in. */
export function cacheFileFor(key: DoctorCacheKey, dir: string = doctorCacheDir()): string {
  return fileForCanonical(canonical(key), dir);
}

/**
 * FNV-1a over the key's UTF-16 units, twice with different offsets: 64 bits for a file name. Not node:crypto, whose
 * load costs a program about 15 ms at start-up, and `auto` runs at start-up; a collision is harmless because the file
 * holds its key and a mismatch is ignored.
 */
function keyDigest(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

function fileForCanonical(canonicalKey: string, dir: string): string {
  return path.join(dir, `doctor-${keyDigest(canonicalKey)}.json`);
}

/** True when `value` has exactly the fields of `expected` with equal values, nested objects compared the same way. */
function sameKey(value: unknown, expected: object): boolean {
  if (!isObject(value)) return false;
  const keys = Object.keys(expected);
  if (Object.keys(value).length !== keys.length) return false;
  return keys.every((k) => {
    const want = (expected as Record<string, unknown>)[k];
    return isObject(want) ? sameKey(value[k], want) : value[k] === want;
  });
}

const isCachedProbe = (p: unknown): boolean => {
  if (!isObject(p) || !isProbeId(p.id) || !isRecordedStatus(p.status)) return false;
  if (!('provenThreadgroupMemory' in p)) return Object.keys(p).length === 2;
  return (
    p.id === 'threadgroup-memory' &&
    Number.isSafeInteger(p.provenThreadgroupMemory) &&
    (p.provenThreadgroupMemory as number) > 0 &&
    Object.keys(p).length === 3
  );
};

/** The largest cache file read: one device's result is about 2 KB. */
const MAX_CACHE_BYTES = 1 << 20;

const PROFILE_FIELDS = [
  'appleFamilyMax',
  'maxThreadgroupMemoryLength',
  'recommendedMaxWorkingSetSize',
  'mode',
  'deviceName',
] as const;

/** True when two profiles give the same answers (the name aside). */
function sameAnswers(a: Profile, b: Profile): boolean {
  // A derived profile names at most one family (metal3), so key order cannot make two equal answers differ.
  return PROFILE_FIELDS.every((f) => a[f] === b[f]) && JSON.stringify(a.families) === JSON.stringify(b.families);
}

/**
 * The verified profile the stored probe results prove on `stock` (the device as it answers now, stock), derived as
 * doctor derives it, with or without `force`, on `host`
 * (its chip caps the family and is the name a proven heap allows). Only status and proven size are stored, and the
 * derivation reads nothing else.
 */
function derivedFrom(stock: DeviceReport, probes: CachedProbe[], force: boolean, host: HostChip): Profile {
  const judged = probes.map((p) =>
    judgeProbe(p.id, {
      status: p.status,
      detail: 'cached',
      ms: null,
      compileMs: null,
      provenThreadgroupMemory: p.provenThreadgroupMemory ?? null,
      acceptedThreadgroupMemory: null,
      failedThreadgroupMemory: null,
      bufferLength: null,
      maxAbsError: null,
    }),
  );
  return deriveVerifiedProfile(stock, judged, undefined, force, host).profile;
}

/** Why a parsed cache file cannot be used for `key` on `stock`, or the verified profile it stands for. */
function problemWith(data: unknown, key: DoctorCacheKey, stock: DeviceReport, force: boolean): string | Profile {
  if (!isObject(data)) return 'not a JSON object';
  if (data.schema !== DOCTOR_CACHE_SCHEMA) return `not a ${DOCTOR_CACHE_SCHEMA} file`;
  if (!sameKey(data.key, key)) return 'written for another package version, host, OS build or device';
  if (typeof data.generatedAt !== 'string' || Number.isNaN(Date.parse(data.generatedAt))) return 'damaged: generatedAt';
  const d = data.result;
  if (!isObject(d)) return 'damaged: result';
  if (!Array.isArray(d.probes) || !d.probes.every(isCachedProbe)) return 'damaged: probes';
  // doctor caches only runs that asked every capability probe, but a file written before that rule, or by hand, may be
  // partial: its verified profile would claim nothing for what was skipped, and `auto` would apply that.
  const recorded = d.probes as CachedProbe[];
  const skipped = CAPABILITY_PROBE_IDS.filter((id) => !recorded.some((p) => p.id === id && p.status !== 'skipped'));
  if (skipped.length > 0) return `partial: ${skipped.join(', ')} did not run, so it is measured again`;
  if (!Array.isArray(d.verifiedProfileReasons) || !d.verifiedProfileReasons.every((r) => typeof r === 'string')) {
    return 'damaged: verifiedProfileReasons';
  }
  const isRecommendation = (r: unknown) =>
    isObject(r) && typeof r.engine === 'string' && typeof r.setting === 'string' && typeof r.why === 'string';
  if (!Array.isArray(d.recommendations) || !d.recommendations.every(isRecommendation))
    return 'damaged: recommendations';
  if (!Array.isArray(d.faults) || !d.faults.every((f) => typeof f === 'string')) return 'damaged: faults';
  if (!isObject(d.verifiedProfile) || !('name' in d.verifiedProfile)) return 'damaged: verifiedProfile';
  let stored: Profile;
  try {
    stored = resolveProfile(d.verifiedProfile);
  } catch (err) {
    return `damaged: verifiedProfile (${(err as Error).message})`;
  }
  // A hand-edited profile (1 MiB of threadgroup memory, say) is not what the stored results prove: only what they
  // prove is ever applied.
  // The key (checked equal above) holds the host's chip, which is all the derivation reads of the host.
  const host = { chip: key.host.chip, cpuBrand: null };
  const derived = derivedFrom(stock, recorded, force, host);
  if (!sameAnswers(stored, derived)) {
    // A result cached before threadgroup sizes above 32768 bytes were only accepted (a forced run could claim them)
    // lands here too: measured again.
    return `the verified profile ${JSON.stringify(profileAnswers(stored))} does not follow from the probe results stored with it (they prove ${JSON.stringify(profileAnswers(derived))}): edited or damaged`;
  }
  return derived;
}

/**
 * Why the cache folder is not to be used, or null: it must be a folder (not a link to one) of ours that nobody else
 * may write, or anyone could plant a result (the file names are computable from public facts).
 */
function folderProblem(dir: string): string | null {
  let stats: Stats;
  try {
    stats = lstatSync(dir);
  } catch (err) {
    return `the cache folder ${dir} cannot be examined (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  if (stats.isSymbolicLink()) return `the cache folder ${dir} is a symbolic link`;
  if (!stats.isDirectory()) return `the cache folder ${dir} is not a folder`;
  const untrusted = untrustedBecause(stats);
  return untrusted === null ? null : `the cache folder ${dir} ${untrusted}`;
}

/**
 * Reads the cached result for `key`, the device `stock` (as it answers now); a missing file is a plain miss, an
 * unusable one says why it was ignored. The file is read without following a link, and only when it and its folder
 * belong to us and nobody else may write them. `force`: derive as doctor does with force (a result cached by a run
 * that differed in this is measured again).
 */
/**
 * Why `dir` is no cache folder at all, or null: a relative path, which is what a home folder that is empty or unset
 * (HOME='') gives without XDG_CACHE_HOME. The cache would then land in whatever folder the process runs in, so nothing
 * is read or written.
 */
function relativeFolderProblem(dir: string): string | null {
  return path.isAbsolute(dir)
    ? null
    : `the cache folder ${dir} is not an absolute path (there is no usable home folder: HOME is empty or unset, and XDG_CACHE_HOME is not set), so nothing is cached`;
}

export function readCache(
  key: DoctorCacheKey,
  stock: DeviceReport,
  dir: string = doctorCacheDir(),
  force = false,
): CacheLookup {
  const canonicalKey = canonical(key);
  const file = fileForCanonical(canonicalKey, dir);
  // A plain miss: writing the fresh result says why nothing is cached, once.
  if (relativeFolderProblem(dir) !== null) return { entry: null, file, ignored: null };
  const read = readOwnFile(file, MAX_CACHE_BYTES);
  if (!read.ok) return { entry: null, file, ignored: read.missing ? null : `the cache file ${read.why}` };
  const unsafeFolder = folderProblem(dir);
  if (unsafeFolder !== null) return { entry: null, file, ignored: unsafeFolder };
  let data: unknown;
  try {
    data = JSON.parse(read.text);
  } catch {
    return { entry: null, file, ignored: 'not JSON' };
  }
  const checked = problemWith(data, key, stock, force);
  if (typeof checked === 'string') return { entry: null, file, ignored: checked };
  const entry = data as DoctorCacheEntry;
  // The profile as validation normalised it, so a hand-edited file cannot smuggle in unknown fields.
  return { entry: { ...entry, result: { ...entry.result, verifiedProfile: checked } }, file, ignored: null };
}

/**
 * Writes one device's result atomically (temporary file created O_EXCL|O_NOFOLLOW, then rename). The folder is created
 * 0700, a level at a time; one that is not ours alone is not written into. Returns the file. Throws on I/O errors.
 */
export function writeCache(
  key: DoctorCacheKey,
  device: DoctorDevice,
  generatedAt: string,
  dir: string = doctorCacheDir(),
): string {
  const file = cacheFileFor(key, dir);
  const homeless = relativeFolderProblem(dir);
  if (homeless !== null) throw new Error(homeless);
  makeFolders(dir, 0o700);
  const unsafeFolder = folderProblem(dir);
  if (unsafeFolder !== null) throw new Error(`${unsafeFolder}, so nothing is written there`);
  const entry: DoctorCacheEntry = { schema: DOCTOR_CACHE_SCHEMA, key, generatedAt, result: cachedResultOf(device) };
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    writeNewFile(temp, `${JSON.stringify(entry)}\n`, 0o600);
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  return file;
}
