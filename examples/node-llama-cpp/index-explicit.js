// @ts-check
/**
 * node-llama-cpp with an explicit `applyProfile()` instead of `metal-cap-shim/register`.
 *
 * Run on macOS, in the examples folder (see index.js for the install note):
 *
 *   node node-llama-cpp/index-explicit.js
 *
 * Same order rule as index.js: the profile must be applied before the first `getLlama()`, because ggml-metal reads the
 * device's capabilities once, when the Metal backend registers inside that call. Here the order is made explicit:
 * this file statically imports only metal-cap-shim (which touches neither Metal nor native code at import time), applies
 * the profile, checks the result, and only then loads node-llama-cpp with a dynamic `await import()`. A dynamic import
 * is evaluated where it is written, unlike a static one, which ES modules hoist above the whole body.
 *
 * Unlike `register`, applyProfile() does not check for a virtual machine first. On a host that is not a VM it does
 * not raise answers: it returns `applied: false` with `reason: 'refused-bare-metal'`, like every other way of not
 * applying, so the program below runs stock on a real Mac.
 */
import { applyProfile, predictGates, probe, status } from 'metal-cap-shim';

/**
 * `apple9-hw-tg` answers Apple families up to Apple9 but leaves threadgroup memory at the 32768 bytes every Apple GPU
 * really has (cua-release reports 65536, more than any GPU). llama.cpp's three gates still turn on.
 */
const PROFILE = 'apple9-hw-tg';

// Throws only for a bad profile or option (InvalidProfileError, InvalidOptionsError) or a bug: not to be run past.
const result = applyProfile(PROFILE);
if (!result.applied) {
  // `reason` says why: refused-bare-metal (a real Mac: the GPU really is what it reports), unsupported-platform (not
  // macOS), native-module-unavailable (addon missing), no-device (headless session / VM without a paravirtual GPU),
  // hook-failed (a device class lacks a query, e.g. under MTL_DEBUG_LAYER: nothing was installed), or
  // verification-failed (the hooks were installed but a fresh device did not answer as the profile says, so they were
  // taken out again: the engine fails closed). Pass { strict: true } to get an exception instead. Here we go on
  // unpatched.
  console.warn(`metal-cap-shim: ${PROFILE} NOT applied (${result.reason}): ${result.detail}`);
  // Only a failed verification has one; it lists the answers that did not match.
  for (const m of result.verification?.mismatches ?? []) {
    console.warn(
      `  device ${m.device} [${m.className}] ${m.field}: expected ${String(m.expected)}, got ${String(m.actual)}`,
    );
  }
} else {
  // `applied: true` narrows the result: `verification`, `before` and `after` are there, no `!` or `?.` needed.
  console.log(`metal-cap-shim: ${PROFILE} applied to ${result.patchedClasses.map((c) => c.className).join(', ')}`);
  for (const change of result.changed) {
    console.log(`  device ${change.device} ${change.field}: ${String(change.from)} -> ${String(change.to)}`);
  }
  // `verification` compares every hooked answer on freshly obtained devices with what the profile predicts.
  console.log(
    `  verification: ok (${result.verification.checked} answers checked on ${result.after.devices.length} device(s))`,
  );
}
// Warnings have stable codes. `consumer-already-loaded` means llama.cpp / MLX code was already in the process when
// the profile went in: if that engine has initialised Metal, it cached the old answers and the patch is moot.
// `advertises-metal3` and `threadgroup-memory-above-hardware` come from the profile itself; `not-paravirtual` from
// patching a real GPU (only with { force: true }); `no-change` from a device that already answers that way.
for (const w of result.warnings) console.warn(`  warning [${w.code}]: ${w.message}`);
if (result.warnings.some((w) => w.code === 'consumer-already-loaded')) {
  console.error('metal-cap-shim: applied too late for this process; apply before anything loads llama.cpp');
  process.exit(1);
}

// Only now load node-llama-cpp and create Metal.
const { getLlama } = await import('node-llama-cpp');
const llama = await getLlama();
console.log(
  `\nnode-llama-cpp: GPU ${String(llama.gpu)}, devices: ${(await llama.getGpuDeviceNames()).join(', ') || '(none)'}`,
);
const vram = await llama.getVramState();
console.log(`VRAM total ${(vram.total / 1024 ** 3).toFixed(2)} GiB (from recommendedMaxWorkingSetSize)`);

// The gates ggml-metal computed from the answers it got. node-llama-cpp had GGML_METAL_NO_RESIDENCY=1 set while it
// loaded the backends (unless it was already set), so residency sets are off regardless of the Metal3 answer.
const report = probe();
const device = report.devices[0];
if (report.supported && device) {
  const env = { ...process.env, GGML_METAL_NO_RESIDENCY: process.env.GGML_METAL_NO_RESIDENCY ?? '1' };
  // The rules of the llama.cpp node-llama-cpp loaded (status() finds it), else the newest.
  const loaded = status().llamaCpp[0];
  const gates = predictGates(device, 'llama.cpp', {
    host: report.host,
    env,
    ...(loaded ? { rules: loaded.rules } : {}),
  });
  if (loaded) console.log(`llama.cpp loaded: ${loaded.detail}`);
  const on = Object.entries(gates.flags)
    .filter(([, f]) => f.value === true)
    .map(([flag]) => flag);
  console.log(`llama.cpp gates on for ${device.name}: ${on.join(', ') || '(none)'}`);
  console.log(gates.consequences.summary);
}

await llama.dispose();
