// @ts-check
/**
 * Audits every built-in profile, plus a custom one, against a recorded device snapshot, and prints one JSON document.
 * Works on any OS: with `snapshot` set, audit() computes offline from the recorded answers and never touches Metal.
 *
 *   node scripted-audit/audit-profiles.js                              # Node 20.12+
 *   node scripted-audit/audit-profiles.js m1-ultra-bare-metal          # another bundled snapshot
 *   node scripted-audit/audit-profiles.js ./my-guest.json              # a snapshot file, or a `metal-cap-shim probe --json` report
 *
 * Exit code: 0 when every verdict is ok, 1 when any is not (e.g. a raising profile refused on a bare-metal snapshot),
 * 2 for a usage error (unknown snapshot, bad arguments). That makes it usable as a CI gate on a profile change.
 */
import { parseArgs } from 'node:util';
import { audit, MetalCapShimError, profiles } from 'metal-cap-shim';

/** @typedef {import('metal-cap-shim').AuditResult} AuditResult */
/** @typedef {import('metal-cap-shim').ProfileSpec} ProfileSpec */
/** @typedef {import('metal-cap-shim').BuiltinProfileName} BuiltinProfileName */

const DEFAULT_SNAPSHOT = 'vz-guest-m1-ultra-tahoe-stock';

/**
 * A custom profile, written as a plain object (the same shape `--profile '{…}'` takes as JSON): the least that turns
 * on llama.cpp's gates (Apple7), hardware threadgroup memory, and Metal3 pinned to NO so MLX never tries residency
 * sets even on a guest whose stock answer would change.
 */
/** @type {{ label: string; spec: ProfileSpec }} */
const CUSTOM = {
  label: 'custom:apple7-no-metal3',
  spec: { appleFamilyMax: 1007, maxThreadgroupMemoryLength: 32768, families: { metal3: false }, mode: 'raise' },
};

/**
 * @typedef {object} ProfileOutcome
 * @property {string} profile
 * @property {AuditResult['verdict']} verdict
 * @property {AuditResult['devices'][number]['engines'][number]['flipped']} llamaCppGatesFlipped
 *   llama.cpp flags that differ between stock and patched, on the default device
 * @property {string[]} warnings
 * @property {boolean} refused
 */

/**
 * @param {string} label
 * @param {AuditResult} result
 * @returns {ProfileOutcome}
 */
function outcome(label, result) {
  // The device engines pick by default: MTLCreateSystemDefaultDevice()'s, else the first listed.
  const device = result.devices.find((d) => d.isDefault) ?? result.devices[0];
  const llama = device?.engines.find((e) => e.engine === 'llama.cpp');
  return {
    profile: label,
    verdict: result.verdict,
    llamaCppGatesFlipped: llama?.flipped ?? [],
    warnings: result.warnings.map((w) => w.code),
    refused: result.refused,
  };
}

/** @returns {number} the exit code */
function main() {
  /** @type {string} */
  let snapshot;
  try {
    const { positionals } = parseArgs({ allowPositionals: true, options: {} });
    if (positionals.length > 1) throw new Error(`expected at most one snapshot, got ${positionals.length}`);
    snapshot = positionals[0] ?? DEFAULT_SNAPSHOT;
  } catch (err) {
    console.error(
      `usage: audit-profiles [SNAPSHOT]  (bundled name or .json path; default ${DEFAULT_SNAPSHOT})\n${/** @type {Error} */ (err).message}`,
    );
    return 2;
  }

  /** @type {{ label: string; profile: BuiltinProfileName | ProfileSpec }[]} */
  const inputs = [
    // The profile table's keys are exactly the built-in names.
    .../** @type {BuiltinProfileName[]} */ (Object.keys(profiles)).map((name) => ({ label: name, profile: name })),
    { label: CUSTOM.label, profile: CUSTOM.spec },
  ];

  /** @type {ProfileOutcome[]} */
  let results;
  try {
    // env: {} — the snapshot was recorded on another machine, so this shell's GGML_METAL_* variables say nothing
    // about it; an empty environment keeps the output the same wherever the script runs.
    results = inputs.map(({ label, profile }) => outcome(label, audit({ profile, snapshot, env: {} })));
  } catch (err) {
    // Stable codes: ERR_SNAPSHOT_NOT_FOUND, ERR_INVALID_SNAPSHOT, ERR_INVALID_PROFILE …
    if (err instanceof MetalCapShimError) {
      console.error(`audit-profiles: ${err.code}: ${err.message}`);
      return 2;
    }
    throw err;
  }

  const ok = results.every((r) => r.verdict.ok);
  console.log(JSON.stringify({ snapshot, ok, profiles: results }, null, 2));
  return ok ? 0 : 1;
}

process.exitCode = main();
