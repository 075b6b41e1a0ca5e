/**
 * What exec decides before the program starts: the program exists, the injector is there and can reach it, and the
 * profile may be applied on this host (bound to its chip, refused on bare metal). Nothing runs until this has passed.
 */
import type { ChildProcess } from 'node:child_process';
import { notAppliedError } from '../patch/apply.js';
import { allowsAboveHardware, mlxArchitectureEnv, planPatch, refusedError, type ApplyWarning } from '../patch/plan.js';
import { RefusedError, UnsupportedPlatformError } from '../core/errors.js';
import { loadNative } from '../device/native.js';
import { stockReport } from '../device/probe.js';
import type { Profile } from '../patch/profiles.js';
import type { UnsupportedReason } from '../device/types.js';
import { injectionBlocker } from './codesign.js';
import { SYSTEM_TOOLS } from './system-tools.js';
import { commandError, resolveCommand } from './command.js';
import { injectorPath, missingInjectorReason, preloadListProblem } from './injector.js';
import { checkTraceFile } from './trace.js';

/** What exec() needs. */
export interface ExecOptions {
  /**
   * A resolved profile (resolveProfile, or profileForExec for the CLI's); prepareExec binds it to this host. Null: no
   * profile (METAL_CAP_SHIM_PROFILE=off), so the program runs unpatched.
   */
  profile: Profile | null;
  /** The program as the user typed it: looked up on PATH, and the program's argv[0]. */
  command: string;
  args: string[];
  /** The file prepareExec() checked (its `resolved`), started as it is so that PATH is not searched again; resolved
   * from `command` when absent. */
  program?: string;
  traceFile?: string;
  force?: boolean;
  /** Inject a threadgroup claim the newest llama.cpp rules would turn into a request above every Apple GPU's threadgroup
   * memory; default: METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE=1 in this process's environment. */
  allowAboveHardware?: boolean;
  /** Run the program even when it will not be patched: no Metal here, a refusal, or injection known not to work (one
   * notice goes to stderr). */
  allowUnpatched?: boolean;
  /** Descriptors ≥ 3 to hand on to the program under their own numbers (the CLI passes inheritedDescriptors()). */
  passFds?: number[];
  /** Where the program's stdout and stderr go instead of ours: a descriptor this process opened, or `'pipe'`, read
   * through the child that `onSpawn` is given (`bench` reads a tool's output so, counting, and stops at a bound). */
  stdout?: number | 'pipe';
  stderr?: number | 'pipe';
  /** Told the child as soon as it is started, before any of its output is read. */
  onSpawn?: (child: ChildProcess) => void;
  /** Where the CLI's own notices go (never the child's streams). */
  notice?: (line: string) => void;
}

/**
 * What prepareExec() decided: the injector to load with the profile bound to this host (its `'host'` values
 * replaced), or null with the one notice to print before running unpatched.
 */
export type PreparedExec =
  | { injector: string; resolved: string; profile: Profile; warnings: ApplyWarning[]; unpatched: null }
  | { injector: null; resolved: string; warnings: []; unpatched: string };

/**
 * Checks, before running anything, that the injector exists, the profile may be applied on this host, and
 * injection can reach the program. Throws typed errors: TraceFileError (ERR_TRACE_FILE), SpawnError (ERR_COMMAND_NOT_FOUND,
 * ERR_SPAWN), UnsupportedPlatformError, RefusedError (ERR_REFUSED_BARE_METAL, ERR_HOST_UNKNOWN, ERR_INJECTION_BLOCKED),
 * NativeError (ERR_NATIVE_UNAVAILABLE: the injector is there, the native module is not).
 */
export function prepareExec(
  options: ExecOptions,
  platform: NodeJS.Platform = process.platform,
  codesign: string = SYSTEM_TOOLS.codesign,
): PreparedExec {
  if (options.traceFile !== undefined) checkTraceFile(options.traceFile);
  const resolved = resolveCommand(options.command, process.env, platform);
  if (resolved === null) throw commandError(options.command, process.env, platform);
  if (options.profile === null)
    return {
      injector: null,
      resolved,
      warnings: [],
      unpatched: `no profile (off): running ${options.command} unpatched`,
    };
  const injector = injectorPath();
  if (injector === null) {
    const why = missingInjectorReason();
    // A cross-platform wrapper: the program runs, unpatched, wherever there is nothing to patch.
    if (options.allowUnpatched)
      return {
        injector: null,
        resolved,
        warnings: [],
        unpatched: `${why}: running ${options.command} unpatched (--allow-unpatched)`,
      };
    throw new UnsupportedPlatformError(`${why} (--allow-unpatched runs the program unpatched)`);
  }
  const split = preloadListProblem(injector, platform);
  if (split !== null && options.allowUnpatched)
    return {
      injector: null,
      resolved,
      warnings: [],
      unpatched: `${split}: running ${options.command} unpatched (--allow-unpatched)`,
    };
  if (split !== null)
    throw new RefusedError(`${split} (--allow-unpatched runs the program unpatched)`, 'ERR_INJECTION_BLOCKED');
  const native = loadNative();
  // Fail closed: without the native module the bare-metal guard cannot run, so nothing is injected.
  if (native.binding === null)
    return { injector: null, resolved, warnings: [], unpatched: unguardedInjection(native, options) };
  // The guard uses this process's view of the devices: the same machine the child will run on.
  const stock = stockReport(native.binding);
  // 'host' values become the chip of the machine the child runs on, or nothing is injected: never a guess. The
  // child's llama.cpp is not loaded yet: the family warning names the newest rules' tuning, as audit does. Without a
  // device there is nothing to raise, so nothing to refuse but an unbindable profile.
  const plan = planPatch({ devices: stock.supported ? stock.devices : [], host: stock.host }, options.profile, {
    force: options.force ?? false,
    allowAboveHardware: options.allowAboveHardware ?? allowsAboveHardware(process.env),
    env: process.env,
  });
  if (!plan.accepted && options.allowUnpatched) {
    const said = plan.reason === 'host-unknown' ? `${plan.detail}.` : plan.detail;
    return {
      injector: null,
      resolved,
      warnings: [],
      unpatched: `${said} Running ${options.command} unpatched (--allow-unpatched).`,
    };
  }
  if (!plan.accepted)
    throw refusedError(
      plan.reason,
      plan.reason === 'refused-bare-metal' || plan.reason === 'above-hardware'
        ? plan.detail
        : `${plan.detail} (--allow-unpatched runs the program unpatched)`,
    );
  const profile = plan.profile;
  // The variable is the program's environment: a value the user set there wins (childEnvironment keeps it).
  const userSet = mlxArchitectureEnv(plan.mlxArchitecture, process.env).warning;
  // Without a device nothing is changed or warned of, but which profile the child gets is still said.
  const warnings: ApplyWarning[] = [
    ...(stock.supported ? plan.warnings : plan.warnings.filter((w) => w.code === 'host-unknown-fallback')),
    ...(userSet === null ? [] : [userSet]),
  ];
  const blocker = injectionBlocker(resolved, platform, codesign);
  if (blocker?.launchFails && options.allowUnpatched) {
    // With the injector inserted the program would not start at all: run it without.
    return {
      injector: null,
      resolved,
      warnings: [],
      unpatched: `${blocker.reason} Running ${options.command} unpatched, without the injector (--allow-unpatched).`,
    };
  }
  if (blocker !== null && !options.allowUnpatched) {
    const how = blocker.launchFails
      ? '--allow-unpatched runs it without the injector'
      : '--allow-unpatched runs it anyway';
    throw new RefusedError(`${blocker.reason} (${how})`, 'ERR_INJECTION_BLOCKED');
  }
  return { injector, resolved, profile, warnings, unpatched: null };
}

/**
 * What exec does when the injector is there but the native module is not (on macOS: an addon that failed to load):
 * without it the bare-metal guard cannot ask the devices whether this is a VM, so nothing is injected. Throws the
 * error applyProfile(…, { strict: true }) throws for the same reason (NativeError ERR_NATIVE_UNAVAILABLE on macOS),
 * or, with --allow-unpatched, returns the notice to print before running the program unpatched. --force does not
 * bypass it: an install whose addon will not load is not one to inject from.
 */
export function unguardedInjection(
  native: { reason: Exclude<UnsupportedReason, 'no-device'>; detail: string },
  options: Pick<ExecOptions, 'command' | 'allowUnpatched'>,
): string {
  const why = `${native.detail}; without it exec cannot check this host before injecting`;
  if (options.allowUnpatched) return `${why}: running ${options.command} unpatched (--allow-unpatched)`;
  throw notAppliedError(native.reason, `${why} (--allow-unpatched runs the program unpatched)`);
}
