import { UsageError } from '../errors.js';
import { text, type Values } from './shared.js';

/** `1073741824`, `1024M`, `1G`: a byte count with an optional binary suffix. */
export function byteCount(flag: string, value: string): number {
  const m = /^(\d+)([KMG])?$/i.exec(value);
  if (!m) throw new UsageError(`${flag} takes a byte count such as 1073741824, 512M or 3G, got '${value}'`);
  const scale = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30 }[(m[2] ?? '').toUpperCase() as 'K' | 'M' | 'G'] ?? 1;
  return Number(m[1]) * scale;
}

/** A whole number given on the command line. */
export function wholeNumber(flag: string, value: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`${flag} takes a whole number, got '${value}'`);
  return Number(value);
}

/** The flags doctor's nocopy-mmap probe takes in `doctor` and `report`, as options. */
export function mmapOptions(values: Values): { mmapFile?: string; mmapSize?: number } {
  const file = text(values, 'mmap-file');
  const size = text(values, 'mmap-size');
  return {
    ...(file !== undefined ? { mmapFile: file } : {}),
    ...(size !== undefined ? { mmapSize: byteCount('--mmap-size', size) } : {}),
  };
}
