/**
 * The llama.cpp rule sets as data: one row per range of releases, each citing the commit that opens it. Nothing here
 * computes; llama-cpp-releases.ts maps releases to these rows and llama-cpp.ts builds each row's rules from its keys.
 */

/** Where a rule set begins: a build number (`b7411` is build 7411) or a semantic version (`v0.4.0`). */
export type RuleSetStart = { build: number } | { version: readonly [number, number, number] };

/**
 * The pieces a rule set is made of, by name: each is one rule of llama-cpp.ts's catalogue (LLAMA_CPP_RULE_CATALOGUE),
 * so a rule set is a row that lists them, not code.
 */
export type LlamaCppRuleKey =
  | 'reduction-legacy'
  | 'reduction-device'
  | 'mm-encode-only'
  | 'mm-legacy'
  | 'mm-device'
  | 'bfloat-no-switch-legacy'
  | 'bfloat-no-switch-device'
  | 'bfloat-switch'
  | 'use-bfloat-always'
  | 'use-bfloat-opt-in'
  | 'tensor-b6968'
  | 'tensor-b7010'
  | 'residency-legacy'
  | 'residency-device'
  | 'shared-unified'
  | 'shared-location'
  | 'shared-location-x86'
  | 'gpu-family'
  | 'device-id-b9333'
  | 'device-id'
  | 'working-set-legacy'
  | 'working-set-device';

/** The commit that opens a rule set, as llama.cpp's history has it: its short hash and pull request, when known. */
export interface RuleSetCitation {
  commit: string | null;
  pr: string | null;
}

/** One llama.cpp rule set: which releases it covers, from what, and the evidence. */
export interface LlamaCppRuleSetInfo {
  id: string;
  /** The first release it covers (the oldest rule set covers everything from build 0). */
  first: RuleSetStart;
  /** The commit that brought what sets it apart (null for the oldest rule set). */
  opened: RuleSetCitation;
  /**
   * For a semantic-version rule set whose change also reached the nightly `b<count>` builds: the newest build known
   * without it. Builds after it are mapped to this rule set with a warning, since the first build with it is not pinned.
   */
  nightlyAfter?: number;
  /** The file that computes the flags. */
  source: 'ggml-metal.m' | 'ggml-metal-device.m';
  /** The release range, in words. */
  releases: string;
  /** What sets it apart from the rule set before it. */
  summary: string;
  /** Releases whose own code was compared with these rules, and how. */
  evidence: readonly string[];
  /** The rules it computes, in the order the release computes them (llama-cpp.ts's catalogue). */
  rules: readonly LlamaCppRuleKey[];
  /** Which ops `supports_op` gates on a SIMD-group flag: none (before b1853), ggml-metal.m's list or ggml-metal-device.m's. */
  gates: 'none' | 'legacy' | 'device';
  /** How ggml-metal-tuning.cpp picks its flash-attention rows: by chip then family representative, by family, or not at all. */
  tuning: 'chip' | 'family' | null;
  /** What it does with the answered maxThreadgroupMemoryLength (llama-cpp-threadgroup.ts's models). */
  threadgroup: LlamaCppThreadgroupModel;
}

/**
 * How a rule set's releases use the answered threadgroup memory: `unread` (no source of the range was read for it),
 * `ggml-metal-m-b3658` and `ggml-metal-m` (flash attention's nsgmax and MUL_MAT_ID's dst_rows_max sized from it, read
 * at b3658 and b4753), `asserts`
 * (only asserts read it), `vec-fallback-chip` / `vec-fallback-family` (a tuned flash-attention configuration falls back
 * to Q=1 when it needs more, tuned rows by chip or by family).
 */
export type LlamaCppThreadgroupModel =
  | 'unread'
  | 'ggml-metal-m-b3658'
  | 'ggml-metal-m'
  | 'asserts'
  | 'vec-fallback-chip'
  | 'vec-fallback-family';

const LEGACY_BASE = ['reduction-legacy', 'mm-legacy'] as const;
const DEVICE_BASE = ['reduction-device', 'mm-device'] as const;

/**
 * The llama.cpp rule sets, oldest first: the one place a rule set is declared. Adding a release boundary is a row
 * here, with the commit that opens it; the union of ids, the list `--rules` takes and its help, the release
 * boundaries, each rule set's rule table and op gates (llama-cpp.ts) and the conformance eras' expectations are read
 * from it. `current`, `device` and `legacy` name the newest of each source generation; the older rule sets are named
 * by the first release they cover (`device-b6968`, `legacy-b4040`). Boundaries were found with `git log -S` at the
 * b-tags of llama.cpp's history (mirrors whose hashes match upstream).
 */
export const LLAMA_CPP_RULE_SET_REGISTRY = Object.freeze([
  {
    id: 'legacy-b0',
    first: { build: 0 },
    opened: { commit: null, pr: null },
    source: 'ggml-metal.m',
    releases: 'up to b1852 (ggml-metal.m, before the SIMD-group reduction gate)',
    summary:
      'no op is refused for a missing SIMD-group reduction (the reduction kernels are dispatched whatever the device answers); the matrix kernels chosen on supportsFamily(Apple7) at each MUL_MAT encode; no bfloat, no residency sets',
    evidence: ["b1853: ggml_metal_init read in llama.cpp's history (commit b38b5e9 adds the gate)"],
    rules: ['mm-encode-only'],
    gates: 'none',
    tuning: null,
    threadgroup: 'unread',
  },
  {
    id: 'legacy-b1853',
    first: { build: 1853 },
    opened: { commit: 'b38b5e9', pr: null },
    source: 'ggml-metal.m',
    releases: 'b1853 to b4039 (ggml-metal.m, before has_bfloat)',
    summary:
      'the reduction gate supportsFamily(Apple7) OR supportsFamily(Metal3) arrives; no bfloat, no residency sets',
    evidence: [
      "b1853: source read in llama.cpp's history (commit b38b5e9)",
      "b3658: ggml-metal.m's threadgroup-memory reads read (node-llama-cpp 2.8.16)",
    ],
    rules: [...LEGACY_BASE],
    gates: 'legacy',
    tuning: null,
    threadgroup: 'ggml-metal-m-b3658',
  },
  {
    id: 'legacy-b4040',
    first: { build: 4040 },
    opened: { commit: null, pr: '#8439' },
    source: 'ggml-metal.m',
    releases: 'b4040 to b4052 (ggml-metal.m, BF16 kernels on wherever has_bfloat)',
    summary:
      'has_bfloat (Metal3 or Apple6) arrives, and the BF16 kernels are on wherever it is true: no build switch yet',
    evidence: ["b4040: source read in llama.cpp's history (#8439)"],
    rules: [...LEGACY_BASE, 'bfloat-no-switch-legacy', 'use-bfloat-always'],
    gates: 'legacy',
    tuning: null,
    threadgroup: 'unread',
  },
  {
    id: 'legacy-b4053',
    first: { build: 4053 },
    opened: { commit: 'ec450d3', pr: null },
    source: 'ggml-metal.m',
    releases: 'b4053 to b4561 (ggml-metal.m, before residency sets)',
    summary: 'the BF16 kernels only in -DGGML_METAL_USE_BF16=ON builds; no residency sets',
    evidence: ["b4053: source read in llama.cpp's history (commit ec450d3)"],
    rules: [...LEGACY_BASE, 'bfloat-no-switch-legacy', 'use-bfloat-opt-in'],
    gates: 'legacy',
    tuning: null,
    threadgroup: 'unread',
  },
  {
    id: 'legacy',
    first: { build: 4562 },
    opened: { commit: '178a7eb', pr: null },
    source: 'ggml-metal.m',
    releases: 'b4562 to b6500 (ggml-metal.m)',
    summary:
      'residency sets and GGML_METAL_NO_RESIDENCY arrive (only in arm64 builds against the macOS 15 SDK); bfloat kernels only in -DGGML_METAL_USE_BF16=ON builds',
    evidence: [
      "b4562: source read in llama.cpp's history (commit 178a7eb)",
      'b4753: built and compared (node-llama-cpp 3.6.0); its ggml_backend_metal_device_get_memory read',
      'b6431: source read (node-llama-cpp 3.13.0)',
    ],
    rules: [...LEGACY_BASE, 'bfloat-no-switch-legacy', 'use-bfloat-opt-in', 'residency-legacy', 'working-set-legacy'],
    gates: 'legacy',
    tuning: null,
    threadgroup: 'ggml-metal-m',
  },
  {
    id: 'device-b6501',
    first: { build: 6501 },
    opened: { commit: '0320ac5', pr: '#15995' },
    source: 'ggml-metal-device.m',
    releases: 'b6501 to b6967 (ggml-metal-device.m, before the tensor API)',
    summary:
      'ggml_metal_device_init and its props: bfloat from has_bfloat (no GGML_METAL_USE_BF16), no has_tensor, no GGML_METAL_BF16_DISABLE; shared buffers from hasUnifiedMemory and GGML_METAL_SHARED_BUFFERS_DISABLE only',
    evidence: [
      "b6501: source read in llama.cpp's history (commit 0320ac5, #15995; b6500 is the last ggml-metal.m)",
      'b6673: built and compared (node-llama-cpp 3.14.0); its ggml_metal_device_get_memory read',
      "b6501 to b6967: ggml_metal_device_init read in llama.cpp's history (first changed by commit 5b180c3, build 6968)",
    ],
    rules: [...DEVICE_BASE, 'bfloat-no-switch-device', 'residency-device', 'shared-unified', 'working-set-device'],
    gates: 'device',
    tuning: null,
    threadgroup: 'asserts',
  },
  {
    id: 'device-b6968',
    first: { build: 6968 },
    opened: { commit: '5b180c3', pr: '#16634' },
    source: 'ggml-metal-device.m',
    releases: 'b6968 to b7009 (ggml-metal-device.m, tensor API on M5/M6 only)',
    summary:
      'has_tensor (Metal4, on by name for M5 and M6 only) and GGML_METAL_BF16_DISABLE arrive (llama.cpp #16634); shared buffers unchanged',
    evidence: [
      "b6968: source read in llama.cpp's history (commit 5b180c3, #16634, the build that adds both); no node-llama-cpp release ships a build of this range",
    ],
    rules: [
      ...DEVICE_BASE,
      'bfloat-switch',
      'tensor-b6968',
      'residency-device',
      'shared-unified',
      'working-set-device',
    ],
    gates: 'device',
    tuning: null,
    threadgroup: 'asserts',
  },
  {
    id: 'device-b7010',
    first: { build: 7010 },
    opened: { commit: 'c27efd2', pr: '#17087' },
    source: 'ggml-metal-device.m',
    releases: 'b7010 to b7410 (ggml-metal-device.m, before eGPU shared buffers)',
    summary: 'the tensor API by name also for A19 and A20 (llama.cpp #17087); shared buffers unchanged',
    evidence: [
      "b7010: source read in llama.cpp's history (commit c27efd2, #17087)",
      'b7347: built and compared (node-llama-cpp 3.14.5)',
    ],
    rules: [
      ...DEVICE_BASE,
      'bfloat-switch',
      'tensor-b7010',
      'residency-device',
      'shared-unified',
      'working-set-device',
    ],
    gates: 'device',
    tuning: null,
    threadgroup: 'asserts',
  },
  {
    id: 'device-b7411',
    first: { build: 7411 },
    opened: { commit: '165caaf', pr: '#17866' },
    source: 'ggml-metal-device.m',
    releases: 'b7411 to b9332 (ggml-metal-device.m, before device_id)',
    summary: 'an external GPU gets shared buffers, and GGML_METAL_SHARED_BUFFERS_ENABLE forces them (llama.cpp #17866)',
    evidence: [
      "b7411: source read in llama.cpp's history (commit 165caaf, #17866)",
      'b8390: built and compared (node-llama-cpp 3.18.1)',
      'b7698, b8121, b8390: Mach-O binaries read (@node-llama-cpp/mac-arm64-metal 3.15.0 to 3.18.1)',
    ],
    rules: [
      ...DEVICE_BASE,
      'bfloat-switch',
      'tensor-b7010',
      'residency-device',
      'shared-location',
      'working-set-device',
    ],
    gates: 'device',
    tuning: null,
    threadgroup: 'asserts',
  },
  {
    id: 'device',
    first: { build: 9333 },
    opened: { commit: '35c9b1f', pr: '#23566' },
    source: 'ggml-metal-device.m',
    releases: 'b9333 to b10586 and v0.1 to v0.3.x (ggml-metal-device.m, device_id before per-chip tuning)',
    summary:
      'device_id parsed from the device name (llama.cpp #23566; its chip table has no A18 Pro), read by nothing yet; no gpu_family or tuning',
    evidence: [
      "b9333: source read in llama.cpp's history (commit 35c9b1f, #23566)",
      'b10361: built and compared (node-llama-cpp 3.20.0)',
      'b10068, b10361: Mach-O binaries read (@node-llama-cpp/mac-arm64-metal 3.19.1, 3.20.0)',
    ],
    rules: [
      ...DEVICE_BASE,
      'bfloat-switch',
      'tensor-b7010',
      'residency-device',
      'shared-location',
      'device-id-b9333',
      'working-set-device',
    ],
    gates: 'device',
    tuning: null,
    threadgroup: 'asserts',
  },
  {
    id: 'chip-tuning',
    first: { version: [0, 4, 0] },
    opened: { commit: null, pr: '#26570' },
    nightlyAfter: 10586,
    source: 'ggml-metal-device.m',
    releases: 'v0.4.x and nightly builds after b10586',
    summary:
      'gpu_family, and flash-attention tuning by chip (device_id, whose table gains the A18 Pro), then by family representative (llama.cpp #25750, merged as #26570 after b10586)',
    evidence: [
      'v0.4.0: built and compared (node-llama-cpp 3.21.1)',
      'v0.4.0: Mach-O binaries read (@node-llama-cpp/mac-arm64-metal 3.21.1)',
    ],
    rules: [
      ...DEVICE_BASE,
      'bfloat-switch',
      'tensor-b7010',
      'residency-device',
      'shared-location',
      'gpu-family',
      'device-id',
      'working-set-device',
    ],
    gates: 'device',
    tuning: 'chip',
    threadgroup: 'vec-fallback-chip',
  },
  {
    id: 'current',
    first: { version: [0, 5, 0] },
    opened: { commit: null, pr: null },
    source: 'ggml-metal-device.m',
    releases: 'v0.5.0 and later',
    summary:
      'flash-attention tuning by Apple GPU family alone; an external GPU gets shared buffers only in x86_64 builds',
    evidence: ['v0.5.0: built and compared (node-llama-cpp 3.22.1); its ggml_metal_device_get_memory read'],
    rules: [
      ...DEVICE_BASE,
      'bfloat-switch',
      'tensor-b7010',
      'residency-device',
      'shared-location-x86',
      'gpu-family',
      'device-id',
      'working-set-device',
    ],
    gates: 'device',
    tuning: 'family',
    threadgroup: 'vec-fallback-family',
  },
] as const satisfies readonly LlamaCppRuleSetInfo[]);
