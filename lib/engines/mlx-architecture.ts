/**
 * MLX's reading of a GPU architecture name (`applegpu_g13d`), from `architecture.name` or MLX_METAL_GPU_ARCH, and
 * what it turns on that the profile's `mlxArchitecture` must not: the NAX kernels. Pure functions over strings, as
 * MLX's own parsing is (mlx/backend/metal/device.cpp Device::Device, is_nax_available).
 */
import { parseMacos } from './common.js';
import type { HostInfo } from '../device/types.js';

/** The variable MLX reads in place of `architecture.name` when it is set and not empty (mlx/utils.h metal_gpu_arch). */
export const MLX_ARCHITECTURE_ENV = 'MLX_METAL_GPU_ARCH';

/** The first MLX release that reads MLX_ARCHITECTURE_ENV (ml-explore/mlx commit d7a553c, PR 3176); before it the
 * variable does nothing. */
export const MLX_ARCHITECTURE_ENV_FIRST_RELEASE = 'v0.31.0';

/**
 * The macOS release from which MLX's is_nax_available() can be true (`__builtin_available(macOS 26.2, …)`), and the
 * GPU generation it needs: 17, or 18 for class `p` (phones).
 */
export const NAX_MIN_MACOS = { major: 26, minor: 2 } as const;
export const NAX_MIN_GENERATION = 17;
export const NAX_MIN_GENERATION_PHONE = 18;

/**
 * A name MLX reads as a generation and a class, written the way Apple's own names are: `applegpu_g`, two digits (the
 * generation; MLX reads exactly the two characters before the last), one lowercase class letter.
 */
export const MLX_ARCHITECTURE_NAME = /^applegpu_g[1-9]\d[a-z]$/;

/** What MLX makes of an architecture name: its generation and its class letter. */
export interface MlxArchitecture {
  /** The two characters before the last as digits; MLX counts each one that is not a digit as 0. */
  generation: number;
  /** The last character (`g`, `s`, `d`, `p` …); null for an empty name. */
  cls: string | null;
}

/** The generation and class MLX reads from `name` (Device::Device): never fails, as MLX's parsing never does. */
export function mlxArchitectureOf(name: string): MlxArchitecture {
  const digit = (c: string) => (/^\d$/.test(c) ? Number(c) : 0);
  const generation =
    name.length >= 3 ? digit(name.charAt(name.length - 3)) * 10 + digit(name.charAt(name.length - 2)) : 0;
  return { generation, cls: name.length > 0 ? name.charAt(name.length - 1) : null };
}

/**
 * Whether MLX's is_nax_available() is true for an architecture name on a host: macOS ≥ 26.2 and generation ≥ 17 (≥ 18
 * for class `p`). `unknown` where the host's macOS version is not known and the generation alone would allow it.
 */
export function naxAvailable(name: string, host: HostInfo | null): boolean | 'unknown' {
  const { generation, cls } = mlxArchitectureOf(name);
  if (generation < (cls === 'p' ? NAX_MIN_GENERATION_PHONE : NAX_MIN_GENERATION)) return false;
  const macos = parseMacos(host);
  if (macos === null) return 'unknown';
  return (
    macos.major > NAX_MIN_MACOS.major || (macos.major === NAX_MIN_MACOS.major && macos.minor >= NAX_MIN_MACOS.minor)
  );
}

/**
 * Whether an MLX release (`0.30.6`, `v0.31.0`, `0.32.1.dev…`) reads MLX_ARCHITECTURE_ENV: from
 * MLX_ARCHITECTURE_ENV_FIRST_RELEASE on. Null for text that is no MLX version.
 */
export function readsArchitectureEnv(release: string): boolean | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(release.trim());
  if (m === null) return null;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > 0 || minor >= 31;
}
