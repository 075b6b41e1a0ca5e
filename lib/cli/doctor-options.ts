import { DEVICE_INDEX, MMAP_SIZE, TIMEOUT_MS } from '../doctor/probes.js';
import { UsageError } from '../core/errors.js';
import { clip } from '../core/input.js';
import { STDIN } from '../core/jsonfile.js';
import { text, type Values } from './shared.js';

/** What a numeric flag takes: its bounds, a granularity, and whether it is a byte count (K, M, G suffixes). */
export interface NumberSpec {
  /** `a size in bytes`, `a whole number of milliseconds`: what the error says the flag takes. */
  takes: string;
  min: number;
  max: number;
  multipleOf?: number;
  /** A byte count: binary K, M and G suffixes, and a decimal with a suffix (1.5G), are accepted. */
  bytes?: boolean;
}

/** The numeric flags, each bounded by the constants the API checks against. */
export const NUMBER_FLAGS = {
  '--mmap-size': { takes: 'a size in bytes', ...MMAP_SIZE, bytes: true },
  '--timeout-ms': { takes: 'a whole number of milliseconds', ...TIMEOUT_MS },
  '--device': { takes: 'a device index', ...DEVICE_INDEX },
} as const satisfies Record<string, NumberSpec>;

const SCALE = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30 } as const;

/** `1G`, `16K`, `100`: a bound as a user would type it. */
function amount(n: number, bytes: boolean): string {
  if (!bytes) return String(n);
  for (const unit of ['G', 'M', 'K'] as const)
    if (n >= SCALE[unit] && n % SCALE[unit] === 0) return `${n / SCALE[unit]}${unit}`;
  return String(n);
}

/**
 * The one parser of numeric flags: `1073741824`, `512M`, `3G`, `1.5G` for byte counts, digits otherwise. Every
 * mistake (not a number, out of range, not a multiple) is a UsageError worded in the flag's terms.
 */
export function numberFlag(flag: keyof typeof NUMBER_FLAGS, value: string): number {
  const spec: NumberSpec = NUMBER_FLAGS[flag];
  const bytes = spec.bytes === true;
  const range = `from ${amount(spec.min, bytes)} to ${amount(spec.max, bytes)}${spec.multipleOf ? `, a multiple of ${amount(spec.multipleOf, bytes)}` : ''}`;
  const example = bytes ? ' (K, M and G are binary: 512M, 3G, 1.5G)' : '';
  const wrong = () => new UsageError(`${flag} takes ${spec.takes} ${range}${example}, got '${clip(value, 40)}'`);
  const m = (bytes ? /^(\d+(?:\.\d+)?)([KMG])?$/i : /^(\d+)()$/).exec(value);
  if (!m || (m[1]!.includes('.') && !m[2])) throw wrong();
  const n = Number(m[1]) * (m[2] ? SCALE[m[2].toUpperCase() as keyof typeof SCALE] : 1);
  if (
    !Number.isSafeInteger(n) ||
    n < spec.min ||
    n > spec.max ||
    (spec.multipleOf !== undefined && n % spec.multipleOf !== 0)
  )
    throw wrong();
  return n;
}

/** The flags doctor's nocopy-mmap probe takes in `doctor`, `report` and `snapshot --with-doctor`, as options. */
export function mmapOptions(values: Values): { mmapFile?: string; mmapSize?: number } {
  const file = text(values, 'mmap-file');
  const size = text(values, 'mmap-size');
  // Mapping needs a file with pages; a pipe has none.
  if (file === STDIN)
    throw new UsageError('--mmap-file needs a file doctor can map (your model); standard input (-) cannot be mapped');
  if (file !== undefined && size !== undefined) {
    throw new UsageError(
      '--mmap-file and --mmap-size cannot be given together: nocopy-mmap maps your file or a generated one of that size',
    );
  }
  return {
    ...(file !== undefined ? { mmapFile: file } : {}),
    ...(size !== undefined ? { mmapSize: numberFlag('--mmap-size', size) } : {}),
  };
}
