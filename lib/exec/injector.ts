/**
 * The injector's side of exec: where the library is, how it goes into the loader's preload list, the environment it
 * reads (src-native/inject/inject.mm), and what it says back over the status pipe.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { packageRoot, simulationSelected } from '../device/native.js';
import { encodeNativeProfile, offeredMlxArchitecture, type Profile } from '../patch/profiles.js';
import { mlxArchitectureEnv } from '../patch/plan.js';
import { MLX_ARCHITECTURE_ENV } from '../engines/mlx-architecture.js';

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
  /**
   * exec's pid, when exec runs on Node's main thread: on Linux the program exec starts (its child, that pid) asks the
   * kernel for SIGKILL when exec dies, so it does not run on, orphaned; every process that loads the injector unsets it.
   */
  execPid: 'METAL_CAP_SHIM_EXEC_PID',
} as const;

/** At most this much of the status pipe is read; the rest is drained and dropped (a program may write anything). */
export const STATUS_LIMIT_BYTES = 64 * 1024;

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
 * preloads, the profile and the status fd the injector reads, exec's private trace folder when there is a --trace
 * (an inherited one is dropped otherwise, so the injector never writes a trace nobody asked for), and the architecture
 * the profile offers MLX as MLX_METAL_GPU_ARCH, unless `env` sets that variable itself (mlxArchitectureEnv: the
 * user's value wins). The injector never sees the architecture: it is no Metal answer. The profile is
 * prepareExec()'s: resolved once (profileForExec) and bound to this host, so it is encoded as it is, not validated
 * again; an unbound `'host'` value still throws.
 *
 * On Node's main thread it names this process as the one the program dies with (INJECT_ENV.execPid). Linux sends the
 * parent-death signal when the thread that started the child ends, and a worker thread may end while the process
 * lives on: from a worker (`mainThread` false) the variable is left out, and an inherited one is dropped.
 */
export function childEnvironment(
  options: { profile: Profile; traceFolder?: string; statusFd?: number },
  injector: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  mainThread: boolean = isMainThread,
): NodeJS.ProcessEnv {
  const key = preloadVariable(platform);
  const existing = env[key];
  const child: NodeJS.ProcessEnv = { ...env, [key]: existing ? `${injector}:${existing}` : injector };
  child[INJECT_ENV.profile] = encodeNativeProfile(options.profile, options.traceFolder !== undefined);
  const mlx = mlxArchitectureEnv(offeredMlxArchitecture(options.profile), env).set;
  if (mlx !== null) child[MLX_ARCHITECTURE_ENV] = mlx;
  child[INJECT_ENV.statusFd] = String(options.statusFd ?? 3);
  // The child takes the status fd only if its parent is this process; an identity is for the levels below it.
  child[INJECT_ENV.statusPid] = String(process.pid);
  delete child[INJECT_ENV.statusId];
  if (options.traceFolder !== undefined) child[INJECT_ENV.traceFolder] = options.traceFolder;
  else delete child[INJECT_ENV.traceFolder];
  if (mainThread) child[INJECT_ENV.execPid] = String(process.pid);
  else delete child[INJECT_ENV.execPid];
  return child;
}

/** What one process that loaded the injector reported, by its pid. */
export interface InjectorProcess {
  pid: number;
  /** The slice it loaded (null: it reported no "loaded" line, e.g. a fork child reporting a patch). */
  slice: string | null;
  patchedClasses: string[];
  errors: string[];
}

/** What the injector said over the status fd, from every process of the run that loaded it. */
export interface InjectorStatus {
  /** True when any process of the run loaded the injector and said so. */
  injectorLoaded: boolean;
  /** The architecture slice of the injector the loader picked (`arm64`, `x86_64`) in the first process that loaded it. */
  injectorSlice: string | null;
  /** Every class patched, by any process, in the order reported. */
  patchedClasses: string[];
  injectorErrors: string[];
  /** Each process that reported, in the order each first did: the program, and the programs it started. */
  processes: InjectorProcess[];
}

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
