/**
 * What every engine's rule table shares: the shape of a rule, what it sees, and the helpers that word each answer the
 * same way in every reason.
 *
 * macOS-version-dependent rules and a missing host: when the host is null/absent, or its `osVersion` cannot be
 * parsed, a rule assumes the minimum macOS the rules need (15.0) is met and says "unknown macOS version" in its
 * reason. This package mostly runs on the machine it predicts for, where macOS 15+ is the common case, and a false
 * "residency sets off" would hide the Metal3 residency-set warning that matters most in VMs.
 */
import type { DeviceReport, HostInfo } from '../device/types.js';
import { familyLabel, type FamilyName } from '../core/families.js';

/** An environment shaped like `process.env`. */
export type EnvMap = Record<string, string | undefined>;

/** A predicted value and the queries that decided it. */
export interface Derived<T> {
  value: T;
  /** The answers that decided the value, e.g. `supportsFamily(Apple7)=NO, supportsFamily(Metal3)=NO`. */
  reason: string;
}

/** A predicted boolean gate. */
export type GateFlag = Derived<boolean>;

/** A parsed macOS `ProductVersion`. */
export interface MacosVersion {
  major: number;
  minor: number;
  text: string;
}

/** What a rule's `compute` sees. */
export interface RuleContext {
  /** The device as the engine would see it: with a profile, the patched answers (and, once profiles set it, name). */
  device: DeviceReport;
  env: EnvMap;
  host: HostInfo | null;
  /** Parsed `host.osVersion`; null when unknown. */
  macos: MacosVersion | null;
}

/** One entry of a rule table: how an engine computes one value at init. */
export interface GateRule<Name extends string, T> {
  /** The value as the engine names it. */
  flag: Name;
  /** Where the engine computes it, e.g. `ggml-metal-device.m ggml_metal_device_init`. */
  source: string;
  /** The rule in words, for printing. */
  rule: string;
  /** Families the rule asks `supportsFamily:` about (a null answer is warned about). */
  families: readonly FamilyName[];
  /** Device properties (other than families) and host facts the rule reads. */
  properties: readonly string[];
  /** Environment variables the rule reads. */
  env: readonly string[];
  /** Computes the value and its reason. */
  compute: (ctx: RuleContext) => Derived<T>;
}

/** One `supportsFamily:` answer as the engines read it. */
export interface FamilyAnswer {
  yes: boolean;
  known: boolean;
  text: string;
}

/** The device's answer for `family`, worded for a reason. */
export function ask(device: DeviceReport, family: FamilyName): FamilyAnswer {
  const raw: unknown = device.families[family];
  const known = raw === true || raw === false;
  // An unanswerable query is NO for the engines too: supportsFamily: returning nothing cannot enable a kernel.
  const word = raw === true ? 'YES' : raw === false ? 'NO' : 'unknown (treated as NO)';
  return { yes: raw === true, known, text: `supportsFamily(${familyLabel(family)})=${word}` };
}

/** One environment variable as the engines read it. */
export interface EnvAnswer {
  set: boolean;
  text: string;
}

/** ggml tests `getenv(name) != NULL`: a variable set to the empty string still counts. */
export function envSet(env: EnvMap, name: string): EnvAnswer {
  const v = env[name];
  if (v === undefined) return { set: false, text: `${name} unset` };
  return {
    set: true,
    text: v === '' ? `${name} set (empty; ggml only checks that it exists)` : `${name}=${JSON.stringify(v)}`,
  };
}

/** The macOS release from which residency sets exist (llama.cpp and MLX both gate them on it). */
export const RESIDENCY_MIN_MACOS = 15;

/** Whether the host runs at least macOS `major.minor`; an unknown version counts as met (see the module comment). */
export function macosAtLeast(ctx: RuleContext, major: number, minor = 0): { ok: boolean; text: string } {
  if (ctx.macos === null) {
    const why =
      ctx.host === null
        ? 'no host info'
        : ctx.host.osVersion == null
          ? 'host.osVersion is null'
          : `host.osVersion ${JSON.stringify(ctx.host.osVersion)} not parseable`;
    return { ok: true, text: `unknown macOS version (${why}; assumed ≥ ${major}.${minor})` };
  }
  const ok = ctx.macos.major > major || (ctx.macos.major === major && ctx.macos.minor >= minor);
  return { ok, text: `macOS ${ctx.macos.text} ${ok ? '≥' : '<'} ${major}.${minor}` };
}

/** `host.osVersion` as numbers; null when absent or not a version. */
export function parseMacos(host: HostInfo | null): MacosVersion | null {
  const text = host?.osVersion;
  if (typeof text !== 'string') return null;
  const m = /^(\d+)(?:\.(\d+))?/.exec(text.trim());
  if (m === null) return null;
  return { major: Number(m[1]), minor: m[2] === undefined ? 0 : Number(m[2]), text: text.trim() };
}

/** A value with its reason, the parts joined. */
export function result<T>(value: T, parts: readonly string[]): Derived<T> {
  return { value, reason: parts.join(', ') };
}

/** The architecture of the engine build that runs here: x86_64 under Rosetta, else the machine's own. */
export function engineArch(host: HostInfo | null): { arch: 'arm64' | 'x86_64' | null; text: string } {
  if (host?.translated === true) {
    return { arch: 'x86_64', text: 'under Rosetta (sysctl.proc_translated=1): an x86_64 build' };
  }
  if (host?.arch === 'x86_64') return { arch: 'x86_64', text: 'x86_64 host: an x86_64 build' };
  if (host?.arch === 'arm64') return { arch: 'arm64', text: 'arm64 host, not translated: an arm64 build' };
  return { arch: null, text: 'build architecture unknown (assumed arm64)' };
}

/** One warning per family a rule table asks about that this report has no answer for. */
export function nullFamilyWarnings(
  rules: readonly { families: readonly FamilyName[] }[],
  device: DeviceReport,
): string[] {
  const seen = new Set<FamilyName>();
  for (const r of rules) for (const f of r.families) if (!ask(device, f).known) seen.add(f);
  return [...seen].map(
    (f) =>
      `supportsFamily(${familyLabel(f)}) has no answer in this report; predicted as NO, the engine may see otherwise`,
  );
}

/** The device's recommendedMaxWorkingSetSize when the report has a usable one, else null. */
export function workingSetOf(device: DeviceReport): number | null {
  const wss = device.recommendedMaxWorkingSetSize;
  return typeof wss === 'number' && Number.isFinite(wss) && wss >= 0 ? wss : null;
}

/** The working set, worded for a reason: `recommendedMaxWorkingSetSize=N (M MiB)`. */
export function wssText(wss: number): string {
  return `recommendedMaxWorkingSetSize=${wss} (${(wss / 1048576).toFixed(2)} MiB)`;
}
