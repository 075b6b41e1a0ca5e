// audit() with an Ollama release: the llama.cpp rules of what the release builds, its patches' op gates, the release
// named in the rules' report, a release the table does not cover refused, and a release added as a row (here from a
// fixture) audited with no other change. Offline, on the stock guest's snapshot.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { audit, type AuditResult, type EngineComparison } from '../../lib/audit/audit.js';
import { InvalidOptionsError } from '../../lib/core/errors.js';
import type * as Releases from '../../lib/engines/ollama-releases.js';
import { thrown } from '../support/helpers.js';

const STOCK = 'vz-guest-m1-ultra-tahoe-stock';
const MADE_UP = JSON.parse(
  readFileSync(new URL('../fixtures/engines/ollama-made-up-release.json', import.meta.url), 'utf8'),
) as Releases.OllamaReleaseRow;

afterEach(() => {
  vi.doUnmock('../../lib/engines/ollama-releases.js');
  vi.resetModules();
});

function llamaOf(a: AuditResult): EngineComparison {
  return a.devices[0]!.engines[0]!;
}

/** What an audit says of llama.cpp on the stock guest: the rules, their flags, stock and patched, and the fallbacks. */
function seen(a: AuditResult) {
  const e = llamaOf(a);
  return {
    rules: a.llamaCppRules.rules,
    release: a.llamaCppRules.release,
    flags: Object.keys(e.after.flags),
    flipped: e.flipped.map((f) => f.flag),
    bf16: e.engine === 'llama.cpp' && e.after.engine === 'llama.cpp' ? e.after.consequences.bf16Ops : null,
  };
}

const ollama = (release: string) =>
  audit({ snapshot: STOCK, profile: 'host-family', engines: ['llama.cpp'], ollamaRelease: release, env: {} });

describe('audit: an Ollama release', () => {
  it('across the ggml-metal.m / ggml-metal-device.m boundary: v0.12.3 is legacy, v0.12.4 device-b6501', () => {
    expect([seen(ollama('v0.12.3')), seen(ollama('v0.12.4'))]).toEqual([
      {
        rules: 'legacy',
        release: null,
        flags: [
          'has_simdgroup_reduction',
          'has_simdgroup_mm',
          'has_bfloat',
          'use_bfloat',
          'has_residency_sets',
          'max_working_set_size',
        ],
        flipped: ['has_simdgroup_reduction', 'has_simdgroup_mm', 'has_bfloat'],
        // Ollama builds without GGML_METAL_USE_BF16, so legacy use_bfloat stays off whatever the device says.
        bf16: 'rejected',
      },
      {
        rules: 'device-b6501',
        release: null,
        flags: [
          'has_simdgroup_reduction',
          'has_simdgroup_mm',
          'has_bfloat',
          'use_residency_sets',
          'use_shared_buffers',
          'max_working_set_size',
        ],
        flipped: ['has_simdgroup_reduction', 'has_simdgroup_mm', 'has_bfloat'],
        bf16: 'supported',
      },
    ]);
  });

  it('names the release, what it builds and its patches in the rules it reports, and in the JSON', () => {
    const a = ollama('0.32.15');
    expect({ ...a.llamaCppRules, ollama: { ...a.llamaCppRules.ollama, metalPatches: [] } }).toEqual({
      rules: 'device',
      releases: 'b9333 to b10586 and v0.1 to v0.3.x (ggml-metal-device.m, device_id before per-chip tuning)',
      release: 'b10488',
      source: 'option',
      detail: 'Ollama v0.32.15 (b7871fc0d) builds llama.cpp b10488 (LLAMA_CPP_VERSION); no patch touches ggml-metal',
      ollama: {
        release: 'v0.32.15',
        commit: 'b7871fc0d1d82fe109536efa3e0e8e411c766c75',
        pin: { file: 'LLAMA_CPP_VERSION', release: 'b10488' },
        llamaCpp: { release: 'b10488', builds: null },
        ruleSet: 'device',
        warning: null,
        metalPatches: [],
        opGates: [],
      },
    });
    const json = JSON.parse(JSON.stringify(ollama('v0.24.0')));
    expect([json.schema, json.llamaCppRules.ollama.metalPatches.length, json.llamaCppRules.ollama.llamaCpp]).toEqual([
      'metal-cap-shim/audit@1',
      10,
      { commit: 'ec98e2002', builds: [7411, 9332] },
    ]);
  });

  it("applies its patches' op gates: from v0.15.5, SOLVE_TRI stays on the GPU without SIMD-group reduction", () => {
    const fallbacks = (release: string) => {
      // The stock side: the guest without SIMD-group reduction.
      const before = llamaOf(ollama(release)).before;
      return before.engine === 'llama.cpp' ? before.consequences.cpuFallbackOps : [];
    };
    const without = fallbacks('v0.15.4');
    expect(without).toContain('SOLVE_TRI');
    expect(fallbacks('v0.15.5')).toEqual(without.filter((op) => op !== 'SOLVE_TRI'));
  });

  it('refuses a release the table does not cover, and one given with rules or a llama.cpp release', () => {
    const e = thrown(() => ollama('v0.25.0'));
    expect(e).toBeInstanceOf(InvalidOptionsError);
    expect(e).toMatchObject({
      option: 'ollamaRelease',
      message:
        "ollamaRelease takes an Ollama release from v0.5.8 to v0.32.15 (see docs/engines.md#ollama-by-release), got 'v0.25.0' (did you mean 'v0.24.0'?)",
    });
    for (const extra of [{ rules: 'current' as const }, { release: 'b4753' }]) {
      expect(thrown(() => audit({ snapshot: STOCK, ollamaRelease: 'v0.24.0', ...extra }))).toMatchObject({
        code: 'ERR_INVALID_OPTIONS',
        message: `audit() takes 'ollamaRelease' without 'rules' or 'release': an Ollama release decides its llama.cpp rules`,
      });
    }
  });
});

describe('a made-up Ollama release row', () => {
  async function auditWithRow(row: Releases.OllamaReleaseRow | null) {
    vi.resetModules();
    if (row !== null) {
      vi.doMock('../../lib/engines/ollama-releases.js', async (importOriginal) => {
        const original = await importOriginal<typeof Releases>();
        return { ...original, OLLAMA_RELEASE_REGISTRY: Object.freeze([row, ...original.OLLAMA_RELEASE_REGISTRY]) };
      });
    }
    const { audit: fresh } = await import('../../lib/audit/audit.js');
    return () =>
      fresh({ snapshot: STOCK, profile: 'host-family', engines: ['llama.cpp'], ollamaRelease: 'v9.9.9', env: {} });
  }

  it('without it, v9.9.9 is refused', async () => {
    expect(thrown(await auditWithRow(null))).toMatchObject({ code: 'ERR_INVALID_OPTIONS', option: 'ollamaRelease' });
  });

  it("with it, audit maps v9.9.9 to its llama.cpp's rules and applies its patch, with no code change", async () => {
    const a = (await auditWithRow(MADE_UP))();
    const before = llamaOf(a).before;
    expect({
      rules: a.llamaCppRules.rules,
      release: a.llamaCppRules.release,
      detail: a.llamaCppRules.detail,
      solveTriOnCpu: before.engine === 'llama.cpp' && before.consequences.cpuFallbackOps.includes('SOLVE_TRI'),
    }).toEqual({
      rules: 'current',
      release: 'v0.5.0',
      detail:
        'Ollama v9.9.9 (000000000) builds llama.cpp v0.5.0 (LLAMA_CPP_VERSION); 1 patch touches ggml-metal, 0033-ggml-metal-solve_tri.patch changes a gate (SOLVE_TRI on no SIMD-group flag)',
      solveTriOnCpu: false,
    });
  });
});
