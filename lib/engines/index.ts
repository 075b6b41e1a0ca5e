/**
 * Predicts, from a device's reported answers, the values llama.cpp (ggml-metal) and MLX compute when they initialise
 * Metal. Each engine's rules live in its own file (llama-cpp.ts with its releases in llama-cpp-releases.ts, mlx.ts
 * with its releases in mlx-releases.ts), in tables the CLI can print; this file validates the input and dispatches.
 */
import type { DeviceReport, HostInfo } from '../device/types.js';
import { isFamilyName } from '../core/families.js';
import { InvalidOptionsError } from '../core/errors.js';
import { describeValue, isObject } from '../core/input.js';
import { checkOptions } from '../core/options.js';
import { parseMacos, type EnvMap, type RuleContext } from './common.js';
import {
  LLAMA_CPP_RULES,
  predictLlamaCpp,
  type LlamaCppCurrentPrediction,
  type LlamaCppPrediction,
  type LlamaCppReleaseAsked,
  type LlamaCppPredictionFor,
} from './llama-cpp.js';
import { LLAMA_CPP_RULE_SETS, parseRelease, ruleSetForRelease, type LlamaCppRuleSet } from './llama-cpp-releases.js';
import { MLX_RULES, mlxRulesFor, predictMlx, type MlxPrediction } from './mlx.js';

export * from './common.js';
export * from './llama-cpp.js';
export * from './llama-cpp-releases.js';
export * from './llama-cpp-threadgroup.js';
export * from './mlx.js';
export * from './mlx-releases.js';
export * from './ollama.js';

/** An inference engine whose Metal init this module predicts. */
export type Engine = 'llama.cpp' | 'mlx';

/** Every engine `predictGates` accepts, in display order. */
export const ENGINES: readonly Engine[] = Object.freeze(['llama.cpp', 'mlx'] as const);

/** Options for `predictGates`. */
export interface PredictOptions {
  /** Environment the engine would see; default `process.env`. */
  env?: EnvMap;
  /** Host facts for macOS-version and build-architecture rules; null/absent means unknown (macOS assumed ≥ 15.0). */
  host?: HostInfo | null;
  /**
   * llama.cpp rule set: `current` (the newest, default), `legacy` (the newest ggml-metal.m rules), or one of the rule
   * sets between and before (LLAMA_CPP_RULE_SETS: `legacy-b0` … `chip-tuning`). MLX accepts only `current`.
   */
  rules?: LlamaCppRuleSet;
  /**
   * A release: for llama.cpp a tag (`b4753`, `v0.4.0`) whose rule set to use, not together with `rules`; for MLX a
   * version (`v0.31.0` or pip's `0.31.0`); default the newest rules.
   */
  release?: string;
  /** MLX only: an architecture name offered to MLX as MLX_METAL_GPU_ARCH (as `exec` would set it); default none. */
  mlxArchitecture?: string | null;
}

/** Any prediction `predictGates` returns. */
export type GatePrediction = LlamaCppPrediction | MlxPrediction;

/** Rule tables by engine, for printing. */
export const RULE_TABLES = Object.freeze({
  'llama.cpp': LLAMA_CPP_RULES,
  mlx: MLX_RULES,
});

/** What a prediction is computed from, checked: predictGates checks its arguments into this. */
export interface ValidOptions {
  env: EnvMap;
  host: HostInfo | null;
  rules: LlamaCppRuleSet;
  /** The release asked for, parsed once, with its rule set's warning; null: the rules were named or defaulted. */
  release: LlamaCppReleaseAsked | null;
  /** MLX: the release whose rules to use (checked), and the architecture name offered; absent: newest, none. */
  mlx?: { release: string | undefined; architectureName: string | null };
}

function checkEngine(engine: unknown): Engine {
  if (typeof engine === 'string' && (ENGINES as readonly string[]).includes(engine)) return engine as Engine;
  throw new InvalidOptionsError(
    'engine',
    `engine must be one of ${ENGINES.map((e) => JSON.stringify(e)).join(', ')}; got ${describeValue(engine)}`,
  );
}

/**
 * A DeviceReport as the predictions read it: an object with a "families" object whose answers are true, false or
 * null, and a string name. `field` names it in the error (`device`; `before[0]` for a list).
 */
export function checkDevice(device: unknown, field = 'device'): DeviceReport {
  if (!isObject(device) || !isObject(device.families)) {
    throw new InvalidOptionsError(
      field,
      `${field} must be a DeviceReport object with a "families" object; got ${isObject(device) ? 'an object without families' : describeValue(device)}`,
    );
  }
  for (const [name, answer] of Object.entries(device.families)) {
    if (isFamilyName(name) && answer !== true && answer !== false && answer !== null && answer !== undefined) {
      throw new InvalidOptionsError(
        field,
        `${field}.families.${name} must be true, false or null; got ${describeValue(answer)}`,
      );
    }
  }
  if (typeof device.name !== 'string') {
    throw new InvalidOptionsError(field, `${field}.name must be a string; got ${describeValue(device.name)}`);
  }
  return device as unknown as DeviceReport;
}

function checkEnv(value: unknown): EnvMap {
  if (!isObject(value)) {
    throw new InvalidOptionsError(
      'env',
      `env must be an object mapping names to strings (like process.env); got ${describeValue(value)}`,
    );
  }
  for (const [k, v] of Object.entries(value)) {
    if (v !== undefined && typeof v !== 'string') {
      throw new InvalidOptionsError('env', `env values must be strings or undefined; env.${k} is ${describeValue(v)}`);
    }
  }
  return value as EnvMap;
}

/** A HostInfo as the predictions and the host binding read it (or null): its OS version, brand and chip are text or null. */
export function checkHost(value: unknown): HostInfo | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value))
    throw new InvalidOptionsError('host', `host must be a HostInfo object or null; got ${describeValue(value)}`);
  for (const key of ['osVersion', 'cpuBrand', 'chip'] as const) {
    const v = value[key];
    if (v !== undefined && v !== null && typeof v !== 'string') {
      throw new InvalidOptionsError('host', `host.${key} must be a string or null; got ${describeValue(v)}`);
    }
  }
  return value as unknown as HostInfo;
}

function checkRules(options: Record<string, unknown>, engine: Engine): Pick<ValidOptions, 'rules' | 'release'> {
  if (options.rules !== undefined && options.release !== undefined) {
    throw new InvalidOptionsError('rules', 'give either rules or release, not both: a release decides its rule set');
  }
  if (options.release !== undefined && engine === 'mlx') return { rules: 'current', release: null };
  if (options.release !== undefined) {
    const release = typeof options.release === 'string' ? parseRelease(options.release) : null;
    if (release === null) {
      throw new InvalidOptionsError(
        'release',
        `release must be a llama.cpp release tag like "b4753" or "v0.4.0"; got ${describeValue(options.release)}`,
      );
    }
    const { ruleSet, warning } = ruleSetForRelease(release);
    return { rules: ruleSet, release: { text: release.text, warning } };
  }
  if (options.rules === undefined) return { rules: 'current', release: null };
  if (typeof options.rules !== 'string' || !(LLAMA_CPP_RULE_SETS as readonly string[]).includes(options.rules)) {
    throw new InvalidOptionsError(
      'rules',
      `rules must be one of ${LLAMA_CPP_RULE_SETS.map((r) => JSON.stringify(r)).join(', ')}; got ${describeValue(options.rules)}`,
    );
  }
  const rules = options.rules as LlamaCppRuleSet;
  if (engine === 'mlx' && rules !== 'current') {
    throw new InvalidOptionsError(
      'rules',
      `rules "${rules}" applies to engine "llama.cpp" only; MLX accepts "current" or no rules option`,
    );
  }
  return { rules, release: null };
}

/** MLX's release and offered architecture: a release that is no version, or a name that is no string, is refused. */
function checkMlx(options: Record<string, unknown>, engine: Engine): Pick<ValidOptions, 'mlx'> {
  const arch = options.mlxArchitecture;
  if (arch !== undefined && arch !== null && typeof arch !== 'string') {
    throw new InvalidOptionsError(
      'mlxArchitecture',
      `mlxArchitecture must be an architecture name like "applegpu_g13s", or null; got ${describeValue(arch)}`,
    );
  }
  if (engine !== 'mlx') {
    if (arch !== undefined && arch !== null)
      throw new InvalidOptionsError('mlxArchitecture', 'mlxArchitecture is offered to MLX: engine "mlx" only');
    return {};
  }
  const release = options.release;
  if (release !== undefined && typeof release !== 'string') {
    throw new InvalidOptionsError(
      'release',
      `release must be an MLX version like "v0.31.0" or "0.31.0"; got ${describeValue(release)}`,
    );
  }
  mlxRulesFor(release);
  return { mlx: { release, architectureName: arch ?? null } };
}

function checkPredictOptions(options: unknown, engine: Engine): ValidOptions {
  // The options object itself is checked as every entry point's is; each option then by its own rule.
  const o = checkOptions<Record<string, unknown>>('predictGates', options, {
    env: 'any',
    host: 'any',
    rules: 'any',
    release: 'any',
    mlxArchitecture: 'any',
  });
  const env = o.env === undefined ? process.env : checkEnv(o.env);
  return { env, host: checkHost(o.host), ...checkRules(o, engine), ...checkMlx(o, engine) };
}

/**
 * Predicts llama.cpp's flags under the newest rules (no `rules`, no `release`), or under the rule set `rules` names,
 * typed for it: `{ rules: 'legacy' }` gives a LlamaCppLegacyPrediction. Every overload throws `InvalidOptionsError` on
 * a bad engine, device or option.
 */
export function predictGates(
  device: DeviceReport,
  engine: 'llama.cpp',
  options?: PredictOptions & { rules?: undefined; release?: undefined },
): LlamaCppCurrentPrediction;
export function predictGates<R extends LlamaCppRuleSet>(
  device: DeviceReport,
  engine: 'llama.cpp',
  options: PredictOptions & { rules: R },
): LlamaCppPredictionFor<R>;
/** Predicts llama.cpp's flags under a rule set or release chosen at run time. */
export function predictGates(device: DeviceReport, engine: 'llama.cpp', options?: PredictOptions): LlamaCppPrediction;
/** Predicts MLX's init-time values. */
export function predictGates(device: DeviceReport, engine: 'mlx', options?: PredictOptions): MlxPrediction;
/** Predicts for an engine chosen at run time. */
export function predictGates(device: DeviceReport, engine: Engine, options?: PredictOptions): GatePrediction;
export function predictGates(device: unknown, engine: unknown, options?: unknown): GatePrediction {
  const eng = checkEngine(engine);
  return predictChecked(checkDevice(device), eng, checkPredictOptions(options, eng));
}

/**
 * predictGates inside the package, where the device and the options are already checked (a report this package
 * read, a release parsed once per audit): the house rule is checks at the public entry, unchecked inside.
 */
export function predictChecked(
  device: DeviceReport,
  engine: 'llama.cpp',
  options: ValidOptions & { rules: 'current' },
): LlamaCppCurrentPrediction;
export function predictChecked(device: DeviceReport, engine: 'llama.cpp', options: ValidOptions): LlamaCppPrediction;
export function predictChecked(device: DeviceReport, engine: Engine, options: ValidOptions): GatePrediction;
export function predictChecked(device: DeviceReport, engine: Engine, options: ValidOptions): GatePrediction {
  const ctx: RuleContext = { device, env: options.env, host: options.host, macos: parseMacos(options.host) };
  if (engine === 'mlx') {
    return predictMlx(ctx, {
      release: options.mlx?.release,
      architectureName: options.mlx?.architectureName ?? null,
    });
  }
  return predictLlamaCpp(ctx, options.rules, options.release);
}
