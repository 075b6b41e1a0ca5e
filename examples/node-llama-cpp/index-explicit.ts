/**
 * node-llama-cpp with an explicit `applyProfile()` instead of `metal-cap-shim/register`.
 *
 * Run on macOS, in the examples folder (see index.ts for the install note):
 *
 *   node node-llama-cpp/index-explicit.ts        # Node 22.18+; on Node 20: npx tsx node-llama-cpp/index-explicit.ts
 *
 * Same order rule as index.ts: the profile must be applied before the first `getLlama()`, because ggml-metal reads the
 * device's capabilities once, when the Metal backend registers inside that call. Here the order is made explicit:
 * this file statically imports only metal-cap-shim (which touches neither Metal nor native code at import time), applies
 * the profile, checks the result, and only then loads node-llama-cpp with a dynamic `await import()`. A dynamic import
 * is evaluated where it is written, unlike a static one, which ES modules hoist above the whole body.
 *
 * Unlike `register`, applyProfile() does not check for a virtual machine first: it refuses by itself (RefusedError)
 * to raise answers on a host that is not a VM, which is handled below so the program still runs on a real Mac.
 */
import { applyProfile, predictGates, probe, RefusedError, type ApplyResult } from 'metal-cap-shim';

/**
 * `apple9-hw-tg` answers Apple families up to Apple9 but leaves threadgroup memory at the 32768 bytes every Apple GPU
 * really has (cua-release reports 65536, more than any GPU). llama.cpp's three gates still turn on.
 */
const PROFILE = 'apple9-hw-tg';

function applyShim(): ApplyResult | null {
  try {
    return applyProfile(PROFILE);
  } catch (err) {
    // Bare metal: the GPU really is what it reports, there is nothing to fix. Run stock.
    if (err instanceof RefusedError) {
      console.log(`metal-cap-shim: not patching (${err.code}): this is not a virtual machine`);
      return null;
    }
    throw err; // InvalidProfileError, NativeError …: a bug or a broken install, not something to run past silently.
  }
}

const result = applyShim();
if (result) {
  if (!result.applied) {
    // `reason` says why: unsupported-platform (not macOS), native-module-unavailable (addon missing),
    // no-device (headless session / VM without a paravirtual GPU), or verification-failed (the hooks were installed
    // but a fresh device did not answer as the profile says, so they were taken out again: the engine fails closed).
    // Pass { strict: true } to applyProfile() to get an exception instead. Here we go on unpatched, and slow.
    console.warn(`metal-cap-shim: ${PROFILE} NOT applied (${result.reason}): ${result.detail}`);
  } else {
    console.log(`metal-cap-shim: ${PROFILE} applied to ${result.patchedClasses.map((c) => c.className).join(', ')}`);
    for (const change of result.changed) {
      console.log(`  device ${change.device} ${change.field}: ${String(change.from)} -> ${String(change.to)}`);
    }
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
  // `verification` compares every hooked answer on freshly obtained devices with what the profile predicts.
  if (result.verification) {
    const v = result.verification;
    console.log(`  verification: ${v.ok ? 'ok' : 'FAILED'} (${v.checked} answers checked, ${v.mismatches.length} mismatches)`);
    for (const m of v.mismatches) {
      console.log(`    device ${m.device} [${m.className}] ${m.field}: expected ${String(m.expected)}, got ${String(m.actual)}`);
    }
  }
}

// Only now load node-llama-cpp and create Metal.
const { getLlama } = await import('node-llama-cpp');
const llama = await getLlama();
console.log(`\nnode-llama-cpp: GPU ${String(llama.gpu)}, devices: ${(await llama.getGpuDeviceNames()).join(', ') || '(none)'}`);
const vram = await llama.getVramState();
console.log(`VRAM total ${(vram.total / 1024 ** 3).toFixed(2)} GiB (from recommendedMaxWorkingSetSize)`);

// The gates ggml-metal computed from the answers it got. node-llama-cpp had GGML_METAL_NO_RESIDENCY=1 set while it
// loaded the backends (unless it was already set), so residency sets are off regardless of the Metal3 answer.
const report = probe();
const device = report.devices[0];
if (device) {
  const env = { ...process.env, GGML_METAL_NO_RESIDENCY: process.env.GGML_METAL_NO_RESIDENCY ?? '1' };
  const gates = predictGates(device, 'llama.cpp', { host: report.host, env });
  const on = Object.entries(gates.flags)
    .filter(([, f]) => f.value)
    .map(([flag]) => flag);
  console.log(`llama.cpp gates on for ${device.name}: ${on.join(', ') || '(none)'}`);
  console.log(gates.consequences.summary);
}

await llama.dispose();
