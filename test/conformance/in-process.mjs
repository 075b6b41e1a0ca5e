// One in-process conformance run (test/conformance/README.md): in a Node process whose simulated Metal holds one
// snapshot, for each profile (none first, then every built-in), applyProfile() and then llama.cpp's own device
// initialisation (the driver addon), once per case. Also what status() and a live audit() say of the loaded llama.cpp.
//
//   METAL_CAP_SHIM_SIM_SNAPSHOT=<snapshot> node in-process.mjs <conformance.node>   (cases on stdin)
//
// Prints one JSON object: { identity, loaded, liveAuditRules, runs: [{ profile, applied, device, output }] }.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(import.meta.url);
const { applyProfile, audit, probe, profiles, restore, status } = require(path.join(root, 'dist', 'index.cjs'));

const cases = readFileSync(0, 'utf8');
const driver = require(process.argv[2]);

const defaultDevice = (report) => report.devices.find((d) => d.isDefault) ?? report.devices[0];

const runs = [];
for (const name of [null, ...Object.keys(profiles)]) {
  let applied = null;
  let device;
  if (name === null) {
    device = defaultDevice(probe({ allDevices: true }));
  } else {
    // The gates are what is compared here: a claim the loaded ggml-metal.m would size above the hardware (the plan's
    // above-hardware refusal, tested in test/patch/) is applied anyway, as in a simulation nothing runs on a GPU.
    const result = applyProfile(name, { force: true, allowAboveHardware: true });
    applied = result.applied;
    if (!result.applied) {
      runs.push({ profile: name, applied, reason: result.reason, detail: result.detail });
      continue;
    }
    device = defaultDevice(result.after);
  }
  const output = driver.run(cases);
  runs.push({ profile: name, applied, device, output });
  if (name !== null) restore();
}

// The driver's libggml-metal.so is loaded now: what the consumer scan says of it, and which rules a live audit uses.
const loaded = status().llamaCpp;
const live = audit({ profile: 'apple7', engines: ['llama.cpp'], force: true });
process.stdout.write(JSON.stringify({ loaded, liveAuditRules: live.llamaCppRules, runs }));
