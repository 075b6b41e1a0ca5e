// "Consumer already loaded", over the simulated VM guest: ggml's dynamic backend loader (node-llama-cpp's prebuilt
// binaries) loads libggml-metal.* with RTLD_LOCAL, where dlsym(RTLD_DEFAULT, …) cannot see its symbols.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'vz-guest-m1-ultra-tahoe-stock';

import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants as osConstants, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { applyProfile, restore } from '../lib/apply.js';
import { describeSim, requireSimBuild } from './helpers.js';

const require = createRequire(import.meta.url);
const napiInclude = path.join(path.dirname(require.resolve('node-api-headers/package.json')), 'include');
let dir: string;

/** A minimal Node-API module under `name`: process.dlopen keeps only a library that registers a module. */
function library(name: string): string {
  const file = path.join(dir, name);
  const source = path.join(dir, `${name}.c`);
  writeFileSync(
    source,
    `#include <node_api.h>
void ggml_backend_metal_reg(void) {}
NAPI_MODULE_INIT() { return exports; }
`,
  );
  execFileSync('clang-14', ['-shared', '-fPIC', `-I${napiInclude}`, source, '-o', file]);
  return file;
}

function loadLocal(file: string): void {
  process.dlopen({ exports: {} }, file, osConstants.dlopen.RTLD_NOW | osConstants.dlopen.RTLD_LOCAL);
}

const consumerWarning = (what: string) => ({
  code: 'consumer-already-loaded',
  message: `${what} is already loaded in this process: if that engine has initialised Metal, it cached the old answers; apply before the first getLlama() / backend load`,
});
const thresholdWarning = {
  code: 'threadgroup-memory-above-hardware',
  message:
    'threadgroup memory 65536 bytes is above 32768, which no Apple GPU exceeds; a kernel sized from it may ask for memory the GPU does not have (profile apple9-hw-tg avoids this)',
};

describeSim('consumer-already-loaded sees libraries loaded RTLD_LOCAL', () => {
  beforeAll(() => {
    requireSimBuild();
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-consumers-')));
  });
  afterEach(() => {
    restore();
  });

  it('no warning before a consumer is loaded; an unrelated ggml library is no consumer', () => {
    loadLocal(library('libggml-base.so'));
    expect(applyProfile('cua-release').warnings).toEqual([thresholdWarning]);
  });

  it('a libggml-metal loaded RTLD_LOCAL before applyProfile() is named, once, by its image', () => {
    const file = library('libggml-metal.so');
    loadLocal(file);
    expect(applyProfile('cua-release').warnings).toEqual([thresholdWarning, consumerWarning(`libggml-metal.so (${file})`)]);
  });

  it('so is an MLX library', () => {
    const file = library('libmlx.so');
    loadLocal(file);
    const consumers = applyProfile('apple9-hw-tg').warnings.filter((w) => w.code === 'consumer-already-loaded');
    expect(consumers).toEqual([
      consumerWarning(`libggml-metal.so (${path.join(dir, 'libggml-metal.so')})`),
      consumerWarning(`libmlx.so (${file})`),
    ]);
  });
});
