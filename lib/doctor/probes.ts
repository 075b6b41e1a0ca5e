/**
 * The doctor's vocabulary: probe ids, statuses, what each status proves, and the bounds of the run settings. Every
 * other doctor file imports these; nothing here touches Metal.
 */

import {
  DOCTOR_PROBE_IDS,
  DOCTOR_STATUSES,
  type DoctorProbeId,
  type DoctorStatus,
} from '../device/doctor-vocabulary.js';
import { FAMILY_NAMES, type FamilyName } from '../core/families.js';
import { LLAMA_CPP_RULES, MLX_RULES } from '../engines/index.js';

export { DOCTOR_PROBE_IDS, DOCTOR_STATUSES, type DoctorProbeId, type DoctorStatus };

/**
 * The probes whose outcome can depend on what the device answers (Metal itself may consult `supportsFamily:` or the
 * size queries), so doctor runs them twice: stock, then with the candidate profile installed. `nocopy-mmap` tests
 * the paravirtual memory path, runs once, and is left out of `auto` (it maps a large file).
 */
export const CAPABILITY_PROBE_IDS: readonly DoctorProbeId[] = Object.freeze(
  DOCTOR_PROBE_IDS.filter((id) => id !== 'nocopy-mmap'),
);

/** A status, or `not-recorded` for a replayed snapshot that does not document the probe. */
export type RecordedStatus = DoctorStatus | 'not-recorded';

/**
 * What a status says about the device:
 * - `proven`: the work ran and matched the CPU reference, so a profile may claim it;
 * - `faulty`: the device misbehaved (wrong numbers, an API error, a hang): an engine that uses it breaks;
 * - `absent`: this OS or MSL version lacks the API, which is no fault of the device;
 * - `unknown`: nothing was learnt (not run, not recorded, or the probe itself could not run).
 */
export type Judgement = 'proven' | 'faulty' | 'absent' | 'unknown';

/** The judgement of each status, with what it means in one phrase. */
export const JUDGEMENTS: Readonly<Record<RecordedStatus, { judgement: Judgement; meaning: string }>> = Object.freeze({
  pass: { judgement: 'proven', meaning: 'ran and matched the CPU reference' },
  'wrong-result': {
    judgement: 'faulty',
    meaning: 'ran, but the result differs from the CPU reference (or the buffer was stale or short)',
  },
  fail: { judgement: 'faulty', meaning: 'Metal refused it with an API error' },
  timeout: { judgement: 'faulty', meaning: 'the GPU, or Metal’s compiler, did not finish before its deadline' },
  unsupported: { judgement: 'absent', meaning: 'this OS or Metal Shading Language version lacks the API' },
  skipped: { judgement: 'unknown', meaning: 'not run' },
  error: { judgement: 'unknown', meaning: 'the probe itself could not run, which says nothing about the GPU' },
  'not-recorded': { judgement: 'unknown', meaning: 'the snapshot does not record it' },
  'page-fault': {
    judgement: 'faulty',
    meaning: 'the GPU faulted on memory the kernel was given (MTLCommandBufferErrorPageFault)',
  },
  'access-revoked': {
    judgement: 'unknown',
    meaning: 'Metal revoked this process’s access after timeouts or hangs (MTLCommandBufferErrorAccessRevoked)',
  },
  'not-permitted': {
    judgement: 'unknown',
    meaning: 'Metal does not let this process use the device (MTLCommandBufferErrorNotPermitted)',
  },
  'out-of-memory': {
    judgement: 'unknown',
    meaning: 'the GPU had too little memory for the work (MTLCommandBufferErrorOutOfMemory)',
  },
  'device-removed': {
    judgement: 'unknown',
    meaning: 'the device went away while it ran, as an unplugged eGPU does (MTLCommandBufferErrorDeviceRemoved)',
  },
  aborted: {
    judgement: 'faulty',
    meaning: 'the process running the probe died, or was killed at the deadline, while it ran',
  },
  interrupted: {
    judgement: 'unknown',
    meaning: 'a SIGINT or SIGTERM from outside (Ctrl-C, a supervisor) ended the process running the probe',
  },
});

/**
 * The statuses named after a command buffer's MTLCommandBufferError code (MTLCommandBuffer.h), read by domain and code:
 * the native runner reports the code, and judge.ts names the status. A code not listed stays `fail`.
 */
export const COMMAND_BUFFER_STATUSES: ReadonlyMap<number, DoctorStatus> = new Map<number, DoctorStatus>([
  [2, 'timeout'],
  [3, 'page-fault'],
  [4, 'access-revoked'],
  [7, 'not-permitted'],
  [8, 'out-of-memory'],
  [11, 'device-removed'],
]);

/**
 * The statuses after which a device takes no more work from the process that met them: a GPU that did not finish
 * (a timeout of the GPU's work, not of the compiler), access revoked, not permitted, a device removed (an eGPU
 * unplugged), and a runner that died. The probes
 * left on that device are `skipped`, with the reason, never run into a fault they did not cause.
 */
export const GPU_LEFT_UNUSABLE: readonly DoctorStatus[] = Object.freeze([
  'timeout',
  'access-revoked',
  'not-permitted',
  'device-removed',
  'aborted',
]);

/**
 * The probes that deliberately go past a stock limit (threadgroup-memory dispatches sizes above the device's answer in
 * a VM). They run after every other probe, in the stock run and in the patched run, so a GPU they upset costs nothing
 * else.
 */
export const PAST_STOCK_LIMIT_PROBES: readonly DoctorProbeId[] = Object.freeze(['threadgroup-memory']);

/** `probes` in the order they run: as given, with the probes that go past a stock limit last. */
export function runOrder(probes: readonly DoctorProbeId[]): DoctorProbeId[] {
  const last = (id: DoctorProbeId) => PAST_STOCK_LIMIT_PROBES.includes(id);
  return [...probes.filter((id) => !last(id)), ...probes.filter(last)];
}

/**
 * When a probe's two runs disagree, the probe takes the worse status: the first of this list that either run has.
 * A fault that shows in one run is a fault.
 */
export const STATUS_SEVERITY: readonly RecordedStatus[] = Object.freeze([
  'wrong-result',
  'page-fault',
  'aborted',
  'timeout',
  'fail',
  'access-revoked',
  'not-permitted',
  'out-of-memory',
  'device-removed',
  'error',
  'interrupted',
  'unsupported',
  'skipped',
  'not-recorded',
  'pass',
]);

/** Family names in the order of the family table (Apple first, Metal3 last), each once. */
function inFamilyOrder(names: readonly FamilyName[]): FamilyName[] {
  return FAMILY_NAMES.filter((f) => names.includes(f));
}

/**
 * The families that turn on one of llama.cpp's gates under its newest rules: read from the rule itself, so doctor's
 * judgement follows the engine rules rather than a copy of them.
 */
function llamaCppGate(flag: 'has_simdgroup_reduction' | 'has_simdgroup_mm' | 'has_bfloat'): FamilyName[] {
  return inFamilyOrder(LLAMA_CPP_RULES.current.find((r) => r.flag === flag)!.families);
}

/** The threadgroup sizes the threadgroup-memory probe tries, ascending: 16 KiB to 64 KiB in 8 KiB steps. */
export const THREADGROUP_CANDIDATES: readonly number[] = Object.freeze([
  16384, 24576, 32768, 40960, 49152, 57344, 65536,
]);

/**
 * The threadgroup sizes the probe dispatches on a device that can prove `provable` bytes (provableThreadgroupMemory),
 * and those it leaves out. A size above that can only be accepted, unverifiable (derive never claims it), and in a VM
 * it still runs on the host's real GPU, where it is undefined: so only `allowAboveHardware` dispatches it.
 */
export function threadgroupSizesFor(
  provable: number,
  allowAboveHardware: boolean,
): { dispatched: number[]; leftOut: number[] } {
  const dispatched = THREADGROUP_CANDIDATES.filter((size) => allowAboveHardware || size <= provable);
  return { dispatched, leftOut: THREADGROUP_CANDIDATES.filter((size) => !dispatched.includes(size)) };
}

/** What the probe's detail adds when sizes were left out by threadgroupSizesFor; null when none were. */
export function leftOutSizesNote(leftOut: readonly number[], provable: number): string | null {
  if (leftOut.length === 0) return null;
  const sizes = leftOut.length === 1 ? `${leftOut[0]}` : `${leftOut[0]} to ${leftOut[leftOut.length - 1]}`;
  return (
    `${sizes} bytes not dispatched: above the ${provable} bytes this GPU can prove, and allowAboveHardware ` +
    '(--allow-above-hardware) is off'
  );
}

/**
 * How many threadgroups run each threadgroup size at once: many times what every GPU core of any Apple GPU holds,
 * so a size is proven only where threadgroups share the GPU as engines' dispatches do.
 */
export const THREADGROUP_PROBE_GROUPS = 1024;

/**
 * The families that gate each probe's feature in the engines' rules (REFERENCE §4): a device that claims none of them
 * does not say it has the feature, so a kernel it cannot compile or build a pipeline for, or a residency set it cannot
 * create, is `unsupported` there, not a fault (an Intel or AMD GPU has no SIMD-group matrix). An empty list: every
 * device must run the probe.
 */
export const PROBE_GATING_FAMILIES: Readonly<Record<DoctorProbeId, readonly FamilyName[]>> = Object.freeze({
  'simdgroup-reduction': llamaCppGate('has_simdgroup_reduction'),
  'simdgroup-matrix': llamaCppGate('has_simdgroup_mm'),
  bfloat: llamaCppGate('has_bfloat'),
  'threadgroup-memory': [],
  'nocopy-mmap': [],
  // ggml-metal creates residency sets on any Apple GPU (arm64 builds against a macOS 15+ SDK ask for no family, so
  // its rule names none), and MLX wherever its residency rule's families are answered: so every Apple GPU (each
  // claims Apple1), a paravirtual one included, and any Metal3 GPU. An Intel or AMD GPU without Metal3 is left.
  'residency-set': inFamilyOrder(['apple1', ...MLX_RULES.find((r) => r.flag === 'residencySets')!.families]),
  // MTLHeap is not gated by a family in MLX: it makes its heap on every device but one named "Apple Paravirtual device".
  heap: [],
});

/** Per-probe deadline of the GPU's work (dispatch + completion), and separately of compiling: default and bounds, in milliseconds. */
export const TIMEOUT_MS = Object.freeze({ default: 5000, min: 100, max: 600_000 });

/**
 * The longest one probe may keep the runner busy before the parent kills it, for a per-probe deadline of `timeoutMs`:
 * compiling, the file nocopy-mmap writes and the GPU's work each have the whole deadline (the native runner restarts
 * it between them), plus a second for the runner's own work.
 */
export function probeBudgetMs(timeoutMs: number): number {
  return 3 * timeoutMs + 1000;
}

/**
 * The slowest disk allowed for, in bytes per millisecond (20 MiB/s), for writing nocopy-mmap's generated file and for
 * reading its file into memory before the GPU's deadline starts: both are the runner's own work, outside the GPU's
 * deadline, so a slow disk must not get the runner killed and the device blamed for it.
 */
export const GENERATED_FILE_BYTES_PER_MS = (20 * 1024 * 1024) / 1000;

/**
 * The budget of one probe under `o`: probeBudgetMs, and for nocopy-mmap the time to read its file (`mmapSize`: the
 * user's file's size with `mmapFile`) into memory at GENERATED_FILE_BYTES_PER_MS, and to write it first when it is
 * generated.
 */
export function probeBudgetFor(
  o: { timeoutMs: number; mmapFile: string | null; mmapSize: number },
  probe: DoctorProbeId,
): number {
  if (probe !== 'nocopy-mmap') return probeBudgetMs(o.timeoutMs);
  const once = Math.ceil(o.mmapSize / GENERATED_FILE_BYTES_PER_MS);
  return probeBudgetMs(o.timeoutMs) + (o.mmapFile === null ? 2 * once : once);
}

/**
 * How long the runner may take to start and read the devices before its first probe: Node's start-up, loading the
 * addon and Metal's device list.
 */
export const RUNNER_START_MS = 30_000;

/**
 * Size of the generated file the nocopy-mmap probe maps: default 1 GiB, bounds, and the granularity (the arm64
 * page size, so the NoCopy buffer covers whole pages on every Mac).
 */
export const MMAP_SIZE = Object.freeze({ default: 1 << 30, min: 1 << 20, max: 64 * 2 ** 30, multipleOf: 16384 });

/** The device indexes doctor takes (MTLCopyAllDevices order). */
export const DEVICE_INDEX = Object.freeze({ min: 0, max: 1023 });

/** True when `id` names a probe. */
export function isProbeId(id: unknown): id is DoctorProbeId {
  return typeof id === 'string' && (DOCTOR_PROBE_IDS as readonly string[]).includes(id);
}

/** True when `status` is a status a run or a recording can have. */
export function isRecordedStatus(status: unknown): status is RecordedStatus {
  return typeof status === 'string' && Object.hasOwn(JUDGEMENTS, status);
}
