// The llama.cpp releases the conformance suite builds, each from the node-llama-cpp tarball that ships it
// (`llama/gitRelease.bundle`, tag in `llama/llama.cpp.info.json`), pinned by npm integrity. `binaries` is the
// matching @node-llama-cpp/mac-arm64-metal tarball (Mach-O builds) for the static checks, where npm has one.

/**
 * Object subscripts rewritten as messages: GCC's Objective-C runtime has no subscripting, and these are the only
 * changes made to llama.cpp's sources. Each era lists the rewrites its sources need; the build fails when a listed
 * one no longer matches (the sources changed) or an unlisted one is left (the compiler says where).
 */
export const SUBSCRIPT_REWRITES = {
  'arguments-0': [
    '[[NSProcessInfo processInfo] arguments][0]',
    '[[[NSProcessInfo processInfo] arguments] objectAtIndex:0]',
  ],
  'atts-file-type': ['atts[NSFileType]', '[atts objectForKey:NSFileType]'],
  'index-set': ['index[fname] = @(kind);', '[index setObject:@(kind) forKey:fname];'],
  'rsets-data': ['res->data[i]', '[res->data objectAtIndex:i]'],
  'fn-to-lib': ['lib->fn_to_lib[base_func]', '[lib->fn_to_lib objectForKey:base_func]'],
};

/**
 * `kind`: `legacy` (ggml-metal.m, the device context set up in ggml_backend_metal_device_acq) or `device`
 * (ggml-metal-device.m, ggml_metal_device_init). `tuning`: how ggml-metal-tuning.cpp keys its flash-attention
 * table (`chip`: device_id with a family representative, `family`: Apple GPU family), null before it existed.
 */
export const ERAS = Object.freeze([
  {
    id: 'b4753',
    package: 'node-llama-cpp@3.6.0',
    integrity: 'sha512-SzjsZLuG2pQPPkgMniTgK4sCcslA6ion5L55L8qeGnIb0cAhzVDbJ0Lxl5NhuTMm8KkxVZXF2yTihyulPMSLhw==',
    kind: 'legacy',
    tuning: null,
    rewrites: ['arguments-0', 'atts-file-type'],
    binaries: {
      package: '@node-llama-cpp/mac-arm64-metal@3.6.0',
      integrity: 'sha512-bOtZkJ6dCWHnZ1SP8EJ+LOdIFKo/7clb0ck+IwD/Bn/2ePzObVBsq30IxpRnUXx8pZ54+CzmTQuS2NOMHXS0PQ==',
    },
  },
  {
    id: 'v0.4.0',
    package: 'node-llama-cpp@3.21.1',
    integrity: 'sha512-E3N0Ev2Va0wzydvXYFwM9Hvyo07PoWjt8T/9GMc43Cvt8YkV/NU/tYUgEMC1grTPv2o9PRjQi0G3Wb5P/awiMg==',
    kind: 'device',
    tuning: 'chip',
    rewrites: ['arguments-0', 'atts-file-type', 'index-set', 'rsets-data', 'fn-to-lib'],
    binaries: {
      package: '@node-llama-cpp/mac-arm64-metal@3.21.1',
      integrity: 'sha512-6MIDAZV7DXD9R1+jEXWJkFuolni3GATGE6mmuyFYc6ZmtOh9djAy15df0T0AXK3sCmVKL+fQcOAWZezxx4MvQQ==',
    },
  },
  {
    id: 'v0.5.0',
    package: 'node-llama-cpp@3.22.1',
    integrity: 'sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw==',
    kind: 'device',
    tuning: 'family',
    rewrites: ['arguments-0', 'atts-file-type', 'index-set', 'rsets-data', 'fn-to-lib'],
    // npm has no @node-llama-cpp/mac-arm64-metal@3.22.x.
    binaries: null,
  },
]);

/** The two build configurations of each era: the engine build a snapshot's host runs (see `buildArchOf`). */
export const BUILD_ARCHES = Object.freeze(['arm64', 'x86_64']);
