// MLX's reading of a GPU architecture name, as mlx/backend/metal/device.cpp does it (Device::Device: the two
// characters before the last, each non-digit counted as 0; the last as the class), is_nax_available's bounds, and the
// first release that reads MLX_METAL_GPU_ARCH.
import { describe, expect, it } from 'vitest';
import {
  MLX_ARCHITECTURE_ENV,
  MLX_ARCHITECTURE_ENV_FIRST_RELEASE,
  MLX_ARCHITECTURE_NAME,
  mlxArchitectureOf,
  naxAvailable,
  readsArchitectureEnv,
} from '../../lib/engines/mlx-architecture.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import type { HostInfo } from '../../lib/device/types.js';

/** The stock guest's host on another macOS version. */
const onMacos = (osVersion: string | null): HostInfo => ({
  ...probeSnapshot('vz-guest-m1-ultra-tahoe-stock').host!,
  osVersion,
});

describe('mlxArchitectureOf: what MLX reads from a name', () => {
  it.each([
    ['applegpu_g13d', 13, 'd'],
    ['applegpu_g17p', 17, 'p'],
    ['applegpu_g18p', 18, 'p'],
    // One digit: the character before it is no digit, so MLX counts it as 0.
    ['applegpu_g9p', 9, 'p'],
    // No digit in place: 0, never a failure.
    ['applegpu_g9', 0, '9'],
    ['Apple Paravirtual device', 0, 'e'],
    ['x', 0, 'x'],
    ['ab', 0, 'b'],
    ['', 0, null],
    // Three digits: MLX reads the last two.
    ['applegpu_g100s', 0, 's'],
    ['applegpu_g113s', 13, 's'],
  ])('%j: generation %d, class %j', (name, generation, cls) => {
    expect(mlxArchitectureOf(name)).toEqual({ generation, cls });
  });

  it('the names a profile may offer are exactly applegpu_g, two digits (no leading 0) and a lowercase letter', () => {
    expect(['applegpu_g13g', 'applegpu_g10c', 'applegpu_g99z'].every((n) => MLX_ARCHITECTURE_NAME.test(n))).toBe(true);
    expect(
      ['applegpu_g9p', 'applegpu_g05g', 'applegpu_g100s', 'applegpu_g13', 'applegpu_g13G', 'xapplegpu_g13g'].some((n) =>
        MLX_ARCHITECTURE_NAME.test(n),
      ),
    ).toBe(false);
  });
});

describe('naxAvailable: mlx/backend/metal/device.cpp is_nax_available', () => {
  it.each([
    ['applegpu_g17g', '26.2', true],
    ['applegpu_g17g', '26.1', false],
    ['applegpu_g17g', '26.1.9', false],
    ['applegpu_g17g', '27.0', true],
    ['applegpu_g17g', '25.9', false],
    ['applegpu_g16s', '26.2', false],
    ['applegpu_g17s', '26.5.2', true],
    // A phone's class needs generation 18.
    ['applegpu_g17p', '26.2', false],
    ['applegpu_g18p', '26.2', true],
    // Where the macOS version is unknown, only the generation can rule it out.
    ['applegpu_g17g', null, 'unknown'],
    ['applegpu_g16g', null, false],
    ['applegpu_g17g', 'not a version', 'unknown'],
  ])('%s on macOS %j: %j', (name, os, expected) => {
    expect(naxAvailable(name, onMacos(os))).toBe(expected);
  });

  it('no host: the generation decides, or unknown', () => {
    expect([naxAvailable('applegpu_g13d', null), naxAvailable('applegpu_g17s', null)]).toEqual([false, 'unknown']);
  });
});

describe('readsArchitectureEnv: MLX_METAL_GPU_ARCH from v0.31.0 (ml-explore/mlx commit d7a553c, PR 3176)', () => {
  it.each([
    ['0.30.6', false],
    ['v0.30.6', false],
    ['0.29.3', false],
    ['0.31.0', true],
    ['v0.31.0', true],
    ['0.32.2', true],
    ['1.0.0', true],
    ['0.31.0.dev20260301', true],
    ['latest', null],
    ['0.31', null],
  ])('%j: %j', (release, reads) => {
    expect(readsArchitectureEnv(release)).toBe(reads);
  });

  it('names the variable and the release', () => {
    expect([MLX_ARCHITECTURE_ENV, MLX_ARCHITECTURE_ENV_FIRST_RELEASE]).toEqual(['MLX_METAL_GPU_ARCH', 'v0.31.0']);
  });
});
