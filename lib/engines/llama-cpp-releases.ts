/**
 * Which llama.cpp releases each rule set describes, and how a release, a loaded ggml or node-llama-cpp's build
 * metadata is mapped to one. The ranges come from llama.cpp's own sources and binaries: the releases the
 * conformance suite builds and compares (test/conformance/), the sources and Mach-O binaries node-llama-cpp ships
 * for other releases, read once. Between two releases seen on either side of a change the boundary is not known
 * exactly; a release there gets the older rule set and a warning saying so.
 */

/** Where a rule set begins: a build number (`b7411` is build 7411) or a semantic version (`v0.4.0`). */
export type RuleSetStart = { build: number } | { version: readonly [number, number, number] };

/** One llama.cpp rule set: which releases it covers, from what, and the evidence. */
export interface LlamaCppRuleSetInfo {
  id: string;
  /** The first release it covers (the legacy rules cover everything before ggml-metal-device.m: build 0). */
  first: RuleSetStart;
  /** The file that computes the flags. */
  source: 'ggml-metal.m' | 'ggml-metal-device.m';
  /** The release range, in words. */
  releases: string;
  /** What sets it apart from the rule set before it. */
  summary: string;
  /** Releases whose own code was compared with these rules, and how. */
  evidence: readonly string[];
}

/**
 * The llama.cpp rule sets, oldest first: the one place a rule set is declared. The union of ids, the list `--rules`
 * takes and its help, the release boundaries and the conformance eras' expectations are read from here; each rule
 * set's rule table and op gates are keyed by these ids (llama-cpp.ts), so the compiler asks for them. `current`,
 * `device` and `legacy` name the newest of each source generation; the older ggml-metal-device.m rule sets are named
 * by the first release they cover (`device-b6968`).
 */
export const LLAMA_CPP_RULE_SET_REGISTRY = Object.freeze([
  {
    id: 'legacy',
    first: { build: 0 },
    source: 'ggml-metal.m',
    releases: 'up to b6431 (ggml-metal.m)',
    summary:
      'the device context of ggml-metal.m: bfloat kernels only in -DGGML_METAL_USE_BF16=ON builds, residency sets only in arm64 builds against the macOS 15 SDK',
    evidence: ['b4753: built and compared (node-llama-cpp 3.6.0)', 'b6431: source read (node-llama-cpp 3.13.0)'],
  },
  {
    id: 'device-b6673',
    first: { build: 6673 },
    source: 'ggml-metal-device.m',
    releases: 'b6673 to b6967 (ggml-metal-device.m, before the tensor API)',
    summary:
      'ggml_metal_device_init and its props: no has_tensor, no GGML_METAL_BF16_DISABLE; shared buffers from hasUnifiedMemory and GGML_METAL_SHARED_BUFFERS_DISABLE only',
    evidence: [
      'b6673: built and compared (node-llama-cpp 3.14.0)',
      "b6673 to b6967: ggml_metal_device_init read in llama.cpp's history (first changed by commit 5b180c3, build 6968)",
    ],
  },
  {
    id: 'device-b6968',
    first: { build: 6968 },
    source: 'ggml-metal-device.m',
    releases: 'b6968 to b7009 (ggml-metal-device.m, tensor API on M5/M6 only)',
    summary:
      'has_tensor (Metal4, on by name for M5 and M6 only) and GGML_METAL_BF16_DISABLE arrive (llama.cpp #16634); shared buffers unchanged',
    evidence: [
      "b6968: source read in llama.cpp's history (commit 5b180c3, #16634, the build that adds both); no node-llama-cpp release ships a build of this range",
    ],
  },
  {
    id: 'device-b7010',
    first: { build: 7010 },
    source: 'ggml-metal-device.m',
    releases: 'b7010 to b7410 (ggml-metal-device.m, before eGPU shared buffers)',
    summary: 'the tensor API by name also for A19 and A20 (llama.cpp #17087); shared buffers unchanged',
    evidence: [
      "b7010: source read in llama.cpp's history (commit c27efd2, #17087)",
      'b7347: built and compared (node-llama-cpp 3.14.5)',
    ],
  },
  {
    id: 'device-b7411',
    first: { build: 7411 },
    source: 'ggml-metal-device.m',
    releases: 'b7411 to b9332 (ggml-metal-device.m, before device_id)',
    summary: 'an external GPU gets shared buffers, and GGML_METAL_SHARED_BUFFERS_ENABLE forces them (llama.cpp #17866)',
    evidence: [
      "b7411: source read in llama.cpp's history (commit 165caaf, #17866)",
      'b8390: built and compared (node-llama-cpp 3.18.1)',
      'b7698, b8121, b8390: Mach-O binaries read (@node-llama-cpp/mac-arm64-metal 3.15.0 to 3.18.1)',
    ],
  },
  {
    id: 'device',
    first: { build: 9333 },
    source: 'ggml-metal-device.m',
    releases: 'b9333 to v0.3.x (ggml-metal-device.m, device_id before per-chip tuning)',
    summary:
      'device_id parsed from the device name (llama.cpp #23566; its chip table has no A18 Pro), read by nothing yet; no gpu_family or tuning',
    evidence: [
      "b9333: source read in llama.cpp's history (commit 35c9b1f, #23566)",
      'b10361: built and compared (node-llama-cpp 3.20.0)',
      'b10068, b10361: Mach-O binaries read (@node-llama-cpp/mac-arm64-metal 3.19.1, 3.20.0)',
    ],
  },
  {
    id: 'chip-tuning',
    first: { version: [0, 4, 0] },
    source: 'ggml-metal-device.m',
    releases: 'v0.4.x',
    summary:
      'gpu_family, and flash-attention tuning by chip (device_id, whose table gains the A18 Pro), then by family representative',
    evidence: [
      'v0.4.0: built and compared (node-llama-cpp 3.21.1)',
      'v0.4.0: Mach-O binaries read (@node-llama-cpp/mac-arm64-metal 3.21.1)',
    ],
  },
  {
    id: 'current',
    first: { version: [0, 5, 0] },
    source: 'ggml-metal-device.m',
    releases: 'v0.5.0 and later',
    summary:
      'flash-attention tuning by Apple GPU family alone; an external GPU gets shared buffers only in x86_64 builds',
    evidence: ['v0.5.0: built and compared (node-llama-cpp 3.22.1)'],
  },
] as const satisfies readonly LlamaCppRuleSetInfo[]);

/** A llama.cpp rule set's id (LLAMA_CPP_RULE_SET_REGISTRY), oldest first: `legacy` … `current`. */
export type LlamaCppRuleSet = (typeof LLAMA_CPP_RULE_SET_REGISTRY)[number]['id'];

/** Every llama.cpp rule set, oldest first. */
export const LLAMA_CPP_RULE_SETS: readonly LlamaCppRuleSet[] = Object.freeze(
  LLAMA_CPP_RULE_SET_REGISTRY.map((r) => r.id),
);

/** The rule sets, by id. */
export const LLAMA_CPP_RULE_SET_INFO: Readonly<Record<LlamaCppRuleSet, LlamaCppRuleSetInfo>> = Object.freeze(
  Object.fromEntries(LLAMA_CPP_RULE_SET_REGISTRY.map((r) => [r.id, r])) as unknown as Record<
    LlamaCppRuleSet,
    LlamaCppRuleSetInfo
  >,
);

/** The ggml-metal-device.m rule sets before per-chip tuning (b-numbered releases), oldest first. */
export const LLAMA_CPP_DEVICE_RULE_SETS = Object.freeze(
  LLAMA_CPP_RULE_SET_REGISTRY.filter((r) => r.source === 'ggml-metal-device.m' && 'build' in r.first).map((r) => r.id),
) as readonly DeviceRuleSet[];

/** One of the ggml-metal-device.m rule sets before per-chip tuning. */
export type DeviceRuleSet = Extract<
  (typeof LLAMA_CPP_RULE_SET_REGISTRY)[number],
  { source: 'ggml-metal-device.m'; first: { build: number } }
>['id'];

/** One of LLAMA_CPP_DEVICE_RULE_SETS. */
export function isDeviceRuleSet(ruleSet: LlamaCppRuleSet): ruleSet is DeviceRuleSet {
  return (LLAMA_CPP_DEVICE_RULE_SETS as readonly LlamaCppRuleSet[]).includes(ruleSet);
}

/** A llama.cpp release tag, parsed: `b4753` (a build number) or `v0.4.0` (from 2026). */
export type LlamaCppRelease =
  | { kind: 'build'; build: number; text: string }
  | { kind: 'version'; version: [number, number, number]; text: string };

/** Parses a llama.cpp release tag (`b4753`, `v0.4.0`); null when `text` is neither. */
export function parseRelease(text: string): LlamaCppRelease | null {
  const build = /^b(\d{1,7})$/.exec(text);
  if (build !== null) return { kind: 'build', build: Number(build[1]), text };
  const version = /^v(\d{1,4})\.(\d{1,4})\.(\d{1,4})$/.exec(text);
  if (version !== null)
    return { kind: 'version', version: [Number(version[1]), Number(version[2]), Number(version[3])], text };
  return null;
}

function versionAtLeast(v: readonly [number, number, number], min: readonly [number, number, number]): boolean {
  for (let i = 0; i < 3; i++) if (v[i] !== min[i]) return v[i]! > min[i]!;
  return true;
}

/** The last ggml-metal.m release and the first ggml-metal-device.m release seen (node-llama-cpp 3.13.0 and 3.14.0). */
const LAST_LEGACY_SEEN = 6431;
const FIRST_DEVICE_SEEN = 6673;
/** The newest b-numbered release seen without per-chip tuning (@node-llama-cpp/mac-arm64-metal 3.20.0). */
const LAST_UNTUNED_BUILD_SEEN = 10361;
/**
 * The builds that change ggml_metal_device_init's reads, newest first, from the registry (llama.cpp's history): a
 * release tag bN is build N (`git rev-list --count` of its commit), on a history without merges, so every release from
 * bN on contains build N.
 */
const DEVICE_BOUNDARIES: readonly { first: number; ruleSet: LlamaCppRuleSet }[] = LLAMA_CPP_RULE_SET_REGISTRY.flatMap(
  (r) => (r.source === 'ggml-metal-device.m' && 'build' in r.first ? [{ first: r.first.build, ruleSet: r.id }] : []),
).reverse();
/** The newest rule set of b-numbered releases (before v0.4.0's per-chip tuning). */
const NEWEST_DEVICE: LlamaCppRuleSet = DEVICE_BOUNDARIES[0]!.ruleSet;
/** The semantic-version rule sets, newest first. */
const VERSION_BOUNDARIES: readonly { first: readonly [number, number, number]; ruleSet: LlamaCppRuleSet }[] =
  LLAMA_CPP_RULE_SET_REGISTRY.flatMap((r) =>
    'version' in r.first ? [{ first: r.first.version, ruleSet: r.id }] : [],
  ).reverse();

/** The rule set for a release, with a warning when the release lies where the boundary is not known exactly. */
export function ruleSetForRelease(release: LlamaCppRelease): { ruleSet: LlamaCppRuleSet; warning: string | null } {
  if (release.kind === 'build') {
    const n = release.build;
    if (n <= LAST_LEGACY_SEEN) return { ruleSet: 'legacy', warning: null };
    if (n < FIRST_DEVICE_SEEN) {
      return {
        ruleSet: 'legacy',
        warning: `llama.cpp ${release.text} lies between b${LAST_LEGACY_SEEN} (the last ggml-metal.m release seen) and b${FIRST_DEVICE_SEEN} (the first ggml-metal-device.m release seen): legacy rules assumed`,
      };
    }
    if (n <= LAST_UNTUNED_BUILD_SEEN)
      return { ruleSet: DEVICE_BOUNDARIES.find((b) => n >= b.first)!.ruleSet, warning: null };
    return {
      ruleSet: NEWEST_DEVICE,
      warning: `llama.cpp ${release.text} is newer than b${LAST_UNTUNED_BUILD_SEEN}, the newest b-numbered release seen without per-chip tuning: ${NEWEST_DEVICE} rules assumed (v0.4.0's per-chip tuning may apply)`,
    };
  }
  const byVersion = VERSION_BOUNDARIES.find((b) => versionAtLeast(release.version, b.first));
  if (byVersion !== undefined) return { ruleSet: byVersion.ruleSet, warning: null };
  const oldest = VERSION_BOUNDARIES[VERSION_BOUNDARIES.length - 1]!;
  return {
    ruleSet: NEWEST_DEVICE,
    warning: `llama.cpp ${release.text} is older than v${oldest.first.join('.')}, the first release seen with per-chip tuning: ${NEWEST_DEVICE} rules assumed`,
  };
}

/**
 * Exported symbols that tell the rule generations apart in a loaded ggml-metal, newest first (dlsym names, without
 * Mach-O's leading underscore). node-llama-cpp's Mach-O builds export them (test/conformance/binaries.test.ts).
 * int64_t mangles as `x` (long long) on Darwin and as `l` (long) on 64-bit Linux, so each C++ marker has both.
 */
export const LLAMA_CPP_GENERATION_MARKERS: readonly {
  symbols: readonly string[];
  ruleSet: LlamaCppRuleSet;
  meaning: string;
}[] = Object.freeze([
  {
    symbols: ['_ZN17ggml_metal_tuning11fa_vec_pickEiiiixx', '_ZN17ggml_metal_tuning11fa_vec_pickEiiiill'],
    ruleSet: 'current',
    meaning: 'ggml_metal_tuning::fa_vec_pick(int gpu_family, …): tuning by GPU family',
  },
  {
    symbols: [
      '_ZN17ggml_metal_tuning11fa_vec_pickE20ggml_metal_device_idiiiixx',
      '_ZN17ggml_metal_tuning11fa_vec_pickE20ggml_metal_device_idiiiill',
    ],
    ruleSet: 'chip-tuning',
    meaning: 'ggml_metal_tuning::fa_vec_pick(ggml_metal_device_id, …): tuning by chip',
  },
  { symbols: ['ggml_metal_device_init'], ruleSet: 'device', meaning: 'ggml_metal_device_init: ggml-metal-device.m' },
]);

/** What the consumer scan found of one loaded ggml-metal. */
export interface LoadedGgmlMetal {
  /** The image that holds it (libggml-metal.so in node-llama-cpp), as a path. */
  image: string;
  /** ggml_version() of the loaded ggml; null when its ggml has none (before ggml 0.9, 2025). */
  ggmlVersion: string | null;
  /** Which of LLAMA_CPP_GENERATION_MARKERS the image exports. */
  markers: string[];
  /** The llama.cpp release node-llama-cpp's `_nlcBuildMetadata.json` next to the image names; null without one. */
  nodeLlamaCppRelease: string | null;
}

/** The rule set that applies to a loaded ggml-metal, and the release to name for it. */
export interface LoadedRules {
  ruleSet: LlamaCppRuleSet;
  /** The llama.cpp release (from node-llama-cpp's metadata), or null when only ggml's version is known. */
  release: string | null;
  /** One line: which release, and what decided the rule set. */
  detail: string;
}

/**
 * ggml's semantic versions, as the releases seen ship them: b6673 ggml 0.9.4, b8390 0.9.7, b9842 0.15.3, b10361 0.19.0,
 * v0.4.0 0.23.0, v0.5.0 0.25.1. In llama.cpp's history ggml 0.9.0 arrives in b6526, 0.9.5 in b7596, 0.13.0 in b9325 and
 * 0.14.0 in b9560, so 0.9.0 to 0.9.4 and 0.13.x each span rule-set boundaries and cannot tell the sets on either side
 * apart (`spans`, `across`): the older is assumed, with a warning.
 */
const GGML_VERSION_RULES: readonly {
  min: [number, number, number];
  ruleSet: LlamaCppRuleSet;
  spans?: string;
  across?: string;
}[] = [
  { min: [0, 25, 0], ruleSet: 'current' },
  { min: [0, 23, 0], ruleSet: 'chip-tuning' },
  { min: [0, 14, 0], ruleSet: 'device' },
  { min: [0, 13, 0], ruleSet: 'device-b7411', spans: 'b9325 to b9559', across: 'device_id (b9333)' },
  { min: [0, 9, 5], ruleSet: 'device-b7411' },
  {
    min: [0, 9, 0],
    ruleSet: 'device-b6673',
    spans: 'b6526 to b7595',
    across:
      "ggml-metal-device.m's arrival (b6673), the BF16 switch and tensor flag (b6968), the A19/A20 tensor names (b7010) and eGPU shared buffers (b7411)",
  },
];

/** The rule set a ggml version implies; before ggml 0.9 its version was `0.0.<llama.cpp build number>`. */
export function ruleSetForGgmlVersion(text: string): { ruleSet: LlamaCppRuleSet; warning: string | null } | null {
  const m = /^(\d{1,4})\.(\d{1,4})\.(\d{1,7})/.exec(text);
  if (m === null) return null;
  const version: [number, number, number] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (version[0] === 0 && version[1] === 0)
    return ruleSetForRelease({ kind: 'build', build: version[2], text: `b${version[2]}` });
  const rule = GGML_VERSION_RULES.find((r) => versionAtLeast(version, r.min));
  if (rule === undefined) return null;
  const legacyToo = rule.ruleSet === 'device-b6673' ? '; a build before b6673 follows the legacy rules' : '';
  return {
    ruleSet: rule.ruleSet,
    warning:
      rule.spans === undefined
        ? null
        : `ggml ${text} shipped with llama.cpp ${rule.spans}, across ${rule.across}: the older ${rule.ruleSet} rules (${LLAMA_CPP_RULE_SET_INFO[rule.ruleSet].releases}) assumed${legacyToo}`,
  };
}

/**
 * Decides a loaded ggml-metal's rules: the generation markers it exports first (they are what the binary contains),
 * then node-llama-cpp's release tag, then ggml's own version; an image with none of them is legacy ggml-metal.m.
 * ggml_metal_device_init alone does not say which ggml-metal-device.m release it is: the release or the version then
 * picks among the device rule sets, and without either the newest (`device`) is assumed, with a warning.
 */
export function rulesOfLoaded(found: LoadedGgmlMetal): LoadedRules {
  const base = found.image.slice(found.image.lastIndexOf('/') + 1);
  const what = [
    found.nodeLlamaCppRelease !== null
      ? `llama.cpp ${found.nodeLlamaCppRelease} (node-llama-cpp's build metadata)`
      : null,
    found.ggmlVersion !== null ? `ggml ${found.ggmlVersion}` : 'no ggml_version()',
  ]
    .filter((x) => x !== null)
    .join(', ');
  const release = found.nodeLlamaCppRelease === null ? null : parseRelease(found.nodeLlamaCppRelease);
  const byRelease = release === null ? null : ruleSetForRelease(release);
  const byVersion = byRelease === null && found.ggmlVersion !== null ? ruleSetForGgmlVersion(found.ggmlVersion) : null;
  const decided = byRelease ?? byVersion;
  const why = byRelease !== null ? 'rules by its release' : 'rules by its ggml version';
  const warned = (w: string | null) => (w === null ? '' : ` (${w})`);
  const marker = LLAMA_CPP_GENERATION_MARKERS.find((m) => m.symbols.some((symbol) => found.markers.includes(symbol)));
  if (marker !== undefined) {
    const exported = `${base}: ${what}; it exports ${marker.meaning}`;
    if (marker.ruleSet !== 'device')
      return { ruleSet: marker.ruleSet, release: found.nodeLlamaCppRelease, detail: exported };
    if (decided !== null && isDeviceRuleSet(decided.ruleSet)) {
      return {
        ruleSet: decided.ruleSet,
        release: found.nodeLlamaCppRelease,
        detail: `${exported}; ${why}${warned(decided.warning)}`,
      };
    }
    return {
      ruleSet: 'device',
      release: found.nodeLlamaCppRelease,
      detail: `${exported}${warned(
        decided === null
          ? `no release or ggml version says which: the newest device rules (${LLAMA_CPP_RULE_SET_INFO.device.releases}) assumed`
          : `its ${why.slice('rules by its '.length)} points to the ${decided.ruleSet} rules, which its exports contradict: the newest device rules (${LLAMA_CPP_RULE_SET_INFO.device.releases}) assumed`,
      )}`,
    };
  }
  if (decided !== null) {
    return {
      ruleSet: decided.ruleSet,
      release: found.nodeLlamaCppRelease,
      detail: `${base}: ${what}; ${why}${warned(decided.warning)}`,
    };
  }
  return {
    ruleSet: 'legacy',
    release: found.nodeLlamaCppRelease,
    detail: `${base}: ${what}; no ggml-metal-device.m symbol, release or version: legacy rules`,
  };
}
