/**
 * Every error this package throws is a MetalCapShimError with a stable `code`. Scripts should branch on `code`,
 * never on the message, which may be reworded.
 */
export class MetalCapShimError extends Error {
  /** Stable machine-readable code, e.g. `ERR_INVALID_PROFILE`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A function was called with an option of the wrong type or value. */
export class InvalidOptionsError extends MetalCapShimError {
  /** The option at fault, e.g. `allDevices`. */
  readonly option: string;

  constructor(option: string, message: string) {
    super('ERR_INVALID_OPTIONS', message);
    this.option = option;
  }
}

/** A snapshot name that is not bundled, or a path that does not exist. */
export class SnapshotNotFoundError extends MetalCapShimError {
  constructor(message: string) {
    super('ERR_SNAPSHOT_NOT_FOUND', message);
  }
}

/** A snapshot file that is not valid JSON or does not follow snapshots/README.md. */
export class InvalidSnapshotError extends MetalCapShimError {
  /** JSON path of the offending field, e.g. `devices[0].families.apple7`. */
  readonly field: string | null;

  constructor(field: string | null, message: string) {
    super('ERR_INVALID_SNAPSHOT', message);
    this.field = field;
  }
}

/** A profile that is malformed: unknown keys, out-of-range values, unknown names, bad JSON. Nothing was installed. */
export class InvalidProfileError extends MetalCapShimError {
  /** The field at fault, e.g. `appleFamilyMax`; `null` when the whole value is unusable. */
  readonly field: string | null;

  constructor(field: string | null, message: string) {
    super('ERR_INVALID_PROFILE', message);
    this.field = field;
  }
}

/** A profile would raise answers on a host that is not a virtual machine, and `force` was not given. */
export class RefusedError extends MetalCapShimError {
  constructor(message: string, code = 'ERR_REFUSED_BARE_METAL') {
    super(code, message);
  }
}

/** `strict: true` was asked on a platform where nothing can be patched. */
export class UnsupportedPlatformError extends MetalCapShimError {
  constructor(message: string) {
    super('ERR_UNSUPPORTED_PLATFORM', message);
  }
}

/** The native module reported a failure (a hook could not be installed, verification failed, …). */
export class NativeError extends MetalCapShimError {
  constructor(code: string, message: string) {
    super(code, message);
  }
}

/** Wrong command-line usage (CLI only; exit code 2). */
export class UsageError extends MetalCapShimError {
  constructor(message: string) {
    super('ERR_USAGE', message);
  }
}
