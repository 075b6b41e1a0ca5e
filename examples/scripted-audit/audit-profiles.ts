/**
 * Audits every built-in profile, plus a custom one, against a recorded device snapshot, and prints one JSON document.
 * Works on any OS: with `snapshot` set, audit() computes offline from the recorded answers and never touches Metal.
 *
 *   node scripted-audit/audit-profiles.ts                              # Node 22.18+; Node 20: npx tsx …
 *   node scripted-audit/audit-profiles.ts m1-ultra-bare-metal          # another bundled snapshot
 *   node scripted-audit/audit-profiles.ts ./my-guest.json              # or a snapshot file (metal-cap-shim probe --json)
 *
 * Exit code: 0 when every verdict is ok, 1 when any is not (e.g. a raising profile refused on a bare-metal snapshot),
 * 2 for a usage error (unknown snapshot, bad arguments). That makes it usable as a CI gate on a profile change.
 */
import { parseArgs } from 'node:util';
import { audit, MetalCapShimError, profiles, type AuditResult, type ProfileSpec } from 'metal-cap-shim';

const DEFAULT_SNAPSHOT = 'vz-guest-m1-ultra-tahoe-stock';

/**
 * A custom profile, written as a plain object (the same shape `--profile '{…}'` takes as JSON): the least that turns
 * on llama.cpp's gates (Apple7), hardware threadgroup memory, and Metal3 pinned to NO so MLX never tries residency
 * sets even on a guest whose stock answer would change.
 */
const CUSTOM: { label: string; spec: ProfileSpec } = {
  label: 'custom:apple7-no-metal3',
  spec: { appleFamilyMax: 1007, maxThreadgroupMemoryLength: 32768, families: { metal3: false }, mode: 'raise' },
};

interface ProfileOutcome {
  profile: string;
  verdict: AuditResult['verdict'];
  /** llama.cpp flags that differ between stock and patched, on the default device. */
  llamaCppGatesFlipped: { flag: string; from: boolean | number | null; to: boolean | number | null }[];
  warnings: string[];
  refused: boolean;
}

function outcome(label: string, result: AuditResult): ProfileOutcome {
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

function main(): number {
  let snapshot: string;
  try {
    const { positionals } = parseArgs({ allowPositionals: true, options: {} });
    if (positionals.length > 1) throw new Error(`expected at most one snapshot, got ${positionals.length}`);
    snapshot = positionals[0] ?? DEFAULT_SNAPSHOT;
  } catch (err) {
    console.error(`usage: audit-profiles [SNAPSHOT]  (bundled name or .json path; default ${DEFAULT_SNAPSHOT})\n${(err as Error).message}`);
    return 2;
  }

  const inputs: { label: string; profile: string | ProfileSpec }[] = [
    ...Object.keys(profiles).map((name) => ({ label: name, profile: name })),
    { label: CUSTOM.label, profile: CUSTOM.spec },
  ];

  let results: ProfileOutcome[];
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
