// Which llama.cpp rules apply to a release, a ggml version or a loaded ggml-metal (lib/engines/llama-cpp-releases.ts).
// The module is imported afresh before each test, so its tables (rule sets, markers, ggml versions) are built inside
// the tests that pin them, as in test/engines/llama-cpp.test.ts.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type * as Releases from '../../lib/engines/llama-cpp-releases.js';

let LLAMA_CPP_GENERATION_MARKERS: typeof Releases.LLAMA_CPP_GENERATION_MARKERS;
let LLAMA_CPP_RULE_SET_INFO: typeof Releases.LLAMA_CPP_RULE_SET_INFO;
let LLAMA_CPP_RULE_SETS: typeof Releases.LLAMA_CPP_RULE_SETS;
let llamaCppReleaseName: typeof Releases.llamaCppReleaseName;
let parseRelease: typeof Releases.parseRelease;
let recordedBuildName: typeof Releases.recordedBuildName;
let ruleSetBuildRange: typeof Releases.ruleSetBuildRange;
let ruleSetForGgmlVersion: typeof Releases.ruleSetForGgmlVersion;
let rulesOfLoaded: typeof Releases.rulesOfLoaded;
beforeEach(async () => {
  vi.resetModules();
  ({
    LLAMA_CPP_GENERATION_MARKERS,
    LLAMA_CPP_RULE_SET_INFO,
    LLAMA_CPP_RULE_SETS,
    llamaCppReleaseName,
    parseRelease,
    recordedBuildName,
    ruleSetBuildRange,
    ruleSetForGgmlVersion,
    rulesOfLoaded,
  } = await import('../../lib/engines/llama-cpp-releases.js'));
});

describe('parseRelease', () => {
  it.each<[string, unknown]>([
    ['b4753', { kind: 'build', build: 4753, text: 'b4753' }],
    ['b1', { kind: 'build', build: 1, text: 'b1' }],
    ['v0.4.0', { kind: 'version', version: [0, 4, 0], text: 'v0.4.0' }],
    ['v12.345.6789', { kind: 'version', version: [12, 345, 6789], text: 'v12.345.6789' }],
  ])('%s', (text, parsed) => {
    expect(parseRelease(text)).toEqual(parsed);
  });

  it.each([
    '4753',
    'b',
    'b4753x',
    ' b4753',
    'xb4753',
    'B4753',
    'b12345678',
    'v0.4',
    '0.4.0',
    'xv0.4.0',
    'v0.4.0-rc1',
    'v0.4.0 ',
    'v12345.0.0',
    '',
  ])('is null for %j', (text) => {
    expect(parseRelease(text)).toBeNull();
  });
});

const GGML_094_WARNING = (v: string) =>
  `ggml ${v} shipped with llama.cpp b6526 to b7595, across the BF16 switch and tensor flag (b6968), the A19/A20 tensor names (b7010) and eGPU shared buffers (b7411): the older device-b6501 rules (b6501 to b6967 (ggml-metal-device.m, before the tensor API)) assumed`;

describe('ruleSetForGgmlVersion', () => {
  it.each<[string, unknown]>([
    ['0.25.1', { ruleSet: 'current', warning: null }],
    ['0.25.0', { ruleSet: 'current', warning: null }],
    ['1.0.0', { ruleSet: 'current', warning: null }],
    ['0.24.9', { ruleSet: 'chip-tuning', warning: null }],
    ['0.23.0', { ruleSet: 'chip-tuning', warning: null }],
    ['0.22.9', { ruleSet: 'device', warning: null }],
    // ggml 0.14.0 arrived in b9560, after device_id (b9333); 0.13.0 (b9325 to b9559) spans that boundary.
    ['0.14.0', { ruleSet: 'device', warning: null }],
    [
      '0.13.0',
      {
        ruleSet: 'device-b7411',
        warning:
          'ggml 0.13.0 shipped with llama.cpp b9325 to b9559, across device_id (b9333): the older device-b7411 rules (b7411 to b9332 (ggml-metal-device.m, before device_id)) assumed',
      },
    ],
    ['0.12.9', { ruleSet: 'device-b7411', warning: null }],
    // ggml 0.9.5 arrived in b7596, after eGPU shared buffers (b7411); 0.9.0 to 0.9.4 span every boundary before.
    ['0.9.5', { ruleSet: 'device-b7411', warning: null }],
    ['0.9.4-dirty', { ruleSet: 'device-b6501', warning: GGML_094_WARNING('0.9.4-dirty') }],
    ['0.9.0', { ruleSet: 'device-b6501', warning: GGML_094_WARNING('0.9.0') }],
    // Before ggml 0.9 its version was 0.0.<llama.cpp build number>.
    ['0.0.6431', { ruleSet: 'legacy', warning: null }],
    ['0.0.7000', { ruleSet: 'device-b6968', warning: null }],
    ['0.0.7411', { ruleSet: 'device-b7411', warning: null }],
    ['0.0.9332', { ruleSet: 'device-b7411', warning: null }],
    ['0.0.9333', { ruleSet: 'device', warning: null }],
    ['0.8.0', null],
    ['unknown', null],
    ['', null],
  ])('%j', (version, result) => {
    expect(ruleSetForGgmlVersion(version)).toEqual(result);
  });
});

describe('rulesOfLoaded', () => {
  const image = '/opt/app/node_modules/@node-llama-cpp/mac-arm64-metal/bins/mac-arm64-metal/libggml-metal.so';
  /** A marker's symbol: its Darwin spelling, or with `linux` its last (Linux) one. */
  const symbolOf = (ruleSet: string, linux = false) => {
    const symbols = LLAMA_CPP_GENERATION_MARKERS.find((m) => m.ruleSet === ruleSet)!.symbols;
    return symbols[linux ? symbols.length - 1 : 0]!;
  };

  it('the markers decide first: the newest one exported wins, whatever the release says', () => {
    expect(
      rulesOfLoaded({
        image,
        ggmlVersion: '0.23.0',
        markers: [symbolOf('device'), symbolOf('chip-tuning')],
        nodeLlamaCppRelease: 'b4753',
      }),
    ).toEqual({
      ruleSet: 'chip-tuning',
      release: 'b4753',
      detail:
        "libggml-metal.so: llama.cpp b4753 (node-llama-cpp's build metadata), ggml 0.23.0; it exports ggml_metal_tuning::fa_vec_pick(ggml_metal_device_id, …): tuning by chip",
    });
    expect(
      rulesOfLoaded({ image, ggmlVersion: null, markers: [symbolOf('current', true)], nodeLlamaCppRelease: null }),
    ).toEqual({
      ruleSet: 'current',
      release: null,
      detail:
        'libggml-metal.so: no ggml_version(); it exports ggml_metal_tuning::fa_vec_pick(int gpu_family, …): tuning by GPU family',
    });
    expect(
      rulesOfLoaded({
        image: 'libggml-metal.so',
        ggmlVersion: '0.9.5',
        markers: [symbolOf('device')],
        nodeLlamaCppRelease: null,
      }),
    ).toEqual({
      ruleSet: 'device-b7411',
      release: null,
      detail:
        'libggml-metal.so: ggml 0.9.5; it exports ggml_metal_device_init: ggml-metal-device.m; rules by its ggml version',
    });
  });

  it('ggml_metal_device_init alone does not say which device rules: the release, then the version picks them', () => {
    const device = (ggmlVersion: string | null, nodeLlamaCppRelease: string | null) =>
      rulesOfLoaded({ image, ggmlVersion, markers: [symbolOf('device')], nodeLlamaCppRelease });
    expect(device('0.9.4', 'b7000')).toEqual({
      ruleSet: 'device-b6968',
      release: 'b7000',
      detail:
        "libggml-metal.so: llama.cpp b7000 (node-llama-cpp's build metadata), ggml 0.9.4; it exports ggml_metal_device_init: ggml-metal-device.m; rules by its release",
    });
    expect(device('0.9.4', null)).toEqual({
      ruleSet: 'device-b6501',
      release: null,
      detail: `libggml-metal.so: ggml 0.9.4; it exports ggml_metal_device_init: ggml-metal-device.m; rules by its ggml version (${GGML_094_WARNING('0.9.4')})`,
    });
    expect(device(null, null)).toEqual({
      ruleSet: 'device',
      release: null,
      detail:
        'libggml-metal.so: no ggml_version(); it exports ggml_metal_device_init: ggml-metal-device.m (no release or ggml version says which: the newest device rules (b9333 to b10586 and v0.1 to v0.3.x (ggml-metal-device.m, device_id before per-chip tuning)) assumed)',
    });
    // A release or version of another generation does not override what the binary exports, and the detail says so.
    expect(device(null, 'v0.5.0')).toEqual({
      ruleSet: 'device',
      release: 'v0.5.0',
      detail:
        "libggml-metal.so: llama.cpp v0.5.0 (node-llama-cpp's build metadata), no ggml_version(); it exports ggml_metal_device_init: ggml-metal-device.m (its release points to the current rules, which its exports contradict: the newest device rules (b9333 to b10586 and v0.1 to v0.3.x (ggml-metal-device.m, device_id before per-chip tuning)) assumed)",
    });
    expect(device('0.23.0', null).detail).toBe(
      'libggml-metal.so: ggml 0.23.0; it exports ggml_metal_device_init: ggml-metal-device.m (its ggml version points to the chip-tuning rules, which its exports contradict: the newest device rules (b9333 to b10586 and v0.1 to v0.3.x (ggml-metal-device.m, device_id before per-chip tuning)) assumed)',
    );
  });

  it.each<[string, number]>([
    ['current', 0],
    ['current', 1],
    ['chip-tuning', 0],
    ['chip-tuning', 1],
    ['device', 0],
  ])('each spelling of each marker decides alone: %s, spelling %i', (ruleSet, spelling) => {
    const symbol = LLAMA_CPP_GENERATION_MARKERS.find((m) => m.ruleSet === ruleSet)!.symbols[spelling]!;
    expect(rulesOfLoaded({ image, ggmlVersion: null, markers: [symbol], nodeLlamaCppRelease: null }).ruleSet).toBe(
      ruleSet,
    );
  });

  it("without markers, node-llama-cpp's release decides, with its warning", () => {
    expect(rulesOfLoaded({ image, ggmlVersion: '0.25.1', markers: [], nodeLlamaCppRelease: 'b10600' })).toEqual({
      ruleSet: 'chip-tuning',
      release: 'b10600',
      detail:
        "libggml-metal.so: llama.cpp b10600 (node-llama-cpp's build metadata), ggml 0.25.1; rules by its release (llama.cpp b10600 is a nightly build after b10586, after which #26570 brought the chip-tuning rules; its first build is not pinned, so chip-tuning rules assumed; the changes of current may apply too)",
    });
    expect(rulesOfLoaded({ image, ggmlVersion: '0.25.1', markers: [], nodeLlamaCppRelease: 'b6500' }).ruleSet).toBe(
      'legacy',
    );
    expect(rulesOfLoaded({ image, ggmlVersion: null, markers: [], nodeLlamaCppRelease: 'v0.5.0' }).ruleSet).toBe(
      'current',
    );
  });

  it('then the ggml version; a release node-llama-cpp wrote that is no tag is passed on but not used', () => {
    expect(rulesOfLoaded({ image, ggmlVersion: '0.23.0', markers: [], nodeLlamaCppRelease: 'master' })).toEqual({
      ruleSet: 'chip-tuning',
      release: 'master',
      detail:
        "libggml-metal.so: llama.cpp master (node-llama-cpp's build metadata), ggml 0.23.0; rules by its ggml version",
    });
  });

  it('with nothing to go by: legacy ggml-metal.m, which had neither', () => {
    expect(rulesOfLoaded({ image, ggmlVersion: null, markers: [], nodeLlamaCppRelease: null })).toEqual({
      ruleSet: 'legacy',
      release: null,
      detail: 'libggml-metal.so: no ggml_version(); no ggml-metal-device.m symbol, release or version: legacy rules',
    });
    expect(rulesOfLoaded({ image, ggmlVersion: 'custom', markers: [], nodeLlamaCppRelease: null }).ruleSet).toBe(
      'legacy',
    );
  });
});

describe('the rule sets', () => {
  it('are ordered oldest first and each says what it covers and on what evidence', () => {
    expect(LLAMA_CPP_RULE_SETS).toMatchInlineSnapshot(`
      [
        "legacy-b0",
        "legacy-b1853",
        "legacy-b4040",
        "legacy-b4053",
        "legacy",
        "device-b6501",
        "device-b6968",
        "device-b7010",
        "device-b7411",
        "device",
        "chip-tuning",
        "current",
      ]
    `);
    expect(LLAMA_CPP_RULE_SET_INFO).toMatchSnapshot();
  });

  it('each generation marker has its Darwin (int64_t = long long) and Linux (long) spelling, or a C name', () => {
    expect(LLAMA_CPP_GENERATION_MARKERS).toMatchInlineSnapshot(`
      [
        {
          "meaning": "ggml_metal_tuning::fa_vec_pick(int gpu_family, …): tuning by GPU family",
          "ruleSet": "current",
          "symbols": [
            "_ZN17ggml_metal_tuning11fa_vec_pickEiiiixx",
            "_ZN17ggml_metal_tuning11fa_vec_pickEiiiill",
          ],
        },
        {
          "meaning": "ggml_metal_tuning::fa_vec_pick(ggml_metal_device_id, …): tuning by chip",
          "ruleSet": "chip-tuning",
          "symbols": [
            "_ZN17ggml_metal_tuning11fa_vec_pickE20ggml_metal_device_idiiiixx",
            "_ZN17ggml_metal_tuning11fa_vec_pickE20ggml_metal_device_idiiiill",
          ],
        },
        {
          "meaning": "ggml_metal_device_init: ggml-metal-device.m",
          "ruleSet": "device",
          "symbols": [
            "ggml_metal_device_init",
          ],
        },
      ]
    `);
  });
});

describe('llamaCppReleaseName: one name for a release, whichever tool told it', () => {
  it('the b-number, then the version, then the commit, each where known; a build number of 0 is none', () => {
    expect([
      llamaCppReleaseName({ build: 6673, commit: '50d26e8' }),
      llamaCppReleaseName({ build: 7010, commit: '3f9da22' }),
      llamaCppReleaseName({ build: 0, commit: 'de3ff81' }),
      llamaCppReleaseName({ tag: 'v0.5.0' }),
      llamaCppReleaseName({ tag: 'b6673' }),
      llamaCppReleaseName({ build: 9, tag: 'v0.1.0', commit: 'abc1234' }),
      llamaCppReleaseName({ build: 0, commit: 'abc1234' }),
      llamaCppReleaseName({ build: 6673, tag: 'b6673', commit: '50d26e8' }),
      llamaCppReleaseName({ build: 0, commit: null }),
      llamaCppReleaseName({ tag: null }),
    ]).toEqual([
      'b6673 (50d26e8)',
      'b7010 (3f9da22)',
      'v0.5.0 (de3ff81)',
      'v0.5.0',
      'b6673',
      'b9 (v0.1.0, abc1234)',
      'abc1234',
      'b6673 (50d26e8)',
      null,
      null,
    ]);
  });

  it('names each release the conformance suite builds from its commit alone, as its llama-bench reports it', () => {
    const eras = path.join(import.meta.dirname, '../fixtures/bench/llama-bench-eras');
    const files = readdirSync(eras).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(8);
    for (const f of files) {
      const { release, commit } = (
        JSON.parse(readFileSync(path.join(eras, f), 'utf8')) as { source: { release: string; commit: string } }
      ).source;
      const short = commit.slice(0, 7);
      expect([f, llamaCppReleaseName({ build: 0, commit: short })]).toEqual([f, `${release} (${short})`]);
    }
    // A full commit is known by its first 7 digits and printed whole.
    const full = 'de3ff815ea7d559ee917f063901b8986f038abc6';
    expect(llamaCppReleaseName({ build: 0, commit: full })).toBe(`v0.5.0 (${full})`);
    // A commit that is not hex, or too short to be one, names nothing.
    expect(llamaCppReleaseName({ commit: 'de3ff8' })).toBe('de3ff8');
    expect(llamaCppReleaseName({ commit: 'DE3FF81' })).toBe('DE3FF81');
  });
});

describe('recordedBuildName: a build a result recorded, named as llamaCppReleaseName names it now', () => {
  it('a bare commit of a known release gets its tag; a named build is kept; tagOnly keeps the release alone', () => {
    const recorded = ['de3ff81', 'b6673 (50d26e8)', 'v0.5.0 (node-llama-cpp 3.22.1)', 'abc1234', 'b7010'];
    expect(recorded.map((b) => recordedBuildName(b))).toEqual([
      'v0.5.0 (de3ff81)',
      'b6673 (50d26e8)',
      'v0.5.0 (node-llama-cpp 3.22.1)',
      'abc1234',
      'b7010',
    ]);
    expect(recorded.map((b) => recordedBuildName(b, true))).toEqual(['v0.5.0', 'b6673', 'v0.5.0', 'abc1234', 'b7010']);
  });
});

describe('ruleSetBuildRange: the b-numbers each rule set covers', () => {
  it("from the registry's boundaries: build rows end where the next starts; version rows name the nightly builds", () => {
    expect(Object.fromEntries(LLAMA_CPP_RULE_SETS.map((id) => [id, ruleSetBuildRange(id)]))).toEqual({
      'legacy-b0': 'b0 to b1852',
      'legacy-b1853': 'b1853 to b4039',
      'legacy-b4040': 'b4040 to b4052',
      'legacy-b4053': 'b4053 to b4561',
      legacy: 'b4562 to b6500',
      'device-b6501': 'b6501 to b6967',
      'device-b6968': 'b6968 to b7009',
      'device-b7010': 'b7010 to b7410',
      'device-b7411': 'b7411 to b9332',
      device: 'b9333 to b10586',
      'chip-tuning': 'nightly builds after b10586',
      current: 'none; nightly builds after b10586 get chip-tuning',
    });
  });

  it("the README's b10167 is in the range of the rule set a release maps it to", () => {
    const rules = LLAMA_CPP_RULE_SETS.find((id) => {
      const m = /^b(\d+) to b(\d+)$/.exec(ruleSetBuildRange(id));
      return m !== null && Number(m[1]) <= 10167 && 10167 <= Number(m[2]);
    });
    expect(rules).toBe('device');
  });
});
