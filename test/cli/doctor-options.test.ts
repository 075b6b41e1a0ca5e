// lib/cli/doctor-options.ts: the one parser of doctor's numeric flags (each bound from both sides, K/M/G binary for
// byte counts) and the nocopy-mmap pair, each mistake a UsageError in the flag's words.
import { describe, expect, it } from 'vitest';
import { mmapOptions, numberFlag } from '../../lib/cli/doctor-options.js';
import { UsageError } from '../../lib/core/errors.js';
import { thrown } from '../support/helpers.js';

const usage = (f: () => unknown) => {
  const e = thrown(f);
  expect(e).toBeInstanceOf(UsageError);
  return (e as UsageError).message;
};

describe('numberFlag', () => {
  it('--device: 0 to 1023, digits only', () => {
    expect([numberFlag('--device', '0'), numberFlag('--device', '1023')]).toEqual([0, 1023]);
    for (const bad of ['1024', '-1', '1.0', '1e2', '', 'two'])
      expect(usage(() => numberFlag('--device', bad))).toBe(
        `--device takes a device index from 0 to 1023, got '${bad}'`,
      );
  });

  it('--timeout-ms: 100 to 600000', () => {
    expect([numberFlag('--timeout-ms', '100'), numberFlag('--timeout-ms', '600000')]).toEqual([100, 600000]);
    for (const bad of ['99', '600001'])
      expect(usage(() => numberFlag('--timeout-ms', bad))).toBe(
        `--timeout-ms takes a whole number of milliseconds from 100 to 600000, got '${bad}'`,
      );
  });

  it('--mmap-size: 1M to 64G, a multiple of 16K, with binary suffixes and decimals only with a suffix', () => {
    expect(['1M', '64G', '1048576', '512m', '1.5G', '16400K'].map((v) => numberFlag('--mmap-size', v))).toEqual([
      2 ** 20,
      64 * 2 ** 30,
      2 ** 20,
      512 * 2 ** 20,
      1.5 * 2 ** 30,
      16400 * 1024,
    ]);
    for (const bad of ['1023K', '65G', '1.5', '1048577', '1T'])
      expect(usage(() => numberFlag('--mmap-size', bad))).toBe(
        `--mmap-size takes a size in bytes from 1M to 64G, a multiple of 16K (K, M and G are binary: 512M, 3G, 1.5G), got '${bad}'`,
      );
  });
});

describe('mmapOptions', () => {
  it('passes a file or a size, never both, and never standard input', () => {
    expect(mmapOptions({})).toEqual({});
    expect(mmapOptions({ 'mmap-file': 'model.gguf' })).toEqual({ mmapFile: 'model.gguf' });
    expect(mmapOptions({ 'mmap-size': '256M' })).toEqual({ mmapSize: 256 * 2 ** 20 });
    expect(usage(() => mmapOptions({ 'mmap-file': 'model.gguf', 'mmap-size': '1G' }))).toBe(
      '--mmap-file and --mmap-size cannot be given together: nocopy-mmap maps your file or a generated one of that size',
    );
    expect(usage(() => mmapOptions({ 'mmap-file': '-' }))).toBe(
      '--mmap-file needs a file doctor can map (your model); standard input (-) cannot be mapped',
    );
  });
});
