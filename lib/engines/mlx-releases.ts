/**
 * Which MLX releases each MLX rule set describes, and the environment variables each release reads. The ranges come
 * from MLX's own sources (github.com/ml-explore/mlx, `mlx/backend/metal/` and `mlx/utils.h`), read at each tag named
 * here: a rule set begins at the first tag whose source computes one of its values differently. MLX's tags are
 * semantic versions (`v0.31.0`; pip's `0.31.0` names the same release).
 */

/** One MLX rule set: the first release it covers, what sets it apart, and the evidence. */
export interface MlxRuleSetInfo {
  /** The first release it covers, which also names it (`v0.31.0`). */
  id: string;
  first: readonly [number, number, number];
  /** The release range, in words. */
  releases: string;
  /** What sets it apart from the rule set before it. */
  summary: string;
  /** Where the source was read. */
  evidence: readonly string[];
}

/** The commit of MLX's main branch read for 0.32.2, which no tag names yet (its mlx/version.h says 0.32.2). */
export const MLX_UNTAGGED_COMMIT = '846d176227a0ac13d2667e58d2bb68b322109ab0';

const tagRead = (tag: string, files: string) => `${tag}: source read at the tag (${files})`;

/**
 * The MLX rule sets, oldest first: the one place a rule set is declared. Each rule of lib/engines/mlx.ts names the
 * rule set it first applies to (`since`) and the ones that change it (`changes`), so the compiler asks for them.
 */
export const MLX_RULE_SET_REGISTRY = Object.freeze([
  {
    id: 'v0.19.2',
    first: [0, 19, 2],
    releases: 'v0.19.2 to v0.20.x',
    summary:
      'residency sets only where the device answers Metal3 ("Skip using Residency sets in VMs"), on macOS 15+; GEMM tiles by the class letter (g small, d large); one command buffer per MLX_MAX_OPS_PER_BUFFER ops (10)',
    evidence: [tagRead('v0.19.2', 'allocator.cpp, resident.cpp, matmul.cpp, metal.cpp, utils.h')],
  },
  {
    id: 'v0.21.0',
    first: [0, 21, 0],
    releases: 'v0.21.0 to v0.22.0',
    summary: 'the 2-pass SDPA vector kernel: class d from 1024 keys, any class with GQA from 4096 keys, 32 blocks',
    evidence: [tagRead('v0.21.0', 'scaled_dot_product_attention.cpp')],
  },
  {
    id: 'v0.22.1',
    first: [0, 22, 1],
    releases: 'v0.22.1 to v0.22.x',
    summary: 'the fast fence: Metal3, macOS 15 and MLX_METAL_FAST_SYNCH',
    evidence: [tagRead('v0.22.1', 'fence.cpp, utils.h')],
  },
  {
    id: 'v0.23.0',
    first: [0, 23, 0],
    releases: 'v0.23.0 and v0.23.1',
    summary:
      'command-buffer limits by the class letter (p 20 ops/40 MB, g 40/40, s and d 50/50, other 40/40) with MLX_MAX_OPS_PER_BUFFER and MLX_MAX_MB_PER_BUFFER; class p joins g for GEMM tiles',
    evidence: [tagRead('v0.23.0', 'device.cpp, matmul.cpp, utils.h')],
  },
  {
    id: 'v0.23.2',
    first: [0, 23, 2],
    releases: 'v0.23.2 to v0.24.1',
    summary: 'the buffer heap, skipped on a device named exactly "Apple Paravirtual device"',
    evidence: [tagRead('v0.23.2', 'allocator.cpp')],
  },
  {
    id: 'v0.24.2',
    first: [0, 24, 2],
    releases: 'v0.24.2 to v0.26.1',
    summary:
      'quantized mat-vec batch limits by the two characters before the class letter ("13", "14") and the class (d)',
    evidence: [tagRead('v0.24.2', 'quantized.cpp')],
  },
  {
    id: 'v0.26.2',
    first: [0, 26, 2],
    releases: 'v0.26.2 to v0.29.x',
    summary:
      "the architecture generation, as the two characters' codes minus '0' (no check: a non-digit gives any number, a name shorter than 3 reads outside it)",
    evidence: [tagRead('v0.26.2', 'device.cpp')],
  },
  {
    id: 'v0.30.0',
    first: [0, 30, 0],
    releases: 'v0.30.0',
    summary: 'NAX kernels at generation ≥ 17, in builds against the macOS 26.2 SDK (MLX_ENABLE_NAX), no run-time check',
    evidence: [tagRead('v0.30.0', 'device.h, backend/metal/CMakeLists.txt')],
  },
  {
    id: 'v0.30.1',
    first: [0, 30, 1],
    releases: 'v0.30.1 to v0.30.3',
    summary: 'NAX also needs macOS 26.2 at run time',
    evidence: [tagRead('v0.30.1', 'device.h'), tagRead('v0.30.3', 'device.h: the MLX_METAL_NO_NAX build switch')],
  },
  {
    id: 'v0.30.4',
    first: [0, 30, 4],
    releases: 'v0.30.4',
    summary: 'the 2-pass SDPA also for class s from 1024 keys; its block count by class (s, d, other)',
    evidence: [tagRead('v0.30.4', 'scaled_dot_product_attention.cpp')],
  },
  {
    id: 'v0.30.5',
    first: [0, 30, 5],
    releases: 'v0.30.5 to v0.30.x',
    summary: 'NAX on class p only from generation 18; the split-K threshold by class (s and d 2048 tiles, other 1024)',
    evidence: [tagRead('v0.30.5', 'device.h, matmul.cpp')],
  },
  {
    id: 'v0.31.0',
    first: [0, 31, 0],
    releases: 'v0.31.0 to v0.31.x',
    summary:
      'MLX_METAL_GPU_ARCH replaces architecture.name when not empty; a character that is no digit, or a name shorter than 3, counts 0; the quantized batch limits read the generation (13, 14)',
    evidence: [tagRead('v0.31.0', 'device.cpp, quantized.cpp, utils.h')],
  },
  {
    id: 'v0.32.0',
    first: [0, 32, 0],
    releases: 'v0.32.0',
    summary: 'affine qmv_wide only at generation ≥ 15; MLX_SDPA_BLOCKS',
    evidence: [tagRead('v0.32.0', 'quantized.cpp, scaled_dot_product_attention.cpp')],
  },
  {
    id: 'v0.32.1',
    first: [0, 32, 1],
    releases: 'v0.32.1',
    summary:
      'gemv_wide at generation ≥ 15; quantized batch limits by generation tiers (≥ 17, ≥ 15, ≥ 13) and class d; residency sets (ResidencySets) capped per set by MLX_RESIDENCY_SET_MAX_PCT of the working set; MLX_SDPA_BLOCKS rounded up to 32',
    evidence: [
      tagRead('v0.32.1', 'matmul.cpp, quantized.cpp, resident.cpp, scaled_dot_product_attention.cpp, utils.h'),
    ],
  },
  {
    id: 'v0.32.2',
    first: [0, 32, 2],
    releases: 'v0.32.2 and later',
    summary:
      "the Winograd convolution's batch step from 3/4 of the working set (MLX_CONV_WINOGRAD_WORKING_SET, MLX_CONV_WINOGRAD_TILE_BATCH)",
    evidence: [`0.32.2: source read at commit ${MLX_UNTAGGED_COMMIT.slice(0, 9)} of main (untagged; version.h 0.32.2)`],
  },
] as const satisfies readonly MlxRuleSetInfo[]);

/** An MLX rule set's id (MLX_RULE_SET_REGISTRY), oldest first. */
export type MlxRuleSet = (typeof MLX_RULE_SET_REGISTRY)[number]['id'];

/** Every MLX rule set, oldest first. */
export const MLX_RULE_SETS: readonly MlxRuleSet[] = Object.freeze(MLX_RULE_SET_REGISTRY.map((r) => r.id));

/** The rule sets, by id. */
export const MLX_RULE_SET_INFO: Readonly<Record<MlxRuleSet, MlxRuleSetInfo>> = Object.freeze(
  Object.fromEntries(MLX_RULE_SET_REGISTRY.map((r) => [r.id, r])) as unknown as Record<MlxRuleSet, MlxRuleSetInfo>,
);

/** The newest MLX rule set: predictions use it when no release is named. */
export const MLX_NEWEST: MlxRuleSet = MLX_RULE_SETS[MLX_RULE_SETS.length - 1]!;

/** Whether rule set `a` is `b` or newer. */
export function mlxAtLeast(a: MlxRuleSet, b: MlxRuleSet): boolean {
  return MLX_RULE_SETS.indexOf(a) >= MLX_RULE_SETS.indexOf(b);
}

/** An MLX release, parsed. */
export interface MlxRelease {
  version: [number, number, number];
  text: string;
}

/** Parses an MLX release (`v0.31.0`, or pip's `0.31.0`); null when `text` is neither. */
export function parseMlxRelease(text: string): MlxRelease | null {
  const m = /^v?(\d{1,4})\.(\d{1,4})\.(\d{1,4})$/.exec(text);
  if (m === null) return null;
  return { version: [Number(m[1]), Number(m[2]), Number(m[3])], text };
}

function versionAtLeast(v: readonly number[], min: readonly number[]): boolean {
  for (let i = 0; i < 3; i++) if (v[i] !== min[i]) return v[i]! > min[i]!;
  return true;
}

/** The newest release whose source was read: a later one may have changed the rules. */
const NEWEST_READ: readonly [number, number, number] = [0, 32, 2];

/** The rule set of an MLX release, with a warning where the release lies outside what was read. */
export function mlxRuleSetForRelease(release: MlxRelease): { ruleSet: MlxRuleSet; warning: string | null } {
  const found = [...MLX_RULE_SET_REGISTRY].reverse().find((r) => versionAtLeast(release.version, r.first));
  if (found === undefined) {
    const oldest = MLX_RULE_SET_REGISTRY[0];
    return {
      ruleSet: oldest.id,
      warning: `MLX ${release.text} is older than ${oldest.id}, the oldest release these rules describe: ${oldest.id} rules assumed (before it MLX creates residency sets without asking for Metal3)`,
    };
  }
  const newer = !versionAtLeast(NEWEST_READ, release.version);
  return {
    ruleSet: found.id,
    warning: newer
      ? `MLX ${release.text} is newer than ${NEWEST_READ.join('.')}, the newest source read: ${found.id} rules assumed`
      : null,
  };
}

/**
 * The environment variables MLX reads that change a predicted value, each with the first rule set that reads it (MLX
 * reads each once, at first use; `int` ones through env::get_var's atoi into an int, so text that is no number is 0 and a
 * number that does not fit 32 bits wraps). A variable set for a release before `since` does nothing, and predictions
 * warn.
 */
export const MLX_SWITCHES = Object.freeze([
  {
    name: 'MLX_MAX_OPS_PER_BUFFER',
    since: 'v0.19.2',
    read: 'int',
    meaning: 'operations per command buffer before MLX commits it',
  },
  {
    name: 'MLX_METAL_FAST_SYNCH',
    since: 'v0.22.1',
    read: 'int',
    meaning: 'not 0: the fast fence, where Metal3 and macOS 15 allow it',
  },
  {
    name: 'MLX_MAX_MB_PER_BUFFER',
    since: 'v0.23.0',
    read: 'int',
    meaning: 'megabytes of inputs per command buffer before MLX commits it',
  },
  {
    name: 'MLX_METAL_GPU_ARCH',
    since: 'v0.31.0',
    read: 'string',
    meaning: "when not empty, the architecture name MLX parses instead of the device's architecture.name",
  },
  { name: 'MLX_SDPA_BLOCKS', since: 'v0.32.0', read: 'int', meaning: "above 0: the 2-pass SDPA kernel's block count" },
  {
    name: 'MLX_RESIDENCY_SET_MAX_PCT',
    since: 'v0.32.1',
    read: 'int',
    meaning: 'the per-set residency cap as a percentage of the working set (default 5; ≤ 0 or ≥ 100: one set)',
  },
  {
    name: 'MLX_CONV_WINOGRAD_WORKING_SET',
    since: 'v0.32.2',
    read: 'int',
    meaning: 'above 0: the bytes the Winograd batch step budgets instead of recommendedMaxWorkingSetSize',
  },
] as const satisfies readonly { name: string; since: MlxRuleSet; read: 'int' | 'string'; meaning: string }[]);

/** An environment variable of MLX_SWITCHES. */
export type MlxSwitch = (typeof MLX_SWITCHES)[number]['name'];

/** The switches a rule set reads, in MLX_SWITCHES order. */
export function mlxSwitchesOf(ruleSet: MlxRuleSet): MlxSwitch[] {
  return MLX_SWITCHES.filter((s) => mlxAtLeast(ruleSet, s.since)).map((s) => s.name);
}
