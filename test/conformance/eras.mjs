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
 * (ggml-metal-device.m, ggml_metal_device_init). For `device` eras:
 * - `init`: ggml_metal_device_init's parameters: `void` (b6673, b7347), `device` (`int device`: b8390, b10361) or
 *   `devices` (`int device, int n_devices`: v0.4.0 and later).
 * - `lacks`: the fields of ggml_metal_device_props the driver reads that this era's props do not have: `has_tensor`
 *   (b6673), `desc` (b6673, b7347: the device name is in `name`, which from b8390 on holds "MTL<n>"), `device_id`
 *   (before b10361) and `gpu_family` (before v0.4.0). The driver reports them absent (test/conformance/README.md).
 * - `chips`: how much of llama.cpp's chip parsing the driver reaches: `table` (the k_metal_devices table and
 *   ggml_metal_device_id_token: v0.4.0 and later), `parser` (ggml_metal_device_id_parse alone, whose table is local
 *   to it: b10361), null without device_id.
 * - `tuning`: how ggml-metal-tuning.cpp keys its flash-attention table (`chip`: device_id with a family
 *   representative, `family`: Apple GPU family), null before it existed.
 */
export const ERAS = Object.freeze([
  {
    id: 'b4753',
    package: 'node-llama-cpp@3.6.0',
    integrity: 'sha512-SzjsZLuG2pQPPkgMniTgK4sCcslA6ion5L55L8qeGnIb0cAhzVDbJ0Lxl5NhuTMm8KkxVZXF2yTihyulPMSLhw==',
    kind: 'legacy',
    init: null,
    lacks: [],
    chips: null,
    tuning: null,
    rewrites: ['arguments-0', 'atts-file-type'],
    binaries: {
      package: '@node-llama-cpp/mac-arm64-metal@3.6.0',
      integrity: 'sha512-bOtZkJ6dCWHnZ1SP8EJ+LOdIFKo/7clb0ck+IwD/Bn/2ePzObVBsq30IxpRnUXx8pZ54+CzmTQuS2NOMHXS0PQ==',
    },
  },
  {
    // The first ggml-metal-device.m release npm has: rule set device-b6501 (no node-llama-cpp release bundles b6501 to
    // b6672: 3.13.0 ships b6431, 3.14.0 b6673). No release npm has covers device-b6968
    // (b6968 to b7009).
    id: 'b6673',
    package: 'node-llama-cpp@3.14.0',
    integrity: 'sha512-k6scfmM2zAQVqDAn3HYB+dq/Dl7Mj7SQyPv7TVRZxS7rbkl+P8u44MKXYYkzdU2GD5TcWdkApJ1Facu5Pzlqxg==',
    kind: 'device',
    init: 'void',
    lacks: ['has_tensor', 'desc', 'device_id', 'gpu_family'],
    chips: null,
    tuning: null,
    rewrites: ['arguments-0', 'atts-file-type'],
    // npm has no @node-llama-cpp/mac-arm64-metal@3.14.0.
    binaries: null,
  },
  {
    // Rule set device-b7010.
    id: 'b7347',
    package: 'node-llama-cpp@3.14.5',
    integrity: 'sha512-Db+RFqFMJOOVWprUINq77LVe44FaiJ6JvNiq14r2+DZRgkgyxckSZa6DcZ5Xe5MC+hGA5aqOdnNxsrudUcs74Q==',
    kind: 'device',
    init: 'void',
    lacks: ['desc', 'device_id', 'gpu_family'],
    chips: null,
    tuning: null,
    rewrites: ['arguments-0', 'atts-file-type', 'rsets-data'],
    // npm has no @node-llama-cpp/mac-arm64-metal@3.14.5.
    binaries: null,
  },
  {
    // b7411 and later, before device_id.
    id: 'b8390',
    package: 'node-llama-cpp@3.18.1',
    integrity: 'sha512-w0zfuy/IKS2fhrbed5SylZDXJHTVz4HnkwZ4UrFPgSNwJab3QIPwIl4lyCKHHy9flLrtxsAuV5kXfH3HZ6bb8w==',
    kind: 'device',
    init: 'device',
    lacks: ['device_id', 'gpu_family'],
    chips: null,
    tuning: null,
    rewrites: ['arguments-0', 'atts-file-type', 'rsets-data'],
    binaries: {
      package: '@node-llama-cpp/mac-arm64-metal@3.18.1',
      integrity: 'sha512-cyZTdsUMlvuRlGmkkoBbN3v/DT6NuruEqoQYd9CqIrPyLa1xLNBTSKIZ9SgRnw23iCOj4URfITvRP+2pu63LuQ==',
    },
  },
  {
    // b9333 and later: device_id from the device name (its own 19-chip table), before gpu_family and tuning.
    id: 'b10361',
    package: 'node-llama-cpp@3.20.0',
    integrity: 'sha512-KnET3ttADYLCobjMnMTLkWkLt87rPRDhNzTZgGOCt8m8yTmdQW2sfLNmulGBA9laFvcyRIMOsgQST8lunPmMgw==',
    kind: 'device',
    init: 'device',
    lacks: ['gpu_family'],
    chips: 'parser',
    tuning: null,
    rewrites: ['arguments-0', 'atts-file-type', 'rsets-data'],
    binaries: {
      package: '@node-llama-cpp/mac-arm64-metal@3.20.0',
      integrity: 'sha512-QeFyyTZWicxKGzyoYwR1VtBGM8R1/oHjai9DC6KSg3T8WYpZd3mqATy24GPPVxgg20yEXUCbNl4xyKXZsLD0dQ==',
    },
  },
  {
    id: 'v0.4.0',
    package: 'node-llama-cpp@3.21.1',
    integrity: 'sha512-E3N0Ev2Va0wzydvXYFwM9Hvyo07PoWjt8T/9GMc43Cvt8YkV/NU/tYUgEMC1grTPv2o9PRjQi0G3Wb5P/awiMg==',
    kind: 'device',
    init: 'devices',
    lacks: [],
    chips: 'table',
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
    init: 'devices',
    lacks: [],
    chips: 'table',
    tuning: 'family',
    rewrites: ['arguments-0', 'atts-file-type', 'index-set', 'rsets-data', 'fn-to-lib'],
    // npm has no @node-llama-cpp/mac-arm64-metal@3.22.x.
    binaries: null,
  },
]);

/** The two build configurations of each era: the engine build a snapshot's host runs (see `buildArchOf`). */
export const BUILD_ARCHES = Object.freeze(['arm64', 'x86_64']);

/** The fields an era's driver reports absent: its `lacks`, and `tuning` where it has no tuning table. */
export function absentFields(era) {
  return era.kind === 'legacy' ? [] : [...era.lacks, ...(era.tuning === null ? ['tuning'] : [])];
}
