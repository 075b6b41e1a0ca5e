/**
 * How a release, a loaded ggml or node-llama-cpp's build metadata is mapped to a llama.cpp rule set, read from the
 * registry (llama-cpp-rule-sets.ts). A b-numbered release is mapped by the first build of each row; a nightly build
 * after a semantic-version row's `nightlyAfter` gets that row with a warning, since its first build is not pinned.
 */

import { LLAMA_CPP_RULE_SET_REGISTRY, type LlamaCppRuleSetInfo } from './llama-cpp-rule-sets.js';

export {
  LLAMA_CPP_RULE_SET_REGISTRY,
  type LlamaCppRuleKey,
  type LlamaCppRuleSetInfo,
  type RuleSetCitation,
  type RuleSetStart,
} from './llama-cpp-rule-sets.js';

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

/**
 * The rows that start at a build, newest first: a release tag bN is build N (`git rev-list --count` of its commit), on
 * a history without merges, so every release from bN on contains build N.
 */
function buildBoundaries(): { first: number; ruleSet: LlamaCppRuleSet }[] {
  return LLAMA_CPP_RULE_SET_REGISTRY.flatMap((r) =>
    'build' in r.first ? [{ first: r.first.build, ruleSet: r.id as LlamaCppRuleSet }] : [],
  ).reverse();
}

/** The semantic-version rows, newest first. */
function versionBoundaries(): { first: readonly [number, number, number]; ruleSet: LlamaCppRuleSet }[] {
  return LLAMA_CPP_RULE_SET_REGISTRY.flatMap((r) =>
    'version' in r.first ? [{ first: r.first.version, ruleSet: r.id as LlamaCppRuleSet }] : [],
  ).reverse();
}

/** The oldest semantic-version row whose change reached the nightly builds before build `n`, if any. */
function nightlyRowFor(n: number): LlamaCppRuleSetInfo | undefined {
  return (LLAMA_CPP_RULE_SET_REGISTRY as readonly LlamaCppRuleSetInfo[]).find(
    (r) => r.nightlyAfter !== undefined && n > r.nightlyAfter,
  );
}

/** The rule set for a release, with a warning when the release lies where the boundary is not known exactly. */
export function ruleSetForRelease(release: LlamaCppRelease): { ruleSet: LlamaCppRuleSet; warning: string | null } {
  const builds = buildBoundaries();
  const newestBuildRow = builds[0]!.ruleSet;
  if (release.kind === 'build') {
    const n = release.build;
    const nightly = nightlyRowFor(n);
    if (nightly !== undefined) {
      const later = LLAMA_CPP_RULE_SET_REGISTRY.slice(
        LLAMA_CPP_RULE_SET_REGISTRY.findIndex((r) => r.id === nightly.id) + 1,
      );
      const laterText = later.length === 0 ? '' : `; the changes of ${later.map((r) => r.id).join(', ')} may apply too`;
      return {
        ruleSet: nightly.id as LlamaCppRuleSet,
        warning: `llama.cpp ${release.text} is a nightly build after b${nightly.nightlyAfter}, after which ${nightly.opened.pr ?? 'the change'} brought the ${nightly.id} rules; its first build is not pinned, so ${nightly.id} rules assumed${laterText}`,
      };
    }
    return { ruleSet: builds.find((b) => n >= b.first)!.ruleSet, warning: null };
  }
  const versions = versionBoundaries();
  const byVersion = versions.find((b) => versionAtLeast(release.version, b.first));
  if (byVersion !== undefined) return { ruleSet: byVersion.ruleSet, warning: null };
  const oldest = versions[versions.length - 1]!;
  return {
    ruleSet: newestBuildRow,
    warning: `llama.cpp ${release.text} is older than v${oldest.first.join('.')}, the first release seen with per-chip tuning: ${newestBuildRow} rules assumed`,
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
    ruleSet: 'device-b6501',
    spans: 'b6526 to b7595',
    across: 'the BF16 switch and tensor flag (b6968), the A19/A20 tensor names (b7010) and eGPU shared buffers (b7411)',
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
  return {
    ruleSet: rule.ruleSet,
    warning:
      rule.spans === undefined
        ? null
        : `ggml ${text} shipped with llama.cpp ${rule.spans}, across ${rule.across}: the older ${rule.ruleSet} rules (${LLAMA_CPP_RULE_SET_INFO[rule.ruleSet].releases}) assumed`,
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

// ---------------------------------------------------------------------------------------------------------------
// Release names. llama.cpp names a release two ways: a b-number (bN, build N: the commit count of its history) for
// every build, and from v0.1 a version (vX.Y.Z) for tagged releases, whose own builds report build number 0. One tool
// tells a release by its tag (node-llama-cpp), another by its build number and commit (llama-bench): every output
// names it through llamaCppReleaseName, so the same release reads the same wherever it is printed.

/**
 * The releases the conformance suite builds, by the first 7 digits of their commit (test/conformance/eras.mjs,
 * test/fixtures/bench/llama-bench-eras/): a build that prints only its commit is named by its tag.
 */
const RELEASE_OF_COMMIT: Readonly<Record<string, string>> = Object.freeze({
  c32cb08: 'b3658',
  '67002f8': 'b4753',
  '50d26e8': 'b6673',
  '57a6f5c': 'b7347',
  b10e98a: 'b8390',
  c2fd87e: 'b10361',
  '80fb11a': 'v0.4.0',
  de3ff81: 'v0.5.0',
});

/** The release tag a commit is known to be, if any. */
function releaseOfCommit(commit: string | null): string | null {
  if (commit === null || !/^[0-9a-f]{7,40}$/.test(commit)) return null;
  return RELEASE_OF_COMMIT[commit.slice(0, 7)] ?? null;
}

/**
 * A llama.cpp release as every output names it: the b-number, then the version, then the commit, each where known,
 * the first alone and the others in parentheses: `b6673 (50d26e8)`, `v0.5.0 (de3ff81)` for llama-bench's
 * `build_number 0, build_commit de3ff81`, `v0.5.0` from node-llama-cpp. A build number of 0 (a tagged release's
 * build) is none. Null when nothing is known.
 */
export function llamaCppReleaseName(known: {
  tag?: string | null;
  build?: number | null;
  commit?: string | null;
}): string | null {
  const commit = known.commit ?? null;
  const tags = [
    known.build !== undefined && known.build !== null && known.build > 0 ? `b${known.build}` : null,
    known.tag ?? null,
    releaseOfCommit(commit),
  ].filter((t): t is string => t !== null);
  const names = [...new Set([...tags.filter((t) => t.startsWith('b')), ...tags.filter((t) => !t.startsWith('b'))])];
  if (commit !== null) names.push(commit);
  if (names.length === 0) return null;
  return names.length === 1 ? names[0]! : `${names[0]} (${names.slice(1).join(', ')})`;
}

/**
 * The b-numbers rule set `id` covers, in words: `b9333 to b10586`; for a rule set named by version, the nightly
 * builds that get it, or `none` and the rule set they get. Read from the registry's boundaries, so a new row changes it.
 */
export function ruleSetBuildRange(id: LlamaCppRuleSet): string {
  const rows = LLAMA_CPP_RULE_SET_REGISTRY as readonly LlamaCppRuleSetInfo[];
  const at = rows.findIndex((r) => r.id === id);
  const row = rows[at]!;
  if ('build' in row.first) {
    const next = rows[at + 1];
    const last = next === undefined ? null : 'build' in next.first ? next.first.build - 1 : (next.nightlyAfter ?? null);
    return last === null ? `b${row.first.build} and later` : `b${row.first.build} to b${last}`;
  }
  if (row.nightlyAfter !== undefined) return `nightly builds after b${row.nightlyAfter}`;
  const nightly = rows.find((r) => r.nightlyAfter !== undefined);
  return nightly === undefined ? 'none' : `none; nightly builds after b${nightly.nightlyAfter} get ${nightly.id}`;
}

/**
 * A build as a result recorded it (`b6673 (50d26e8)`, `v0.5.0 (node-llama-cpp 3.22.1)`, or a bare commit `de3ff81`
 * from before builds were named by llamaCppReleaseName) as llamaCppReleaseName names it now; the release alone with
 * `tagOnly` (the matrix's short form: `v0.5.0`).
 */
export function recordedBuildName(recorded: string, tagOnly = false): string {
  const first = recorded.split(' ')[0]!;
  const named = recorded === first ? (llamaCppReleaseName({ commit: first }) ?? first) : recorded;
  return tagOnly ? named.split(' ')[0]! : named;
}
