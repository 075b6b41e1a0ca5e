// @ts-check
/**
 * node-llama-cpp inside a macOS virtual machine, patched with `metal-cap-shim/register`.
 *
 * Run on macOS, in the examples folder, after a plain `npm install` (WITH optional dependencies: they carry
 * node-llama-cpp's prebuilt Metal binary `@node-llama-cpp/mac-arm64-metal`). Plain JavaScript: Node 20.12+ runs it
 * as it is (the editor and `tsc` still check it against the package's types, through the JSDoc and `@ts-check`):
 *
 *   node node-llama-cpp/index.js
 *   METAL_CAP_SHIM_PROFILE=apple9-hw-tg node node-llama-cpp/index.js   # another built-in profile
 *   METAL_CAP_SHIM_PROFILE=off node node-llama-cpp/index.js            # stock answers, for comparison
 *
 * THE ORDER RULE. ggml-metal asks the Metal device for its capabilities exactly once, in `ggml_metal_device_init`,
 * when the Metal backend registers. node-llama-cpp registers it synchronously inside the first `getLlama()` (the
 * `Llama` constructor loads the backends). Whatever the device answers at that moment decides, for the life of the
 * process, whether SIMD-group reduction, SIMD-group matrix multiply and bfloat kernels are used. A patch installed
 * after the first `getLlama()` changes nothing ggml already cached. So the shim has to be in place before it.
 *
 * Why it is the FIRST import: ES modules hoist imports. Every `import` below is linked and evaluated, in source order,
 * before a single statement of this file's body runs. Calling `applyProfile()` in the body would therefore come after
 * every imported module had already run its top-level code. Importing `metal-cap-shim/register` for its side effect,
 * ahead of everything else, is the only way to patch from inside this file before any other module runs. (Loading
 * node-llama-cpp's JavaScript or its `.node` file does not touch Metal by itself, but other modules in a real program
 * might, and "register first" is a rule that needs no such analysis.) The alternative is `node --import
 * metal-cap-shim/register app.js`, which runs it before the entry module; see index-explicit.js for the explicit API.
 *
 * What `metal-cap-shim/register` does: it reads METAL_CAP_SHIM_PROFILE (a built-in profile name or a JSON object;
 * default `host-family`, the host chip's own family; `off` disables it) and applies that profile ONLY when the process runs inside a virtual
 * machine (sysctl kern.hv_vmm_present = 1). On a real Mac the GPU really is what it reports, so raising its answers
 * would claim features it lacks: there it does nothing, and the same program runs unchanged on bare metal and in a VM.
 * A malformed METAL_CAP_SHIM_PROFILE stops the process (exit 1) instead of running unpatched by surprise.
 */
import 'metal-cap-shim/register';

import { getLlama } from 'node-llama-cpp';
import { predictGates, probe, status } from 'metal-cap-shim';

/** @param {number} bytes */
const gib = (bytes) => `${(bytes / 1024 ** 3).toFixed(2)} GiB`;

// Creates Metal (the first and only time ggml-metal reads the device's capabilities in this process).
//
// node-llama-cpp 3.19 sets GGML_METAL_NO_RESIDENCY=1 around this backend loading, unless GGML_METAL_NO_RESIDENCY is
// already set (or `experimental.metalSkipDisablingResidencySets` is true), and unsets it again afterwards. So under
// node-llama-cpp residency sets stay off regardless of what the device answers, Metal3 included (current ggml decides
// them from the macOS version and that variable alone). MLX has no such switch: it creates residency sets when the
// device says Metal3 and fails on the paravirtual device, which is why no built-in profile advertises Metal3.
// To keep them off for good, export GGML_METAL_NO_RESIDENCY=1 yourself; node-llama-cpp then leaves it alone.
const llama = await getLlama();

console.log('node-llama-cpp');
console.log(`  GPU type:        ${String(llama.gpu)}`); // 'metal' on a Mac, false when it fell back to the CPU
console.log(`  GPU devices:     ${(await llama.getGpuDeviceNames()).join(', ') || '(none)'}`); // the MTLDevice name
// On Metal, `total` comes from the device's recommendedMaxWorkingSetSize (which a profile may raise).
const vram = await llama.getVramState();
console.log(
  `  VRAM:            total ${gib(vram.total)}, used ${gib(vram.used)}, free ${gib(vram.free)}, unified ${gib(vram.unifiedSize)}`,
);

// What the shim did in this process. `active` is false on bare metal, with METAL_CAP_SHIM_PROFILE=off, and wherever
// there is no Metal (`supported` false).
const shim = status();
console.log('\nmetal-cap-shim status()');
console.log(`  METAL_CAP_SHIM_PROFILE: ${process.env.METAL_CAP_SHIM_PROFILE ?? '(unset: host-family)'}`);
console.log(
  `  supported: ${shim.supported}, active: ${shim.active}, profile: ${shim.profile?.name ?? (shim.profile ? 'custom' : 'none')}`,
);
console.log(`  patched classes: ${shim.patchedClasses.join(', ') || '(none)'}`);
for (const hook of shim.hooks)
  console.log(
    `    -[${hook.className} ${hook.selector}] ${hook.mode}${hook.ours ? '' : ' (replaced by someone else since)'}`,
  );

// probe() asks Metal now. With the shim active the answers are the patched ones, i.e. exactly what ggml-metal saw
// during getLlama() above, so predicting from them tells which kernels llama.cpp is using in this process.
const report = probe();
const device = report.devices[0];
if (!report.supported || !device) {
  // `supported` narrows the report: false carries `reason` and `detail`, true carries `host` and the devices.
  console.log(
    `\nno Metal device to predict for (${report.supported ? 'no device' : `${report.reason}: ${report.detail}`})`,
  );
} else {
  // GGML_METAL_NO_RESIDENCY is unset again by now; tell the prediction what node-llama-cpp set during backend loading.
  const env = { ...process.env, GGML_METAL_NO_RESIDENCY: process.env.GGML_METAL_NO_RESIDENCY ?? '1' };
  // status() found the ggml-metal node-llama-cpp loaded: its release, ggml version and the rules that describe it.
  const loaded = shim.llamaCpp[0];
  if (loaded) console.log(`\nllama.cpp loaded: ${loaded.detail}`);
  const gates = predictGates(device, 'llama.cpp', {
    host: report.host,
    env,
    ...(loaded ? { rules: loaded.rules } : {}),
  });
  console.log(
    `\nllama.cpp gates predicted for ${device.name} [${device.className}] (${gates.rules} rules: ${gates.releases})`,
  );
  for (const [flag, { value, reason }] of Object.entries(gates.flags)) {
    console.log(`  ${flag.padEnd(24)} ${String(value).padEnd(5)}  ${reason}`);
  }
  console.log(`  ${gates.consequences.summary}`);
  for (const warning of gates.warnings) console.log(`  ! ${warning}`);
}

await llama.dispose();
