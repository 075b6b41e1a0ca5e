/**
 * Which llama.cpp releases each rule set describes, and how a release, a loaded ggml or node-llama-cpp's build
 * metadata is mapped to one. The ranges come from llama.cpp's own sources and binaries: the releases the
 * conformance suite builds and compares (test/conformance/), the sources and Mach-O binaries node-llama-cpp ships
 * for other releases, read once. Between two releases seen on either side of a change the boundary is not known
 * exactly; a release there gets the older rule set and a warning saying so.
 */

/** A llama.cpp rule set, oldest first; `current` and `legacy` name the newest of each source generation. */
export type LlamaCppRuleSet = 'legacy' | 'device' | 'chip-tuning' | 'current';

/** Every llama.cpp rule set, oldest first. */
export const LLAMA_CPP_RULE_SETS: readonly LlamaCppRuleSet[] = Object.freeze([
  'legacy',
  'device',
  'chip-tuning',
  'current',
] as const);

/** What one rule set covers. */
export interface LlamaCppRuleSetInfo {
  id: LlamaCppRuleSet;
  /** The file that computes the flags. */
  source: 'ggml-metal.m' | 'ggml-metal-device.m';
  /** The release range, in words. */
  releases: string;
  /** What sets it apart from the rule set before it. */
  summary: string;
  /** Releases whose own code was compared with these rules, and how. */
  evidence: readonly string[];
}

/** The rule sets, by id. */
export const LLAMA_CPP_RULE_SET_INFO: Readonly<Record<LlamaCppRuleSet, LlamaCppRuleSetInfo>> = Object.freeze({
  legacy: {
    id: 'legacy',
    source: 'ggml-metal.m',
    releases: 'up to b6431 (ggml-metal.m)',
    summary:
      'the device context of ggml-metal.m: bfloat kernels only in -DGGML_METAL_USE_BF16=ON builds, residency sets only in arm64 builds against the macOS 15 SDK',
    evidence: ['b4753: built and compared (node-llama-cpp 3.6.0)', 'b6431: source read (node-llama-cpp 3.13.0)'],
  },
  device: {
    id: 'device',
    source: 'ggml-metal-device.m',
    releases: 'b6673 to b10361 (ggml-metal-device.m, before per-chip tuning)',
    summary: 'ggml_metal_device_init and its props; no device_id or GPU-family tuning yet',
    evidence: [
      'b6673: source read (node-llama-cpp 3.14.0)',
      'b7698, b8121, b8390, b10068, b10361: Mach-O binaries read (@node-llama-cpp/mac-arm64-metal 3.15.0 to 3.20.0)',
    ],
  },
  'chip-tuning': {
    id: 'chip-tuning',
    source: 'ggml-metal-device.m',
    releases: 'v0.4.x',
    summary:
      'device_id parsed from the device name and gpu_family; flash-attention tuning by chip, then by family representative',
    evidence: [
      'v0.4.0: built and compared (node-llama-cpp 3.21.1)',
      'v0.4.0: Mach-O binaries read (@node-llama-cpp/mac-arm64-metal 3.21.1)',
    ],
  },
  current: {
    id: 'current',
    source: 'ggml-metal-device.m',
    releases: 'v0.5.0 and later',
    summary:
      'flash-attention tuning by Apple GPU family alone; an external GPU gets shared buffers only in x86_64 builds',
    evidence: ['v0.5.0: built and compared (node-llama-cpp 3.22.1)'],
  },
});

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
    if (n <= LAST_UNTUNED_BUILD_SEEN) return { ruleSet: 'device', warning: null };
    return {
      ruleSet: 'device',
      warning: `llama.cpp ${release.text} is newer than b${LAST_UNTUNED_BUILD_SEEN}, the newest b-numbered release seen without per-chip tuning: device rules assumed (v0.4.0's per-chip tuning may apply)`,
    };
  }
  if (versionAtLeast(release.version, [0, 5, 0])) return { ruleSet: 'current', warning: null };
  if (versionAtLeast(release.version, [0, 4, 0])) return { ruleSet: 'chip-tuning', warning: null };
  return {
    ruleSet: 'device',
    warning: `llama.cpp ${release.text} is older than v0.4.0, the first release seen with per-chip tuning: device rules assumed`,
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

/** ggml's semantic versions, as the releases seen ship them: b6673 ggml 0.9.4, b10361 0.19.0, v0.4.0 0.23.0, v0.5.0 0.25.1. */
const GGML_VERSION_RULES: readonly { min: [number, number, number]; ruleSet: LlamaCppRuleSet }[] = [
  { min: [0, 25, 0], ruleSet: 'current' },
  { min: [0, 23, 0], ruleSet: 'chip-tuning' },
  { min: [0, 9, 0], ruleSet: 'device' },
];

/** The rule set a ggml version implies; before ggml 0.9 its version was `0.0.<llama.cpp build number>`. */
export function ruleSetForGgmlVersion(text: string): { ruleSet: LlamaCppRuleSet; warning: string | null } | null {
  const m = /^(\d{1,4})\.(\d{1,4})\.(\d{1,7})/.exec(text);
  if (m === null) return null;
  const version: [number, number, number] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (version[0] === 0 && version[1] === 0)
    return ruleSetForRelease({ kind: 'build', build: version[2], text: `b${version[2]}` });
  const rule = GGML_VERSION_RULES.find((r) => versionAtLeast(version, r.min));
  return rule === undefined ? null : { ruleSet: rule.ruleSet, warning: null };
}

/**
 * Decides a loaded ggml-metal's rules: the generation markers it exports first (they are what the binary contains),
 * then node-llama-cpp's release tag, then ggml's own version; an image with none of them is legacy ggml-metal.m.
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
  const marker = LLAMA_CPP_GENERATION_MARKERS.find((m) => m.symbols.some((symbol) => found.markers.includes(symbol)));
  if (marker !== undefined) {
    return {
      ruleSet: marker.ruleSet,
      release: found.nodeLlamaCppRelease,
      detail: `${base}: ${what}; it exports ${marker.meaning}`,
    };
  }
  const release = found.nodeLlamaCppRelease === null ? null : parseRelease(found.nodeLlamaCppRelease);
  const byRelease = release === null ? null : ruleSetForRelease(release);
  const byVersion = byRelease === null && found.ggmlVersion !== null ? ruleSetForGgmlVersion(found.ggmlVersion) : null;
  const decided = byRelease ?? byVersion;
  if (decided !== null) {
    const why = byRelease !== null ? 'rules by its release' : 'rules by its ggml version';
    return {
      ruleSet: decided.ruleSet,
      release: found.nodeLlamaCppRelease,
      detail: `${base}: ${what}; ${why}${decided.warning === null ? '' : ` (${decided.warning})`}`,
    };
  }
  return {
    ruleSet: 'legacy',
    release: found.nodeLlamaCppRelease,
    detail: `${base}: ${what}; no ggml-metal-device.m symbol, release or version: legacy rules`,
  };
}
