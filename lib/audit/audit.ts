import { applyPatch, notAppliedError, restore, status, type Verification } from '../patch/apply.js';
import { planPatch, predictedMlxArchitecture, type ApplyWarning, type PatchPlan } from '../patch/plan.js';
import { InvalidOptionsError, ProfileActiveError, UnsupportedPlatformError } from '../core/errors.js';
import {
  ENGINES,
  checkOllamaRelease,
  LLAMA_CPP_RULE_SET_INFO,
  LLAMA_CPP_RULE_SETS,
  MLX_ARCHITECTURE_FLAGS,
  mlxRulesFor,
  ollamaLlamaCpp,
  parseRelease,
  predictChecked,
  ruleSetForRelease,
  aboveHardware,
  threadgroupChanges,
  type ThreadgroupChange,
  type ThreadgroupConfiguration,
  type EnvMap,
  type Engine,
  type GatePrediction,
  type LlamaCppRuleSet,
  type MlxFlag,
  type OllamaLlamaCpp,
  type ValidOptions,
} from '../engines/index.js';
import { loadedLlamaCpp } from '../engines/loaded-llama.js';
import { plural } from '../core/words.js';
import { loadNative } from '../device/native.js';
import { readInput } from '../core/input.js';
import { checkOptions, optionFailure } from '../core/options.js';
import { stockReport } from '../device/probe.js';
import {
  DEFAULT_PROFILE,
  diffAnswers,
  resolveProfile,
  type AnswerChange,
  type Profile,
  type ProfileInput,
} from '../patch/profiles.js';
import { loadSnapshot, reportFromSnapshot } from '../device/snapshots.js';
import type { DeviceReport, HostInfo, SupportedReport } from '../device/types.js';

/** Options for audit(). */
export interface AuditOptions {
  /** Profile to audit; default DEFAULT_PROFILE (host-family). */
  profile?: ProfileInput | undefined;
  /** Audit a recorded snapshot offline (any OS) instead of this process's devices. */
  snapshot?: string | undefined;
  /** Engines to predict for; default both. */
  engines?: Engine[] | undefined;
  /** llama.cpp rule set; default: the loaded llama.cpp's (live audits), else current. */
  rules?: LlamaCppRuleSet | undefined;
  /** A llama.cpp release (`b4753`, `v0.4.0`) whose rules to use; not together with `rules`. */
  release?: string | undefined;
  /**
   * An Ollama release (`v0.32.15`, `0.32.15`): the llama.cpp it builds decides the rules, and its patches' op gates
   * apply; not together with `rules` or `release`.
   */
  ollamaRelease?: string | undefined;
  /** Allow raising on a host that is not a VM (live mode applies the profile). */
  force?: boolean | undefined;
  /** Allow a threadgroup claim the llama.cpp release audited would turn into a request above every Apple GPU's
   * threadgroup memory (refused otherwise, `above-hardware`); `force` does not. */
  allowAboveHardware?: boolean | undefined;
  /** Environment the engines would see; default process.env. */
  env?: EnvMap | undefined;
  /** An MLX release (`v0.31.0`, `0.31.0`) whose rules to use; default the newest. */
  mlxRelease?: string | undefined;
  /**
   * An architecture name offered to MLX as MLX_METAL_GPU_ARCH under the profile (`applegpu_g13s`): the patched
   * prediction sees it, the stock one does not; default none.
   */
  mlxArchitecture?: string | null | undefined;
}

/** One engine value that differs between stock and patched. */
export interface GateFlip {
  flag: string;
  from: boolean | number | string | null;
  to: boolean | number | string | null;
}

/** Which llama.cpp rules an audit applied, and why. */
export interface LlamaCppRulesUsed {
  rules: LlamaCppRuleSet;
  /** The releases that rule set describes. */
  releases: string;
  /** The llama.cpp release they were chosen for: asked with `release`, or the loaded one's; null otherwise. */
  release: string | null;
  /** `option`: `rules` or `release` given; `loaded`: the llama.cpp loaded in this process; `default`: neither. */
  source: 'option' | 'loaded' | 'default';
  /** One line saying why. */
  detail: string;
  /** When an Ollama release was asked for: the release, the llama.cpp it builds and its patches (ollama-releases.ts). */
  ollama?: Omit<OllamaLlamaCpp, 'detail'>;
}

/** An engine's predicted init flags before and after the profile. */
export interface EngineComparison {
  engine: Engine;
  before: GatePrediction;
  after: GatePrediction;
  flipped: GateFlip[];
  /** llama.cpp: the kernel configurations whose threadgroup request the patch changes, and those that then ask for
   * more than every Apple GPU's threadgroup memory; null for MLX. */
  threadgroup: { changed: ThreadgroupChange[]; aboveHardware: ThreadgroupConfiguration[] } | null;
}

/** One device, stock vs patched. */
export interface DeviceAudit {
  index: number;
  isDefault: boolean;
  name: string;
  className: string;
  stock: DeviceReport;
  patched: DeviceReport;
  changes: AnswerChange[];
  engines: EngineComparison[];
}

/**
 * Why an audit's profile would not be applied: raising on bare metal, a `'host'` value on a host whose chip is unknown,
 * an `mlxArchitecture` refused on this host (above its GPU generation, or turning on MLX's NAX kernels), or a
 * threadgroup claim the llama.cpp release would turn into a request above every Apple GPU's threadgroup memory.
 */
export type AuditRefusal = 'refused-bare-metal' | 'host-unknown' | 'mlx-architecture-refused' | 'above-hardware';

/** Fields every audit has. */
interface AuditBase {
  schema: 'metal-cap-shim/audit@1';
  /** The profile audited: bound to the host (its `'host'` values replaced) unless the host's chip is unknown. */
  profile: Profile;
  /** Why it would be refused (then `refused` is true), or null. */
  refusedReason: AuditRefusal | null;
  devices: DeviceAudit[];
  warnings: ApplyWarning[];
  /** The llama.cpp rules the predictions used. */
  llamaCppRules: LlamaCppRulesUsed;
  /** One line: what changes and whether it is safe; `ok` is false when refused or when verification failed. */
  verdict: { ok: boolean; summary: string };
}

/** Computed from a recorded snapshot; nothing was applied. */
export interface OfflineAudit extends AuditBase {
  mode: 'offline';
  snapshot: string;
  host: HostInfo;
  /** True when applying would be refused on the recorded host (raising on a host that is not a VM without force, or
   * claiming the host's chip where it is unknown): `refusedReason` says which. */
  refused: boolean;
  verification: null;
}

/** Applied in this process, verified on fresh devices, and restored. */
export interface LiveAudit extends AuditBase {
  mode: 'live';
  /** Set when the answers come from the simulated Metal (Linux test build). */
  snapshot: string | null;
  host: HostInfo;
  refused: false;
  /** The patched answers checked on fresh devices, and the restored answers checked against stock. */
  verification: { apply: Verification; restore: Verification };
}

/** Live mode on a host where applying would be refused: nothing was applied. */
export interface RefusedLiveAudit extends AuditBase {
  mode: 'live';
  snapshot: string | null;
  host: HostInfo;
  refused: true;
  verification: null;
  verdict: { ok: false; summary: string };
}

/** The outcome of audit(): what a profile changes, what engines will do, and whether it is safe to apply. Narrow it
 * on `mode` and `refused`. */
export type AuditResult = OfflineAudit | LiveAudit | RefusedLiveAudit;

/** Flattens a prediction into flag → value, for comparing two predictions. */
export function gateValues(p: GatePrediction): Record<string, boolean | number | string | null> {
  return Object.fromEntries(
    Object.entries(p.flags).map(([k, v]) => [k, (v as { value: boolean | number | string | null }).value]),
  );
}

function compareEngines(
  stock: DeviceReport,
  patched: DeviceReport,
  host: HostInfo | null,
  opts: Omit<BuildOptions, 'mlx'> & { mlx: { release: string | undefined; architectureName: string | null } },
): EngineComparison[] {
  // Checked once, when the audit read its options: the predictions below take them unchecked. The offered MLX
  // architecture is part of the profile's effect, so only the patched prediction sees it.
  const checked: ValidOptions = { host, env: opts.env, rules: opts.rules.rules, release: opts.release };
  const mlx = (architectureName: string | null) => ({ release: opts.mlx.release, architectureName });
  return opts.engines.map((engine) => {
    const before = predictChecked(stock, engine, { ...checked, mlx: mlx(null) });
    const after = predictChecked(patched, engine, { ...checked, mlx: mlx(opts.mlx.architectureName) });
    const a = gateValues(before);
    const b = gateValues(after);
    const flipped = Object.keys(b)
      .filter((k) => a[k] !== b[k])
      .map((flag) => ({ flag, from: a[flag] ?? null, to: b[flag] ?? null }));
    const threadgroup =
      before.engine === 'llama.cpp' && after.engine === 'llama.cpp'
        ? {
            changed: threadgroupChanges(before.threadgroup, after.threadgroup),
            aboveHardware: aboveHardware(after.threadgroup),
          }
        : null;
    return { engine, before, after, flipped, threadgroup };
  });
}

function summarize(
  result: Omit<AuditBase, 'verdict'> & {
    mode: AuditResult['mode'];
    refused: boolean;
    verification: LiveAudit['verification'] | null;
  },
): { ok: boolean; summary: string } {
  const name = result.profile.name ?? 'custom profile';
  if (result.refusedReason === 'host-unknown') {
    return {
      ok: false,
      summary: `refused: ${name} claims the host's chip, and this host's chip is unknown (nothing is guessed)`,
    };
  }
  if (result.refusedReason === 'above-hardware') {
    return {
      ok: false,
      summary: `refused: under ${name}'s threadgroup memory, llama.cpp (${result.llamaCppRules.rules} rules) would ask for more than any Apple GPU has (--allow-above-hardware to apply it anyway)`,
    };
  }
  if (result.refusedReason === 'mlx-architecture-refused') {
    return { ok: false, summary: `refused: ${name} offers MLX a GPU architecture this host cannot take (see --json)` };
  }
  if (result.refused) {
    return {
      ok: false,
      summary: `refused: ${name} raises answers on a host that is not a VM (use --force to audit it applied anyway)`,
    };
  }
  const v = result.verification;
  if (v && (!v.apply.ok || !v.restore.ok)) {
    return { ok: false, summary: `${name} did not verify: the device does not answer as the profile says` };
  }
  const main = result.devices.find((d) => d.isDefault) ?? result.devices[0];
  const llama = main?.engines.find((e) => e.engine === 'llama.cpp');
  const turnedOn = llama?.flipped.filter((f) => f.to === true).map((f) => f.flag) ?? [];
  const turnedOff = llama?.flipped.filter((f) => f.to === false).map((f) => f.flag) ?? [];
  const changeCount = main?.changes.length ?? 0;
  const parts = [`${name} on ${main?.name ?? 'no device'}: ${plural(changeCount, 'answer changes', 'answers change')}`];
  if (llama) {
    if (turnedOn.length) parts.push(`llama.cpp turns on ${turnedOn.join(', ')}`);
    if (turnedOff.length) parts.push(`llama.cpp turns off ${turnedOff.join(', ')}`);
    if (!turnedOn.length && !turnedOff.length) parts.push('llama.cpp gates unchanged');
  }
  const mlx = main?.engines.find((e) => e.engine === 'mlx');
  if (mlx?.after.engine === 'mlx' && mlx.after.offeredArchitecture !== null) {
    const offered = JSON.stringify(mlx.after.offeredArchitecture);
    const paths = mlx.flipped.filter((f) => MLX_ARCHITECTURE_FLAGS.includes(f.flag as MlxFlag)).length;
    parts.push(
      mlx.after.ignored.some((i) => i.name === 'MLX_METAL_GPU_ARCH')
        ? `MLX ignores the offered ${offered}`
        : `MLX offered ${offered}: ${plural(paths, 'architecture-driven value changes', 'architecture-driven values change')}`,
    );
  }
  if (result.mode === 'live') parts.push('verified and restored');
  if (result.warnings.length) parts.push(plural(result.warnings.length, 'warning', 'warnings'));
  return { ok: true, summary: parts.join('; ') };
}

type BuildOptions = {
  engines: Engine[];
  rules: LlamaCppRulesUsed;
  /** The release asked for, parsed once (askedRules); null: rules named, loaded or the default. */
  release: ValidOptions['release'];
  env: EnvMap;
  force: boolean;
  allowAboveHardware: boolean;
  consumers: string[];
  /** MLX's release (checked) and the architecture offered to it. */
  /** MLX's release (checked), and the what-if architecture (`--mlx-arch`); undefined: the one the plan offers. */
  mlx: { release: string | undefined; architectureName: string | null | undefined };
};

function auditDevices(stock: SupportedReport, patchedDevices: DeviceReport[], plan: PatchPlan, opts: BuildOptions) {
  // A 'host' value on a host whose chip is unknown: nothing would be applied, so the devices stay as they are.
  const { profile, expected } = plan;
  const mlx = {
    ...opts.mlx,
    architectureName: predictedMlxArchitecture(plan.mlxArchitecture, opts.mlx.architectureName),
  };
  const devices = stock.devices.map((d, i) => {
    const patched = patchedDevices[i] ?? expected[i]!;
    return {
      index: d.index,
      isDefault: d.isDefault,
      name: d.name,
      className: d.className,
      stock: d,
      patched,
      changes: diffAnswers([d], [patched]),
      engines: compareEngines(d, patched, stock.host, { ...opts, mlx }),
    };
  });
  return {
    schema: 'metal-cap-shim/audit@1' as const,
    snapshot: stock.snapshot,
    profile,
    host: stock.host,
    devices,
    warnings: plan.warnings,
    llamaCppRules: opts.rules,
    refused: !plan.accepted,
    refusedReason: plan.reason satisfies AuditRefusal | null,
  };
}

/** The audit's one call into lib/patch: the plan for `profile` on `stock` under the audit's settings. */
function planFor(stock: SupportedReport, profile: Profile, opts: BuildOptions): PatchPlan {
  return planPatch(stock, profile, {
    force: opts.force,
    allowAboveHardware: opts.allowAboveHardware,
    consumers: opts.consumers,
    rules: opts.rules.rules,
    engines: opts.engines,
    env: opts.env,
    release: opts.release,
    mlxRelease: opts.mlx.release ?? null,
    ...(opts.mlx.architectureName === undefined ? {} : { mlxArchitecture: opts.mlx.architectureName }),
  });
}

function offline(stock: SupportedReport, snapshotId: string, profile: Profile, opts: BuildOptions): OfflineAudit {
  const partial = {
    ...auditDevices(stock, [], planFor(stock, profile, opts), opts),
    mode: 'offline' as const,
    snapshot: snapshotId,
    verification: null,
  };
  return { ...partial, verdict: summarize(partial) };
}

function live(
  stock: SupportedReport,
  patched: DeviceReport[],
  plan: PatchPlan,
  opts: BuildOptions,
  verification: LiveAudit['verification'] | null,
): LiveAudit | RefusedLiveAudit {
  const base = auditDevices(stock, patched, plan, opts);
  if (base.refused || verification === null) {
    const partial = { ...base, mode: 'live' as const, refused: true as const, verification: null };
    return { ...partial, verdict: { ok: false, summary: summarize(partial).summary } };
  }
  const partial = { ...base, mode: 'live' as const, refused: false as const, verification };
  return { ...partial, verdict: summarize(partial) };
}

function defaultRules(): LlamaCppRulesUsed {
  return {
    rules: 'current',
    releases: LLAMA_CPP_RULE_SET_INFO.current.releases,
    release: null,
    source: 'default',
    detail: 'no llama.cpp loaded and no rules asked for: the newest rules',
  };
}

/** The rules an Ollama release asks for: the llama.cpp it builds, with its patches' op gates. */
function ollamaRules(text: string): { used: LlamaCppRulesUsed; release: ValidOptions['release'] } {
  const { detail, ...ollama } = ollamaLlamaCpp(checkOllamaRelease(text, 'ollamaRelease'));
  const built = ollama.llamaCpp.builds === null ? ollama.llamaCpp.release : ollama.llamaCpp.commit;
  return {
    used: {
      rules: ollama.ruleSet,
      releases: LLAMA_CPP_RULE_SET_INFO[ollama.ruleSet].releases,
      release: ollama.llamaCpp.builds === null ? ollama.llamaCpp.release : null,
      source: 'option',
      detail: ollama.warning === null ? detail : `${detail}; ${ollama.warning}`,
      ollama,
    },
    release: { text: built, warning: ollama.warning, opGates: ollama.opGates },
  };
}

/**
 * The rules asked for with `rules`, `release` or `ollamaRelease`, and the release parsed (once per audit), or null:
 * none asked.
 */
function askedRules(o: AuditOptions): { used: LlamaCppRulesUsed; release: ValidOptions['release'] } | null {
  if (o.ollamaRelease !== undefined) {
    if (o.rules !== undefined || o.release !== undefined) {
      throw new InvalidOptionsError(
        'ollamaRelease',
        `audit() takes 'ollamaRelease' without 'rules' or 'release': an Ollama release decides its llama.cpp rules`,
      );
    }
    return ollamaRules(o.ollamaRelease);
  }
  if (o.rules !== undefined && o.release !== undefined) {
    throw new InvalidOptionsError(
      'rules',
      `audit() takes 'rules' or 'release', not both: a release decides its rule set`,
    );
  }
  if (o.release !== undefined) {
    const release = parseRelease(o.release);
    if (release === null) {
      throw new InvalidOptionsError(
        'release',
        `audit() option 'release' must be a llama.cpp release tag like "b4753" or "v0.4.0"`,
      );
    }
    const { ruleSet, warning } = ruleSetForRelease(release);
    const detail = `llama.cpp ${release.text} asked for${warning === null ? '' : `; ${warning}`}`;
    return {
      used: {
        rules: ruleSet,
        releases: LLAMA_CPP_RULE_SET_INFO[ruleSet].releases,
        release: release.text,
        source: 'option',
        detail,
      },
      release: { text: release.text, warning },
    };
  }
  if (o.rules === undefined) return null;
  if (!(LLAMA_CPP_RULE_SETS as readonly string[]).includes(o.rules)) {
    throw new InvalidOptionsError('rules', `audit() option 'rules' must be one of ${LLAMA_CPP_RULE_SETS.join(', ')}`);
  }
  const info = LLAMA_CPP_RULE_SET_INFO[o.rules];
  return {
    used: {
      rules: o.rules,
      releases: info.releases,
      release: null,
      source: 'option',
      detail: `${o.rules} rules asked for`,
    },
    release: null,
  };
}

/** MLX's release, checked once per audit (a release that is no version throws), and the offered architecture. */
function checkedMlx(o: AuditOptions): BuildOptions['mlx'] {
  const arch = o.mlxArchitecture;
  if (arch !== undefined && arch !== null && typeof arch !== 'string') {
    throw new InvalidOptionsError(
      'mlxArchitecture',
      `audit() option 'mlxArchitecture' must be an architecture name like "applegpu_g13s", or null`,
    );
  }
  mlxRulesFor(o.mlxRelease, 'mlxRelease');
  return { release: o.mlxRelease, architectureName: arch };
}

/** The rules of the llama.cpp loaded in this process (the first found), if any. */
function loadedRules(binding: Parameters<typeof loadedLlamaCpp>[0]): LlamaCppRulesUsed | null {
  const first = loadedLlamaCpp(binding)[0];
  if (first === undefined) return null;
  return {
    rules: first.rules,
    releases: LLAMA_CPP_RULE_SET_INFO[first.rules].releases,
    release: first.release,
    source: 'loaded',
    detail: first.detail,
  };
}

/**
 * Compares stock answers with a profile's, device by device, with the engine flags each produces. With `snapshot`
 * it is computed offline on any OS. Without, it applies the profile in this process, verifies, and restores.
 */
export function audit(options?: AuditOptions): AuditResult {
  const o = checkOptions<AuditOptions>('audit', options, {
    profile: 'any',
    snapshot: 'string',
    engines: 'any',
    rules: 'string',
    release: 'string',
    ollamaRelease: 'string',
    force: 'boolean',
    allowAboveHardware: 'boolean',
    env: 'object',
    mlxRelease: 'string',
    mlxArchitecture: 'any',
  });
  const profile = resolveProfile(o.profile ?? DEFAULT_PROFILE);
  const engines = o.engines === undefined ? [...ENGINES] : readInput(o.engines, optionFailure('audit'), {}, 'engines');
  if (!Array.isArray(engines) || engines.some((e) => !(ENGINES as readonly unknown[]).includes(e))) {
    throw new InvalidOptionsError('engines', `audit() option 'engines' must be an array of ${ENGINES.join(', ')}`);
  }
  const asked = askedRules(o);
  const settings = {
    engines,
    env: o.env ?? process.env,
    force: o.force ?? false,
    allowAboveHardware: o.allowAboveHardware ?? false,
    mlx: checkedMlx(o),
  };
  if (o.snapshot !== undefined) {
    const snapshot = loadSnapshot(o.snapshot);
    const stock = reportFromSnapshot(snapshot, { allDevices: true });
    const rules = asked?.used ?? defaultRules();
    return offline(stock, snapshot.id, profile, { ...settings, rules, release: asked?.release ?? null, consumers: [] });
  }
  const native = loadNative();
  if (native.binding === null) {
    throw new UnsupportedPlatformError(
      `${native.detail}. Audit a recorded snapshot instead: metal-cap-shim audit --snapshot vz-guest-m1-ultra-tahoe-stock`,
    );
  }
  if (status().active) {
    throw new ProfileActiveError(
      'a profile is already applied in this process: call restore() first, or audit a snapshot',
    );
  }
  const stock = stockReport(native.binding);
  if (!stock.supported) throw new UnsupportedPlatformError(stock.detail);
  const consumers = native.binding.loadedConsumers();
  const rules = asked?.used ?? loadedRules(native.binding) ?? defaultRules();
  const opts = { ...settings, rules, release: asked?.release ?? null, consumers };
  const plan = planFor(stock, profile, opts);
  if (!plan.accepted) return live(stock, [], plan, opts, null);
  const applied = applyPatch(plan.profile, {
    force: settings.force,
    allowAboveHardware: settings.allowAboveHardware,
  });
  // Nothing was installed, so there is no patched side to audit: the engine's reason, as an error.
  if (!applied.applied && applied.reason === 'hook-failed') throw notAppliedError(applied.reason, applied.detail);
  const applyCheck = applied.verification;
  if (applyCheck === null) {
    // Not a verification failure (the device went away between the probe and the apply): nothing was checked.
    throw new UnsupportedPlatformError(applied.applied ? 'no Metal device' : applied.detail);
  }
  const restored = restore();
  // The live answers, even when they failed verification: never the prediction in their place.
  const patched = applied.after?.devices ?? stock.devices;
  // restore() compares with the baseline taken by the apply just above, so it always has a verification here.
  const restoreCheck = restored.verification ?? { ok: false as const, checked: 0, mismatches: [] };
  return live(stock, patched, plan, opts, { apply: applyCheck, restore: restoreCheck });
}
