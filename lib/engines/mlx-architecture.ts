/**
 * MLX's reading of a GPU architecture name (`applegpu_g13d`), from `architecture.name` or MLX_METAL_GPU_ARCH, and
 * what it turns on that the profile's `mlxArchitecture` must not: the NAX kernels. The rules are MLX's own, as
 * predictMlx applies them (mlx.ts readMlxArchitecture, the newest rule set); this file states them for a name.
 */
import type { HostInfo } from '../device/types.js';
import { parseMacos } from './common.js';
import { readMlxArchitecture } from './mlx.js';
import { MLX_SWITCHES, mlxRuleSetForRelease, mlxSwitchesOf, parseMlxRelease } from './mlx-releases.js';

/** The variable MLX reads in place of `architecture.name` when it is set and not empty (mlx/utils.h metal_gpu_arch). */
export const MLX_ARCHITECTURE_ENV = 'MLX_METAL_GPU_ARCH';

/** The first MLX release that reads MLX_ARCHITECTURE_ENV (MLX_SWITCHES); before it the variable does nothing. */
export const MLX_ARCHITECTURE_ENV_FIRST_RELEASE: string = MLX_SWITCHES.find(
  (s) => s.name === MLX_ARCHITECTURE_ENV,
)!.since;

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

/** The generation and class the newest MLX reads from `name` (Device::Device): never fails, as its parsing never does. */
export function mlxArchitectureOf(name: string): MlxArchitecture {
  const { generation, cls } = readMlxArchitecture(name, null);
  return { generation: generation ?? 0, cls };
}

/**
 * Whether the newest MLX's is_nax_available() is true for an architecture name on a host. `unknown` where the host's
 * macOS version is not known and the generation alone would allow it.
 */
export function naxAvailable(name: string, host: HostInfo | null): boolean | 'unknown' {
  const nax = readMlxArchitecture(name, host).nax === true;
  return nax && parseMacos(host) === null ? 'unknown' : nax;
}

/**
 * Whether an MLX release (`0.30.6`, `v0.31.0`, `0.32.1.dev…`) reads MLX_ARCHITECTURE_ENV (its rule set's switches).
 * Null for text that is no MLX version.
 */
export function readsArchitectureEnv(release: string): boolean | null {
  const m = /^v?\d+\.\d+\.\d+/.exec(release.trim());
  const parsed = m === null ? null : parseMlxRelease(m[0]);
  if (parsed === null) return null;
  return mlxSwitchesOf(mlxRuleSetForRelease(parsed).ruleSet).includes(MLX_ARCHITECTURE_ENV);
}
