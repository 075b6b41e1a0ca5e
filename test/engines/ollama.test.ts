// An Ollama release as the llama.cpp prediction takes it: the rule set of what it builds, the op gates its patches set,
// a release the table does not cover refused with the nearest one, and a vendored commit that spans rule sets warned.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidOptionsError } from '../../lib/core/errors.js';
import { opGatesWith } from '../../lib/engines/llama-cpp.js';
import type * as Releases from '../../lib/engines/ollama-releases.js';
import { checkOllamaRelease, ollamaLlamaCpp, ollamaReleaseRow } from '../../lib/engines/ollama.js';
import { thrown } from '../support/helpers.js';

afterEach(() => {
  vi.doUnmock('../../lib/engines/ollama-releases.js');
  vi.resetModules();
});

describe('an Ollama release, read', () => {
  it('takes the tag or the version Ollama prints, and nothing else', () => {
    expect(ollamaReleaseRow('0.24.0')).toBe(ollamaReleaseRow('v0.24.0'));
    expect(ollamaReleaseRow('v0.24.0')?.commit).toBe('c28ddc0a7b273cd286b680a6db0bef0c17bc0ec0');
    expect([ollamaReleaseRow('v0.25.0'), ollamaReleaseRow('v0.5.7'), ollamaReleaseRow('')]).toEqual([null, null, null]);
  });

  it('refuses a release the table does not cover, naming the range and the nearest release', () => {
    const e = thrown(() => checkOllamaRelease('v0.32.16', '--release'));
    expect(e).toBeInstanceOf(InvalidOptionsError);
    expect(e).toMatchObject({
      code: 'ERR_INVALID_OPTIONS',
      option: '--release',
      message:
        "--release takes an Ollama release from v0.5.8 to v0.32.15 (see docs/engines.md#ollama-by-release), got 'v0.32.16' (did you mean 'v0.32.15'?)",
    });
    expect((thrown(() => checkOllamaRelease('latest', 'ollamaRelease')) as Error).message).toBe(
      "ollamaRelease takes an Ollama release from v0.5.8 to v0.32.15 (see docs/engines.md#ollama-by-release), got 'latest'",
    );
    expect((thrown(() => checkOllamaRelease(32, 'ollamaRelease')) as Error).message).toBe(
      'ollamaRelease takes an Ollama release from v0.5.8 to v0.32.15 (see docs/engines.md#ollama-by-release), got no release',
    );
  });
});

describe('what a release builds', () => {
  it('a LLAMA_CPP_VERSION tag: that llama.cpp release, no patch on ggml-metal', () => {
    const { metalPatches, ...rest } = ollamaLlamaCpp(checkOllamaRelease('v0.32.15', 'x'));
    expect({ ...rest, patches: metalPatches.length }).toEqual({
      release: 'v0.32.15',
      commit: 'b7871fc0d1d82fe109536efa3e0e8e411c766c75',
      pin: { file: 'LLAMA_CPP_VERSION', release: 'b10488' },
      llamaCpp: { release: 'b10488', builds: null },
      ruleSet: 'device',
      warning: null,
      opGates: [],
      detail: 'Ollama v0.32.15 (b7871fc0d) builds llama.cpp b10488 (LLAMA_CPP_VERSION); no patch touches ggml-metal',
      patches: 0,
    });
  });

  it("a Makefile.sync commit: the builds its vendored source lies between, and the patches' gates", () => {
    const { metalPatches, ...rest } = ollamaLlamaCpp(checkOllamaRelease('v0.24.0', 'x'));
    expect({ ...rest, patches: metalPatches.map((p) => p.name.slice(0, 4)) }).toEqual({
      release: 'v0.24.0',
      commit: 'c28ddc0a7b273cd286b680a6db0bef0c17bc0ec0',
      pin: { file: 'Makefile.sync', fetchHead: 'ec98e2002' },
      llamaCpp: { commit: 'ec98e2002', builds: [7411, 9332] },
      ruleSet: 'device-b7411',
      warning: null,
      opGates: [{ op: 'SOLVE_TRI', needs: null }],
      detail:
        'Ollama v0.24.0 (c28ddc0a7) builds llama.cpp ec98e2002 (Makefile.sync FETCH_HEAD, b7411 to b9332); 10 patches touch ggml-metal, 0033-ggml-metal-solve_tri.patch changes a gate (SOLVE_TRI on no SIMD-group flag)',
      patches: ['0001', '0013', '0015', '0018', '0024', '0027', '0032', '0033', '0034', '0036'],
    });
  });

  it('says which patches change a gate, and on what: none, a SIMD-group flag, or no flag', () => {
    const detail = (release: string) => ollamaLlamaCpp(checkOllamaRelease(release, 'x')).detail;
    expect([detail('v0.15.4'), detail('v0.11.4'), detail('v0.5.8')]).toEqual([
      'Ollama v0.15.4 (6a7c3f188) builds llama.cpp ec98e2002 (Makefile.sync FETCH_HEAD, b7411 to b9332); 7 patches touch ggml-metal, none changes a gate',
      'Ollama v0.11.4 (f2e9c9aff) builds llama.cpp de4c07f93783a1a96456a44dc16b9db538ee1618 (Makefile.sync FETCH_HEAD, b4562 to b6500); 5 patches touch ggml-metal, 0019-metal-add-mean-kernel-14267.patch changes a gate (MEAN on has_simdgroup_reduction)',
      'Ollama v0.5.8 (f4711da7b) builds llama.cpp 46e3556e01b824e52395fb050b29804b6cff2a7c (Makefile.sync FETCH_HEAD, b4053 to b4561); 2 patches touch ggml-metal, none changes a gate',
    ]);
  });

  it('a row whose commit has no vendored bounds, or whose tag is no llama.cpp release, is a table error', async () => {
    const { ollamaLlamaCpp: mapped } = await import('../../lib/engines/ollama.js');
    const row = (pin: Releases.OllamaPin) => ({ release: 'v9.0.0', commit: '0'.repeat(40), pin, metalPatches: [] });
    expect([
      (thrown(() => mapped(row({ file: 'Makefile.sync', fetchHead: 'abc1234' }))) as Error).message,
      (thrown(() => mapped(row({ file: 'LLAMA_CPP_VERSION', release: 'master' }))) as Error).message,
    ]).toEqual([
      'ollama-releases.ts: FETCH_HEAD abc1234 has no vendored entry',
      'ollama-releases.ts: LLAMA_CPP_VERSION master is no release tag',
    ]);
  });

  it('a vendored commit whose builds span two rule sets gets the older, with a warning naming both', async () => {
    vi.resetModules();
    vi.doMock('../../lib/engines/ollama-releases.js', async (importOriginal) => {
      const original = await importOriginal<typeof Releases>();
      return {
        ...original,
        OLLAMA_VENDORED_COMMITS: {
          ...original.OLLAMA_VENDORED_COMMITS,
          abc1234: { builds: [6900, 7100], evidence: 'made up' },
        },
      };
    });
    const { ollamaLlamaCpp: mapped } = await import('../../lib/engines/ollama.js');
    const row = {
      release: 'v9.0.0',
      commit: '0'.repeat(40),
      pin: { file: 'Makefile.sync', fetchHead: 'abc1234' },
      metalPatches: [],
    } as const;
    expect([mapped(row).ruleSet, mapped(row).warning]).toEqual([
      'device-b6501',
      'llama.cpp abc1234 lies between b6900 and b7100, across the device-b6501 and device-b7010 rules: the older device-b6501 rules assumed',
    ]);
  });
});

describe("a patch's op gates on top of a rule set's", () => {
  const gates = [
    { op: 'MUL_MAT', needs: 'has_simdgroup_reduction' },
    { op: 'SOLVE_TRI', needs: 'has_simdgroup_reduction' },
    { op: 'FLASH_ATTN_EXT', needs: 'has_simdgroup_mm' },
  ] as const;

  it('null takes the op off its gate, a flag replaces it in place, a new op is added last', () => {
    expect(
      opGatesWith(gates, [
        { op: 'SOLVE_TRI', needs: null },
        { op: 'MUL_MAT', needs: 'has_simdgroup_mm' },
        { op: 'NEW_OP', needs: 'has_simdgroup_reduction' },
      ]),
    ).toEqual([
      { op: 'MUL_MAT', needs: 'has_simdgroup_mm' },
      { op: 'FLASH_ATTN_EXT', needs: 'has_simdgroup_mm' },
      { op: 'NEW_OP', needs: 'has_simdgroup_reduction' },
    ]);
    expect(opGatesWith(gates, [])).toEqual(gates);
  });
});
