// One decision, every command: planPatch (lib/patch/plan.ts) decides what a profile does on a host (bound to it,
// refused or accepted, its warnings), and every command that applies, audits, injects or measures a profile calls it.
// This file runs each of them (audit, probe --short, exec, bench and doctor as the CLI, applyProfile in this process)
// with every built-in profile, the default, a profile refused for its MLX architecture and one refused for a
// threadgroup request above every Apple GPU, on every bundled snapshot
// (offline, or loaded into the simulated Metal), and compares what each decided with planPatch's plan.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EXEC_EXIT, EXIT } from '../../lib/cli/exit.js';
import type { AuditResult } from '../../lib/audit/audit.js';
import type { SupportedDoctorReport } from '../../lib/doctor/types.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import { listSnapshots } from '../../lib/device/snapshots.js';
import { restore } from '../../lib/patch/apply.js';
import {
  planPatch,
  refusedError,
  type ApplyWarning,
  type PatchPlan,
  type PlanRefusalReason,
} from '../../lib/patch/plan.js';
import { DEFAULT_PROFILE, profiles, resolveProfile, type Profile } from '../../lib/patch/profiles.js';
import { applyProfile } from '../../lib/select/auto.js';
import { MLX_ARCHITECTURE_ENV } from '../../lib/engines/mlx-architecture.js';
import { cli, describeSim, requireSimBuild } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

/**
 * The profiles each command is given: none (the default), every built-in, one MLX architecture above any host, and
 * one whose threadgroup claim the newest llama.cpp rules (Apple10's tuned rows) would size above every Apple GPU.
 */
const MLX_ABOVE_HOST = '{"mlxArchitecture": "applegpu_g17s"}';
const ABOVE_HARDWARE = '{"appleFamilyMax": 1010, "maxThreadgroupMemoryLength": 65536}';
const PROFILES: (string | null)[] = [null, ...Object.keys(profiles), MLX_ABOVE_HOST, ABOVE_HARDWARE];
const SNAPSHOTS = listSnapshots();
const CASES = SNAPSHOTS.flatMap((snapshot) => PROFILES.map((profile) => [snapshot, profile] as const));

/** What a command decided, in the terms every command can show. */
interface Decision {
  accepted: boolean;
  /** The RefusedError code of a refusal. */
  code: string | null;
  /** The profile as bound to the host (or as requested, when it could not be bound). */
  profile: Profile;
  warnings: string[];
}

const REFUSALS: readonly string[] = [
  'host-unknown',
  'refused-bare-metal',
  'mlx-architecture-refused',
  'above-hardware',
];
const isRefusal = (reason: string): reason is PlanRefusalReason => REFUSALS.includes(reason);
const codes = (warnings: readonly ApplyWarning[]) => warnings.map((w) => w.code);

/** planPatch's plan for a profile on a snapshot, as the commands see it stock (no force, the newest rules). */
function planOf(snapshot: string, profile: string | null): PatchPlan {
  const stock = probeSnapshot(snapshot, { allDevices: true });
  if (!stock.supported) throw new Error(`${snapshot}: ${stock.detail}`);
  return planPatch(stock, resolveProfile(profile ?? DEFAULT_PROFILE), { force: false });
}

/**
 * The decision a command shows. audit and doctor show what a refused profile would warn of; applyProfile, exec and
 * bench say the refusal alone (`sayRefusalAlone`).
 */
function expected(plan: PatchPlan, sayRefusalAlone = false): Decision {
  return {
    accepted: plan.accepted,
    code: plan.accepted ? null : refusedError(plan.reason, plan.detail).code,
    profile: plan.profile,
    warnings: plan.accepted || !sayRefusalAlone ? codes(plan.warnings) : [],
  };
}

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-plan-agreement-'));
/** llama-bench, as bench reads it: one test, at once. */
const FAKE_BENCH = path.join(dir, 'llama-bench');
writeFileSync(
  FAKE_BENCH,
  `#!/bin/sh\necho '[{"build_commit":"abc1234","build_number":7010,"backends":"CPU","model_filename":"tiny.gguf","n_prompt":512,"n_gen":0,"avg_ts":100}]'\n`,
);
chmodSync(FAKE_BENCH, 0o755);

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Neither the user's profile nor an architecture of theirs: each run decides from its arguments alone. */
function cleanEnv(snapshot: string | null): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.METAL_CAP_SHIM_PROFILE;
  delete env[MLX_ARCHITECTURE_ENV];
  if (snapshot === null) delete env.METAL_CAP_SHIM_SIM_SNAPSHOT;
  else env.METAL_CAP_SHIM_SIM_SNAPSHOT = snapshot;
  return env;
}

/** Runs the CLI without waiting for it (the cases run two at a time). */
function runAsync(args: string[], snapshot: string | null): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cli, ...args],
      { env: cleanEnv(snapshot), encoding: 'utf8', timeout: 60_000 },
      (error, stdout, stderr) => {
        const status = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ status, stdout, stderr });
      },
    );
  });
}

/** Each job in turn, `width` at a time. */
async function pooled<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const results: T[] = new Array<T>(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]!();
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}

const profileArgs = (profile: string | null) => (profile === null ? [] : ['--profile', profile]);
const label = (snapshot: string, profile: string | null) => `${snapshot}, ${profile ?? `(default ${DEFAULT_PROFILE})`}`;

/** The {"error"} line a command printed, in either stream. */
function errorCode(r: Ran): string | null {
  for (const line of `${r.stdout}\n${r.stderr}`.split('\n')) {
    if (!line.startsWith('{"error"')) continue;
    return (JSON.parse(line) as { error: { code: string } }).error.code;
  }
  return null;
}

describe('audit and probe --short, offline: the plan of every profile on every bundled snapshot', () => {
  const audits = new Map<string, Ran>();
  const shorts = new Map<string, Ran>();
  beforeAll(async () => {
    const jobs = CASES.flatMap(([snapshot, profile]) => [
      async () =>
        audits.set(
          label(snapshot, profile),
          await runAsync(['audit', '--json', '--snapshot', snapshot, ...profileArgs(profile)], null),
        ),
      async () =>
        shorts.set(
          label(snapshot, profile),
          await runAsync(['probe', '--short', '--snapshot', snapshot, ...profileArgs(profile)], null),
        ),
    ]);
    await pooled(jobs, 2);
  }, 300_000);

  it.each(CASES)('audit: %s with %s', (snapshot, profile) => {
    const plan = planOf(snapshot, profile);
    const r = audits.get(label(snapshot, profile))!;
    expect([r.status, r.stderr]).toEqual([plan.accepted ? EXIT.ok : EXIT.refused, '']);
    const out = JSON.parse(r.stdout) as AuditResult;
    const decided: Decision = {
      accepted: !out.refused,
      code: out.refusedReason === null ? null : refusedError(out.refusedReason, '').code,
      profile: out.profile,
      warnings: codes(out.warnings),
    };
    expect(decided).toEqual(expected(plan));
  });

  it.each(CASES)('probe --short: %s with %s', (snapshot, profile) => {
    const plan = planOf(snapshot, profile);
    const r = shorts.get(label(snapshot, profile))!;
    expect([r.status, r.stderr]).toEqual([EXIT.ok, '']);
    const lines = r.stdout.trimEnd().split('\n');
    // A refusal is said on every device's line, and nothing else says it.
    expect(lines.map((l) => / refused: /.test(l))).toEqual(lines.map(() => !plan.accepted));
  });
});

describeSim('exec, bench and doctor over the simulated Metal: the same plan', () => {
  beforeAll(requireSimBuild);
  const execs = new Map<string, Ran>();
  const benches = new Map<string, Ran>();
  const doctors = new Map<string, Ran>();
  beforeAll(async () => {
    const jobs = CASES.flatMap(([snapshot, profile]) => [
      async () =>
        execs.set(
          label(snapshot, profile),
          await runAsync(['exec', '--json', '-q', ...profileArgs(profile), '--', 'true'], snapshot),
        ),
      async () =>
        benches.set(
          label(snapshot, profile),
          await runAsync(['bench', '--json', '--rounds', '1', ...profileArgs(profile), '--', FAKE_BENCH], snapshot),
        ),
      async () =>
        doctors.set(
          label(snapshot, profile),
          await runAsync(['doctor', '--json', '--mmap-size', '1M', ...profileArgs(profile)], snapshot),
        ),
    ]);
    await pooled(jobs, 2);
  }, 600_000);

  it.each(CASES)('exec: %s with %s', (snapshot, profile) => {
    const plan = planOf(snapshot, profile);
    const r = execs.get(label(snapshot, profile))!;
    if (!plan.accepted) {
      expect([r.status, errorCode(r)]).toEqual([EXEC_EXIT.failed, expected(plan).code]);
      return;
    }
    expect(r.status).toBe(0);
    const line = JSON.parse(r.stderr.trimEnd().split('\n').at(-1)!) as {
      warnings: ApplyWarning[];
      mlxArchitecture: string | null;
    };
    expect({ warnings: codes(line.warnings), mlxArchitecture: line.mlxArchitecture }).toEqual({
      warnings: expected(plan).warnings,
      mlxArchitecture: plan.mlxArchitecture,
    });
  });

  it.each(CASES)('bench: %s with %s', (snapshot, profile) => {
    const plan = planOf(snapshot, profile);
    const r = benches.get(label(snapshot, profile))!;
    if (!plan.accepted) {
      expect([r.status, errorCode(r)]).toEqual([EXIT.refused, expected(plan).code]);
      return;
    }
    expect(r.status).toBe(EXIT.ok);
    const out = JSON.parse(r.stdout) as { profiles: { profile: Profile; warnings: ApplyWarning[] }[] };
    expect(out.profiles.map((p) => ({ profile: p.profile, warnings: codes(p.warnings) }))).toEqual([
      { profile: plan.profile, warnings: expected(plan).warnings },
    ]);
  });

  it.each(CASES)('doctor: %s with %s', (snapshot, profile) => {
    const plan = planOf(snapshot, profile);
    const r = doctors.get(label(snapshot, profile))!;
    const out = JSON.parse(r.stdout) as SupportedDoctorReport;
    expect({
      profile: out.candidateProfile,
      warnings: codes(out.candidateWarnings),
      // The second run happens where the plan is accepted and changes an answer.
      patchedRun: out.patchedRun.ran,
    }).toEqual({
      profile: plan.profile,
      warnings: expected(plan).warnings,
      patchedRun: plan.accepted && plan.changes.length > 0,
    });
  });
});

describeSim('applyProfile, in this process over the simulated Metal: the same plan', () => {
  afterEach(() => {
    restore();
    delete process.env[MLX_ARCHITECTURE_ENV];
  });

  describe.each(SNAPSHOTS)('%s', (snapshot) => {
    useSimulation(snapshot);
    it.each(PROFILES)('with %s', (profile) => {
      const plan = planOf(snapshot, profile);
      const r = profile === null ? applyProfile() : applyProfile(resolveProfile(profile));
      const decided: Decision = {
        accepted: r.applied,
        code: r.applied ? null : isRefusal(r.reason) ? refusedError(r.reason, '').code : `not a refusal: ${r.reason}`,
        profile: r.profile,
        warnings: codes(r.warnings),
      };
      expect(decided).toEqual(expected(plan, true));
    });
  });
});
