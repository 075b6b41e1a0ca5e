/**
 * Every code this package throws: the codes of its error classes, each class carrying its own. A script can branch on
 * `err.code` and the compiler checks the comparison: a code that is not in this list is a type error, not a branch
 * that never runs.
 */
export type ErrorCode = PackageError['code'];

/** Every error class this package throws (the base class is never thrown by itself). */
export type PackageError =
  | InvalidOptionsError
  | InvalidProfileError
  | SnapshotNotFoundError
  | InvalidSnapshotError
  | InvalidReportError
  | RefusedError
  | UnsupportedPlatformError
  | NativeError
  | ProfileActiveError
  | SpawnError
  | TraceFileError
  | FileError
  | BenchError
  | UsageError;

/** The codes a NativeError carries: the native engine's failures, and `strict: true` failures to apply. */
export type NativeErrorCode =
  | 'ERR_HOOK_FAILED'
  | 'ERR_VERIFICATION_FAILED'
  | 'ERR_NO_DEVICE'
  | 'ERR_NATIVE_UNAVAILABLE'
  /** doctor's probe runner (a child process) could not start, or ended before it read the devices. */
  | 'ERR_DOCTOR_RUNNER'
  /** A child the package starts (doctor's probe runner, bench's node-llama-cpp side) cannot be started in this host
   * (an Electron renderer, a single executable application, the synchronous path in Electron's main process). */
  | 'ERR_CHILD_HOST';

/** The codes a RefusedError carries. */
export type RefusedErrorCode =
  | 'ERR_REFUSED_BARE_METAL'
  | 'ERR_INJECTION_BLOCKED'
  | 'ERR_HOST_UNKNOWN'
  | 'ERR_MLX_ARCHITECTURE_REFUSED'
  | 'ERR_ABOVE_HARDWARE';

/**
 * The codes a BenchError carries: the tool failed (exit status, signal) or printed nothing `bench` can read;
 * `bench --node-llama-cpp` found no node-llama-cpp in the user's project.
 */
export type BenchErrorCode = 'ERR_BENCH_TOOL' | 'ERR_BENCH_OUTPUT' | 'ERR_BENCH_NO_NODE_LLAMA_CPP';

/** The codes a SpawnError carries. */
export type SpawnErrorCode = 'ERR_COMMAND_NOT_FOUND' | 'ERR_SPAWN';

/** The longest message or field an error carries; a longer one keeps its start and end. Quoting a value in a message
 * goes through lib/core/input.ts, which keeps 200 characters of it: this bound only stops what slipped past that. */
const MESSAGE_LIMIT = 2000;

function bounded(text: string, limit = MESSAGE_LIMIT): string {
  if (text.length <= limit) return text;
  const tail = Math.floor(limit / 4);
  return `${text.slice(0, limit - tail)} … (${text.length - limit} characters left out) … ${text.slice(-tail)}`;
}

/**
 * Every error this package throws is a MetalCapShimError with a stable `code`. Scripts should branch on `code`,
 * never on the message, which may be reworded.
 */
export class MetalCapShimError extends Error {
  /** Stable machine-readable code, e.g. `ERR_INVALID_PROFILE`; each subclass narrows it to the codes it carries. */
  readonly code: ErrorCode;

  // Not generic on purpose: `err instanceof MetalCapShimError` would then narrow to MetalCapShimError<any>, and a
  // comparison with a code that does not exist would compile. Subclasses narrow `code` with `declare`.
  // Protected: every code belongs to a subclass, so the base class is never thrown by itself.
  protected constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(bounded(message), options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A function was called with an option of the wrong type or value. */
export class InvalidOptionsError extends MetalCapShimError {
  declare readonly code: 'ERR_INVALID_OPTIONS';
  /** The option at fault, e.g. `allDevices`. */
  readonly option: string;

  constructor(option: string, message: string) {
    super('ERR_INVALID_OPTIONS', message);
    this.option = bounded(option, 300);
  }
}

/** A snapshot name that is not bundled, or a path that does not exist. */
export class SnapshotNotFoundError extends MetalCapShimError {
  declare readonly code: 'ERR_SNAPSHOT_NOT_FOUND';
  constructor(message: string) {
    super('ERR_SNAPSHOT_NOT_FOUND', message);
  }
}

/** A snapshot file that is not valid JSON or does not follow snapshots/README.md. */
export class InvalidSnapshotError extends MetalCapShimError {
  declare readonly code: 'ERR_INVALID_SNAPSHOT';
  /** JSON path of the offending field, e.g. `devices[0].families.apple7`. */
  readonly field: string | null;

  constructor(field: string | null, message: string) {
    super('ERR_INVALID_SNAPSHOT', message);
    this.field = field === null ? null : bounded(field, 300);
  }
}

/** A profile that is malformed: unknown keys, out-of-range values, unknown names, bad JSON. Nothing was installed. */
export class InvalidProfileError extends MetalCapShimError {
  declare readonly code: 'ERR_INVALID_PROFILE';
  /** The field at fault, e.g. `appleFamilyMax`; `null` when the whole value is unusable. */
  readonly field: string | null;

  constructor(field: string | null, message: string) {
    super('ERR_INVALID_PROFILE', message);
    this.field = field === null ? null : bounded(field, 300);
  }
}

/** Something given to buildMatrix() / `matrix` that is not a field report (or is damaged). */
export class InvalidReportError extends MetalCapShimError {
  declare readonly code: 'ERR_INVALID_REPORT';
  /** The field at fault, e.g. `audit.devices`. */
  readonly field: string | null;

  constructor(field: string | null, message: string) {
    super('ERR_INVALID_REPORT', message);
    this.field = field === null ? null : bounded(field, 300);
  }
}

/**
 * Raising answers on a host that is not a virtual machine without `force` (thrown only with `strict: true`; otherwise
 * applyProfile() returns `reason: 'refused-bare-metal'`), a profile claiming the host's chip where it is unknown
 * (`ERR_HOST_UNKNOWN`; otherwise `reason: 'host-unknown'`), a profile offering MLX an architecture this host cannot take
 * (`ERR_MLX_ARCHITECTURE_REFUSED`; otherwise `reason: 'mlx-architecture-refused'`), a threadgroup claim the llama.cpp
 * release that will run would turn into a request above every Apple GPU's threadgroup memory, without
 * `allowAboveHardware` (`ERR_ABOVE_HARDWARE`; otherwise `reason: 'above-hardware'`), or `exec` of a program macOS would
 * strip of the injector.
 */
export class RefusedError extends MetalCapShimError {
  declare readonly code: RefusedErrorCode;

  constructor(message: string, code: RefusedErrorCode = 'ERR_REFUSED_BARE_METAL') {
    super(code, message);
  }
}

/** `strict: true` was asked on a platform where nothing can be patched. */
export class UnsupportedPlatformError extends MetalCapShimError {
  declare readonly code: 'ERR_UNSUPPORTED_PLATFORM';
  constructor(message: string) {
    super('ERR_UNSUPPORTED_PLATFORM', message);
  }
}

/** The native module reported a failure (a hook could not be installed, verification failed, …). */
export class NativeError extends MetalCapShimError {
  declare readonly code: NativeErrorCode;

  constructor(code: NativeErrorCode, message: string) {
    super(code, message);
  }
}

/** Wrong command-line usage (CLI only; exit code 2). */
export class UsageError extends MetalCapShimError {
  declare readonly code: 'ERR_USAGE';
  constructor(message: string) {
    super('ERR_USAGE', message);
  }
}

/**
 * A live `audit()` or `doctor()` (or `auto` measuring afresh) while a profile is applied in this process: they must
 * measure the stock answers first. Call `restore()` first, or work from a snapshot.
 */
export class ProfileActiveError extends MetalCapShimError {
  declare readonly code: 'ERR_PROFILE_ACTIVE';
  constructor(message: string) {
    super('ERR_PROFILE_ACTIVE', message);
  }
}

/** `exec`: the program is not found (`ERR_COMMAND_NOT_FOUND`, exit 127) or is there but cannot be run (`ERR_SPAWN`, exit 126). */
export class SpawnError extends MetalCapShimError {
  declare readonly code: SpawnErrorCode;
  constructor(code: SpawnErrorCode, message: string) {
    super(code, message);
  }
}

/** `exec --trace FILE`: the path is unusable (a missing or unwritable folder, a link, a FIFO, a folder, another user's file). */
export class TraceFileError extends MetalCapShimError {
  declare readonly code: 'ERR_TRACE_FILE';
  constructor(message: string) {
    super('ERR_TRACE_FILE', message);
  }
}

/** CLI: a file given to `matrix` cannot be read or is not JSON. */
export class FileError extends MetalCapShimError {
  declare readonly code: 'ERR_FILE';
  constructor(message: string) {
    super('ERR_FILE', message);
  }
}

/**
 * `bench`: a run of the measured tool failed (`ERR_BENCH_TOOL`: its exit status or signal; never taken as a result)
 * or printed nothing `bench` can read (`ERR_BENCH_OUTPUT`); `bench --node-llama-cpp` found no node-llama-cpp where it
 * runs (`ERR_BENCH_NO_NODE_LLAMA_CPP`: install it in the project).
 */
export class BenchError extends MetalCapShimError {
  declare readonly code: BenchErrorCode;
  constructor(code: BenchErrorCode, message: string) {
    super(code, message);
  }
}
