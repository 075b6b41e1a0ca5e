// "Consumer already loaded", over the simulated VM guest: ggml's dynamic backend loader (node-llama-cpp's prebuilt
// binaries) loads libggml-metal.* with RTLD_LOCAL, where dlsym(RTLD_DEFAULT, …) cannot see its symbols; an app
// library with ggml-metal or MLX linked in statically may be loaded that way too. The tests share one process, so
// each one's list holds the libraries loaded before it, and a library stays loaded: a process of its own.

import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { APPLE9_ABOVE_M1_ULTRA } from '../support/apply-helpers.js';
import { describeSim, loadLibrary, requireSimBuild } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

let dir: string;
const ggmlMetal = ['ggml_backend_metal_reg', 'ggml_backend_metal_init'];
const mlxCxx = '_ZN3mlx4core5metal12is_availableEv';

const consumerWarning = (what: string) => ({
  code: 'consumer-already-loaded',
  message: `${what} is already loaded in this process: if that engine has initialised Metal, it cached the old answers; apply before the first getLlama() / backend load`,
});
/** The threshold warning under the newest rules, which size no kernel from the claim on this guest. */
const thresholdWarning = {
  code: 'threadgroup-memory-above-hardware',
  message:
    'threadgroup memory 65536 bytes is above 32768, which no Apple GPU exceeds: llama.cpp v0.5.0 and later sizes no kernel above 32768 from it on this device, but its ggml-metal.m releases do (audit --rules legacy); profile apple9-hw-tg avoids this',
};
const consumers = (profile: 'cua-release' | 'apple9-hw-tg') =>
  applyProfile(profile).warnings.filter((w) => w.code === 'consumer-already-loaded');

describeSim('consumer-already-loaded sees libraries loaded RTLD_LOCAL', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');
  beforeAll(() => {
    requireSimBuild();
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-consumers-')));
  });
  afterEach(() => {
    restore();
  });

  it('no warning before a consumer is loaded; an unrelated ggml library is no consumer', () => {
    loadLibrary(dir, 'libggml-base.so', ['ggml_backend_cpu_reg']);
    expect(applyProfile('cua-release').warnings).toEqual([APPLE9_ABOVE_M1_ULTRA, thresholdWarning]);
  });

  it('a libggml-metal loaded RTLD_LOCAL before applyProfile() is named, once, by its image', () => {
    const file = loadLibrary(dir, 'libggml-metal.so', ggmlMetal);
    // The family warning follows the loaded llama.cpp's rules: this one has no per-chip tuning markers, so it names
    // no chip llama.cpp tunes for.
    const above = {
      code: 'above-host-family',
      message:
        "the profile claims Apple9, above Apple7, the true family of this host's Apple M1 Ultra: an engine that tunes by family tunes for a newer GPU than the one doing the work (profile host claims exactly the host's)",
    };
    // A loaded ggml-metal without markers is a ggml-metal.m build (legacy rules), which sizes flash attention's
    // SIMD groups and MUL_MAT_ID's rows from the claim: the plan refuses cua-release there unless told otherwise.
    const refused = applyProfile('cua-release');
    expect([refused.applied, refused.applied ? null : refused.reason]).toEqual([false, 'above-hardware']);
    const legacyThreshold = {
      code: 'threadgroup-memory-above-hardware',
      message:
        'threadgroup memory 65536 bytes is above 32768, which no Apple GPU exceeds: llama.cpp b4562 to b6500 (ggml-metal.m) then asks MUL_MAT_ID mul_mm_id, up to 14328 expert rows: 65504 bytes; profile apple9-hw-tg avoids this',
    };
    expect(applyProfile('cua-release', { allowAboveHardware: true }).warnings).toEqual([
      above,
      legacyThreshold,
      consumerWarning(`libggml-metal.so (${file})`),
    ]);
  });

  it('so is an MLX library', () => {
    const file = loadLibrary(dir, 'libmlx.so', ['mlx_metal_is_available', mlxCxx]);
    expect(consumers('apple9-hw-tg')).toEqual([
      consumerWarning(`libggml-metal.so (${path.join(dir, 'libggml-metal.so')})`),
      consumerWarning(`libmlx.so (${file})`),
    ]);
  });

  it('ggml-metal linked into a library named otherwise, loaded RTLD_LOCAL, is named by its symbol: once per engine', () => {
    loadLibrary(dir, 'libapp.so', ggmlMetal);
    expect(consumers('apple9-hw-tg')).toEqual([
      consumerWarning(`libggml-metal.so (${path.join(dir, 'libggml-metal.so')})`),
      consumerWarning(`libmlx.so (${path.join(dir, 'libmlx.so')})`),
      consumerWarning('ggml_backend_metal_reg (in libapp.so)'),
    ]);
  });

  it('so are C++ MLX, mlx-c and either ggml-metal symbol alone, each engine of a library named once', () => {
    loadLibrary(dir, 'libtool.so', [mlxCxx]);
    loadLibrary(dir, 'libboth.so', ['ggml_backend_metal_init', 'mlx_metal_is_available']);
    expect(consumers('apple9-hw-tg')).toEqual([
      consumerWarning(`libggml-metal.so (${path.join(dir, 'libggml-metal.so')})`),
      consumerWarning(`libmlx.so (${path.join(dir, 'libmlx.so')})`),
      consumerWarning('ggml_backend_metal_reg (in libapp.so)'),
      consumerWarning(`${mlxCxx} (in libtool.so)`),
      consumerWarning('ggml_backend_metal_init (in libboth.so)'),
      consumerWarning('mlx_metal_is_available (in libboth.so)'),
    ]);
  });
});
