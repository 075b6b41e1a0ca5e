/**
 * Ollama by release: the llama.cpp prediction for the llama.cpp a release builds (ollama-releases.ts's rows, mapped
 * by llama-cpp-releases.ts like any llama.cpp release), with the op gates its own patches set.
 */
import { InvalidOptionsError } from '../core/errors.js';
import { didYouMean } from '../core/suggest.js';
import { clip } from '../core/input.js';
import { parseRelease, ruleSetForRelease, type LlamaCppRuleSet } from './llama-cpp-releases.js';
import {
  OLLAMA_METAL_PATCHES,
  OLLAMA_RELEASE_REGISTRY,
  OLLAMA_VENDORED_COMMITS,
  type OllamaMetalPatch,
  type OllamaMetalPatchName,
  type OllamaOpGate,
  type OllamaPin,
  type OllamaReleaseRow,
} from './ollama-releases.js';

export * from './ollama-releases.js';

/** Every Ollama release the table covers, newest first. */
export function ollamaReleases(): string[] {
  return OLLAMA_RELEASE_REGISTRY.map((r) => r.release);
}

/** The row of an Ollama release (`v0.32.15`, or `0.32.15` as Ollama's `--version` prints it); null when not covered. */
export function ollamaReleaseRow(text: string): OllamaReleaseRow | null {
  const tag = text.startsWith('v') ? text : `v${text}`;
  return OLLAMA_RELEASE_REGISTRY.find((r) => r.release === tag) ?? null;
}

/** What an Ollama release means for the llama.cpp prediction: its rule set, the release text and the patches' gates. */
export interface OllamaLlamaCpp {
  /** The Ollama release. */
  release: string;
  /** Its tag's commit. */
  commit: string;
  pin: OllamaPin;
  /** The llama.cpp it builds: a release tag, or the vendored commit with the builds it lies between. */
  llamaCpp: { release: string; builds: null } | { commit: string; builds: readonly [number, number] };
  ruleSet: LlamaCppRuleSet;
  /** Set where the vendored commit's builds span more than one rule set: which was assumed. */
  warning: string | null;
  /** Its patches that touch ggml-metal, each with what it changes. */
  metalPatches: ({ name: OllamaMetalPatchName } & OllamaMetalPatch)[];
  /** The op gates those patches set, in patch order (a later patch's gate for an op wins). */
  opGates: OllamaOpGate[];
  /** One line: the release, what it builds and the patches that change a gate (the rule set is named beside it). */
  detail: string;
}

/**
 * Reads `text` as an Ollama release the table covers, or throws InvalidOptionsError naming `option`, with the
 * nearest covered release.
 */
export function checkOllamaRelease(text: unknown, option: string): OllamaReleaseRow {
  const row = typeof text === 'string' ? ollamaReleaseRow(text) : null;
  if (row !== null) return row;
  const releases = ollamaReleases();
  const given = typeof text === 'string' ? `'${clip(text, 40)}'${didYouMean(text, releases)}` : 'no release';
  throw new InvalidOptionsError(
    option,
    `${option} takes an Ollama release from ${releases.at(-1)} to ${releases[0]} (see docs/engines.md#ollama-by-release), got ${given}`,
  );
}

/** The llama.cpp build range a pin stands for: one build for a release tag, the vendored range for a commit. */
function pinnedLlamaCpp(pin: OllamaPin): OllamaLlamaCpp['llamaCpp'] {
  if (pin.file === 'LLAMA_CPP_VERSION') return { release: pin.release, builds: null };
  const vendored = OLLAMA_VENDORED_COMMITS[pin.fetchHead];
  // A row whose commit has no vendored entry is a table error, which the registry's test catches before a user can.
  if (vendored === undefined) throw new Error(`ollama-releases.ts: FETCH_HEAD ${pin.fetchHead} has no vendored entry`);
  return { commit: pin.fetchHead, builds: vendored.builds };
}

/**
 * The rule set of what a release builds, from llama-cpp-releases.ts: its LLAMA_CPP_VERSION tag, or the first build
 * its vendored commit can be, with a warning when the last one it can be falls in another rule set.
 */
function ruleSetOf(llamaCpp: OllamaLlamaCpp['llamaCpp']): { ruleSet: LlamaCppRuleSet; warning: string | null } {
  if (llamaCpp.builds === null) {
    const release = parseRelease(llamaCpp.release);
    // A tag that is no llama.cpp release is a table error, which the registry's test catches before a user can.
    if (release === null)
      throw new Error(`ollama-releases.ts: LLAMA_CPP_VERSION ${llamaCpp.release} is no release tag`);
    return ruleSetForRelease(release);
  }
  const [first, last] = llamaCpp.builds;
  const oldest = ruleSetForRelease({ kind: 'build', build: first, text: `b${first}` }).ruleSet;
  const newest = ruleSetForRelease({ kind: 'build', build: last, text: `b${last}` }).ruleSet;
  return {
    ruleSet: oldest,
    warning:
      oldest === newest
        ? null
        : `llama.cpp ${llamaCpp.commit} lies between b${first} and b${last}, across the ${oldest} and ${newest} rules: the older ${oldest} rules assumed`,
  };
}

/** The op gates a release's patches set, later patches last. */
function patchGates(patches: OllamaLlamaCpp['metalPatches']): OllamaOpGate[] {
  return patches.flatMap((p) => p.opGates);
}

/** What an Ollama release means for the llama.cpp prediction (see OllamaLlamaCpp). */
export function ollamaLlamaCpp(row: OllamaReleaseRow): OllamaLlamaCpp {
  const llamaCpp = pinnedLlamaCpp(row.pin);
  const { ruleSet, warning } = ruleSetOf(llamaCpp);
  const metalPatches = row.metalPatches.map((name) => ({ name, ...OLLAMA_METAL_PATCHES[name] }));
  const opGates = patchGates(metalPatches);
  const built =
    llamaCpp.builds === null
      ? `llama.cpp ${llamaCpp.release} (LLAMA_CPP_VERSION)`
      : `llama.cpp ${llamaCpp.commit} (Makefile.sync FETCH_HEAD, b${llamaCpp.builds[0]} to b${llamaCpp.builds[1]})`;
  const gating = metalPatches.filter((p) => p.opGates.length > 0).map((p) => p.name);
  const patches =
    metalPatches.length === 0
      ? 'no patch touches ggml-metal'
      : `${metalPatches.length} ${metalPatches.length === 1 ? 'patch touches' : 'patches touch'} ggml-metal${gating.length === 0 ? ', none changes a gate' : `, ${gating.join(', ')} changes a gate (${opGates.map((g) => `${g.op} on ${g.needs ?? 'no SIMD-group flag'}`).join(', ')})`}`;
  return {
    release: row.release,
    commit: row.commit,
    pin: row.pin,
    llamaCpp,
    ruleSet,
    warning,
    metalPatches,
    opGates,
    detail: `Ollama ${row.release} (${row.commit.slice(0, 9)}) builds ${built}; ${patches}`,
  };
}
