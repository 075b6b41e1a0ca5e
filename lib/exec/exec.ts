import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  rmSync,
  statSync,
  type Stats,
} from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import path from 'node:path';
import { notAppliedError, profileWarnings, refusalFor, type ApplyWarning } from '../patch/apply.js';
import { RefusedError, SpawnError, TraceFileError, UnsupportedPlatformError } from '../core/errors.js';
import { loadNative, packageRoot, simulationSelected } from '../device/native.js';
import { stockReport } from '../device/probe.js';
import { bindToHost, encodeNativeProfile, planProfile, type Profile } from '../patch/profiles.js';
import { hostOf } from '../device/report.js';
import { readOwnFile, replaceableBecause, writeFileSafely } from '../core/safefs.js';
import type { UnsupportedReason } from '../device/types.js';

/** Environment variables the injector reads (src-native/inject/inject.mm). */
export const INJECT_ENV = {
  profile: 'METAL_CAP_SHIM_PROFILE_NATIVE',
  statusFd: 'METAL_CAP_SHIM_STATUS_FD',
  /** The pid of the process that hands the status fd down: exec's own for its child, then each injected process's. */
  statusPid: 'METAL_CAP_SHIM_STATUS_PID',
  /** The status fd's identity, set by each injected process for the ones it starts (never by exec). */
  statusId: 'METAL_CAP_SHIM_STATUS_ID',
  /** exec's private folder (mkdtemp, 0700) where each process writes its trace; exec then writes the --trace file(s). */
  traceFolder: 'METAL_CAP_SHIM_TRACE_DIR',
} as const;

/** At most this much of the status pipe is read; the rest is drained and dropped (a program may write anything). */
export const STATUS_LIMIT_BYTES = 64 * 1024;

/** Where macOS System Integrity Protection strips DYLD_* variables from the programs it protects. */
export const SIP_PROTECTED_DIRS = ['/System/', '/usr/bin/', '/bin/', '/sbin/', '/usr/sbin/', '/usr/libexec/'];

/**
 * Where the injector library may be for `platform`, in the order it is looked for: like node-gyp-build, a local build
 * first, unless PREBUILDS_ONLY asks to test the shipped binary. Outside macOS the only injector is the simulated
 * build's, and only when METAL_CAP_SHIM_SIM_SNAPSHOT selects the simulated Metal.
 */
export function injectorCandidates(
  root: string,
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const darwin = platform === 'darwin';
  const local = path.join(root, 'build', 'Release', `libmetal_cap_shim_inject.${darwin ? 'dylib' : 'so'}`);
  const prebuilt = path.join(root, 'prebuilds', 'darwin-x64+arm64', 'libmetal_cap_shim_inject.dylib');
  if (darwin) return env.PREBUILDS_ONLY ? [prebuilt] : [local, prebuilt];
  return simulationSelected(env, platform) ? [local] : [];
}

/** The injector library for this platform, or null when there is none. */
export function injectorPath(): string | null {
  return injectorCandidates(packageRoot()).find((c) => existsSync(c)) ?? null;
}

/** Why there is no injector to run with on `platform` (injectorPath() found none). */
export function missingInjectorReason(platform: NodeJS.Platform = process.platform): string {
  return platform === 'darwin'
    ? 'the injector library is missing from this install (prebuilds/darwin-x64+arm64); reinstall metal-cap-shim'
    : `exec injects into programs that use Metal, which exists only on macOS; this is ${platform}`;
}

/** The variable named `name` in `env`: on win32 the first whose name matches in any case (Windows spells it `Path`). */
function envValue(env: NodeJS.ProcessEnv, name: string, platform: NodeJS.Platform): string | undefined {
  if (platform !== 'win32') return env[name];
  return Object.entries(env).find(([k]) => k.toUpperCase() === name)?.[1];
}

/** What Windows takes for a program when PATHEXT is not set. */
const DEFAULT_PATHEXT = '.COM;.EXE;.BAT;.CMD';

/**
 * The names a command may have on disk: on Windows, a name without one of PATHEXT's extensions (in any case) with
 * each of them in PATHEXT's order (`node` is `node.EXE`); elsewhere, and for a name that has one, itself.
 */
function commandSpellings(command: string, env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string[] {
  if (platform !== 'win32') return [command];
  const extensions = (envValue(env, 'PATHEXT', platform) ?? DEFAULT_PATHEXT).split(';').filter(Boolean);
  const upper = command.toUpperCase();
  return extensions.some((e) => upper.endsWith(e.toUpperCase())) ? [command] : extensions.map((e) => `${command}${e}`);
}

/**
 * Resolves a command the way the platform's loader would: a path as given (made absolute), else the first match on
 * PATH. Elsewhere than Windows, as execvp: '/' makes a path, and a match must be an executable file. On Windows, a backslash
 * and '/' both make a path, PATH is split on ';', and PATHEXT's extensions are tried (commandSpellings); a match need
 * only be a file, as Windows has no execute bit. An empty PATH entry is skipped on every platform, so exec never runs
 * a program from the current folder by accident. `platform` and `env` exist for tests: the files are looked for on
 * this machine's file system, whatever `platform` says.
 */
export function resolveCommand(
  command: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string | null {
  const windows = platform === 'win32';
  const isProgram = (file: string) => {
    try {
      if (!statSync(file).isFile()) return false;
      if (!windows) accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  const found = commandCandidates(command, env, platform).find(isProgram);
  return found === undefined ? null : path.resolve(found);
}

/**
 * Where a command may be, in the order it is looked for: the path itself when it is one, else each spelling in each
 * non-empty PATH entry (an empty entry is never taken for the current folder).
 */
function commandCandidates(command: string, env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string[] {
  const windows = platform === 'win32';
  const spellings = commandSpellings(command, env, platform);
  if (windows ? /[\\/]/.test(command) : command.includes('/')) return spellings;
  const delimiter = windows ? path.win32.delimiter : path.posix.delimiter;
  const dirs = (envValue(env, 'PATH', platform) ?? '').split(delimiter).filter((dir) => dir !== '');
  return dirs.flatMap((dir) => spellings.map((s) => path.join(dir, s)));
}

/**
 * The error for a command resolveCommand() did not find: ERR_SPAWN (exit 126) when something of that name is there but
 * cannot be run (a folder, a file without execute permission), as execvp's EACCES; otherwise ERR_COMMAND_NOT_FOUND
 * (exit 127).
 */
export function commandError(
  command: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): SpawnError {
  for (const candidate of commandCandidates(command, env, platform)) {
    let stats: Stats;
    try {
      stats = statSync(candidate);
    } catch {
      continue;
    }
    const why = stats.isDirectory() ? 'is a folder' : stats.isFile() ? 'is not executable' : 'is not a file';
    return new SpawnError('ERR_SPAWN', `cannot run ${command}: ${path.resolve(candidate)} ${why}`);
  }
  return new SpawnError('ERR_COMMAND_NOT_FOUND', `command not found: ${command}`);
}

function shebangInterpreter(file: string): string | null {
  try {
    const fd = openSync(file, 'r');
    const buf = Buffer.alloc(256);
    const n = readSync(fd, buf, 0, buf.length, 0);
    closeSync(fd);
    const text = buf.subarray(0, n).toString('latin1');
    if (!text.startsWith('#!')) return null;
    return text.slice(2).split('\n')[0]!.trim().split(/\s+/)[0] ?? null;
  } catch {
    return null;
  }
}

/** Entitlements a hardened-runtime program needs before dyld lets our injector in. */
export const INJECTION_ENTITLEMENTS = [
  'com.apple.security.cs.allow-dyld-environment-variables',
  'com.apple.security.cs.disable-library-validation',
] as const;

/** Why injection cannot work for a program. */
export interface InjectionBlocker {
  reason: string;
  /**
   * True when the program would not even start with the injector inserted (dyld kills it at launch), so
   * `--allow-unpatched` cannot run it either; false when it would only run unpatched.
   */
  launchFails: boolean;
}

/** True when `entitlements` (codesign's XML plist, its older raw blob, or its `[Dict]` text form) grants `key`. */
export function hasEntitlement(entitlements: string, key: string): boolean {
  const name = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return (
    new RegExp(`<key>\\s*${name}\\s*</key>\\s*<true\\s*/>`).test(entitlements) ||
    new RegExp(`\\[Key\\]\\s*${name}\\s*\\[Value\\]\\s*\\[Bool\\]\\s*true`).test(entitlements)
  );
}

/** Code-signing flags (`CS_*` in the kernel's cs_blobs.h) that decide whether dyld lets an inserted library in. */
export const CODESIGN_FLAGS = Object.freeze({ restrict: 0x800, libraryValidation: 0x2000, runtime: 0x10000 });

/**
 * Reads what `codesign -d --verbose=1 --entitlements - FILE` printed: the `CodeDirectory … flags=0x…` line on stderr
 * (codesign prints it only with -v/--verbose) and the entitlements on stdout. Null when nothing in the signature
 * stops the injector; otherwise why, for each flag that matters:
 * - `restrict` (0x800): dyld removes every DYLD_* variable from a restricted program, whatever its entitlements, so it
 *   would run unpatched;
 * - `runtime` (0x10000, the hardened runtime): DYLD_* is ignored without allow-dyld-environment-variables, and the
 *   injector is rejected at launch without disable-library-validation (the runtime implies library validation);
 * - `library-validation` (0x2000) without the hardened runtime: dyld loads the injector, library validation rejects
 *   it (it is not signed by the program's team), and the program is killed at launch, unless it has
 *   disable-library-validation.
 * A pure function of codesign's output (setuid and setgid files are judged from the file itself: injectionBlocker).
 */
export function hardenedRuntimeBlocker(
  file: string,
  codesignStderr: string,
  entitlements: string,
): InjectionBlocker | null {
  const match = /flags=0x([0-9a-f]+)/i.exec(codesignStderr);
  if (!match) return null;
  const flags = parseInt(match[1]!, 16);
  const [allowDyld, disableValidation] = INJECTION_ENTITLEMENTS.map((e) => hasEntitlement(entitlements, e));
  if ((flags & CODESIGN_FLAGS.restrict) !== 0) {
    return {
      reason: `${file} is signed with the restrict flag (0x800): dyld removes DYLD_INSERT_LIBRARIES from restricted programs whatever their entitlements, so it would run unpatched. Use a build signed without it, or embed metal-cap-shim as a library.`,
      launchFails: false,
    };
  }
  if ((flags & CODESIGN_FLAGS.runtime) !== 0) {
    if (allowDyld && disableValidation) return null;
    if (allowDyld) {
      // dyld honours DYLD_INSERT_LIBRARIES here, then library validation rejects an injector that is not signed by the
      // program's own team, and dyld stops the process before main ("could not be loaded").
      return {
        reason: `${file} is signed with the hardened runtime with ${INJECTION_ENTITLEMENTS[0]} but without ${INJECTION_ENTITLEMENTS[1]}: dyld would load the injector, library validation would reject it (it is not signed by the program's team), and dyld would kill the program at launch ("could not be loaded"). Use a build signed with ${INJECTION_ENTITLEMENTS[1]} too.`,
        launchFails: true,
      };
    }
    return {
      reason: `${file} is signed with the hardened runtime without ${INJECTION_ENTITLEMENTS[0]}${disableValidation ? '' : ` and ${INJECTION_ENTITLEMENTS[1]}`}, so dyld ignores DYLD_INSERT_LIBRARIES for it and it would run unpatched. Use a build without the hardened runtime, or embed metal-cap-shim as a library.`,
      launchFails: false,
    };
  }
  if ((flags & CODESIGN_FLAGS.libraryValidation) !== 0 && !disableValidation) {
    return {
      reason: `${file} is signed with library validation (0x2000) without ${INJECTION_ENTITLEMENTS[1]}: dyld would load the injector, library validation would reject it (it is not signed by the program's team), and dyld would kill the program at launch ("could not be loaded"). Use a build signed without library validation, or with ${INJECTION_ENTITLEMENTS[1]}.`,
      launchFails: true,
    };
  }
  return null;
}

/**
 * A setuid or setgid file: the kernel starts it with other ids, and dyld then removes every DYLD_* variable, so it
 * would run unpatched. Null for any other file (or one that cannot be read).
 */
export function setIdBlocker(file: string): InjectionBlocker | null {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    return null;
  }
  // S_ISUID and S_ISGID (sys/stat.h); node:fs does not export them.
  if ((mode & 0o6000) === 0) return null;
  const which = (mode & 0o4000) !== 0 ? 'setuid' : 'setgid';
  return {
    reason: `${file} is ${which}: dyld removes DYLD_INSERT_LIBRARIES from programs that change ids at launch, so it would run unpatched. Run a copy without the ${which} bit, or embed metal-cap-shim as a library.`,
    launchFails: false,
  };
}

/**
 * Runs codesign the way its output is read: `--verbose=1` for the flags line, `--entitlements -` for the
 * entitlements. `--xml` asks for a plist where codesign has the option (macOS 12+); older codesign rejects it and
 * prints the raw plist blob without it. Null when codesign is missing or the file is not signed.
 */
function codesignOf(file: string): { stderr: string; stdout: string } | null {
  const run = (extra: string[]) =>
    spawnSync('codesign', ['-d', '--verbose=1', '--entitlements', '-', ...extra, file], {
      encoding: 'utf8',
      timeout: 10_000,
    });
  let r = run(['--xml']);
  if (r.error) return null;
  if (r.status !== 0 && !/not signed/i.test(r.stderr ?? '')) r = run([]);
  if (r.error || r.status !== 0) return null;
  return { stderr: r.stderr ?? '', stdout: r.stdout ?? '' };
}

function signatureBlocker(file: string): InjectionBlocker | null {
  const setId = setIdBlocker(file);
  if (setId !== null) return setId;
  const signature = codesignOf(file);
  return signature === null ? null : hardenedRuntimeBlocker(file, signature.stderr, signature.stdout);
}

/**
 * Why DYLD_INSERT_LIBRARIES would not reach the program on macOS (a SIP-protected binary, a script run by one, a
 * setuid or setgid file, or a signature that stops the injector: restricted, hardened runtime or library validation
 * without the entitlements; for a script, its interpreter's), or null when nothing is known to stop it.
 * `platform` exists for tests: the checks run wherever codesign can be found.
 */
export function injectionBlocker(
  command: string,
  platform: NodeJS.Platform = process.platform,
): InjectionBlocker | null {
  if (platform !== 'darwin') return null;
  const resolved = realpathOr(command);
  const isProtected = (p: string) => SIP_PROTECTED_DIRS.some((d) => p.startsWith(d));
  if (isProtected(resolved)) {
    return {
      reason: `${resolved} is protected by System Integrity Protection: macOS removes DYLD_INSERT_LIBRARIES from it (and from what it starts), so it would run unpatched. Run the real program directly, not through ${path.basename(resolved)}.`,
      launchFails: false,
    };
  }
  const interpreter = shebangInterpreter(resolved);
  if (interpreter === null) return signatureBlocker(resolved);
  const realInterpreter = realpathOr(interpreter);
  if (isProtected(realInterpreter)) {
    return {
      reason: `${resolved} is a script run by ${interpreter}, which System Integrity Protection strips of DYLD_INSERT_LIBRARIES, so the programs it starts would run unpatched. Run the real program directly.`,
      launchFails: false,
    };
  }
  // The kernel starts the interpreter, and dyld applies the interpreter's signature, not the script's.
  const blocker = signatureBlocker(realInterpreter);
  return blocker === null
    ? null
    : { ...blocker, reason: `${resolved} is a script run by ${interpreter}: ${blocker.reason}` };
}

function realpathOr(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/** What exec() needs. */
export interface ExecOptions {
  profile: Profile;
  /** The program as the user typed it: looked up on PATH, and the program's argv[0]. */
  command: string;
  args: string[];
  /** The file prepareExec() checked (its `resolved`), started as it is so that PATH is not searched again; resolved
   * from `command` when absent. */
  program?: string;
  traceFile?: string;
  force?: boolean;
  /** Run the program even when it will not be patched: no Metal here, a refusal, or injection known not to work (one
   * notice goes to stderr). */
  allowUnpatched?: boolean;
  /** Descriptors ≥ 3 to hand on to the program under their own numbers (the CLI passes inheritedDescriptors()). */
  passFds?: number[];
  /** Where the CLI's own notices go (never the child's streams). */
  notice?: (line: string) => void;
}

/** What one process that loaded the injector reported, by its pid. */
export interface InjectorProcess {
  pid: number;
  /** The slice it loaded (null: it reported no "loaded" line, e.g. a fork child reporting a patch). */
  slice: string | null;
  patchedClasses: string[];
  errors: string[];
}

/** How the child ended and what the injector reported. */
export interface ExecOutcome {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** True when any process of the run loaded the injector and said so. */
  injectorLoaded: boolean;
  /** The architecture slice of the injector the loader picked (`arm64e`, `arm64`, `x86_64`) in the first process that loaded it. */
  injectorSlice: string | null;
  /** Every class patched, by any process, in the order reported. */
  patchedClasses: string[];
  injectorErrors: string[];
  /** Each process that reported, in the order each first did: the program, and the programs it started. */
  processes: InjectorProcess[];
  warnings: ApplyWarning[];
}

/**
 * Checks a --trace path before anything runs, so that a run is never wasted on a trace that cannot be written: the
 * folder exists and we may write in it, and the file is new or a regular file of ours that we may write (it will be
 * replaced, never written through; see writeFileSafely). Returns the absolute path; throws ERR_TRACE_FILE.
 */
export function checkTraceFile(file: string): string {
  const resolved = path.resolve(file);
  const folder = path.dirname(resolved);
  let isFolder = false;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch {
    isFolder = false;
  }
  if (!isFolder) throw new TraceFileError(`--trace ${file}: the folder ${folder} does not exist`);
  try {
    accessSync(folder, constants.W_OK);
  } catch {
    throw new TraceFileError(`--trace ${file}: the folder ${folder} cannot be written`);
  }
  const problem = replaceableBecause(resolved);
  if (problem !== null) throw new TraceFileError(`--trace ${file}: ${resolved} ${problem}`);
  return resolved;
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
export function prepareExec(options: ExecOptions, platform: NodeJS.Platform = process.platform): PreparedExec {
  if (options.traceFile !== undefined) checkTraceFile(options.traceFile);
  const resolved = resolveCommand(options.command, process.env, platform);
  if (resolved === null) throw commandError(options.command, process.env, platform);
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
  let warnings: ApplyWarning[] = [];
  const stock = stockReport(native.binding);
  // 'host' values become the chip of the machine the child runs on, or nothing is injected: never a guess.
  const bound = bindToHost(options.profile, hostOf(stock));
  if (!bound.ok && options.allowUnpatched) {
    return {
      injector: null,
      resolved,
      warnings: [],
      unpatched: `${bound.detail}. Running ${options.command} unpatched (--allow-unpatched).`,
    };
  }
  if (!bound.ok)
    throw new RefusedError(`${bound.detail} (--allow-unpatched runs the program unpatched)`, 'ERR_HOST_UNKNOWN');
  const profile = bound.profile;
  if (stock.supported) {
    const { changes } = planProfile(stock.devices, profile);
    const refusal = refusalFor(hostOf(stock), changes, options.force ?? false);
    if (refusal !== null && options.allowUnpatched) {
      return {
        injector: null,
        resolved,
        warnings: [],
        unpatched: `${refusal} Running ${options.command} unpatched (--allow-unpatched).`,
      };
    }
    if (refusal !== null) throw new RefusedError(refusal);
    // The child's llama.cpp is not loaded yet: the family warning names the newest rules' tuning, as audit does.
    warnings = profileWarnings(profile, stock.devices, changes, [], stock.host, 'current');
  }
  const blocker = injectionBlocker(resolved, platform);
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

/** The variable through which the loader preloads a library on `platform`. */
export function preloadVariable(platform: NodeJS.Platform = process.platform): 'DYLD_INSERT_LIBRARIES' | 'LD_PRELOAD' {
  return platform === 'darwin' ? 'DYLD_INSERT_LIBRARIES' : 'LD_PRELOAD';
}

/**
 * Why `injector` cannot go into the preload list on `platform`, or null when it can. The list is one string the loader
 * splits, with no escape: dyld splits DYLD_INSERT_LIBRARIES at ':' (dyld2.cpp, processDyldEnvironmentVariable →
 * parseColonList); glibc splits LD_PRELOAD at ' ' and ':' (elf/rtld.c, handle_preload_list: strcspn(p, " :")), and
 * musl at ':' and any white space (ldso/dynlink.c, load_preload). A package under `/tmp/sec rev` would make the loader
 * load `/tmp/sec`, a file anyone may have put there.
 */
export function preloadListProblem(injector: string, platform: NodeJS.Platform = process.platform): string | null {
  const separators = platform === 'darwin' ? /:/ : /[:\s]/;
  const found = separators.exec(injector);
  if (found === null) return null;
  const what = found[0] === ':' ? "a ':'" : 'white space';
  return `the injector's path ${JSON.stringify(injector)} holds ${what}, where ${preloadVariable(platform)} splits its list of libraries, so the loader would load a different file; install metal-cap-shim under a path without ${platform === 'darwin' ? "':'" : "':' or white space"}`;
}

/**
 * The environment the child runs with: `env`, the injector preloaded ahead of any library the caller already
 * preloads, the profile and the status fd the injector reads, and exec's private trace folder when there is a --trace
 * (an inherited one is dropped otherwise, so the injector never writes a trace nobody asked for).
 */
export function childEnvironment(
  options: Pick<ExecOptions, 'profile'> & { traceFolder?: string; statusFd?: number },
  injector: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): NodeJS.ProcessEnv {
  const key = preloadVariable(platform);
  const existing = env[key];
  const child: NodeJS.ProcessEnv = { ...env, [key]: existing ? `${injector}:${existing}` : injector };
  child[INJECT_ENV.profile] = encodeNativeProfile(options.profile, { trace: options.traceFolder !== undefined });
  child[INJECT_ENV.statusFd] = String(options.statusFd ?? 3);
  // The child takes the status fd only if its parent is this process; an identity is for the levels below it.
  child[INJECT_ENV.statusPid] = String(process.pid);
  delete child[INJECT_ENV.statusId];
  if (options.traceFolder !== undefined) child[INJECT_ENV.traceFolder] = options.traceFolder;
  else delete child[INJECT_ENV.traceFolder];
  return child;
}

/**
 * The child's descriptors: stdin, stdout and stderr are ours; each descriptor in `passFds` is handed on under its own
 * number; with `statusPipe`, the status pipe takes the lowest number ≥ 3 that none of them uses. Every other
 * descriptor of this process is close-on-exec (Node opens all of its own so) and does not reach the program.
 */
export function childDescriptors(
  passFds: readonly number[],
  statusPipe: boolean,
): { stdio: ('inherit' | 'ignore' | 'pipe' | number)[]; statusFd: number | null } {
  const passed = new Set(passFds.filter((fd) => Number.isSafeInteger(fd) && fd >= 3));
  let statusFd: number | null = null;
  if (statusPipe) for (statusFd = 3; passed.has(statusFd); statusFd++);
  const top = Math.max(2, statusFd ?? 2, ...passed);
  const stdio: ('inherit' | 'ignore' | 'pipe' | number)[] = ['inherit', 'inherit', 'inherit'];
  for (let fd = 3; fd <= top; fd++) stdio.push(fd === statusFd ? 'pipe' : passed.has(fd) ? fd : 'ignore');
  return { stdio, statusFd };
}

/** Descriptors of GNU make's jobserver (`--jobserver-auth=R,W`, older `--jobserver-fds=R,W`) or BSD make's (`-J R,W`). */
function jobserverDescriptors(makeflags: string | undefined): Set<number> {
  const found = new Set<number>();
  for (const m of (makeflags ?? '').matchAll(/(?:--jobserver-(?:auth|fds)=|(?:^|\s)-J\s*)(\d+),(\d+)/g)) {
    found.add(Number(m[1]));
    found.add(Number(m[2]));
  }
  return found;
}

/**
 * The descriptors ≥ 3 this process was given when it started, to hand on to the program as `env` would (a file, a
 * socket of socket activation, make's jobserver). Node marks every descriptor close-on-exec at start-up (libuv's
 * uv_disable_stdio_inheritance), so what was inherited cannot be told by its flags; it is told by its kind. Node's own
 * descriptors are anonymous kernel objects (epoll, eventfd, kqueue: no file type), pipes whose two ends it holds both,
 * and /dev/null. Everything else open is taken as given by the caller: files, folders, sockets, devices, and single
 * pipe ends. A pipe pair is passed only when MAKEFLAGS names it as make's jobserver; /dev/null is never passed (the
 * program sees a closed descriptor instead). Call it first thing, before this process opens descriptors of its own.
 */
export function inheritedDescriptors(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): number[] {
  if (platform === 'win32') return [];
  let names: string[];
  try {
    names = readdirSync(platform === 'linux' ? '/proc/self/fd' : '/dev/fd');
  } catch {
    return [];
  }
  const open = new Map<number, Stats>();
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isSafeInteger(fd) || fd < 3) continue;
    try {
      // The listing's own descriptor is closed by now: fstat fails, and it is left out.
      open.set(fd, fstatSync(fd));
    } catch {}
  }
  let devNull = -1;
  try {
    devNull = statSync('/dev/null').rdev;
  } catch {
    devNull = -1;
  }
  const pipeKey = (s: Stats) => `${s.dev}:${s.ino}`;
  const ends = new Map<string, number>();
  for (const s of open.values()) if (s.isFIFO()) ends.set(pipeKey(s), (ends.get(pipeKey(s)) ?? 0) + 1);
  const jobserver = jobserverDescriptors(env.MAKEFLAGS);
  const given = (fd: number, s: Stats) => {
    if (s.isFile() || s.isDirectory() || s.isSocket() || s.isBlockDevice()) return true;
    if (s.isCharacterDevice()) return s.rdev !== devNull;
    if (s.isFIFO()) return jobserver.has(fd) || ends.get(pipeKey(s)) === 1;
    return false;
  };
  return [...open]
    .filter(([fd, s]) => given(fd, s))
    .map(([fd]) => fd)
    .sort((a, b) => a - b);
}

/** What the injector said over the status fd. */
export type InjectorStatus = Pick<
  ExecOutcome,
  'injectorLoaded' | 'injectorSlice' | 'patchedClasses' | 'injectorErrors' | 'processes'
>;

/**
 * Reads the status fd's text: one `PID loaded SLICE`, `PID patched CLASS` or `PID error CODE MESSAGE` a line, from
 * every process of the run that loaded the injector (each hands the fd to the programs it starts), in the order they
 * arrived. A line of any other shape is not the injector's and is skipped. The slice is that of the first "loaded"
 * line; `processes` groups the lines by pid.
 */
export function parseInjectorStatus(status: string): InjectorStatus {
  const out: InjectorStatus = {
    injectorLoaded: false,
    injectorSlice: null,
    patchedClasses: [],
    injectorErrors: [],
    processes: [],
  };
  const byPid = new Map<number, InjectorProcess>();
  for (const line of status.split('\n')) {
    const match = /^([1-9]\d{0,9}) (loaded|patched|error) (.*)$/.exec(line);
    if (match === null) continue;
    const pid = Number(match[1]);
    const [, , kind, rest] = match as unknown as [string, string, 'loaded' | 'patched' | 'error', string];
    let process = byPid.get(pid);
    if (process === undefined) {
      process = { pid, slice: null, patchedClasses: [], errors: [] };
      byPid.set(pid, process);
      out.processes.push(process);
    }
    if (kind === 'loaded') {
      process.slice ??= rest;
      out.injectorSlice ??= rest;
      out.injectorLoaded = true;
    } else if (kind === 'patched') {
      process.patchedClasses.push(rest);
      out.patchedClasses.push(rest);
    } else {
      process.errors.push(rest);
      out.injectorErrors.push(rest);
    }
  }
  return out;
}

/**
 * Collects what arrives on the status pipe, up to STATUS_LIMIT_BYTES. Past that, data is still read (a writer must
 * never block on a full pipe) but dropped, and `overflowed` says so.
 */
export function statusCollector(limit = STATUS_LIMIT_BYTES): {
  add: (chunk: Buffer) => void;
  text: () => string;
  overflowed: () => boolean;
} {
  const chunks: Buffer[] = [];
  let kept = 0;
  let over = false;
  return {
    add(chunk) {
      if (kept >= limit) {
        over = true;
        return;
      }
      const part = chunk.length > limit - kept ? chunk.subarray(0, limit - kept) : chunk;
      over ||= part.length < chunk.length;
      chunks.push(part);
      kept += part.length;
    },
    // A line cut at the limit is no line: the last, unterminated one is dropped when the limit was reached.
    text() {
      const all = Buffer.concat(chunks).toString('utf8');
      return over ? all.slice(0, all.lastIndexOf('\n') + 1) : all;
    },
    overflowed: () => over,
  };
}

/**
 * The exit status a shell reports for a program killed by `signal`: 128 + its number. The CLI returns it when it
 * outlives re-raising the signal on itself (Node ignores a few, such as SIGPIPE).
 */
export function signalExitStatus(signal: NodeJS.Signals): number {
  return 128 + (osConstants.signals[signal] ?? 0);
}

const FORWARDED_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'];

/** Signals a terminal generates from a key (Ctrl-C, Ctrl-\) and sends to its whole foreground process group. */
const TERMINAL_KEY_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGQUIT'];

/** Process-group ids as `processGroups()` reports them; -1 where there is none. */
export interface ProcessGroupIds {
  own: number;
  terminal: number;
  child: number;
}

/**
 * Whether a signal this process received must be passed on to the child, so that the child gets it exactly once.
 *
 * The child runs in our process group (it shares our terminal and job control). A terminal sends Ctrl-C (SIGINT) and
 * Ctrl-\ (SIGQUIT) to its whole foreground process group, so when that group is ours and the child is still in it,
 * the child already has the signal, and passing it on would deliver it twice: llama-server takes a second SIGINT as
 * "exit now", skipping its graceful shutdown, and a program that then `_exit`s loses its --trace file. Everything else
 * is passed on: a signal a terminal never sends (SIGTERM, SIGUSR1/2, SIGHUP from a supervisor), and SIGINT/SIGQUIT
 * whenever the terminal cannot have sent them to the child (we have no controlling terminal, our group is not its
 * foreground group, or the child moved to a group of its own), which is how a supervisor's `kill -INT <our pid>`
 * arrives. The one case this cannot tell apart is a `kill -INT` aimed at our pid while we are the terminal's
 * foreground job: siginfo would not help portably (macOS's kernel fills si_pid and si_code alike for kill(2) and for
 * the terminal), so it is taken for a keypress and not passed on. `kill -TERM` reaches the child in every case.
 * Without process-group facts (`groups` null) every signal is passed on. On Windows SIGINT is never passed on: a
 * console's Ctrl-C reaches every process attached to the console, and `child.kill('SIGINT')` there would not deliver
 * a Ctrl-C but terminate the child outright.
 */
export function shouldForwardSignal(
  signal: NodeJS.Signals,
  groups: ProcessGroupIds | null,
  platform: NodeJS.Platform = process.platform,
): boolean {
  if (platform === 'win32' && signal === 'SIGINT') return false;
  if (!TERMINAL_KEY_SIGNALS.includes(signal) || groups === null) return true;
  const terminalSignalledChild = groups.terminal > 0 && groups.terminal === groups.own && groups.child === groups.own;
  return !terminalSignalledChild;
}

/** The process group (field 5) and the terminal's foreground group (field 8) of a /proc/<pid>/stat line. */
export interface ProcStatGroups {
  pgrp: number;
  tpgid: number;
}

/**
 * Reads a Linux /proc/<pid>/stat line: `pid (comm) state ppid pgrp session tty_nr tpgid …`. The command name may hold
 * spaces and parentheses of its own (a program named `a) (b`), so the fields are counted after the last ')'. Null
 * when the line is not of that shape.
 */
export function parseProcStat(line: string): ProcStatGroups | null {
  const close = line.lastIndexOf(')');
  if (close < 0) return null;
  const fields = line
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // After the name: state, ppid, pgrp, session, tty_nr, tpgid.
  const [pgrp, tpgid] = [fields[2], fields[5]].map((f) => (/^-?\d+$/.test(String(f)) ? Number(f) : NaN));
  return Number.isNaN(pgrp) || Number.isNaN(tpgid) ? null : { pgrp: pgrp!, tpgid: tpgid! };
}

/**
 * Reads `ps -o pid=,pgid=,tpgid=` output for our pid and the child's: our group and the terminal's foreground group
 * from our line, the child's group from its line; -1 for a line that is missing (the child has exited). Null when our
 * own line is missing or unreadable.
 */
export function parsePsGroups(output: string, ownPid: number, childPid: number): ProcessGroupIds | null {
  const rows = new Map<number, number[]>();
  for (const line of output.split('\n')) {
    const numbers = line.trim().split(/\s+/).map(Number);
    if (numbers.length === 3 && numbers.every(Number.isInteger)) rows.set(numbers[0]!, numbers);
  }
  const own = rows.get(ownPid);
  if (own === undefined) return null;
  return { own: own[1]!, terminal: own[2]!, child: rows.get(childPid)?.[1] ?? -1 };
}

function readProcStat(pid: number | 'self'): ProcStatGroups | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * Process-group facts without the native module, asked of the system at signal time: Linux's /proc, or ps(1) on
 * macOS (that path runs only when the addon failed to load there, and no Mac has exercised it). Null where neither
 * is available; Windows has no process groups to ask about.
 */
export function processGroupsWithoutAddon(
  childPid: number,
  platform: NodeJS.Platform = process.platform,
): ProcessGroupIds | null {
  if (platform === 'linux') {
    const own = readProcStat('self');
    if (own === null) return null;
    return { own: own.pgrp, terminal: own.tpgid, child: readProcStat(childPid)?.pgrp ?? -1 };
  }
  if (platform === 'darwin') {
    const ps = spawnSync('ps', ['-o', 'pid=,pgid=,tpgid=', '-p', String(process.pid), '-p', String(childPid)], {
      encoding: 'utf8',
      timeout: 2_000,
    });
    return ps.error ? null : parsePsGroups(ps.stdout ?? '', process.pid, childPid);
  }
  return null;
}

/** The error for a program that could not be started: ERR_COMMAND_NOT_FOUND when it is not there, else ERR_SPAWN. */
function spawnFailure(command: string, err: NodeJS.ErrnoException): SpawnError {
  return new SpawnError(
    err.code === 'ENOENT' ? 'ERR_COMMAND_NOT_FOUND' : 'ERR_SPAWN',
    `cannot run ${command}: ${err.message}`,
  );
}

/**
 * The file to start: the one prepareExec() checked, or `command` resolved now. Never the bare command: spawn() would
 * search PATH again, and libuv takes an empty PATH entry for the current folder.
 */
function programOf(options: ExecOptions): string {
  if (options.program !== undefined) return options.program;
  const resolved = resolveCommand(options.command);
  if (resolved === null) throw commandError(options.command);
  return resolved;
}

/**
 * Starts the child with signals sent to us passed on to it, for both the patched and the unpatched run; returns the
 * child and the undo. The handlers go in before spawn(): the child runs as soon as it is forked, and a signal that
 * arrived before they were in would take its default action on us (a Ctrl-C right after "ready" killed exec with
 * 130 and left the program's output unread). A signal caught meanwhile is handled once spawn() has returned.
 * The resolved file is started, with argv[0] as the user typed it. A spawn() that throws (bad arguments) is
 * ERR_SPAWN, with no handler left behind.
 */
function spawnForwardingSignals(
  options: ExecOptions,
  spawnOptions: SpawnOptions,
): { child: ChildProcess; undo: () => void } {
  const program = programOf(options);
  const binding = loadNative().binding;
  const groupsOf = (pid: number) => (binding !== null ? binding.processGroups(pid) : processGroupsWithoutAddon(pid));
  let child: ChildProcess | undefined;
  const forward = (signal: NodeJS.Signals) => () => {
    const pid = child?.pid;
    if (pid !== undefined && shouldForwardSignal(signal, groupsOf(pid))) child!.kill(signal);
  };
  const handlers = FORWARDED_SIGNALS.map((s) => [s, forward(s)] as const);
  for (const [s, h] of handlers) process.on(s, h);
  const undo = () => {
    for (const [s, h] of handlers) process.off(s, h);
  };
  try {
    child = spawn(program, options.args, { ...spawnOptions, argv0: options.command });
  } catch (e) {
    undo();
    throw spawnFailure(options.command, e as NodeJS.ErrnoException);
  }
  return { child, undo };
}

/** The largest trace file exec copies out of its private folder (a trace is a few kilobytes). */
const MAX_TRACE_BYTES = 16 * 1024 * 1024;

/**
 * exec's private folder for the children's traces: mkdtemp makes it, new and 0700, in the temporary folder, so no
 * other user can plant or read anything in it. The injector writes `first.json` (the first process to write, with
 * O_EXCL) or `<pid>.json` there, and exec itself writes the --trace file(s) afterwards.
 */
function makeTraceFolder(): string {
  try {
    return mkdtempSync(path.join(tmpdir(), 'metal-cap-shim-trace-'));
  } catch (e) {
    throw new TraceFileError(
      `--trace: cannot create a private folder for the traces in ${tmpdir()}: ${(e as Error).message}`,
    );
  }
}

/** The name of a trace the injector wrote: `first.json`, or `<pid>.json` (`<pid>-<n>.json` for a reused pid). */
const TRACE_NAME = /^(first|\d+(?:-\d+)?)\.json$/;

/**
 * Writes the --trace file(s) from what the processes left in exec's private folder: the first process to write takes
 * FILE, each other one FILE.<pid>. When no process wrote one, FILE says so (pid, whether the injector loaded, nothing
 * traced). Each file is written with writeFileSafely(). Returns the errors to report, each an ERR_TRACE_FILE line.
 */
export function deliverTraces(
  folder: string,
  file: string,
  pid: number | undefined,
  injectorLoaded: boolean,
): string[] {
  let names: string[];
  try {
    names = readdirSync(folder)
      .filter((n) => TRACE_NAME.test(n))
      .sort();
  } catch {
    names = [];
  }
  const errors: string[] = [];
  if (!names.includes('first.json')) errors.push(...writeTrace(file, emptyTrace(pid, injectorLoaded)));
  for (const name of names) {
    const target = name === 'first.json' ? file : `${file}.${name.slice(0, -'.json'.length)}`;
    const read = readOwnFile(path.join(folder, name), MAX_TRACE_BYTES);
    if (!read.ok) errors.push(`ERR_TRACE_FILE cannot write ${target}: the trace a process left ${read.why}`);
    else errors.push(...writeTrace(target, read.text));
  }
  return errors;
}

function emptyTrace(pid: number | undefined, profileApplied: boolean): string {
  return `${JSON.stringify({ pid: pid ?? null, profileApplied, patchedClasses: [], trace: [] })}\n`;
}

/** Writes one trace file; returns the injector errors to report: none, or the one ERR_TRACE_FILE. */
function writeTrace(file: string, text: string): string[] {
  try {
    writeFileSafely(file, text);
    return [];
  } catch (e) {
    return [`ERR_TRACE_FILE cannot write ${file}: ${(e as Error).message}`];
  }
}

/**
 * Runs a command with the injector loaded into it. The child's stdio is the terminal's, the descriptors in `passFds`
 * are handed on, and the injector talks to us over the status pipe only. Signals sent to us are forwarded to the
 * child.
 */
export function runWithInjector(
  options: ExecOptions,
  injector: string | null,
  warnings: ApplyWarning[],
): Promise<ExecOutcome> {
  if (injector === null) return runUnpatched(options);
  const traceFile = options.traceFile === undefined ? undefined : path.resolve(options.traceFile);
  const { stdio, statusFd } = childDescriptors(options.passFds ?? [], true);
  const traceFolder = traceFile === undefined ? undefined : makeTraceFolder();
  const removeTraceFolder = () => {
    if (traceFolder !== undefined) rmSync(traceFolder, { recursive: true, force: true });
  };
  const env = childEnvironment(
    { profile: options.profile, statusFd: statusFd!, ...(traceFolder === undefined ? {} : { traceFolder }) },
    injector,
  );
  return new Promise((resolve, reject) => {
    let started: { child: ChildProcess; undo: () => void };
    try {
      started = spawnForwardingSignals(options, { stdio, env });
    } catch (e) {
      removeTraceFolder();
      throw e;
    }
    const { child, undo: cleanup } = started;
    const status = statusCollector();
    const pipe = child.stdio[statusFd!] as NodeJS.ReadableStream | null;
    pipe?.on('data', status.add);
    pipe?.on('error', () => undefined);
    child.on('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      removeTraceFolder();
      reject(spawnFailure(options.command, err));
    });
    child.on('exit', (exitCode, signal) => {
      cleanup();
      // A grandchild may keep the status pipe open; read what arrived and stop listening.
      setImmediate(() => {
        (pipe as { destroy?: () => void } | null)?.destroy?.();
        const reported = parseInjectorStatus(status.text());
        const overflow = status.overflowed()
          ? [`ERR_STATUS_OVERFLOW the status pipe carried more than ${STATUS_LIMIT_BYTES} bytes; the rest was ignored`]
          : [];
        const traceErrors =
          traceFile === undefined ? [] : deliverTraces(traceFolder!, traceFile, child.pid, reported.injectorLoaded);
        removeTraceFolder();
        resolve({
          exitCode,
          signal,
          ...reported,
          injectorErrors: [...reported.injectorErrors, ...overflow, ...traceErrors],
          warnings,
        });
      });
    });
  });
}

/**
 * Runs the command as it is, with no injector: the cross-platform path of `--allow-unpatched`. A --trace file is
 * written all the same, saying nothing was applied, so a script reading it finds the same shape on every path.
 */
function runUnpatched(options: ExecOptions): Promise<ExecOutcome> {
  const traceFile = options.traceFile === undefined ? undefined : path.resolve(options.traceFile);
  const { stdio } = childDescriptors(options.passFds ?? [], false);
  return new Promise((resolve, reject) => {
    const { child, undo: cleanup } = spawnForwardingSignals(options, { stdio });
    child.on('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      reject(spawnFailure(options.command, err));
    });
    child.on('exit', (exitCode, signal) => {
      cleanup();
      const injectorErrors = traceFile === undefined ? [] : writeTrace(traceFile, emptyTrace(child.pid, false));
      resolve({
        exitCode,
        signal,
        injectorLoaded: false,
        injectorSlice: null,
        patchedClasses: [],
        injectorErrors,
        processes: [],
        warnings: [],
      });
    });
  });
}
