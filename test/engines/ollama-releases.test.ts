// Ollama's releases as read from its public history (ollama/ollama, tags v0.5.8 to v0.32.15): CI cannot reach it, so
// the table is pinned here, and each row is held to the llama.cpp rule set its vendored source was read to be.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ruleSetForRelease } from '../../lib/engines/llama-cpp-releases.js';
import {
  OLLAMA_METAL_PATCHES,
  OLLAMA_RELEASE_REGISTRY,
  OLLAMA_VENDORED_COMMITS,
  type OllamaReleaseRow,
} from '../../lib/engines/ollama-releases.js';
import { ollamaLlamaCpp } from '../../lib/engines/ollama.js';

/** One line per row: the release, its tag's commit, what it pins and its ggml-metal patches. */
function pinnedLine(r: OllamaReleaseRow): string {
  const pin =
    r.pin.file === 'LLAMA_CPP_VERSION' ? `LLAMA_CPP_VERSION=${r.pin.release}` : `FETCH_HEAD=${r.pin.fetchHead}`;
  return `${r.release} ${r.commit} ${pin} ${r.metalPatches.join(',')}`;
}

const semver = (tag: string) => tag.slice(1).split('.').map(Number) as [number, number, number];

describe('the Ollama table, as read from its history', () => {
  it('is pinned: every release, tag commit, pin and patch list, and their digest', () => {
    const text = OLLAMA_RELEASE_REGISTRY.map(pinnedLine).join('\n');
    expect(text).toMatchSnapshot();
    // The digest was computed from the tags' own output (git rev-list, git show, git ls-tree), not from this table:
    // a changed row changes it. Update it only after reading the row again at its tag.
    expect(createHash('sha256').update(text).digest('hex')).toBe(
      'f368f7654c62b7df278add72d2c63d761caac0e904a1a75ecb67559966c0c168',
    );
  });

  it('covers v0.5.8 to v0.32.15, each release once, newest first, each tag a full commit hash', () => {
    const releases = OLLAMA_RELEASE_REGISTRY.map((r) => r.release);
    expect([releases.length, releases[0], releases.at(-1), new Set(releases).size]).toEqual([
      135,
      'v0.32.15',
      'v0.5.8',
      135,
    ]);
    const ordered = [...releases].sort((a, b) => {
      const [x, y] = [semver(a), semver(b)];
      return y[0] - x[0] || y[1] - x[1] || y[2] - x[2];
    });
    expect(releases).toEqual(ordered);
    expect(OLLAMA_RELEASE_REGISTRY.filter((r) => !/^[0-9a-f]{40}$/.test(r.commit))).toEqual([]);
  });

  it('names only patches it describes and commits it bounds, and describes none that no release carries', () => {
    const used = new Set(OLLAMA_RELEASE_REGISTRY.flatMap((r) => r.metalPatches));
    expect([...used].filter((p) => !(p in OLLAMA_METAL_PATCHES))).toEqual([]);
    expect(Object.keys(OLLAMA_METAL_PATCHES).filter((p) => !used.has(p as never))).toEqual([]);
    const heads = new Set(
      OLLAMA_RELEASE_REGISTRY.flatMap((r) => (r.pin.file === 'Makefile.sync' ? [r.pin.fetchHead] : [])),
    );
    expect([...heads].filter((h) => OLLAMA_VENDORED_COMMITS[h] === undefined)).toEqual([]);
    expect(Object.keys(OLLAMA_VENDORED_COMMITS).filter((h) => !heads.has(h))).toEqual([]);
  });

  it("bounds each vendored commit inside one rule set, so no row's mapping is a guess", () => {
    const spanning = Object.entries(OLLAMA_VENDORED_COMMITS).filter(([, v]) => {
      const at = (b: number) => ruleSetForRelease({ kind: 'build', build: b, text: `b${b}` }).ruleSet;
      return at(v.builds[0]) !== at(v.builds[1]);
    });
    expect(spanning).toEqual([]);
    expect(OLLAMA_RELEASE_REGISTRY.map(ollamaLlamaCpp).filter((o) => o.warning !== null)).toEqual([]);
  });

  it('maps each release to the rule set its vendored ggml-metal source was read to be', () => {
    // By hand from `git show <tag>:ml/backend/ggml/ggml/src/ggml-metal/…` and LLAMA_CPP_VERSION: ggml-metal.m with
    // GGML_METAL_USE_BF16 but no residency sets to v0.5.12, with them to v0.12.3; ggml-metal-device.m without has_tensor to v0.13.1; has_tensor with A19/A20 but no eGPU shared buffers
    // to v0.13.4; GGML_METAL_SHARED_BUFFERS_ENABLE without device_id to v0.24.0; llama.cpp b9452 to b10488 after.
    const ranges: Record<string, string[]> = {};
    for (const r of [...OLLAMA_RELEASE_REGISTRY].reverse()) {
      const set = ollamaLlamaCpp(r).ruleSet;
      const range = (ranges[set] ??= []);
      range.splice(1, 1, r.release);
      if (range.length === 1 && range[0] !== r.release) range.push(r.release);
    }
    expect(ranges).toEqual({
      'legacy-b4053': ['v0.5.8', 'v0.5.12'],
      legacy: ['v0.5.13', 'v0.12.3'],
      'device-b6501': ['v0.12.4', 'v0.13.1'],
      'device-b7010': ['v0.13.2', 'v0.13.4'],
      'device-b7411': ['v0.13.5', 'v0.24.0'],
      device: ['v0.30.0', 'v0.32.15'],
    });
  });

  it('sets a gate only where a patch was read to: MEAN on reduction, SOLVE_TRI on no flag', () => {
    const gating = Object.entries(OLLAMA_METAL_PATCHES)
      .filter(([, p]) => p.opGates.length > 0)
      .map(([name, p]) => {
        const carried = OLLAMA_RELEASE_REGISTRY.filter((r) => (r.metalPatches as string[]).includes(name));
        return {
          name,
          opGates: p.opGates,
          releases: carried.length,
          from: carried.at(-1)?.release,
          to: carried[0]?.release,
        };
      });
    expect(gating).toEqual([
      {
        name: '0019-metal-add-mean-kernel-14267.patch',
        opGates: [{ op: 'MEAN', needs: 'has_simdgroup_reduction' }],
        releases: 11,
        from: 'v0.9.3',
        to: 'v0.11.4',
      },
      {
        name: '0033-ggml-metal-solve_tri.patch',
        opGates: [{ op: 'SOLVE_TRI', needs: null }],
        releases: 38,
        from: 'v0.15.5',
        to: 'v0.24.0',
      },
    ]);
  });
});
